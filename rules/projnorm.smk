# ProjNorm and its baselines (spec papers-001-002-004 §3): a reference fine-tune per model, one ProjNorm
# fine-tune per (model, labelled shift set), one evaluation per source (tables, scatter plot, rows).
# Helpers (inputs, study lists) are in rules/common.smk.


rule projnorm_reference:
    input:
        checkpoint="results/models/{source}/{model}/checkpoint.pt",
        index=lambda w: index_file(config["sources"][w.source]["dataset"]),
    output:
        reference="results/projnorm/{source}/{model}/reference.safetensors",
    params:
        spec=model_spec_json,
        settings=PROJNORM,
    log:
        "results/logs/projnorm/{source}/{model}/reference.log",
    benchmark:
        "results/benchmarks/projnorm/{source}/{model}/reference.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("projnorm", "threads", 4)
    resources:
        mem_mb=res("projnorm", "mem_mb", 8000),
        runtime=res("projnorm", "runtime", 60),
        gpu=res("projnorm", "gpu", 1),
    script:
        "../workflow_scripts/projnorm_reference.py"


rule projnorm_shift:
    input:
        unpack(projnorm_shift_inputs),
    output:
        result="results/projnorm/{source}/{model}/{dataset}.json",
    params:
        spec=model_spec_json,
        eval_set=eval_set_json,
        settings=PROJNORM,
        partner_spec=projnorm_partner_spec,
    log:
        "results/logs/projnorm/{source}/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/projnorm/{source}/{model}/{dataset}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("projnorm", "threads", 4)
    resources:
        mem_mb=res("projnorm", "mem_mb", 8000),
        runtime=res("projnorm", "runtime", 60),
        gpu=res("projnorm", "gpu", 1),
    script:
        "../workflow_scripts/projnorm_shift.py"


rule projnorm_evaluate:
    input:
        projnorm_eval_inputs,
    output:
        per_set="results/tables/projnorm/{source}_per_set.csv",
        correlations=report("results/tables/projnorm/{source}_correlations.csv",
                            caption="../report/projnorm_correlations.rst", category="ProjNorm"),
        stress=report("results/tables/projnorm/{source}_stress.csv", caption="../report/adversarial_stress.rst",
                      category="ProjNorm"),
        stress_mse="results/tables/projnorm/{source}_stress_mse.csv",
        figure=report("results/figures/projnorm/{source}_scatter.png", caption="../report/projnorm_scatter.rst",
                      category="ProjNorm"),
        metrics="results/tables/projnorm/{source}_rows.parquet",
    params:
        study=lambda w: json.dumps(projnorm_study(w.source), sort_keys=True),
        atc_score=cfg.projnorm_settings(config)["atc_score"],
    log:
        "results/logs/projnorm/{source}_evaluate.log",
    benchmark:
        "results/benchmarks/projnorm/{source}_evaluate.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("projnorm_evaluate", "mem_mb", 4000),
        runtime=res("projnorm_evaluate", "runtime", 30),
    script:
        "../workflow_scripts/projnorm_evaluate.py"
