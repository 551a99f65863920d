# Training: the demo's ViT pretraining and one job per model (all stages of its paradigm).


if "pretrain" in config:

    rule pretrain_vit:
        input:
            index=index_file(config["pretrain"]["dataset"]),
        output:
            weights=config["backbones"]["vit"]["pretrained"]["file"],
            history="results/models/pretrain/history.csv",
        params:
            spec=lambda w: json.dumps(cfg.pretrain_spec(config), sort_keys=True),
        log:
            "results/logs/train/pretrain_vit.log",
        benchmark:
            "results/benchmarks/train/pretrain_vit.tsv"
        conda:
            "../envs/csfbench.yaml"
        threads: res("train", "threads", 4)
        resources:
            mem_mb=res("train", "mem_mb", 16000),
            runtime=res("train", "runtime", 720),
            gpu=res("train", "gpu", 1),
        script:
            "../workflow_scripts/pretrain.py"


rule train:
    input:
        unpack(train_inputs),
    output:
        checkpoint="results/models/{source}/{model}/checkpoint.pt",
        history="results/models/{source}/{model}/history.csv",
    params:
        spec=model_spec_json,
        num_workers=res("train", "num_workers", 0),
    log:
        "results/logs/train/{source}/{model}.log",
    benchmark:
        "results/benchmarks/train/{source}/{model}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("train", "threads", 4)
    resources:
        mem_mb=res("train", "mem_mb", 16000),
        runtime=res("train", "runtime", 720),
        gpu=res("train", "gpu", 1),
    script:
        "../workflow_scripts/train.py"
