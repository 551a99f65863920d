# Shift study, part 1: CIFAR-10-C-style corruption sets generated from a source's ID test split
# (one job per source and corruption set; the sets then flow through extract_features like any other).


rule corrupt_set:
    input:
        index=lambda w: index_file(config["sources"][w.source]["dataset"]),
    output:
        images="results/data/shifts/{source}/{dataset}/test/images.npy",
        labels="results/data/shifts/{source}/{dataset}/test/labels.npy",
    params:
        dataset=lambda w: json.dumps(cfg.dataset_spec(config, config["sources"][w.source]["dataset"]), sort_keys=True),
        val_size=lambda w: config["sources"][w.source]["val_size"],
        corruption=lambda w: json.dumps(cfg.corruption_spec(config, w.dataset), sort_keys=True),
    log:
        "results/logs/shifts/{source}/{dataset}.log",
    benchmark:
        "results/benchmarks/shifts/{source}/{dataset}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("corrupt_set", "mem_mb", 4000),
        runtime=res("corrupt_set", "runtime", 30),
    script:
        "../workflow_scripts/corrupt_set.py"
