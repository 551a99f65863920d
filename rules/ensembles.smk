# Deep ensembles: one job per (ensemble, scorer slot) reads the members' feature files (and, for a slot of the
# members' CSFs, their scores and metric files) and writes the ensemble's scores and metric rows; no forward pass,
# so adding an ensemble never retrains or re-extracts a member.


rule score_ensemble:
    input:
        unpack(jobwise(G.ensemble_inputs)),
    output:
        scores=paths.scores(model="{ensemble}", fit_group="{scorer}"),
        metrics=paths.metrics(model="{ensemble}", fit_group="{scorer}"),
    params:
        spec=jobwise(G.ensemble_spec_json),
        eval_sets=jobwise(G.ensemble_eval_sets_json),
        metrics=G.metric_names,
        bootstrap=G.bootstrap_json,
    log:
        paths.log("ensembles", "{source}/{ensemble}/{scorer}"),
    benchmark:
        paths.benchmark("ensembles", "{source}/{ensemble}/{scorer}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("score_ensemble", "threads")
    resources:
        mem_mb=res("score_ensemble", "mem_mb"),
        runtime=res("score_ensemble", "runtime"),
    script:
        "../workflow_scripts/score_ensemble.py"
