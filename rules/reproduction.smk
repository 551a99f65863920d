# Reproduction certificate (csfbench.reproduction; docs/reproducibility.md): every published value csfbench can
# recompute — from the papers' own published inputs, or from this run's results where the run has what a target
# needs — with its tolerance and verdict. Its report category sorts first (the report lists categories
# alphabetically), so the report's results open with it.


rule reproduction_certificate:
    input:
        table=paths.results_table(),
        nc=list(G.nc_table_files().values()),
    output:
        table=paths.reproduction_table(),
        view=report(paths.table_view(paths.reproduction_table()), caption="../report/reproduction.rst",
                    category="Certificate of reproduction"),
    params:
        ranking=G.setting("ranking"),
        nc_sources=list(G.nc_table_files()),
    log:
        paths.log("reproduction", "certificate"),
    benchmark:
        paths.benchmark("reproduction", "certificate")
    conda:
        "../envs/csfbench.yaml"
    threads: res("reproduction_certificate", "threads")
    resources:
        mem_mb=res("reproduction_certificate", "mem_mb"),
        runtime=res("reproduction_certificate", "runtime"),
    script:
        "../workflow_scripts/reproduction_certificate.py"
