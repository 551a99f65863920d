# Figures and tables of Claros-Olivares & Brockmeier's paper (Figures 1-2, Tables 2, 8, 10) from the
# rankings, the results table and the scores.



rule top_clique_map:
    input:
        rankings=jobwise(G.clique_map_inputs),
    output:
        csv=paths.table("top_cliques_{backbone}.csv"),
        png=report(paths.figure("top_cliques_{backbone}.png"), caption="../report/figure_top_cliques.rst",
                   category="Figures"),
        pdf=paths.figure("top_cliques_{backbone}.pdf"),
    params:
        sources=G.sources,
        group=G.setting("figures/clique_map_group"),
    log:
        paths.log("figures", "top_cliques_{backbone}"),
    benchmark:
        paths.benchmark("figures", "top_cliques_{backbone}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("top_clique_map", "threads")
    resources:
        mem_mb=res("top_clique_map", "mem_mb"),
        runtime=res("top_clique_map", "runtime"),
    script:
        "../workflow_scripts/top_clique_map.py"


rule clique_layer_table:
    input:
        rankings=G.ranking_files("json"),
    output:
        csv=paths.table("clique_layers.csv"),
        tex=paths.table("clique_layers.tex"),
        view=report(paths.table_view(paths.table("clique_layers.csv")), caption="../report/table_clique_layers.rst",
                    category="Tables"),
    log:
        paths.log("figures", "clique_layers"),
    benchmark:
        paths.benchmark("figures", "clique_layers")
    conda:
        "../envs/csfbench.yaml"
    threads: res("clique_layer_table", "threads")
    resources:
        mem_mb=res("clique_layer_table", "mem_mb"),
        runtime=res("clique_layer_table", "runtime"),
    script:
        "../workflow_scripts/clique_layer_table.py"


rule best_metric_table:
    input:
        table=paths.results_table(),
    output:
        csv=paths.table("table2_best.csv"),
        tex=paths.table("table2_best.tex"),
        view=report(paths.table_view(paths.table("table2_best.csv")), caption="../report/table_best.rst",
                    category="Tables"),
    params:
        metric=G.setting("figures/table_metric"),
        ranking=G.setting("ranking"),
    log:
        paths.log("figures", "table2_best"),
    benchmark:
        paths.benchmark("figures", "table2_best")
    conda:
        "../envs/csfbench.yaml"
    threads: res("best_metric_table", "threads")
    resources:
        mem_mb=res("best_metric_table", "mem_mb"),
        runtime=res("best_metric_table", "runtime"),
    script:
        "../workflow_scripts/best_metric_table.py"


rule selected_configuration_tables:
    input:
        selection=paths.selected_configurations(),
    output:
        dropout_csv=paths.table("table8_selected_dropout.csv"),
        dropout_tex=paths.table("table8_selected_dropout.tex"),
        dropout_view=report(paths.table_view(paths.table("table8_selected_dropout.csv")),
                            caption="../report/table_selected_dropout.rst", category="Tables"),
        reward_csv=paths.table("table10_selected_reward.csv"),
        reward_tex=paths.table("table10_selected_reward.tex"),
        reward_view=report(paths.table_view(paths.table("table10_selected_reward.csv")),
                           caption="../report/table_selected_reward.rst", category="Tables"),
    params:
        metric=G.setting("figures/table_metric"),
    log:
        paths.log("figures", "selected_configurations"),
    benchmark:
        paths.benchmark("figures", "selected_configurations")
    conda:
        "../envs/csfbench.yaml"
    threads: res("selected_configuration_tables", "threads")
    resources:
        mem_mb=res("selected_configuration_tables", "mem_mb"),
        runtime=res("selected_configuration_tables", "runtime"),
    script:
        "../workflow_scripts/selected_configuration_tables.py"


rule rc_curves:
    input:
        scores=jobwise(G.rc_inputs),
    output:
        csv=paths.table("rc_curves_{source}.csv"),
        png=report(paths.figure("rc_curves_{source}.png"), caption="../report/figure_rc_curves.rst",
                   category="Figures"),
        pdf=paths.figure("rc_curves_{source}.pdf"),
    params:
        shift_types=jobwise(G.rc_shift_types),
        csfs=G.rc_csfs(),
        ranking=G.setting("ranking"),
        title=jobwise(G.rc_title),
    log:
        paths.log("figures", "rc_curves_{source}"),
    benchmark:
        paths.benchmark("figures", "rc_curves_{source}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("rc_curves", "threads")
    resources:
        mem_mb=res("rc_curves", "mem_mb"),
        runtime=res("rc_curves", "runtime"),
    script:
        "../workflow_scripts/rc_curves.py"


# Figure 2 analogue: the pairwise Conover p-values of one ranking analysis (figures.heatmap; default the
# top-clique map's first column: clique map group, first backbone, non-MCD, first source, ID test set) as a
# heatmap and a CSV matrix.
rule conover_heatmap:
    input:
        ranking=G.heatmap_input(),
    output:
        csv=HEATMAP_FILES["csv"],
        png=report(HEATMAP_FILES["png"], caption="../report/figure_conover_heatmap.rst",
                   category="Figures"),
        pdf=HEATMAP_FILES["pdf"],
    log:
        paths.log("figures", "conover_heatmap"),
    benchmark:
        paths.benchmark("figures", "conover_heatmap")
    conda:
        "../envs/csfbench.yaml"
    threads: res("conover_heatmap", "threads")
    resources:
        mem_mb=res("conover_heatmap", "mem_mb"),
        runtime=res("conover_heatmap", "runtime"),
    script:
        "../workflow_scripts/conover_heatmap.py"
