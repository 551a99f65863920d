"""Which ranking cells every evaluation set of a run entered, and why it did not enter the others.

A study can go silently empty: a set whose rows reach no ranking cell (its cell was skipped, the cell's
metrics have no rows of its scheme, or every block of the set was dropped as incomplete) would vanish
from the rankings without a word.  :func:`set_coverage` lists, for every evaluation set with test rows in
the results table, each cell of its source and regime (metric group × backbone × MCD flag) and whether
the set's rows were ranked there, with the reason when they were not (a backbone none of whose models is
evaluated on the set, e.g. outside the shift study, is said so).  The validation split is not a ranked set
(it selects the configurations) and is not listed.

Only ``ranking.incomplete: drop_blocks`` drops blocks (:mod:`csfbench.aggregate.ranking`); under
``drop_csfs`` (the default) a cell that drops CSF variants keeps every block, so each of its sets is ranked
there (the dropped variants are in the cell's JSON and the summary, not here).
"""
from __future__ import annotations

from typing import Any, Iterable

import pandas as pd

from csfbench.aggregate.cells import REGIMES, cell_regimes
from csfbench.evaluation import CONFORMAL_SCHEME, SHIFT_SCHEMES

COLUMNS = ["source", "dataset", "shift_type", "regime", "group", "backbone", "mcd", "ranked", "reason"]


#: the schemes of the CSF metric rows; other rows (ProjNorm's, whose ``covariate_sets`` pools several sets) are
#: not rows of an evaluation set
CSF_SCHEMES = ("misclf", *SHIFT_SCHEMES, CONFORMAL_SCHEME)


def _set_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The test-split CSF metric rows of ``table``."""
    return table[(table["split"] == "test") & table["scheme"].isin(CSF_SCHEMES)]


def evaluation_sets(table: pd.DataFrame) -> pd.DataFrame:
    """The (source, dataset, shift_type) of every set with test-split CSF metric rows in ``table``, sorted."""
    sets = _set_rows(table)[["source", "dataset", "shift_type"]].astype(str).drop_duplicates()
    return sets.sort_values(["source", "dataset"], kind="stable").reset_index(drop=True)


def _block_keys(frame: pd.DataFrame, blocks: list[str]) -> set[tuple[str, ...]]:
    """The blocks (as tuples of strings) that ``frame``'s rows fall into."""
    return set(frame[blocks].astype(str).itertuples(index=False, name=None))


def _cell_entry(result: dict[str, Any], rows: pd.DataFrame | None, dataset: str,
                evaluated: bool) -> tuple[bool, str | None]:
    """(ranked, reason) of one set in one cell: ``rows`` are the cell's ranked rows (None: none at all);
    ``evaluated``: whether a model of the cell's backbone and MCD flag has metric rows of the set."""
    metrics = result["metrics"]
    mine = None if rows is None else rows[rows["dataset"].astype(str) == dataset]
    if mine is None or mine.empty:
        if not evaluated:
            return False, "no model of this backbone (and MCD flag) is evaluated on this set"
        return False, f"no selected test rows of {metrics} in scheme '{result['scheme']}' for this set"
    if result["status"] != "ok":
        return False, f"cell skipped: {result['reason']}"
    blocks = list(result["blocks"])
    dropped = {tuple(str(d["block"][b]) for b in blocks) for d in result["dropped_blocks"]}
    kept = _block_keys(mine, blocks) - dropped
    if not kept:
        return False, (f"every block of this set was dropped as incomplete (some CSF variant has no value); "
                       f"{len(dropped)} dropped block(s) in the cell (ranking.incomplete: {result['incomplete']}; "
                       "drop_csfs keeps the blocks and drops those CSF variants instead)")
    return True, None


def set_coverage(table: pd.DataFrame, ranked: pd.DataFrame, results: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per evaluation set × ranking cell of its source and regime (:data:`COLUMNS`).

    ``table``: the results table; ``ranked``: its selected ranked rows
    (:func:`csfbench.aggregate.ranking.selected_ranked_rows`, with ``cell_regime``); ``results``: the
    ranking results of every declared cell.  A set's regime is its ``cell_regime`` in ``ranked`` (the
    computed regime when the proximity stage assigned one); a set with no ranked row at all gets the
    regime its shift type and configured regime give, or ``-`` with one row saying so when no cell
    takes it.  ``ranked`` is True when the set's rows entered the cell's ranking.
    """
    results = list(results)
    regime_of = (ranked[["source", "dataset", "cell_regime"]].astype(str).drop_duplicates()
                 .set_index(["source", "dataset"])["cell_regime"].to_dict())
    rows_of = {key: part for key, part in ranked.groupby(["backbone", "mcd", "source", "cell_regime"],
                                                          observed=True, sort=False)}
    evaluated = set(_set_rows(table)[["backbone", "mcd", "source", "dataset"]].drop_duplicates()
                    .astype({"backbone": str, "mcd": bool, "source": str, "dataset": str})
                    .itertuples(index=False, name=None))
    out = []
    for s in evaluation_sets(table).itertuples(index=False):
        regime = regime_of.get((s.source, s.dataset)) or _unranked_regime(table, s.source, s.dataset)
        cells = [r for r in results if r["analysis"]["source"] == s.source and r["analysis"]["regime"] == regime]
        base = {"source": s.source, "dataset": s.dataset, "shift_type": s.shift_type, "regime": regime}
        if not cells:
            out.append({**base, "group": None, "backbone": None, "mcd": None, "ranked": False,
                        "reason": f"no ranking cell of source '{s.source}' takes regime '{regime}' "
                                  f"(cells exist for {list(REGIMES)})"})
            continue
        for r in cells:
            a = r["analysis"]
            part = rows_of.get((a["backbone"], a["mcd"], a["source"], a["regime"]))
            if part is not None:
                part = part[part["metric"].isin(r["metrics"])]
            ranked_here, reason = _cell_entry(r, part, s.dataset,
                                              (a["backbone"], a["mcd"], s.source, s.dataset) in evaluated)
            out.append({**base, "group": a["group"], "backbone": a["backbone"], "mcd": a["mcd"],
                        "ranked": ranked_here, "reason": reason})
    return pd.DataFrame(out, columns=COLUMNS)


def _unranked_regime(table: pd.DataFrame, source: str, dataset: str) -> str:
    """The cell regime of a set none of whose rows was ranked, from its first test row."""
    rows = _set_rows(table)
    rows = rows[(rows["source"] == source) & (rows["dataset"] == dataset)]
    return str(cell_regimes(rows.head(1))[0])


def coverage_lines(coverage: pd.DataFrame) -> list[str]:
    """Human-readable lines: per set, the cells it was ranked in, and every cell it was not with the reason."""
    lines = []
    for (source, dataset), part in coverage.groupby(["source", "dataset"], sort=True):
        entered = part[part["ranked"].astype(bool)]
        head = (f"{source}/{dataset} ({part['shift_type'].iloc[0]}, regime {part['regime'].iloc[0]}): "
                f"ranked in {len(entered)} of {len(part)} cell(s)")
        lines.append(head)
        for row in part[~part["ranked"].astype(bool)].itertuples(index=False):
            where = "" if row.group is None or pd.isna(row.group) else \
                f"{row.group}/{row.backbone}{' MCD' if row.mcd else ''}: "
            lines.append(f"  not ranked in {where}{row.reason}")
    return lines
