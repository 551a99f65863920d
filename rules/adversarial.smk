# Shift study, part 2: white-box adversarial sets (PGD-L∞ / FGSM) per model, from its ID test split.


rule adversarial_set:
    input:
        checkpoint=paths.checkpoint(),
        index=lambda w: paths.dataset_index(source_dataset(w.source)),
    output:
        images=paths.npy_file(paths.adversarial_set_folder(), "images"),
        labels=paths.npy_file(paths.adversarial_set_folder(), "labels"),
    params:
        spec=model_spec_json,
        attack=lambda w: json.dumps(grid.attack_spec(config, w.dataset), sort_keys=True),
        batch_size=lambda w: config["shifts"]["adversarial"]["batch_size"],
    log:
        paths.log("adversarial", "{source}/{model}/{dataset}"),
    benchmark:
        paths.benchmark("adversarial", "{source}/{model}/{dataset}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("adversarial_set", "threads")
    resources:
        mem_mb=res("adversarial_set", "mem_mb"),
        runtime=res("adversarial_set", "runtime"),
        gpu=res("adversarial_set", "gpu"),
    script:
        "../workflow_scripts/adversarial_set.py"
