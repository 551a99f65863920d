"""Long-format table → blocks × entities matrix (Claros-Olivares & Brockmeier, §4.2, App. C), with input checks.

One row per (block, entity) value: the ``blocks`` columns together identify a block (e.g. dataset,
paradigm, metric, run), ``entity`` names what is ranked (e.g. the CSF) and ``value`` holds the metric
value (lower = better by default). Rules:

- missing columns, NaN or non-numeric values, missing block/entity keys and duplicate
  (block, entity) rows are errors (:class:`StatsInputError`; average or filter duplicates first);
- **incomplete blocks** (some entity has no value in them) are **dropped** with a
  :class:`IncompleteBlocksWarning` listing each dropped block and its missing entities — the
  complete-block design of Claros-Olivares & Brockmeier's code; they are also returned;
- fewer than 2 entities or fewer than 2 complete blocks are errors.

Entities are named by ``str(value)``; rows and columns of the matrix are sorted (blocks by their key
columns, entities by name), so the result does not depend on the row order of the table.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from csfbench.errors import CsfbenchError

_MAX_LISTED = 10


class StatsInputError(CsfbenchError):
    """A table that cannot be turned into a complete blocks × entities matrix; the message says why."""


class IncompleteBlocksWarning(UserWarning):
    """Blocks were dropped because some entity has no value in them."""


@dataclass(frozen=True)
class BlockMatrix:
    """``values``: complete blocks × entities matrix (index = block key tuples, columns = entity names);
    ``dropped``: the incomplete blocks, each ``{"block": {column: value}, "missing": [entity, ...]}``."""

    values: pd.DataFrame
    block_columns: tuple[str, ...]
    dropped: list[dict[str, Any]]


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a ``.csv`` or ``.parquet`` table; any failure becomes a :class:`StatsInputError`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise StatsInputError(f"{path}: unsupported table format '{suffix}' (expected .csv or .parquet)")
    if not path.is_file():
        raise StatsInputError(f"{path}: no such file")
    try:
        return pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    except Exception as err:  # noqa: BLE001 - pandas/pyarrow raise many types; report them in one line
        reason = " ".join(str(err).split()) or type(err).__name__
        raise StatsInputError(f"{path}: cannot read the table: {reason}") from err


def block_matrix(table: pd.DataFrame, blocks: Sequence[str], entity: str, value: str) -> BlockMatrix:
    """Pivot a long-format table into a complete blocks × entities matrix (see the module docstring)."""
    blocks = list(blocks)
    _check_columns(table, blocks, entity, value)
    data = table[blocks + [entity]].copy()
    data["__value"] = _numeric_values(table[value], value)
    data["__row"] = np.arange(len(table))
    _check_keys(data, blocks + [entity])
    data["__entity"] = data[entity].map(str)
    if data["__entity"].nunique() != data[entity].nunique():
        raise StatsInputError(f"entity column '{entity}' has distinct values with the same text; rename them")
    _check_duplicates(data, blocks, entity)

    data = data.sort_values(blocks + ["__entity"], key=_sort_key, kind="mergesort")
    entities = sorted(data["__entity"].unique())
    if len(entities) < 2:
        raise StatsInputError(f"ranking needs at least 2 entities in column '{entity}'; found {len(entities)}: {entities}")
    block_ids = data.groupby(blocks, sort=False).ngroup().to_numpy()
    keys = [tuple(_native(v) for v in row) for row in data[blocks].drop_duplicates().itertuples(index=False)]
    matrix = np.full((len(keys), len(entities)), np.nan)
    entity_ids = data["__entity"].map({e: i for i, e in enumerate(entities)}).to_numpy()
    matrix[block_ids, entity_ids] = data["__value"].to_numpy()

    complete = ~np.isnan(matrix).any(axis=1)
    dropped = [{"block": dict(zip(blocks, keys[b])),
                "missing": [entities[j] for j in np.flatnonzero(np.isnan(matrix[b]))]}
               for b in np.flatnonzero(~complete)]
    if dropped:
        warnings.warn(_dropped_message(dropped, len(keys)), IncompleteBlocksWarning, stacklevel=2)
    if complete.sum() < 2:
        raise StatsInputError(
            f"ranking needs at least 2 complete blocks (every entity present); found {int(complete.sum())} "
            f"of {len(keys)} blocks of {blocks} complete for {len(entities)} entities")
    index = pd.MultiIndex.from_tuples([k for k, ok in zip(keys, complete) if ok], names=blocks)
    values = pd.DataFrame(matrix[complete], index=index, columns=pd.Index(entities, name=entity))
    return BlockMatrix(values, tuple(blocks), dropped)


def _check_columns(table: pd.DataFrame, blocks: list[str], entity: str, value: str) -> None:
    if not blocks:
        raise StatsInputError("no block columns given")
    wanted = blocks + [entity, value]
    if len(set(wanted)) != len(wanted):
        raise StatsInputError(f"block, entity and value columns must be distinct; got blocks={blocks}, "
                              f"entity='{entity}', value='{value}'")
    missing = [c for c in wanted if c not in table.columns]
    if missing:
        raise StatsInputError(f"missing column(s) {missing}; the table has {[str(c) for c in table.columns]}")


def _numeric_values(column: pd.Series, name: str) -> pd.Series:
    numbers = pd.to_numeric(column, errors="coerce").astype(float)
    bad = numbers.isna() & column.notna()
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())
        shown = ", ".join(f"{r} ({column.iloc[r]!r})" for r in rows[:_MAX_LISTED])
        raise StatsInputError(f"non-numeric value(s) in column '{name}' at row(s) {shown}{_more(rows)} "
                              "(0-based data rows)")
    bad = ~np.isfinite(numbers.to_numpy())
    if bad.any():
        rows = np.flatnonzero(bad)
        raise StatsInputError(f"missing (NaN) or infinite value(s) in column '{name}' at row(s) "
                              f"{', '.join(map(str, rows[:_MAX_LISTED]))}{_more(rows)} (0-based data rows)")
    return numbers


def _check_keys(data: pd.DataFrame, columns: list[str]) -> None:
    for column in columns:
        rows = np.flatnonzero(data[column].isna().to_numpy())
        if len(rows):
            raise StatsInputError(f"missing value(s) in key column '{column}' at row(s) "
                                  f"{', '.join(map(str, rows[:_MAX_LISTED]))}{_more(rows)} (0-based data rows)")


def _check_duplicates(data: pd.DataFrame, blocks: list[str], entity: str) -> None:
    keys = blocks + ["__entity"]
    duplicated = data[data.duplicated(keys, keep=False)]
    if duplicated.empty:
        return
    groups = duplicated.groupby(keys, sort=False)["__row"].apply(list)
    shown = "; ".join(_describe(dict(zip(blocks + [entity], key))) + f" (rows {', '.join(map(str, rows))})"
                      for key, rows in list(groups.items())[:_MAX_LISTED])
    raise StatsInputError(f"{len(groups)} duplicate (block, entity) pair(s): {shown}{_more(groups)}; "
                          "average or filter them first (0-based data rows)")


def _dropped_message(dropped: list[dict[str, Any]], n_blocks: int) -> str:
    shown = "; ".join(f"{_describe(d['block'])} (missing {', '.join(d['missing'])})" for d in dropped[:_MAX_LISTED])
    return f"dropped {len(dropped)} of {n_blocks} blocks as incomplete: {shown}{_more(dropped)}"


def _describe(key: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in key.items())


def _more(items: Sequence[Any]) -> str:
    return f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else ""


def _sort_key(column: pd.Series) -> pd.Series:
    """Numbers sort as numbers, anything else by its text (a total order even for mixed columns)."""
    return column if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column) else column.map(str)


def _native(value: Any) -> Any:
    """numpy/pandas scalars → plain Python values (JSON-serialisable block keys)."""
    value = value.item() if isinstance(value, np.generic) else value
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
