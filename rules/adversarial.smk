# Shift study, part 2: white-box adversarial sets (PGD-L∞ / FGSM) per model, from its ID test split.


rule adversarial_set:
    input:
        checkpoint=paths.checkpoint(),
        index=jobwise(G.source_index),
    output:
        images=paths.npy_file(paths.adversarial_set_folder(), "images"),
        labels=paths.npy_file(paths.adversarial_set_folder(), "labels"),
    params:
        spec=jobwise(G.model_spec_json),
        attack=jobwise(G.attack_json),
        batch_size=setting("shifts/adversarial/batch_size"),
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
