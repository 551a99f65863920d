# Confidence scoring functions: fit once per (model, projection group) on train + val, then score
# and evaluate every evaluation set. Shifted sets are evaluated against the ID test scores.


rule fit_csf:
    input:
        train="results/features/{source}/{model}/train.h5",
        val="results/features/{source}/{model}/val.h5",
    output:
        fit="results/csf/{source}/{model}/{projection}/fit.h5",
    params:
        spec=model_spec_json,
        # only the settings this group reads: a change elsewhere in `csf` does not rerun the fit
        csf=lambda w: csf_fit_json(w.projection),
    log:
        "results/logs/csf/{source}/{model}/{projection}/fit.log",
    benchmark:
        "results/benchmarks/csf/{source}/{model}/{projection}/fit.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("fit_csf", "threads", 2)
    resources:
        mem_mb=res("fit_csf", "mem_mb", 16000),
        runtime=res("fit_csf", "runtime", 120),
    script:
        "../workflow_scripts/fit_csf.py"


rule score_and_evaluate:
    input:
        unpack(score_inputs),
    output:
        scores="results/scores/{source}/{model}/{projection}/{dataset}.h5",
        metrics="results/metrics/{source}/{model}/{projection}/{dataset}.parquet",
    params:
        spec=model_spec_json,
        eval_set=eval_set_json,
    log:
        "results/logs/scores/{source}/{model}/{projection}/{dataset}.log",
    benchmark:
        "results/benchmarks/scores/{source}/{model}/{projection}/{dataset}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("score_csf", "threads", 1)
    resources:
        mem_mb=res("score_csf", "mem_mb", 8000),
        runtime=res("score_csf", "runtime", 30),
    script:
        "../workflow_scripts/score_and_evaluate.py"
