"""Within-block ranks, the Friedman test and the Iman–Davenport correction
(Claros-Olivares & Brockmeier, App. C; Iman & Davenport, 1980).

Input is a blocks × entities matrix of raw metric values (rows = blocks, columns = entities).
Orientation: **lower value = better** (AURC, AUGRC, ...), i.e. the lowest value of a block gets
rank 1; pass ``higher_is_better=True`` for metrics such as AUROC. Ties get average (mid-) ranks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


def within_block_ranks(values: np.ndarray, higher_is_better: bool = False) -> np.ndarray:
    """Rank each row (block) on the 1..k scale, rank 1 = best, average ranks for ties."""
    values = _check_matrix(values)
    oriented = -values if higher_is_better else values
    return stats.rankdata(oriented, axis=1, method="average")


def mean_ranks(values: np.ndarray, higher_is_better: bool = False) -> np.ndarray:
    """Average rank of each entity (column) over the blocks, on the 1..k scale (1 = best)."""
    return within_block_ranks(values, higher_is_better).mean(axis=0)


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman's Q with its χ²(k−1) p-value, and the Iman–Davenport F with its F(k−1, (k−1)(N−1)) p-value.

    ``iman_davenport`` is ``inf`` (p-value 0) when every block ranks the entities identically, and
    every field is NaN when every block ties all entities (no ranking information at all).
    """

    statistic: float
    pvalue: float
    iman_davenport: float
    iman_davenport_pvalue: float
    n_blocks: int
    n_entities: int


def friedman_test(values: np.ndarray, higher_is_better: bool = False) -> FriedmanResult:
    """Friedman test on a blocks × entities matrix (tie-corrected, as ``scipy.stats.friedmanchisquare``).

    Q = (k−1) Σ_j (R_j − N(k+1)/2)² / (A₁ − N k (k+1)²/4), with R_j the rank sums and A₁ the sum of the
    squared ranks; without ties this is 12N/(k(k+1)) Σ_j R̄_j² − 3N(k+1). Unlike scipy it also accepts
    k = 2. Iman–Davenport: F = (N−1)Q / (N(k−1) − Q).
    """
    ranks = within_block_ranks(values, higher_is_better)
    n, k = ranks.shape
    rank_sums = ranks.sum(axis=0)
    spread = float(np.sum(ranks**2) - n * k * (k + 1) ** 2 / 4.0)
    if spread <= 1e-12 * n * k**3:
        nan = float("nan")
        return FriedmanResult(nan, nan, nan, nan, n, k)
    q = float((k - 1) * np.sum((rank_sums - n * (k + 1) / 2.0) ** 2) / spread)
    p_chi2 = float(stats.chi2.sf(q, k - 1))
    denominator = n * (k - 1) - q
    if denominator <= 1e-12 * n * k:
        f, p_f = float("inf"), 0.0
    else:
        f = (n - 1) * q / denominator
        p_f = float(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))
    return FriedmanResult(q, p_chi2, float(f), p_f, n, k)


def _check_matrix(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] < 2 or values.shape[1] < 2:
        raise ValueError(f"expected a blocks × entities matrix with at least 2 × 2 entries, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("the blocks × entities matrix contains NaN or infinite values")
    return values
