# Training: the demo's ViT pretraining, one job per model (all stages of its paradigm) and the record of the
# pretrained weights files the models load.
from csfbench.provenance import report_weights


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


# The sha256 of every pretrained weights file the models load (csfbench.provenance), taken once the models that
# load them are built: their checkpoints are the inputs, so a model built again records its file again.  The
# report's run description (report/workflow.rst) shows the record, read here when the Snakefile is parsed:
# `snakemake --report` after the run finds it.
config["weights_provenance"] = report_weights(G.config, paths.weights_record())

if G.weights_loaders():

    rule weights_provenance:
        input:
            checkpoints=G.weights_loaders(),
        output:
            record=paths.weights_record(),
        log:
            paths.log("train", "weights_provenance"),
        benchmark:
            paths.benchmark("train", "weights_provenance")
        conda:
            "../envs/csfbench.yaml"
        localrule: True
        threads: 1
        script:
            "../workflow_scripts/weights_provenance.py"
