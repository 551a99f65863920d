# Figures and tables of the paper (spec 000 §8) from the rankings, the results table and the scores.
from csfbench.report import figures as _figures
from csfbench.report import targets as report_targets

FIGURES = _figures.figure_settings(config.get("figures"))


rule top_clique_map:
    input:
        rankings=lambda w: report_targets.clique_map_inputs(config, w.backbone),
    output:
        csv="results/tables/top_cliques_{backbone}.csv",
        png=report("results/figures/top_cliques_{backbone}.png", caption="../report/figure_top_cliques.rst",
                   category="Figures"),
        pdf="results/figures/top_cliques_{backbone}.pdf",
    params:
        sources=SOURCES,
        group=FIGURES["clique_map_group"],
    wildcard_constraints:
        backbone="|".join(config["backbones"]),
    log:
        "results/logs/figures/top_cliques_{backbone}.log",
    benchmark:
        "results/benchmarks/figures/top_cliques_{backbone}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("figures", "mem_mb", 4000),
        runtime=res("figures", "runtime", 15),
    script:
        "../workflow_scripts/top_clique_map.py"


rule clique_layer_table:
    input:
        rankings=report_targets.ranking_files(config, "json"),
    output:
        csv=report("results/tables/clique_layers.csv", caption="../report/table_clique_layers.rst",
                   category="Tables"),
        tex="results/tables/clique_layers.tex",
    log:
        "results/logs/figures/clique_layers.log",
    benchmark:
        "results/benchmarks/figures/clique_layers.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("figures", "mem_mb", 4000),
        runtime=res("figures", "runtime", 15),
    script:
        "../workflow_scripts/clique_layer_table.py"


rule best_metric_table:
    input:
        table="results/results.parquet",
    output:
        csv=report("results/tables/table2_best.csv", caption="../report/table_best.rst", category="Tables"),
        tex="results/tables/table2_best.tex",
    params:
        metric=FIGURES["table_metric"],
        ranking=config.get("ranking", {}),
    log:
        "results/logs/figures/table2_best.log",
    benchmark:
        "results/benchmarks/figures/table2_best.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("figures", "mem_mb", 4000),
        runtime=res("figures", "runtime", 15),
    script:
        "../workflow_scripts/best_metric_table.py"


rule selected_configuration_tables:
    input:
        selection="results/tables/selected_configurations.csv",
    output:
        dropout_csv=report("results/tables/table8_selected_dropout.csv",
                           caption="../report/table_selected_dropout.rst", category="Tables"),
        dropout_tex="results/tables/table8_selected_dropout.tex",
        reward_csv=report("results/tables/table10_selected_reward.csv",
                          caption="../report/table_selected_reward.rst", category="Tables"),
        reward_tex="results/tables/table10_selected_reward.tex",
    params:
        metric=FIGURES["table_metric"],
    log:
        "results/logs/figures/selected_configurations.log",
    benchmark:
        "results/benchmarks/figures/selected_configurations.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("figures", "mem_mb", 4000),
        runtime=res("figures", "runtime", 15),
    script:
        "../workflow_scripts/selected_configuration_tables.py"


rule rc_curves:
    input:
        scores=lambda w: report_targets.rc_inputs(config, w.source),
    output:
        csv="results/tables/rc_curves_{source}.csv",
        png=report("results/figures/rc_curves_{source}.png", caption="../report/figure_rc_curves.rst",
                   category="Figures"),
        pdf="results/figures/rc_curves_{source}.pdf",
    params:
        scores_dir=lambda w: f"results/scores/{w.source}/{report_targets.rc_model(config, w.source)}",
        shift_types=lambda w: report_targets.rc_shift_types(config, w.source),
        csfs=FIGURES["rc_curves"]["csfs"],
        ranking=config.get("ranking", {}),
        title=lambda w: f"{w.source}: {report_targets.rc_model(config, w.source)}",
    log:
        "results/logs/figures/rc_curves_{source}.log",
    benchmark:
        "results/benchmarks/figures/rc_curves_{source}.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("figures", "mem_mb", 4000),
        runtime=res("figures", "runtime", 15),
    script:
        "../workflow_scripts/rc_curves.py"
