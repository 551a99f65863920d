# Shift study, part 1: CIFAR-10-C-style corruption sets generated from a source's ID test split
# (one job per source and corruption set; the sets then flow through extract_features like any other).


rule corrupt_set:
    input:
        index=jobwise(G.source_index),
    output:
        images=paths.npy_file(paths.corruption_set_folder(), "images"),
        labels=paths.npy_file(paths.corruption_set_folder(), "labels"),
    params:
        dataset=jobwise(G.source_dataset_json),
        val_size=jobwise(G.val_size),
        corruption=jobwise(G.corruption_json),
    log:
        paths.log("shifts", "{source}/{dataset}"),
    benchmark:
        paths.benchmark("shifts", "{source}/{dataset}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("corrupt_set", "threads")
    resources:
        mem_mb=res("corrupt_set", "mem_mb"),
        runtime=res("corrupt_set", "runtime"),
    script:
        "../workflow_scripts/corrupt_set.py"
