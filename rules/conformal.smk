# Conformal evaluation (Novello, Dalmau & Andéol, arXiv 2403.11532): correction bands, computed once per
# (n, delta, method, Monte-Carlo size, seed) and cached as files; per model, conformal metric rows of every CSF
# variant on every shifted set (scheme `conformal`, merged into the results table) and conformal prediction
# sets; the report's figure and tables, drawn from the cached band files (the band-width panel's bands are
# conformal_band jobs too).  `conformal.enabled: false` leaves the stage without jobs.


rule conformal_band:
    output:
        band=paths.conformal_band(),
    wildcard_constraints:
        n=r"\d+",
        n_mc=r"\d+",
        seed=r"\d+",
        delta=r"0\.\d+(e-\d+)?|\de-\d+",
        method="|".join(["simes", "dkwm", "asymptotic", "mc_gamma0", "mc_search"]),
    params:
        band=jobwise(G.conformal_band_json),
    log:
        paths.log("conformal", "band_{method}_n{n}_delta{delta}_mc{n_mc}_seed{seed}"),
    benchmark:
        paths.benchmark("conformal", "band_{method}_n{n}_delta{delta}_mc{n_mc}_seed{seed}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("conformal_band", "threads")
    resources:
        mem_mb=res("conformal_band", "mem_mb"),
        runtime=res("conformal_band", "runtime"),
    script:
        "../workflow_scripts/conformal_band.py"


rule conformal_metrics:
    input:
        unpack(jobwise(G.conformal_inputs)),
    output:
        metrics=paths.conformal_metrics(),
    params:
        spec=jobwise(G.model_spec_json),
        conformal=G.conformal_fit_json(),
        bands=G.conformal_metric_bands_json(),
    log:
        paths.log("conformal", "{source}/{model}_metrics"),
    benchmark:
        paths.benchmark("conformal", "{source}/{model}_metrics")
    conda:
        "../envs/csfbench.yaml"
    threads: res("conformal_metrics", "threads")
    resources:
        mem_mb=res("conformal_metrics", "mem_mb"),
        runtime=res("conformal_metrics", "runtime"),
    script:
        "../workflow_scripts/conformal_metrics.py"


rule prediction_sets:
    input:
        unpack(jobwise(G.prediction_set_inputs)),
    output:
        table=paths.prediction_sets(),
    params:
        spec=jobwise(G.model_spec_json),
        settings=setting_json("conformal/prediction_sets"),
        batch_size=G.setting("network_csf/batch_size"),
        num_workers=res("prediction_sets", "num_workers"),
    log:
        paths.log("conformal", "{source}/{model}_prediction_sets"),
    benchmark:
        paths.benchmark("conformal", "{source}/{model}_prediction_sets")
    conda:
        "../envs/csfbench.yaml"
    threads: res("prediction_sets", "threads")
    resources:
        mem_mb=res("prediction_sets", "mem_mb"),
        runtime=res("prediction_sets", "runtime"),
        gpu=res("prediction_sets", "gpu"),
    script:
        "../workflow_scripts/prediction_sets.py"


rule conformal_report:
    input:
        results=paths.results_table(),
        prediction_sets=jobwise(G.prediction_set_files),
        scores=jobwise(G.conformal_figure_scores),
        bands=G.conformal_report_band_files(),
    output:
        png=report(paths.figure("conformal_{source}.png"), caption="../report/figure_conformal.rst",
                   category="Conformal evaluation"),
        pdf=paths.figure("conformal_{source}.pdf"),
        table1=paths.table("conformal_table1_{source}.csv"),
        table1_view=report(paths.table_view(paths.table("conformal_table1_{source}.csv")),
                           caption="../report/table_conformal.rst", category="Conformal evaluation"),
        table2=paths.table("conformal_table2_{source}.csv"),
        table2_view=report(paths.table_view(paths.table("conformal_table2_{source}.csv")),
                           caption="../report/table_prediction_sets.rst", category="Conformal evaluation"),
    params:
        conformal=setting("conformal"),
        bands=G.conformal_report_bands_json(),
    log:
        paths.log("conformal", "{source}_report"),
    benchmark:
        paths.benchmark("conformal", "{source}_report")
    conda:
        "../envs/csfbench.yaml"
    threads: res("conformal_report", "threads")
    resources:
        mem_mb=res("conformal_report", "mem_mb"),
        runtime=res("conformal_report", "runtime"),
    script:
        "../workflow_scripts/conformal_report.py"
