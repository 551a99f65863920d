# Aggregation: the results table (with the proximity stage's regimes) and the validation-based model
# selection (as Claros-Olivares & Brockmeier's code selects, per metric: the dropout/reward configuration with the best
# mean validation value over runs; Claros-Olivares & Brockmeier, Tables 8–10).


rule aggregate_results:
    input:
        metrics=G.metric_files(),
        # scheme `conformal` rows (rules/conformal.smk)
        conformal=G.conformal_metric_files(),
        # the pair analyses' rows: every (ID-role, OOD-role) pair and its schemes (rules/analyses.smk)
        pairs=G.pair_metric_files(),
        # the resolved near/mid/far regimes of the semantic OOD sets (rules/proximity.smk)
        regimes=G.proximity_regime_files(),
    output:
        table=paths.results_table(),
        selection=paths.selected_configurations(),
    log:
        paths.log("aggregate", "results"),
    benchmark:
        paths.benchmark("aggregate", "results")
    conda:
        "../envs/csfbench.yaml"
    threads: res("aggregate_results", "threads")
    resources:
        mem_mb=res("aggregate_results", "mem_mb"),
        runtime=res("aggregate_results", "runtime"),
    script:
        "../workflow_scripts/aggregate_results.py"
