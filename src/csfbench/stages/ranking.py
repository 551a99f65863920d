"""Job of ``rules/ranking.smk``: every ranking analysis of the results table (Friedman / Iman–Davenport,
Conover post-hoc, maximal cliques and their greedy layers; Claros-Olivares & Brockmeier, §4.2 and App. C)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from csfbench.aggregate.cells import Analysis, output_paths, ranking_settings
from csfbench.aggregate.coverage import coverage_lines, set_coverage
from csfbench.aggregate.ensemble_ranking import rank_ensembles
from csfbench.aggregate.ranking import rank_cells, ranking_frame, selected_ranked_rows, stability_table, summary_row
from csfbench.aggregate.stability import read_replicates, with_replicates
from csfbench.atomic import atomic_path, write_json
from csfbench.stages.report_tables import write_report_table

log = logging.getLogger(__name__)


def write_rankings(results_table: str | Path, settings_section: dict, cells: list[Analysis | dict],
                   out_dir: str | Path, summary_csv: str | Path, coverage_csv: str | Path,
                   stability_csv: str | Path, ensembles_csv: str | Path,
                   metric_files: list[str | Path] = ()) -> list[dict[str, Any]]:
    """Rank every analysis of ``cells`` (:class:`Analysis` or its fields as a dict) on the results table
    and write their JSON/CSV files (:func:`output_paths`), the summary table, the coverage table
    (:func:`csfbench.aggregate.coverage.set_coverage`: which cells every evaluation set entered) and the clique
    stability table (:func:`csfbench.aggregate.ranking.stability_table`), the stability from the bootstrap
    replicates kept in ``metric_files`` (the score jobs' metric rows), and every deep ensemble ranked beside its
    members (:func:`csfbench.aggregate.ensemble_ranking.rank_ensembles`)."""
    settings = ranking_settings(settings_section)
    cells = [c if isinstance(c, Analysis) else Analysis(**c) for c in cells]
    table = pd.read_parquet(results_table)
    rows = selected_ranked_rows(table, settings)
    if settings["stability"]["n_replicates"]:
        rows = with_replicates(rows, read_replicates(list(metric_files)))
    results = rank_cells(rows, cells, settings)
    files = output_paths(out_dir, cells)
    for result, json_path, csv_path in zip(results, files["json"], files["csv"]):
        write_json(result, json_path, indent=1)
        with atomic_path(csv_path) as tmp:
            ranking_frame(result).to_csv(tmp, index=False)
    write_report_table(pd.DataFrame([summary_row(r) for r in results]), summary_csv,
                 "Ranking analyses: omnibus tests, number of CSF variants and blocks, and the top clique")
    coverage = set_coverage(table, rows, results)
    write_report_table(coverage, coverage_csv, "Which ranking cells every evaluation set entered, and why not",
                 empty_reason="No evaluation set has test rows in the results table.")
    write_report_table(stability_table(results), stability_csv,
                       "Clique stability: the share of bootstrap replicates in which each CSF variant is in its cell's "
                       "top clique, and its mean layer",
                       empty_reason=_no_stability(results))
    write_report_table(rank_ensembles(table, settings), ensembles_csv,
                       "Deep ensembles ranked beside their members: mean rank, layer and top clique of each model",
                       empty_reason="The config declares no deep ensemble (the `ensembles` section).")
    n_ok = sum(r["status"] == "ok" for r in results)
    log.info("%d analyses ranked, %d skipped", n_ok, len(results) - n_ok)
    for result in results:
        if result["status"] != "ok":
            log.info("skipped %s: %s", Analysis(**result["analysis"]).name, result["reason"])
    for line in coverage_lines(coverage):
        log.info("%s", line)
    return results


def _no_stability(results: list[dict[str, Any]]) -> str:
    """Why no cell has a clique stability: the first ranked cell's reason (or that no cell was ranked)."""
    reasons = [r["stability"]["reason"] for r in results if r["status"] == "ok"]
    return f"No cell has a clique stability: {reasons[0]}." if reasons else "No cell was ranked."
