# Training: the demo's ViT pretraining and one job per model (all stages of its paradigm).


if G.enabled("pretrain"):

    rule pretrain_vit:
        input:
            index=paths.dataset_index(G.setting("pretrain/dataset")),
        output:
            weights=G.pretrained_vit_file(),
            history=paths.pretrain_history(),
        params:
            spec=G.pretrain_spec().to_json(),
        log:
            paths.log("train", "pretrain_vit"),
        benchmark:
            paths.benchmark("train", "pretrain_vit")
        conda:
            "../envs/csfbench.yaml"
        threads: res("pretrain_vit", "threads")
        resources:
            mem_mb=res("pretrain_vit", "mem_mb"),
            runtime=res("pretrain_vit", "runtime"),
            gpu=res("pretrain_vit", "gpu"),
        script:
            "../workflow_scripts/pretrain.py"


rule train:
    input:
        unpack(jobwise(G.train_inputs)),
    output:
        checkpoint=paths.checkpoint(),
        history=paths.training_history(),
    params:
        spec=jobwise(G.model_spec_json),
        num_workers=res("train", "num_workers"),
    log:
        paths.log("train", "{source}/{model}"),
    benchmark:
        paths.benchmark("train", "{source}/{model}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("train", "threads")
    resources:
        mem_mb=res("train", "mem_mb"),
        runtime=res("train", "runtime"),
        gpu=res("train", "gpu"),
    script:
        "../workflow_scripts/train.py"
