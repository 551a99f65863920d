# Data: the embedded demo generator and a fail-fast check + index of every dataset on disk.


if "demo" in config:

    rule demo_data:
        output:
            files=demo_files(),
        params:
            seed=config["demo"]["seed"],
            # canonical JSON: reordering keys in a config file must not trigger a rerun
            spec=json.dumps(config["demo"].get("spec", {}), sort_keys=True),
        log:
            "results/logs/data/demo_data.log",
        benchmark:
            "results/benchmarks/data/demo_data.tsv"
        conda:
            "../envs/csfbench.yaml"
        threads: 1
        resources:
            mem_mb=res("demo_data", "mem_mb", 4000),
            runtime=res("demo_data", "runtime", 30),
        script:
            "../workflow_scripts/demo_data.py"


rule index_dataset:
    input:
        dataset_index_inputs,
    output:
        index="results/data/index/{name}.json",
    params:
        dataset=lambda w: json.dumps(cfg.dataset_spec(config, w.name), sort_keys=True),
        splits=lambda w: cfg.used_splits(config, w.name),
    log:
        "results/logs/data/index_{name}.log",
    benchmark:
        "results/benchmarks/data/index_{name}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("index_dataset", "mem_mb", 4000),
        runtime=res("index_dataset", "runtime", 30),
    script:
        "../workflow_scripts/index_dataset.py"
