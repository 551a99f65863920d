# Rankings (spec 000 §5): Friedman → Conover → cliques → layers per analysis cell, after V3 selection.
from dataclasses import asdict
from pathlib import Path

from csfbench.aggregate.ranking import analyses as _analyses
from csfbench.report import targets as report_targets

RANKING_DIR = report_targets.RANKING_DIR


rule rank_csfs:
    input:
        table="results/results.parquet",
    output:
        json=report_targets.ranking_files(config, "json"),
        csv=report_targets.ranking_files(config, "csv"),
        summary=report(
            f"{RANKING_DIR}/summary.csv",
            caption="../report/ranking_summary.rst",
            category="Rankings",
        ),
    params:
        settings=config.get("ranking", {}),
        cells=[asdict(c) for c in _analyses(config)],
        out_dir=lambda w, output: str(Path(output.summary).parent),
    log:
        "results/logs/ranking/rank_csfs.log",
    benchmark:
        "results/benchmarks/ranking/rank_csfs.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("ranking", "mem_mb", 8000),
        runtime=res("ranking", "runtime", 30),
    script:
        "../workflow_scripts/rank_csfs.py"
