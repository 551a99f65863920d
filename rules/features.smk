# Feature extraction: one HDF5 file per (model, evaluation set).


rule extract_features:
    input:
        unpack(extract_inputs),
    output:
        features="results/features/{source}/{model}/{dataset}.h5",
    params:
        spec=model_spec_json,
        eval_set=eval_set_json,
        batch_size=config["features"]["batch_size"],
        compression=config["features"].get("compression", "gzip"),
        num_workers=res("extract_features", "num_workers", 0),
    log:
        "results/logs/features/{source}/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/features/{source}/{model}/{dataset}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("extract_features", "threads", 4)
    resources:
        mem_mb=res("extract_features", "mem_mb", 16000),
        runtime=res("extract_features", "runtime", 120),
        gpu=res("extract_features", "gpu", 1),
    script:
        "../workflow_scripts/extract_features.py"
