"""Merge every metric-row file into one long-format results table (columns :data:`TABLE_COLUMNS`:
:data:`csfbench.evaluation.COLUMNS`, then :data:`csfbench.evaluation.CONFORMAL_COLUMNS`, null outside the
conformal rows, then :data:`csfbench.evaluation.BOOTSTRAP_COLUMNS`: NaN, with ``n_boot`` 0, in the rows without a
bootstrap interval, those of files that have no such columns — conformal, pair-analysis and ProjNorm rows, metric
files written before the columns existed — included).

Rows are sorted on every key column so that the table is byte-identical for the same inputs in any
order; a duplicated key (the same value reported twice) is an error naming the rows.

Regimes: a metric row carries the regime its evaluation set had in the config (the static table, or the
shift type).  The proximity stage's regimes files (:mod:`csfbench.proximity.stratification`; columns
``source, dataset, regime``) give the resolved near/mid/far regime of every semantic OOD set, static and
computed regimes already combined by the configured precedence; :func:`apply_regimes` writes it into the
rows of those sets.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from csfbench.atomic import atomic_path
from csfbench.evaluation import BOOTSTRAP_COLUMNS, COLUMNS, CONFORMAL_COLUMNS, GROUP_COLUMNS
from csfbench.proximity.regimes import REGIMES

KEYS = [c for c in COLUMNS if c != "value" and c not in GROUP_COLUMNS]
#: Arrow types of the metric-row columns added after the first metric files were written (the group columns,
#: attributes of the dataset, the ID-role set and an ensemble's member runs): null in a file that predates them
ADDED_TYPES = {"corruption": pa.string(), "severity": pa.int64(), "rendition": pa.string(), "id_set": pa.string(),
               "members": pa.string()}
#: Arrow types of the conformal attribute columns, null where a metric file has none of them
CONFORMAL_TYPES = {"delta": pa.float64(), "conformal_method": pa.string(), "n_cal": pa.int64(),
                   "calibration": pa.string(), "n_mc": pa.int64(), "band_seed": pa.int64()}
#: Arrow types of the bootstrap columns; a file without them gets ``n_boot`` 0 and null (NaN) intervals
BOOTSTRAP_TYPES = {"ci_low": pa.float64(), "ci_high": pa.float64(), "n_boot": pa.int64(), "ci_level": pa.float64()}
#: the results table's columns, in order
TABLE_COLUMNS = COLUMNS + CONFORMAL_COLUMNS + BOOTSTRAP_COLUMNS


def read_columns(paths: list[str | Path], columns: list[str], what: str, reader=pd.read_parquet) -> pd.DataFrame:
    """The ``columns`` of every file in ``paths`` (read with ``reader``), concatenated in order.

    ValueError naming the first file that lacks a column; ``what`` names the kind of file in messages.
    """
    frames = []
    for path in paths:
        frame = reader(path)
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: {what} lacks the columns {missing}")
        frames.append(frame[columns])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def merge_metric_files(paths: list[str | Path], regimes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Concatenate metric parquet files into one table with the metric-row columns, sorted by key.

    ``regimes`` (``source, dataset, regime`` rows, :func:`read_regimes`) replaces the regime of those
    semantic sets before the sort (:func:`apply_regimes`).  The concatenation, the regimes, the (stable)
    sort and the duplicate check run in Arrow: pandas' ``sort_values`` and ``duplicated`` on the paper
    grid's ~10^7 rows of string keys are far slower (docs/benchmarks.md); the order is the same
    (strings by code point, numbers by value).
    """
    if not paths:
        raise ValueError("no metric files to merge")
    tables = []
    for path in paths:
        part = pq.read_table(path)
        missing = [c for c in COLUMNS if c not in part.column_names and c not in ADDED_TYPES]
        if missing:
            raise ValueError(f"{path}: metric file lacks the columns {missing}")
        part = part.select([c for c in TABLE_COLUMNS if c in part.column_names])
        for column, kind in {**ADDED_TYPES, **CONFORMAL_TYPES, **BOOTSTRAP_TYPES}.items():
            present = column in part.column_names
            values = part.column(column).cast(kind) if present else _absent(column, kind, part.num_rows)
            part = part.set_column(part.column_names.index(column), column, values) if present else \
                part.append_column(column, values)
        tables.append(part.select(TABLE_COLUMNS).replace_schema_metadata(None))
    table = pa.concat_tables(tables, promote_options="permissive")
    del tables  # the parts share the concatenation's buffers: the sort's copy below can free them
    if regimes is not None:
        table = apply_regimes(table, regimes)
    # the sorted copy column by column, each source column released once taken: the table plus one
    # column at a time, not two whole tables (several GB at paper scale)
    order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in KEYS])
    names, columns = table.column_names, []
    for _ in names:
        columns.append(table.column(0).take(order))
        table = table.remove_column(0)
    table = pa.table(columns, names=names)
    del columns, order  # the table must hold the only references for to_pandas' self_destruct below
    duplicated = _duplicated_sorted(table)
    if duplicated.any():
        rows = table.take(pa.array(np.flatnonzero(duplicated)[:4])).to_pandas()
        raise ValueError(f"{int(duplicated.sum())} metric rows share their key columns, e.g.\n{rows.to_string()}")
    # column by column, each freed once converted: the frame and the whole table are never held together
    frame = table.to_pandas(split_blocks=True, self_destruct=True)
    del table
    frame["severity"] = frame["severity"].astype("Int64")  # stays an integer where other rows have none
    return frame


def _absent(column: str, kind: pa.DataType, n: int) -> pa.Array:
    """The values of a column a metric file lacks: ``n_boot`` 0 (no replicates), null otherwise."""
    return pa.array(np.zeros(n, dtype=np.int64)) if column == "n_boot" else pa.nulls(n, kind)


def _duplicated_sorted(table: pa.Table) -> np.ndarray:
    """Rows of a key-sorted table whose key columns equal those of a neighbour (every copy is marked)."""
    n = table.num_rows
    same = np.ones(max(n - 1, 0), dtype=bool)
    for key in KEYS:
        column = table.column(key)
        after, before = column.slice(1), column.slice(0, n - 1)
        both_null = pc.and_(pc.is_null(after), pc.is_null(before))  # missing keys count as equal, as in pandas
        equal = pc.fill_null(pc.or_kleene(pc.equal(after, before), both_null), False)
        same &= equal.to_numpy(zero_copy_only=False)
    marked = np.zeros(n, dtype=bool)
    marked[1:] |= same
    marked[:-1] |= same
    return marked


def read_regimes(paths: list[str | Path]) -> pd.DataFrame:
    """The ``source, dataset, regime`` rows of regimes files (ValueError naming a malformed file)."""
    regimes = read_columns(paths, ["source", "dataset", "regime"], "regimes file", pd.read_csv)
    bad = regimes[~regimes["regime"].isin(REGIMES)]
    if len(bad):
        raise ValueError(f"regimes files: regime must be one of {REGIMES}, got {bad['regime'].tolist()} "
                         f"for {bad[['source', 'dataset']].to_dict('records')}")
    duplicated = regimes.duplicated(["source", "dataset"], keep=False)
    if duplicated.any():
        raise ValueError(f"regimes files give several regimes for {regimes[duplicated].to_dict('records')}")
    return regimes


def apply_regimes(table: pa.Table, regimes: pd.DataFrame) -> pa.Table:
    """``table`` (metric rows) with the regime of every (source, dataset) in ``regimes`` replaced.

    Only semantic sets are stratified: a regimes row naming a set whose metric rows are not semantic is an
    error.  Sets absent from ``table`` are ignored (not evaluated in this run).  Vectorised for the paper
    grid's ~10^7 rows: (source, dataset) pairs are looked up through their dictionary codes in one pass.
    """
    if regimes.empty:
        return table
    source = pc.dictionary_encode(table.column("source")).combine_chunks()
    dataset = pc.dictionary_encode(table.column("dataset")).combine_chunks()
    sources = {v: i for i, v in enumerate(source.dictionary.to_pylist())}
    datasets = {v: i for i, v in enumerate(dataset.dictionary.to_pylist())}
    lookup = np.full((len(sources), len(datasets)), -1, dtype=np.int64)  # → row of ``regimes``
    for k, row in enumerate(regimes.itertuples(index=False)):
        if row.source in sources and row.dataset in datasets:
            lookup[sources[row.source], datasets[row.dataset]] = k
    index = lookup[source.indices.to_numpy(zero_copy_only=False), dataset.indices.to_numpy(zero_copy_only=False)]
    hit = pa.array(index >= 0)
    wrong = pc.unique(table.filter(pc.and_(hit, pc.not_equal(table.column("shift_type"), "semantic")))
                      .column("dataset")).to_pylist()
    if wrong:
        raise ValueError(f"regimes given for evaluation sets that are not semantic shifts: {sorted(wrong)}")
    column = table.column("regime")
    resolved = pa.array(regimes["regime"].tolist(), column.type).take(pa.array(np.maximum(index, 0)))
    return table.set_column(table.column_names.index("regime"), "regime", pc.if_else(hit, resolved, column))


def write_results_table(paths: list[str | Path], out: str | Path,
                        regime_files: list[str | Path] = ()) -> pd.DataFrame:
    """Merge ``paths``, apply the regimes files and write the results table (parquet) atomically."""
    table = merge_metric_files(paths, read_regimes(list(regime_files)))
    with atomic_path(out) as tmp:
        table.to_parquet(tmp, index=False)
    return table
