# Geometry of the trained feature spaces: neural-collapse metrics of every model's training features in
# the three regimes (unfiltered, global projection, class-predicted projection; spec 000 §7), one record
# per model, and one NC table per source. Runs when the config has a `geometry` section.


rule nc_metrics:
    input:
        train="results/features/{source}/{model}/train.h5",
        fits=expand("results/csf/{{source}}/{{model}}/{group}/fit.h5", group=NC_FIT_GROUPS),
    output:
        records="results/geometry/{source}/{model}/nc.csv",
    params:
        spec=model_spec_json,
        groups=NC_FIT_GROUPS,
        nc=json.dumps(config.get("geometry", {}).get("nc", {}), sort_keys=True),
    log:
        "results/logs/geometry/{source}/{model}/nc.log",
    benchmark:
        "results/benchmarks/geometry/{source}/{model}/nc.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("nc_metrics", "threads", 1)
    resources:
        mem_mb=res("nc_metrics", "mem_mb", 8000),
        runtime=res("nc_metrics", "runtime", 30),
    script:
        "../workflow_scripts/nc_metrics.py"


rule nc_table:
    input:
        records=lambda wildcards: nc_record_files(wildcards.source),
    output:
        csv=report(
            "results/tables/nc_{source}.csv",
            caption="../report/nc_table.rst",
            category="Tables",
            subcategory="Neural collapse",
            labels={"source": "{source}"},
        ),
        tex="results/tables/nc_{source}.tex",
    log:
        "results/logs/geometry/nc_table_{source}.log",
    benchmark:
        "results/benchmarks/geometry/nc_table_{source}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("nc_table", "mem_mb", 2000),
        runtime=res("nc_table", "runtime", 10),
    script:
        "../workflow_scripts/nc_table.py"
