"""Jobs of ``rules/figures.smk``: the paper's figures and tables regenerated from the results
(Claros-Olivares & Brockmeier, Figures 1–2, Tables 2, 6, 8 and 10).  The drawing and the table layouts
live in :mod:`csfbench.report.figures` and :mod:`csfbench.report.tables`; each job here reads its
inputs, calls them and writes its outputs atomically."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from csfbench.aggregate.cells import ranking_settings
from csfbench.atomic import atomic_path
from csfbench.report.figures import (conover_matrix, plot_conover_heatmap, plot_rc_curves, plot_top_clique_map,
                                     rc_curves, save_figure, top_clique_membership)
from csfbench.report.tables import (DISPLAY_SCALE, best_metric_table, clique_layer_table, read_results,
                                    selected_configuration_table, write_table)
from csfbench.workflow.paths import table_view


def write_top_clique_map(json_paths: Iterable[str | Path], sources: Sequence[str], backbone: str, group: str,
                         csv_path: str | Path, png: str | Path, pdf: str | Path) -> pd.DataFrame:
    """Job: Figure 1 analogue of one backbone from its non-MCD ranking results of metric group ``group``."""
    membership = top_clique_membership(read_results(json_paths), sources)
    with atomic_path(csv_path) as tmp:
        membership.astype(int).to_csv(tmp)
    title = f"{backbone}: top clique per cell (metric group {group}, non-MCD)"
    save_figure(plot_top_clique_map(membership, title), png, pdf)
    return membership

def write_conover_heatmap(json_path: str | Path, csv_path: str | Path, png: str | Path,
                          pdf: str | Path) -> pd.DataFrame:
    """Job: the Conover p-value matrix of one ranking analysis (its JSON) as CSV (full precision, entities
    by mean rank; header only for a skipped analysis) and as a heatmap figure (:func:`plot_conover_heatmap`)."""
    (result,) = read_results([json_path])
    pvalues = conover_matrix(result)
    with atomic_path(csv_path) as tmp:
        pvalues.to_csv(tmp)
    save_figure(plot_conover_heatmap(pvalues, result), png, pdf)
    return pvalues

def write_rc_curves(score_files: Sequence[str | Path], shift_types: dict[str, str], csfs: Sequence[str],
                    ranking: dict, title: str, csv_path: str | Path, png: str | Path,
                    pdf: str | Path) -> pd.DataFrame:
    """Job: risk–coverage curves of one model as CSV and figure; ``shift_types`` maps each plotted set
    to its shift type, whose scheme is the ``ranking`` settings' (the ranked rows' scheme)."""
    schemes = ranking_settings(ranking)["schemes"]
    curves = rc_curves(score_files, {d: schemes[s] for d, s in shift_types.items()}, csfs)
    with atomic_path(csv_path) as tmp:
        curves.to_csv(tmp, index=False, float_format="%.6g")
    save_figure(plot_rc_curves(curves, title), png, pdf)
    return curves

def write_best_metric_table(results_table: str | Path, metric: str, ranking: dict, csv_path: str | Path,
                            tex_path: str | Path) -> pd.DataFrame:
    """Job: Table 2 analogue from ``results.parquet``."""
    frame = best_metric_table(pd.read_parquet(results_table), metric, ranking)
    scale = " (x1000)" if metric in DISPLAY_SCALE else ""
    write_table(frame, csv_path, tex_path, table_view(csv_path), f"Best {metric.upper()}{scale} per evaluation set "
                "among the validation-selected configurations, without and with MC dropout, and the CSF variant and "
                "paradigm achieving it: the mean over the n_runs runs with their standard deviation (best_sd, ddof 1; "
                "empty for a single run), and for a single run its bootstrap interval ci_low to ci_high at level "
                "ci_level (empty for several runs, whose spread best_sd gives).")
    return frame

def write_selected_configuration_tables(selection_csv: str | Path, metric: str, dropout_csv: str | Path,
                                        dropout_tex: str | Path, reward_csv: str | Path,
                                        reward_tex: str | Path) -> None:
    """Job: Table 8 (selected dropout) and Table 10 (selected DG reward) analogues."""
    selection = pd.read_csv(selection_csv)
    write_table(selected_configuration_table(selection, "dropout", metric), dropout_csv, dropout_tex,
                table_view(dropout_csv),
                f"Selected dropout flag (1 = the dropout model won on validation {metric.upper()}) per CSF variant.")
    reward = (selected_configuration_table(selection, "reward", metric, ["dg"]) if (selection["paradigm"] == "dg").any()
              else pd.DataFrame(columns=["backbone", "source", "csf"]))
    write_table(reward, reward_csv, reward_tex, table_view(reward_csv),
                f"Selected Deep Gamblers reward per CSF variant (validation {metric.upper()}).",
                empty_reason="No Deep Gamblers models in this run.")

def write_clique_layer_table(json_paths: Iterable[str | Path], csv_path: str | Path, tex_path: str | Path) -> None:
    """Job: Table 6 analogue over every ranked analysis."""
    write_table(clique_layer_table(read_results(json_paths)), csv_path, tex_path, table_view(csv_path),
                "Greedy layers of maximal cliques (Friedman, Conover post-hoc) per analysis; layer 1 is the "
                "top clique.", empty_reason="No analysis was ranked: every one was skipped (the rankings' summary "
                "gives the reasons).")
