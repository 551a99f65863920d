# Shift study, part 2: white-box adversarial sets (PGD-L∞ / FGSM) per model, from its ID test split.


rule adversarial_set:
    input:
        checkpoint="results/models/{source}/{model}/checkpoint.pt",
        index=lambda w: index_file(config["sources"][w.source]["dataset"]),
    output:
        images="results/data/adversarial/{source}/{model}/{dataset}/test/images.npy",
        labels="results/data/adversarial/{source}/{model}/{dataset}/test/labels.npy",
    params:
        spec=model_spec_json,
        attack=lambda w: json.dumps(cfg.attack_spec(config, w.dataset), sort_keys=True),
        batch_size=config.get("shifts", {}).get("adversarial", {}).get("batch_size", 128),
    log:
        "results/logs/adversarial/{source}/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/adversarial/{source}/{model}/{dataset}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("adversarial_set", "threads", 4)
    resources:
        mem_mb=res("adversarial_set", "mem_mb", 8000),
        runtime=res("adversarial_set", "runtime", 60),
        gpu=res("adversarial_set", "gpu", 1),
    script:
        "../workflow_scripts/adversarial_set.py"
