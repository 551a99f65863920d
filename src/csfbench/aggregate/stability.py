"""Clique stability of a ranking cell: how often each CSF variant is in the top clique when the ranking is repeated
on bootstrap replicates of the block values.

The score jobs keep the first R bootstrap replicates of every ranked metric row (:class:`csfbench.evaluation.Bootstrap`
``replicates``; column :data:`csfbench.evaluation.REPLICATE_COLUMN`).  The replicates are paired: every CSF variant
of one model, mode, evaluation set and scheme is evaluated on the same resamples, so replicate b of a block compares
the variants on one resample of each of its sets.  A block's replicate b is the mean of its rows' replicate b, as
its value is the mean of its rows' values (the runs averaged inside a block).  Friedman → Conover → cliques →
greedy layers (:func:`csfbench.stats.rank_blocks`, the cell's own settings) then run on each replicate's blocks ×
variants matrix, and every variant gets

- ``top_clique_share``: the share of the ranked replicates in which it is a member of layer 1 (the top clique),
  in [0, 1]; 1 = in the top clique on every replicate;
- ``mean_layer``: its mean greedy layer (1 = best) over the replicates in which it is in some layer (null when it
  is in none), and ``n_unlayered``: the number of replicates in which it is in no layer.

A replicate on which every block ties every variant cannot be ranked; it is counted in ``n_tied`` and left out of
the shares.  This is the bootstrap clique-stability idea of Hall & Miller (2009, "Using the bootstrap to quantify
the authority of an empirical ranking", Ann. Statist. 37(6B)) applied to the cliques of Claros-Olivares &
Brockmeier (§4.2, App. C): the cell's published clique is the point estimate, the share says how much of it the
sampling noise of its evaluation sets supports.  The Monte-Carlo standard error of a share s over R replicates is
√(s(1 − s)/R) (at most 0.05 at R = 100).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

from csfbench.aggregate.results_table import KEYS
from csfbench.evaluation import REPLICATE_COLUMN
from csfbench.stats import StatsInputError, rank_blocks


def block_replicates(rows: pd.DataFrame, blocks: Sequence[str], kept: pd.DataFrame,
                     n_replicates: int) -> tuple[np.ndarray | None, list[str], str | None]:
    """(replicates × blocks × entities array, entity names, None) of the cell's ``rows`` restricted to the
    (blocks, entity) pairs of ``kept`` (the ranked block means), each block's replicate the mean of its rows'; or
    (None, [], the reason) when some ranked row has no replicates.  At most ``n_replicates`` replicates (the
    first ones) are used."""
    if REPLICATE_COLUMN not in rows.columns:
        return None, [], "no bootstrap replicates were kept (evaluation.bootstrap.n_boot is 0)"
    keys = list(blocks) + ["entity"]
    wanted = pd.MultiIndex.from_frame(kept[keys])
    rows = rows[pd.MultiIndex.from_frame(rows[keys]).isin(wanted)]
    present = rows[REPLICATE_COLUMN].map(lambda v: v is not None and len(v) > 0)
    if not present.all():
        metrics = sorted(rows.loc[~present, "metric"].astype(str).unique())
        return None, [], (f"{int((~present).sum())} of {len(rows)} ranked rows have no bootstrap replicates "
                          f"(metric(s) {metrics}: not in evaluation.bootstrap.metrics, or a set with one label class)")
    lengths = rows[REPLICATE_COLUMN].map(len)
    n = int(min(lengths.min(), n_replicates))
    values = np.stack([np.asarray(v, dtype=np.float64)[:n] for v in rows[REPLICATE_COLUMN]])  # rows × R
    block_codes = rows.groupby(list(blocks), observed=True, sort=True).ngroup().to_numpy()
    entities = sorted(rows["entity"].astype(str).unique())
    entity_codes = pd.Categorical(rows["entity"].astype(str), categories=entities).codes
    n_blocks = int(block_codes.max()) + 1
    sums = np.zeros((n, n_blocks, len(entities)))
    counts = np.zeros((n_blocks, len(entities)))
    np.add.at(sums, (slice(None), block_codes, entity_codes), values.T)
    np.add.at(counts, (block_codes, entity_codes), 1)
    return sums / counts, entities, None


def clique_stability(replicates: np.ndarray, entities: Sequence[str], *, alpha: float, p_adjust: str,
                     higher_is_better: bool, omnibus_gate: bool) -> dict[str, Any]:
    """The stability record of a cell (see the module docstring) from its replicates × blocks × entities values,
    each replicate ranked with :func:`csfbench.stats.rank_blocks` and the given settings."""
    entities = [str(e) for e in entities]
    in_top = dict.fromkeys(entities, 0)
    layer_sum = dict.fromkeys(entities, 0.0)
    layered = dict.fromkeys(entities, 0)
    n_tied = 0
    for values in replicates:
        try:
            result = rank_blocks(pd.DataFrame(values, columns=entities), alpha=alpha, p_adjust=p_adjust,
                                 higher_is_better=higher_is_better, omnibus_gate=omnibus_gate)
        except StatsInputError:
            n_tied += 1
            continue
        for number, layer in enumerate(result["layers"], 1):
            for member in layer["members"]:
                layer_sum[member] += number
                layered[member] += 1
                in_top[member] += number == 1
    n_ranked = len(replicates) - n_tied
    return {"status": "ok" if n_ranked else "skipped",
            "reason": None if n_ranked else f"every one of the {n_tied} replicates ties every block",
            "n_replicates": int(len(replicates)), "n_tied": n_tied,
            "top_clique_share": {e: in_top[e] / n_ranked if n_ranked else None for e in entities},
            "mean_layer": {e: layer_sum[e] / layered[e] if layered[e] else None for e in entities},
            "n_unlayered": {e: n_ranked - layered[e] for e in entities}}


def not_computed(reason: str) -> dict[str, Any]:
    """The stability record of a cell without one, saying why."""
    return {"status": "skipped", "reason": reason, "n_replicates": 0, "n_tied": 0, "top_clique_share": {},
            "mean_layer": {}, "n_unlayered": {}}


#: the key columns joining a metric file's replicates to the results table's rows (the table's key columns
#: but ``regime``, which the proximity stage's regimes can change in the table)
JOIN_KEYS = [key for key in KEYS if key != "regime"]


def read_replicates(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The :data:`JOIN_KEYS` and :data:`~csfbench.evaluation.REPLICATE_COLUMN` of the rows of the metric files
    ``paths`` that kept replicates (files without the column, e.g. those written with the bootstrap off, add
    none)."""
    frames = []
    for path in paths:
        file = pq.ParquetFile(path)  # one open: the footer's schema, then only the needed columns
        if REPLICATE_COLUMN not in file.schema_arrow.names:
            continue
        part = file.read(columns=JOIN_KEYS + [REPLICATE_COLUMN])
        part = part.filter(pc.is_valid(part.column(REPLICATE_COLUMN)))
        if part.num_rows:
            frames.append(part.to_pandas())
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=JOIN_KEYS + [REPLICATE_COLUMN])


def with_replicates(rows: pd.DataFrame, replicates: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (results-table rows) with the column :data:`~csfbench.evaluation.REPLICATE_COLUMN` (None where a row
    has no replicates), matched on :data:`JOIN_KEYS`; ``rows`` unchanged when ``replicates`` is empty."""
    if replicates.empty:
        return rows
    index = pd.Index(_key_strings(replicates))
    if index.has_duplicates:
        raise ValueError(f"metric files: {int(index.duplicated().sum())} rows with replicates share their key columns")
    position = index.get_indexer(_key_strings(rows))
    column = replicates[REPLICATE_COLUMN].to_numpy()
    return rows.assign(**{REPLICATE_COLUMN: [column[p] if p >= 0 else None for p in position]})


def _key_strings(frame: pd.DataFrame) -> pd.Series:
    """Each row's :data:`JOIN_KEYS` as one string (a null, None or NaN, as the empty string)."""
    if frame.empty:
        return pd.Series([], dtype=object)
    parts = [frame[key].astype(object).map(lambda v: "" if pd.isna(v) else str(v)) for key in JOIN_KEYS]
    return pd.concat(parts, axis=1).agg("\x1f".join, axis=1)
