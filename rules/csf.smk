# Confidence scoring functions: fit once per (model, fit group) on train + val, then one job per
# (model, fit group) scores and evaluates every evaluation set; shifted sets are evaluated against
# the ID test scores.  Adding an evaluation set reruns the scoring job, never the fit.


rule fit_csf:
    input:
        train=paths.features(dataset="train"),
        val=paths.features(dataset="val"),
        # the grid tuning protocol's OOD validation set (csf.tuning.ood_validation), never an evaluation set
        ood_val=jobwise(G.csf_ood_validation),
    output:
        fit=paths.csf_fit(),
    params:
        spec=jobwise(G.model_spec_json),
        # only the settings this group reads: a change elsewhere in `csf` does not rerun the fit
        csf=jobwise(G.csf_fit_json),
    log:
        paths.log("csf", "{source}/{model}/{fit_group}_fit"),
    benchmark:
        paths.benchmark("csf", "{source}/{model}/{fit_group}_fit")
    conda:
        "../envs/csfbench.yaml"
    threads: res("fit_csf", "threads")
    resources:
        mem_mb=res("fit_csf", "mem_mb"),
        runtime=res("fit_csf", "runtime"),
        gpu=res("fit_csf", "gpu"),
        # csf.device (with gpu: the device of the blocked kernels); a resource, not a param: it changes no
        # result beyond rounding (docs/methods.md §5.16), so changing it reruns no job
        csf_device=setting("csf/device"),
    script:
        "../workflow_scripts/fit_csf.py"


rule score_csf:
    input:
        unpack(jobwise(G.score_inputs)),
    output:
        scores=paths.scores(),
        metrics=paths.metrics(),
    params:
        spec=jobwise(G.model_spec_json),
        eval_sets=jobwise(G.score_eval_sets_json),
        metrics=G.metric_names,
        bootstrap=G.bootstrap_json,
    log:
        paths.log("csf", "{source}/{model}/{fit_group}_score"),
    benchmark:
        paths.benchmark("csf", "{source}/{model}/{fit_group}_score")
    conda:
        "../envs/csfbench.yaml"
    threads: res("score_csf", "threads")
    resources:
        mem_mb=res("score_csf", "mem_mb"),
        runtime=res("score_csf", "runtime"),
        gpu=res("score_csf", "gpu"),
        # csf.device (with gpu: the device of the blocked kernels); a resource, not a param: it changes no
        # result beyond rounding (docs/methods.md §5.16), so changing it reruns no job
        csf_device=setting("csf/device"),
    script:
        "../workflow_scripts/score_csf.py"
