"""The spread of every table that averages runs or models (issue 47): the mean, its sample standard deviation
and the number of values averaged, under one naming across the tables.

A table that averages a quantity ``<name>`` over runs (training seeds) or models shows ``<name>`` (the mean,
in the quantity's units and orientation), ``<name>_sd`` (the standard deviation of the averaged values, same
units; ddof = 1 unless the table says otherwise, so NaN, not 0, where a single value was averaged: one run has
no measured spread) and a count column, ``n_runs`` or ``n_models``.  :func:`mean_sd_n` computes the three;
:func:`csfbench.report.tables.write_table` prints each ``<name>`` / ``<name>_sd`` pair as one "mean ± sd" cell
in the LaTeX (:func:`fold_spread`).  ICONIC-444's category tables (:mod:`csfbench.analysis.iconic`) use the same
aggregation under the paper's labels ``mean`` / ``std`` / ``n``.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

#: the suffix of a mean's standard-deviation column
SD_SUFFIX = "_sd"


def mean_sd_n(frame: pd.DataFrame, keys: Sequence[str], value: str = "value", ddof: int = 1,
              count: str = "n_runs") -> pd.DataFrame:
    """Per group of ``keys`` (sorted), the mean of ``value`` (column ``value``), its standard deviation with
    ``ddof`` (column ``value + "_sd"``; NaN where the group has ``ddof`` values or fewer) and the number of
    values averaged (column ``count``).  Missing values are skipped by all three, so ``count`` is what the
    mean and deviation were computed from."""
    grouped = frame.groupby(list(keys), observed=True)[value]
    out = pd.concat({value: grouped.mean(), value + SD_SUFFIX: grouped.std(ddof=ddof), count: grouped.count()},
                    axis=1)
    return out.reset_index()


def wide_spread(spread: pd.DataFrame, index: str | list[str], column: str, value: str,
                order: Sequence[str]) -> pd.DataFrame:
    """``spread`` (:func:`mean_sd_n` rows of ``value`` per (``index``, ``column``)) as a wide frame indexed by
    ``index`` (one key or several): per label ``c`` of ``order`` that occurs in ``column``, the mean ``c`` and its
    deviation ``c_sd`` side by side."""
    mean = spread.pivot(index=index, columns=column, values=value)
    sd = spread.pivot(index=index, columns=column, values=value + SD_SUFFIX).add_suffix(SD_SUFFIX)
    both = pd.concat([mean, sd], axis=1)
    both.columns.name = None
    return both[[c for label in order if label in mean.columns for c in (label, label + SD_SUFFIX)]]


def spread_pairs(columns: Sequence) -> list[str]:
    """The columns that are means with a deviation beside them: each (string) ``c`` whose ``c + "_sd"`` is also
    among ``columns``, in their order."""
    names = set(columns)
    return [c for c in columns if isinstance(c, str) and c + SD_SUFFIX in names]


def fold_spread(frame: pd.DataFrame, float_format: str) -> pd.DataFrame:
    """``frame`` with every mean / deviation pair (:func:`spread_pairs`) printed as one text column ``c``:
    ``"mean ± sd"`` with ``float_format``, the mean alone where the deviation is NaN (a single value; the count
    column says so) and NaN where the mean is; the ``c_sd`` columns are dropped."""
    means = spread_pairs(frame.columns)
    if not means:
        return frame
    out = frame.copy()
    for c in means:
        text = [float("nan") if pd.isna(m) else float_format % m if pd.isna(s) else
                f"{float_format % m} ± {float_format % s}" for m, s in zip(out[c], out[c + SD_SUFFIX])]
        out[c] = pd.Series(text, index=out.index, dtype=object)
    return out.drop(columns=[c + SD_SUFFIX for c in means])
