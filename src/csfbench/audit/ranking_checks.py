"""The check of the ranked cells: fewer independent blocks than Friedman's test needs (:func:`few_independent_blocks`),
and how a cell's independent blocks are counted (:func:`cell_record`).

Blocks that differ only in ``metric`` (AUGRC and AURC of one dataset × paradigm) are computed from the same
predictions and confidences: they are not independent replicates of the comparison, so they count once.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from csfbench.aggregate.cells import Analysis
from csfbench.audit.findings import Finding, Thresholds
from csfbench.audit.records import AuditInputs, CellRecord

#: the block column whose values share the predictions of a block
SHARED = "metric"


def _cell_rows(result: dict[str, Any], rows: pd.DataFrame) -> pd.DataFrame:
    """The ranked rows (``csfbench.aggregate.ranking.selected_ranked_rows``: with ``cell_regime``) of the cell of a
    ranking JSON ``result``: its backbone, MCD flag, source, regime and metrics."""
    cell = result["analysis"]
    keep = ((rows["backbone"] == cell["backbone"]) & (rows["mcd"] == bool(cell["mcd"]))
            & (rows["source"] == cell["source"]) & (rows["cell_regime"] == cell["regime"])
            & rows["metric"].isin(result["metrics"]))
    return rows[keep]


def _kept_blocks(result: dict[str, Any], rows: pd.DataFrame) -> pd.DataFrame:
    """The distinct blocks of the cell that the test used: those of its rows less the JSON's ``dropped_blocks``."""
    columns = list(result["blocks"])
    blocks = _cell_rows(result, rows)[columns].drop_duplicates()
    dropped = {tuple(str(d["block"][c]) for c in columns) for d in result.get("dropped_blocks", [])}
    if dropped:
        labels = blocks.astype(str).apply(tuple, axis=1)
        blocks = blocks[~labels.isin(dropped)]
    return blocks


def independent_blocks(blocks: pd.DataFrame) -> int:
    """The blocks left when blocks that differ only in :data:`SHARED` count once (``blocks``: distinct block keys,
    one column per block column); every block shares one set of predictions when :data:`SHARED` is the only
    block column."""
    others = [c for c in blocks.columns if c != SHARED]
    if not len(blocks):
        return 0
    return len(blocks[others].drop_duplicates()) if others else 1


def cell_record(result: dict[str, Any], rows: pd.DataFrame) -> CellRecord | None:
    """The record of a ranking JSON ``result`` (:func:`csfbench.aggregate.ranking.run_analysis`) with its
    independent blocks counted on ``rows``; None for a skipped cell (the coverage table says why)."""
    if result["status"] != "ok":
        return None
    return CellRecord(Analysis(**result["analysis"]).name, tuple(result["blocks"]), int(result["n_blocks"]),
                      independent_blocks(_kept_blocks(result, rows)), dict(result["friedman"]),
                      dict(result["iman_davenport"]), dict(result["omnibus"]))


def _p(value) -> str:
    return "not finite" if value is None else f"{value:.3g}"


def _omnibus(cell: CellRecord) -> str:
    """The cell's omnibus result in words: Friedman's and Iman–Davenport's statistics, p-values and decision."""
    omnibus = cell.omnibus
    decision = "rejects" if omnibus.get("rejected") else "does not reject"
    posthoc = "the post-hoc cliques were computed" if omnibus.get("posthoc_applied") else \
        "the post-hoc step was withheld (omnibus gate)"
    return (f"Friedman chi2 = {_p(cell.friedman.get('statistic'))} (p = {_p(cell.friedman.get('pvalue'))}), "
            f"Iman-Davenport F = {_p(cell.iman_davenport.get('statistic'))} "
            f"(p = {_p(cell.iman_davenport.get('pvalue'))}), which {decision} equal mean ranks at alpha = "
            f"{omnibus.get('alpha', float('nan')):g}; {posthoc}")


def few_independent_blocks(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """Ranked cells with fewer than ``min_blocks`` independent blocks, with the cell's omnibus result.  Value: the
    independent blocks; threshold: the minimum."""
    least = thresholds.min_blocks
    findings = []
    for cell in inputs.cells:
        if cell.independent_blocks >= least:
            continue
        shared = (f" ({cell.n_blocks} blocks of {' × '.join(cell.block_columns)}, but blocks that differ only in "
                  "metric share their predictions)") if SHARED in cell.block_columns else ""
        findings.append(Finding(
            "few_independent_blocks", "warning", cell.name, float(cell.independent_blocks), float(least),
            f"the cell ranks its CSF variants over {cell.independent_blocks} independent blocks{shared}, fewer than "
            f"{least}: Friedman's chi-square approximation, and the Iman-Davenport F built on it, are unreliable with "
            f"so few (Demšar 2006, JMLR 7, §3.2.2). Its omnibus test: {_omnibus(cell)}.",
            "Add evaluation sets or paradigms to this cell, or several runs with run in ranking.blocks; otherwise "
            "read its cliques as descriptive only (ranking.omnibus_gate: true withholds them where the omnibus test "
            "does not reject)."))
    return findings
