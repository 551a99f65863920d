# Aggregation: the results table (with the proximity stage's regimes) and the validation-based model
# selection (as the seed paper's code selects, per metric: the dropout/reward configuration with the best
# mean validation value over runs; Claros-Olivares & Brockmeier, Tables 8–10).


rule aggregate_results:
    input:
        metrics=all_metric_files(),
        # scheme `conformal` rows (rules/conformal.smk)
        conformal=conformal_metric_files(),
        # the pair analyses' rows: every (ID-role, OOD-role) pair and its schemes (rules/analyses.smk)
        pairs=pair_metric_files(),
        # the resolved near/mid/far regimes of the semantic OOD sets (rules/proximity.smk)
        regimes=[paths.proximity_regimes(source) for source in proximity_sources()],
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
