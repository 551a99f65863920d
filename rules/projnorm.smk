# ProjNorm and its baselines (Yu et al., "Predicting Out-of-Distribution Error with the Projection
# Norm", ICML 2022, arXiv 2202.05834): a reference fine-tune per model, one ProjNorm fine-tune per
# (model, labelled shifted set), one evaluation per source (tables, scatter plot, metric rows).


rule projnorm_reference:
    input:
        checkpoint=paths.checkpoint(),
        index=jobwise(G.source_index),
    output:
        reference=paths.projnorm_reference(),
    params:
        spec=jobwise(G.model_spec_json),
        settings=setting_json("projnorm"),
    log:
        paths.log("projnorm", "{source}/{model}/reference"),
    benchmark:
        paths.benchmark("projnorm", "{source}/{model}/reference")
    conda:
        "../envs/csfbench.yaml"
    threads: res("projnorm_reference", "threads")
    resources:
        mem_mb=res("projnorm_reference", "mem_mb"),
        runtime=res("projnorm_reference", "runtime"),
        gpu=res("projnorm_reference", "gpu"),
    script:
        "../workflow_scripts/projnorm_reference.py"


rule projnorm_shift:
    input:
        unpack(jobwise(G.projnorm_shift_inputs)),
    output:
        result=paths.projnorm_result(),
    params:
        spec=jobwise(G.model_spec_json),
        eval_set=jobwise(G.eval_set_json),
        settings=setting_json("projnorm"),
        partner_spec=jobwise(G.projnorm_partner_spec),
    log:
        paths.log("projnorm", "{source}/{model}/{dataset}"),
    benchmark:
        paths.benchmark("projnorm", "{source}/{model}/{dataset}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("projnorm_shift", "threads")
    resources:
        mem_mb=res("projnorm_shift", "mem_mb"),
        runtime=res("projnorm_shift", "runtime"),
        gpu=res("projnorm_shift", "gpu"),
    script:
        "../workflow_scripts/projnorm_shift.py"


rule projnorm_evaluate:
    input:
        unpack(jobwise(G.projnorm_eval_inputs)),
    output:
        per_set=paths.projnorm_table(name="per_set.csv"),
        correlations=paths.projnorm_table(name="correlations.csv"),
        correlations_view=report(paths.table_view(paths.projnorm_table(name="correlations.csv")),
                                 caption="../report/projnorm_correlations.rst", category="ProjNorm"),
        stress=paths.projnorm_table(name="stress.csv"),
        stress_view=report(paths.table_view(paths.projnorm_table(name="stress.csv")),
                           caption="../report/adversarial_stress.rst", category="ProjNorm"),
        stress_mse=paths.projnorm_table(name="stress_mse.csv"),
        figure=report(paths.projnorm_scatter(), caption="../report/projnorm_scatter.rst", category="ProjNorm"),
        metrics=paths.projnorm_table(name="rows.parquet"),
    params:
        study=jobwise(G.projnorm_study_json),
        atc_score=setting("projnorm/atc_score"),
    log:
        paths.log("projnorm", "{source}_evaluate"),
    benchmark:
        paths.benchmark("projnorm", "{source}_evaluate")
    conda:
        "../envs/csfbench.yaml"
    threads: res("projnorm_evaluate", "threads")
    resources:
        mem_mb=res("projnorm_evaluate", "mem_mb"),
        runtime=res("projnorm_evaluate", "runtime"),
    script:
        "../workflow_scripts/projnorm_evaluate.py"
