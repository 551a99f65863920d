"""The paper's ranking analysis on the results table after validation-based model selection
(Claros-Olivares & Brockmeier, §4.2–4.3, App. C, Figure 1).

One *analysis* (cell) = metric group × backbone × MCD flag × source × evaluation regime. Its rows are
the validation-selected (:mod:`csfbench.aggregate.selection`) test-split rows of that cell; its
entities are the CSF variants
(``"MSR"``, ``"MSR global"``, ``"KPCA RecError class_pred"``: CSF name, then the projection unless it
is ``none``); its blocks are the ``blocks`` columns (default dataset × paradigm × metric, the
paper-time Figure 1 design; add ``run`` for the worked example's design), with the runs averaged
inside a block when ``run`` is not a block column. Lower metric value = better (AUGRC, AURC, ...),
unless :func:`csfbench.metrics.higher_is_better`; a group mixes only
metrics of one orientation.

Regimes: ``test`` (the ID test set, misclassification), the semantic regimes ``near``/``mid``/``far``
(the rows' ``regime``), ``semantic`` (a semantic set with neither a configured nor a computed regime),
``covariate`` and ``adversarial``. The failure scheme of each shift type is a
setting (``ranking.schemes``; the schema's defaults are the paper's protocols, ``misclf`` within
ID/covariate/adversarial sets and ``correct_vs_ood`` for semantic sets).  A conformal metric
(``auroc@mc_search@0.05``: :func:`csfbench.evaluation.conformal_metric`) exists only in the rows of scheme
``conformal``, so a group of conformal metrics ranks those rows whatever the shift type's scheme.

Every analysis records the Friedman and Iman–Davenport statistics and p-values and whether the omnibus
test rejected equal mean ranks at ``alpha`` (JSON ``friedman``, ``iman_davenport``, ``omnibus``; summary
columns ``friedman_*``, ``iman_davenport_*``, ``omnibus_*``). ``ranking.omnibus_gate`` (default false,
the paper's published cliques) makes a cell whose omnibus test does not reject one clique and one layer of
all its CSF variants (:func:`csfbench.stats.rank_table`).

Settings: the config's ``ranking`` section as :func:`csfbench.workflow.settings.validate_config` completes it
from ``config/schema.yaml`` (every default lives there); :func:`csfbench.aggregate.cells.ranking_settings` only checks it.

Every declared analysis writes a JSON and a CSV: a cell with too little data (no rows, fewer than two
CSF variants or complete blocks, every block tied) is written with ``status: "skipped"`` and the
reason instead of failing the job.
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from csfbench.aggregate.cells import SHIFT_TYPE, Analysis, cell_regimes, is_conformal
from csfbench.aggregate.selection import selected_rows
from csfbench.metrics import higher_is_better
from csfbench.evaluation import CONFORMAL_SCHEME, ID_TEST, base_metric
from csfbench.stats import IncompleteBlocksWarning, StatsInputError, rank_table

log = logging.getLogger(__name__)

CSV_COLUMNS = ["entity", "mean_rank", "layer", "top_clique"]


def variant_name(csf: str, projection: str) -> str:
    """Entity name of a CSF variant: the CSF name, then the projection unless it is ``none``."""
    return csf if projection == "none" else f"{csf} {projection}"


def _ranked_metrics(settings: dict) -> list[str]:
    """Every metric of the configured metric groups, sorted."""
    return sorted({m for group in settings["metric_groups"].values() for m in group})


def ranked_scheme(metrics: Iterable[str], shift_type: str, settings: dict) -> str:
    """The scheme a metric group is ranked on for a shift type: ``conformal`` for conformal metrics,
    else the configured scheme of the shift type."""
    return CONFORMAL_SCHEME if all(map(is_conformal, metrics)) else settings["schemes"][shift_type]


def _ranked_scheme(table: pd.DataFrame, settings: dict) -> pd.Series:
    """Rows whose scheme is the ranked scheme of their metric and shift type (vectorised: no per-row
    mapping): the ``conformal`` rows of conformal metrics, the configured scheme's rows of the others."""
    conformal = table["metric"].astype(str).str.contains("@", regex=False)
    mask = conformal & (table["scheme"] == CONFORMAL_SCHEME)
    # the classical rows with the ID test split in the ID role (not the pair analyses' other ID-role sets)
    classical = ~conformal & (table["id_set"].isna() | (table["id_set"] == ID_TEST))
    for shift_type, scheme in settings["schemes"].items():
        mask |= classical & (table["shift_type"] == shift_type) & (table["scheme"] == scheme)
    return mask


def ranked_rows(selected: pd.DataFrame, settings: dict) -> pd.DataFrame:
    """The selected test-split rows of the ranked schemes, with ``cell_regime`` and ``entity`` columns."""
    rows = selected[(selected["split"] == "test") & _ranked_scheme(selected, settings)]
    rows = rows[rows["metric"].isin(_ranked_metrics(settings))]
    entity = [variant_name(c, p) for c, p in zip(rows["csf"].astype(str), rows["variant"].astype(str))]
    return rows.assign(cell_regime=cell_regimes(rows), entity=entity)


def selected_ranked_rows(table: pd.DataFrame, settings: dict, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """:func:`ranked_rows` of the validation-selected rows of ``metrics`` (default: every group's metrics).

    The table is cut down first to the rows the result depends on: those metrics (selection is per
    metric; a conformal metric is selected by its base metric), and the validation rows plus the ranked scheme of each shift type (on the paper grid this
    keeps ~6 % of the rows, so selection does not merge the whole table).
    """
    metrics = _ranked_metrics(settings) if metrics is None else list(metrics)
    validation = sorted(set(metrics) | {base_metric(m) for m in metrics})  # a conformal metric's selection metric
    keep = ((table["split"] == "val") & table["metric"].isin(validation)) | (
        table["metric"].isin(metrics) & _ranked_scheme(table, settings))
    table = table[keep]
    return ranked_rows(selected_rows(table) if len(table) else table, settings)


def run_analysis(rows: pd.DataFrame | None, analysis: Analysis, settings: dict) -> dict[str, Any]:
    """Rank one cell (``rows``: its :func:`ranked_rows`, or None); a JSON-ready dict with ``status``."""
    metrics = list(settings["metric_groups"][analysis.group])
    header = {"analysis": asdict(analysis), "metrics": metrics, "blocks": list(settings["blocks"]),
              "scheme": ranked_scheme(metrics, SHIFT_TYPE[analysis.regime], settings)}
    if rows is None or rows.empty:
        return {**header, "status": "skipped", "reason": f"no selected rows for regime '{analysis.regime}' of "
                f"{analysis.backbone} ({'MCD' if analysis.mcd else 'non-MCD'}) on {analysis.source} with metrics {metrics}"}
    blocks = list(settings["blocks"])
    means = rows.groupby(blocks + ["entity"], as_index=False, observed=True, sort=False)["value"].mean()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IncompleteBlocksWarning)  # the dropped blocks are in the result
            result = rank_table(means, blocks, "entity", "value", alpha=settings["alpha"],
                                p_adjust=settings["p_adjust"], higher_is_better=higher_is_better(metrics[0]),
                                omnibus_gate=settings["omnibus_gate"])
    except StatsInputError as err:
        return {**header, "status": "skipped", "reason": str(err)}
    return {**header, "status": "ok", "reason": None, **result}


def ranking_frame(result: dict[str, Any]) -> pd.DataFrame:
    """Per-entity table of a result: mean rank, greedy layer (1 = best; empty = none), top-clique flag."""
    if result["status"] != "ok":
        return pd.DataFrame(columns=CSV_COLUMNS)
    layer_of = {m: i for i, layer in enumerate(result["layers"], 1) for m in layer["members"]}
    rows = [{"entity": e, "mean_rank": r, "layer": layer_of.get(e), "top_clique": layer_of.get(e) == 1}
            for e, r in result["mean_ranks"].items()]
    return pd.DataFrame(rows, columns=CSV_COLUMNS).astype({"layer": "Int64"})


def summary_row(result: dict[str, Any]) -> dict[str, Any]:
    """One line of the summary table for an analysis result."""
    a = result["analysis"]
    ok = result["status"] == "ok"
    return {"group": a["group"], "backbone": a["backbone"], "mcd": a["mcd"], "source": a["source"],
            "regime": a["regime"], "status": result["status"], "reason": result["reason"],
            "n_entities": len(result["mean_ranks"]) if ok else 0, "n_blocks": result["n_blocks"] if ok else 0,
            "n_dropped_blocks": len(result["dropped_blocks"]) if ok else 0,
            "friedman_chi2": result["friedman"]["statistic"] if ok else None,
            "friedman_p": result["friedman"]["pvalue"] if ok else None,
            "iman_davenport_f": result["iman_davenport"]["statistic"] if ok else None,
            "iman_davenport_p": result["iman_davenport"]["pvalue"] if ok else None,
            "omnibus_rejected": result["omnibus"]["rejected"] if ok else None,
            "omnibus_gate": result["omnibus"]["gate"] if ok else None,
            "posthoc_applied": result["omnibus"]["posthoc_applied"] if ok else None,
            "top_clique": "; ".join(result["layers"][0]["members"]) if ok else ""}


def rank_results(table: pd.DataFrame, cells: Iterable[Analysis], settings: dict) -> list[dict[str, Any]]:
    """Select (validation-based) and rank every analysis of ``cells`` on the results ``table``."""
    return rank_cells(selected_ranked_rows(table, settings), cells, settings)


def rank_cells(rows: pd.DataFrame, cells: Iterable[Analysis], settings: dict) -> list[dict[str, Any]]:
    """Rank every analysis of ``cells`` on ``rows``, the :func:`selected_ranked_rows` of a results table."""
    by_cell: dict[tuple, pd.DataFrame] = {}
    keys = ["backbone", "mcd", "source", "cell_regime"]
    for key, part in rows.groupby(keys, observed=True, sort=False):
        by_cell[(str(key[0]), bool(key[1]), str(key[2]), str(key[3]))] = part
    results = []
    for cell in cells:
        part = by_cell.get((cell.backbone, cell.mcd, cell.source, cell.regime))
        if part is not None:
            part = part[part["metric"].isin(settings["metric_groups"][cell.group])]
        results.append(run_analysis(part, cell, settings))
    return results
