# CSFs that need the network (ODIN with input perturbation, GRAM, RankFeat; docs/methods.md §5.14): fitted once
# per model on its ID training and validation images; then one job per model runs the network over every
# scored evaluation set and writes the scores file and the metric rows in the format and place of the other
# CSFs' (fit group `network`), so that the results table, rankings and report take them like any CSF.  As for
# score_csf, one job per model (not per set) keeps the job count down; adding a set reruns it, never the fit.
# `network_csf.methods: []` leaves the stage without jobs.


rule fit_network_csf:
    input:
        unpack(jobwise(G.network_fit_inputs)),
    output:
        fit=paths.network_fit(),
    params:
        spec=jobwise(G.model_spec_json),
        settings=G.network_fit_json(),
        batch_size=G.setting("network_csf/batch_size"),
        num_workers=res("fit_network_csf", "num_workers"),
    log:
        paths.log("network_csf", "{source}/{model}/fit"),
    benchmark:
        paths.benchmark("network_csf", "{source}/{model}/fit")
    conda:
        "../envs/csfbench.yaml"
    threads: res("fit_network_csf", "threads")
    resources:
        mem_mb=res("fit_network_csf", "mem_mb"),
        runtime=res("fit_network_csf", "runtime"),
        gpu=res("fit_network_csf", "gpu"),
    script:
        "../workflow_scripts/fit_network_csf.py"


rule network_csf:
    input:
        unpack(jobwise(G.network_score_inputs)),
    output:
        scores=paths.scores(fit_group=NETWORK_SCORER),
        metrics=paths.metrics(fit_group=NETWORK_SCORER),
    params:
        spec=jobwise(G.model_spec_json),
        eval_sets=jobwise(G.score_eval_sets_json),
        metrics=G.metric_names,
        bootstrap=G.bootstrap_json,
        batch_size=G.setting("network_csf/batch_size"),
        num_workers=res("network_csf", "num_workers"),
    log:
        paths.log("network_csf", "{source}/{model}/score"),
    benchmark:
        paths.benchmark("network_csf", "{source}/{model}/score")
    conda:
        "../envs/csfbench.yaml"
    threads: res("network_csf", "threads")
    resources:
        mem_mb=res("network_csf", "mem_mb"),
        runtime=res("network_csf", "runtime"),
        gpu=res("network_csf", "gpu"),
    script:
        "../workflow_scripts/network_csf.py"
