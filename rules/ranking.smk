# Rankings (Claros-Olivares & Brockmeier, §4.2 and App. C): Friedman / Iman–Davenport → Conover → cliques →
# layers per analysis cell, on the validation-selected configurations. Settings: the `ranking` section,
# complete (validate_config fills in the schema's defaults).
from pathlib import Path


RANKING_DIR = paths.rankings_dir()  # also read by rule all


rule rank_csfs:
    input:
        table=paths.results_table(),
        # the bootstrap replicates the score jobs keep for the clique stability (ranking.stability)
        metrics=G.metric_files(),
    output:
        json=G.ranking_files("json"),
        csv=G.ranking_files("csv"),
        summary=paths.ranking_summary(),
        summary_view=report(
            paths.table_view(paths.ranking_summary()),
            caption="../report/ranking_summary.rst",
            category="Rankings",
        ),
        stability=paths.clique_stability(),
        stability_view=report(
            paths.table_view(paths.clique_stability()),
            caption="../report/clique_stability.rst",
            category="Rankings",
        ),
        ensembles=paths.ensemble_ranking(),
        ensembles_view=report(
            paths.table_view(paths.ensemble_ranking()),
            caption="../report/ensemble_ranking.rst",
            category="Rankings",
        ),
        coverage=paths.ranked_sets(),
        coverage_view=report(
            paths.table_view(paths.ranked_sets()),
            caption="../report/ranked_sets.rst",
            category="Rankings",
        ),
    params:
        settings=G.setting("ranking"),
        cells=G.ranking_cells(),
        out_dir=lambda w, output: str(Path(output.summary).parent),
    log:
        paths.log("ranking", "rank_csfs"),
    benchmark:
        paths.benchmark("ranking", "rank_csfs")
    conda:
        "../envs/csfbench.yaml"
    threads: res("rank_csfs", "threads")
    resources:
        mem_mb=res("rank_csfs", "mem_mb"),
        runtime=res("rank_csfs", "runtime"),
    script:
        "../workflow_scripts/rank_csfs.py"
