# Feature extraction: one HDF5 file per (model, evaluation set).


rule extract_features:
    input:
        unpack(jobwise(G.extract_inputs)),
    output:
        features=paths.features(),
    params:
        spec=jobwise(G.model_spec_json),
        eval_set=jobwise(G.eval_set_json),
        batch_size=G.setting("features/batch_size"),
        compression=G.setting("features/compression"),
        feature_dtype=G.setting("features/feature_dtype"),
        num_workers=res("extract_features", "num_workers"),
    log:
        paths.log("features", "{source}/{model}/{dataset}"),
    benchmark:
        paths.benchmark("features", "{source}/{model}/{dataset}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("extract_features", "threads")
    resources:
        mem_mb=res("extract_features", "mem_mb"),
        runtime=res("extract_features", "runtime"),
        gpu=res("extract_features", "gpu"),
    script:
        "../workflow_scripts/extract_features.py"
