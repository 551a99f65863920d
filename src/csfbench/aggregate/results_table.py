"""Merge every metric-row file into one long-format results table (DESIGN.md "Metric rows").

Rows are sorted on every key column so that the table is byte-identical for the same inputs in any
order; a duplicated key (the same value reported twice) is an error naming the rows.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from csfbench.atomic import atomic_path
from csfbench.evaluation import COLUMNS

KEYS = [c for c in COLUMNS if c != "value"]


def merge_metric_files(paths: list[str | Path]) -> pd.DataFrame:
    """Concatenate metric parquet files into one table with the DESIGN columns, sorted by key."""
    if not paths:
        raise ValueError("no metric files to merge")
    frames = []
    for path in paths:
        frame = pd.read_parquet(path)
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: metric file lacks the columns {missing}")
        frames.append(frame[COLUMNS])
    table = pd.concat(frames, ignore_index=True)
    duplicated = table.duplicated(KEYS, keep=False)
    if duplicated.any():
        raise ValueError(f"{int(duplicated.sum())} metric rows share their key columns, e.g.\n"
                         f"{table[duplicated].head(4).to_string()}")
    return table.sort_values(KEYS, kind="stable", ignore_index=True)


def write_results_table(paths: list[str | Path], out: str | Path) -> pd.DataFrame:
    """Merge ``paths`` and write the results table (parquet) atomically."""
    table = merge_metric_files(paths)
    with atomic_path(out) as tmp:
        table.to_parquet(tmp, index=False)
    return table
