# Aggregation: the results table (with the proximity stage's regimes) and the validation-based model
# selection (spec 000 §1.7 V3).


rule aggregate_results:
    input:
        metrics=all_metric_files(),
        # the resolved near/mid/far regimes of the semantic OOD sets (rules/proximity.smk)
        regimes=[f"results/proximity/{source}/regimes.csv" for source in proximity_sources()],
    output:
        table="results/results.parquet",
        selection="results/tables/selected_configurations.csv",
    log:
        "results/logs/aggregate/results.log",
    benchmark:
        "results/benchmarks/aggregate/results.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("aggregate", "mem_mb", 16000),
        runtime=res("aggregate", "runtime", 60),
    script:
        "../workflow_scripts/aggregate_results.py"
