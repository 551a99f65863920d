"""Score densities by set and by correctness (Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering
Modern Out-of-Distribution Detection Algorithms", ICLR 2024, Figs. 6–9): the data behind a
KDE plot of one CSF's confidences on, e.g., ImageNet-1K vs ImageNet-C vs ImageNet-OOD (Figs. 6–7),
or the correct vs the incorrect samples of a covariate-shifted set vs ImageNet-OOD (Figs. 8–9).
No plotting here: the functions return tables a figure rule draws.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import gaussian_kde

from csfbench.metrics._inputs import MetricInputError, finite_1d


@dataclass(frozen=True)
class ScoreDensities:
    """``kde``: per group the Gaussian KDE on a common grid (``group, x, density``; density NaN for a
    group with fewer than 2 distinct values); ``histogram``: per group the counts and densities
    (``group, bin_left, bin_right, count, density``; density integrates to 1 over the bins) on
    common edges; ``summary``: per group ``n, mean, std (ddof 1), median``.  Confidence units."""

    kde: pd.DataFrame
    histogram: pd.DataFrame
    summary: pd.DataFrame


def split_by_correctness(confidence, correct, name: str) -> dict[str, np.ndarray]:
    """``{"<name> correct": …, "<name> incorrect": …}``: the confidences of a labelled set split by
    correctness (bool or 0/1), for :func:`score_densities`."""
    conf = finite_1d(confidence, "confidence")
    flags = finite_1d(correct, "correct")
    if flags.size != conf.size or not np.all((flags == 0) | (flags == 1)):
        raise MetricInputError(f"correct must hold {conf.size} values, each 0/1 or a boolean")
    return {f"{name} correct": conf[flags == 1], f"{name} incorrect": conf[flags == 0]}


def score_densities(groups: Mapping[str, np.ndarray], bins: int = 50, grid_points: int = 256,
                    bandwidth: str | float = "scott", value_range: tuple[float, float] | None = None) -> ScoreDensities:
    """Histograms and KDEs of the confidences of each group (e.g. ``{"ID": …, "IN-C": …, "OOD": …}``
    or the output of :func:`split_by_correctness` plus an OOD set), one CSF at a time.

    All groups share the histogram edges (``bins`` equal-width bins over ``value_range``, default the
    range of all values; the last bin is closed, as :func:`numpy.histogram`) and the KDE grid
    (``grid_points`` points over the range widened by 5 % on each side).  ``bandwidth`` is
    :class:`scipy.stats.gaussian_kde`'s ``bw_method`` ("scott", "silverman" or a factor).  An empty
    group gets zero counts and NaN densities.
    """
    if not groups:
        raise ValueError("score_densities needs at least one group")
    if int(bins) != bins or bins < 1 or int(grid_points) != grid_points or grid_points < 2:
        raise ValueError(f"bins must be ≥ 1 and grid_points ≥ 2 (integers), got {bins!r}, {grid_points!r}")
    values = {name: finite_1d(v, f"groups[{name!r}]") for name, v in groups.items()}
    pooled = np.concatenate(list(values.values()))
    if pooled.size == 0:
        raise MetricInputError("score_densities: every group is empty")
    lo, hi = value_range if value_range is not None else (float(pooled.min()), float(pooled.max()))
    if not hi >= lo:
        raise ValueError(f"value_range must be (low, high) with high >= low, got {(lo, hi)}")
    span = hi - lo if hi > lo else max(abs(lo), 1.0)
    edges = np.linspace(lo, hi, int(bins) + 1) if hi > lo else np.linspace(lo - span / 2, hi + span / 2, int(bins) + 1)
    grid = np.linspace(lo - 0.05 * span, hi + 0.05 * span, int(grid_points))
    kde_rows, hist_rows, summary = [], [], []
    for name, v in values.items():
        counts, _ = np.histogram(v, bins=edges)
        inside = counts.sum()
        density = counts / (inside * np.diff(edges)) if inside else np.full(counts.size, np.nan)
        hist_rows.append(pd.DataFrame({"group": name, "bin_left": edges[:-1], "bin_right": edges[1:],
                                       "count": counts, "density": density}))
        if np.unique(v).size >= 2:
            kde = gaussian_kde(v, bw_method=bandwidth)(grid)
        else:
            kde = np.full(grid.size, np.nan)
        kde_rows.append(pd.DataFrame({"group": name, "x": grid, "density": kde}))
        summary.append({"group": name, "n": int(v.size), "mean": float(v.mean()) if v.size else np.nan,
                        "std": float(v.std(ddof=1)) if v.size > 1 else np.nan,
                        "median": float(np.median(v)) if v.size else np.nan})
    return ScoreDensities(pd.concat(kde_rows, ignore_index=True), pd.concat(hist_rows, ignore_index=True),
                          pd.DataFrame(summary))
