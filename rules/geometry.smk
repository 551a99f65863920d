# Geometry of the trained feature spaces: neural-collapse metrics of every model's training features in
# the three regimes (unfiltered, global projection, class-predicted projection), one record per model,
# and one NC table per source.  Runs when the config has a `geometry` section.


rule nc_metrics:
    input:
        train=paths.features(dataset="train"),
        fits=jobwise(G.nc_fits),
    output:
        records=paths.nc_records(),
    params:
        spec=jobwise(G.model_spec_json),
        fit_groups=G.nc_fit_groups(),
        nc=setting_json("geometry/nc"),
    log:
        paths.log("geometry", "{source}/{model}/nc"),
    benchmark:
        paths.benchmark("geometry", "{source}/{model}/nc")
    conda:
        "../envs/csfbench.yaml"
    threads: res("nc_metrics", "threads")
    resources:
        mem_mb=res("nc_metrics", "mem_mb"),
        runtime=res("nc_metrics", "runtime"),
    script:
        "../workflow_scripts/nc_metrics.py"


rule nc_table:
    input:
        records=jobwise(G.nc_record_files),
    output:
        csv=paths.nc_table(ext="csv"),
        tex=paths.nc_table(ext="tex"),
        view=report(paths.table_view(paths.nc_table(ext="csv")), caption="../report/nc_table.rst", category="Tables",
                    subcategory="Neural collapse", labels={"source": "{source}"}),
    log:
        paths.log("geometry", "nc_table_{source}"),
    benchmark:
        paths.benchmark("geometry", "nc_table_{source}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("nc_table", "threads")
    resources:
        mem_mb=res("nc_table", "mem_mb"),
        runtime=res("nc_table", "runtime"),
    script:
        "../workflow_scripts/nc_table.py"
