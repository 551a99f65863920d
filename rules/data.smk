# Data: the embedded demo generator and a fail-fast check + index of every dataset on disk.


if G.enabled("demo"):

    rule demo_data:
        output:
            files=G.demo_files(),
        params:
            seed=G.setting("demo/seed"),
            # canonical JSON: reordering keys in a config file must not trigger a rerun
            spec=G.setting_json("demo/spec"),
        log:
            paths.log("data", "demo_data"),
        benchmark:
            paths.benchmark("data", "demo_data")
        conda:
            "../envs/csfbench.yaml"
        threads: res("demo_data", "threads")
        resources:
            mem_mb=res("demo_data", "mem_mb"),
            runtime=res("demo_data", "runtime"),
        script:
            "../workflow_scripts/demo_data.py"


rule index_dataset:
    input:
        jobwise(G.dataset_index_inputs),
    output:
        index=paths.dataset_index(),
    params:
        dataset=jobwise(G.dataset_spec_json),
        splits=jobwise(G.used_splits),
    log:
        paths.log("data", "index_{name}"),
    benchmark:
        paths.benchmark("data", "index_{name}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("index_dataset", "threads")
    resources:
        mem_mb=res("index_dataset", "mem_mb"),
        runtime=res("index_dataset", "runtime"),
    script:
        "../workflow_scripts/index_dataset.py"
