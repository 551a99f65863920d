# Self-audit of the run (csfbench.audit; docs/methods.md, "Self-audit"): checks of the results rows, the CSF and
# network-pass fits, the rankings, the models' accuracy and the conformal prediction sets, each finding with its
# cause and what to change, in one table of the report. Thresholds: the `audit` section (defaults:
# config/schema.yaml).


rule audit:
    input:
        table=paths.results_table(),
        rankings=G.ranking_files("json"),
        **G.audit_inputs(),
    output:
        table=paths.audit_table(),
        view=report(paths.table_view(paths.audit_table()), caption="../report/audit.rst", category="Self-audit"),
    params:
        audit=G.setting("audit"),
        ranking=G.setting("ranking"),
        n_classes=G.source_classes(),
        mcd_passes=G.mcd_passes(),
    log:
        paths.log("audit", "audit"),
    benchmark:
        paths.benchmark("audit", "audit")
    conda:
        "../envs/csfbench.yaml"
    threads: res("audit", "threads")
    resources:
        mem_mb=res("audit", "mem_mb"),
        runtime=res("audit", "runtime"),
    script:
        "../workflow_scripts/audit.py"
