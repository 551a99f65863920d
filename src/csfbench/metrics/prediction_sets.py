"""Split-conformal prediction sets (LAC, APS, RAPS) and their efficiency and coverage, as used by
Novello, Dalmau & Andéol, "Out-of-Distribution Detection Should Use Conformal Prediction (and
Vice-versa?)", 2024, arXiv 2403.11532, §5 and Table 2 (class-dependent OOD scores as conformity
scores; their softmax-normalised N×C matrices come from :mod:`csfbench.csf.class_conformity`).

Input: ``scores`` N×C, probability-like conformity of each label (higher = the label conforms
better, rows usually summing to 1, e.g. a softmax), ``labels`` N integers in [0, C).  Every method
maps ``scores`` to an N×C matrix of label **non**conformities R (lower = conforms better); the
calibration non-conformities are R[i, y_i], q̂ is their ⌈(n + 1)(1 − α)⌉-th smallest (+inf when that
exceeds n) and the prediction set of a point is {y : R[y] <= q̂}, so that P(y ∈ C(x)) >= 1 − α for
exchangeable data.

* **LAC** (Sadinle, Lei & Wasserman, JASA 2019): R[y] = 1 − s(x, y).
* **APS** (Romano, Sesia & Candès, NeurIPS 2020), randomised: R[y] = ρ_y + U·s(x, y), ρ_y the sum of
  the scores ranked above y (descending; ties in stable index order) and U ~ Uniform(0, 1), one draw
  per point shared by all its labels.  The set is a prefix of the ranked labels and may be empty.
* **RAPS** (Angelopoulos, Bates, Malik & Jordan, ICLR 2021): R_APS[y] + λ·max(0, r_y + 1 − k_reg),
  r_y the 0-based rank of y.  λ = 0 gives APS for the same U.  The paper states neither λ nor k_reg;
  :data:`RAPS_DEFAULTS` are PUNCC's (λ = 0, k_reg = 1), the library the paper used, under which its
  APS and RAPS columns are nearly identical (they differ within their std, the noise of separate
  draws).  The config schema's defaults are the same; :func:`evaluate_prediction_sets` gives APS and
  RAPS the same draws, so with λ = 0 their rows coincide — set λ > 0 for a regularised RAPS.

Sizes are numbers of labels; coverage is a fraction in [0, 1].

*Module name.*  These functions live here, not in a top-level ``csfbench.conformal_prediction``: like
the other modules of :mod:`csfbench.metrics` they are numpy-only functions of score arrays returning
numbers (set sizes, coverage), with no model, file or workflow import, and they sit beside
:mod:`csfbench.metrics.conformal`, the conformal OOD metrics of the same paper (split conformal
calibration on held-out ID data in both).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from csfbench.metrics._inputs import check_labels

ALPHAS = (0.005, 0.01, 0.05)
SET_METHODS = ("lac", "aps", "raps")
RANDOMISED = ("aps", "raps")
RAPS_DEFAULTS = {"lam": 0.0, "k_reg": 1}
#: subtracted from (n + 1)(1 − α) before the ceiling, so that e.g. 100 · 0.95 = 95.00000000000001
#: gives rank 95, not 96
RANK_TOLERANCE = 1e-9


def _matrix(scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or not scores.shape[1]:
        raise ValueError(f"expected an N×C score matrix, got shape {scores.shape}")
    if not np.isfinite(scores).all():
        raise ValueError("the score matrix contains non-finite values")
    return scores


def lac_nonconformity(scores) -> np.ndarray:
    """LAC non-conformity 1 − s(x, y) of every label, N×C."""
    return 1.0 - _matrix(scores)


def aps_nonconformity(scores, u, *, lam: float = 0.0, k_reg: int = 1) -> np.ndarray:
    """Randomised APS (``lam`` = 0) or RAPS non-conformity of every label, N×C: ρ_y + u·s(x, y) +
    lam·max(0, rank_y + 1 − k_reg), with ``u`` (N,) in [0, 1] one uniform draw per point."""
    scores = _matrix(scores)
    u = np.asarray(u, dtype=np.float64)
    if u.shape != (len(scores),) or np.any((u < 0) | (u > 1)):
        raise ValueError(f"u must hold {len(scores)} values in [0, 1], got shape {u.shape}")
    if lam < 0 or int(k_reg) != k_reg or k_reg < 0:
        raise ValueError(f"RAPS needs lam >= 0 and an integer k_reg >= 0, got lam={lam}, k_reg={k_reg}")
    order = np.argsort(-scores, axis=1, kind="stable")
    ranked = np.take_along_axis(scores, order, axis=1)
    ranked_nonconformity = np.cumsum(ranked, axis=1) - ranked + u[:, None] * ranked
    ranked_nonconformity += lam * np.maximum(np.arange(scores.shape[1]) + 1 - k_reg, 0)
    nonconformity = np.empty_like(scores)
    np.put_along_axis(nonconformity, order, ranked_nonconformity, axis=1)
    return nonconformity


def conformal_quantile(calibration_nonconformity, alpha: float) -> float:
    """q̂: the ⌈(n + 1)(1 − α)⌉-th smallest calibration non-conformity, +inf when that rank exceeds n
    (every label is then in every set)."""
    values = np.asarray(calibration_nonconformity, dtype=np.float64)
    if values.ndim != 1 or not values.size:
        raise ValueError(f"expected a non-empty 1-D array of calibration non-conformities, got shape {values.shape}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    rank = int(np.ceil((values.size + 1) * (1.0 - alpha) - RANK_TOLERANCE))
    return float(np.partition(values, rank - 1)[rank - 1]) if rank <= values.size else float("inf")


def nonconformity(method: str, scores, u=None, **raps) -> np.ndarray:
    """The N×C non-conformity of ``method`` (:data:`SET_METHODS`); ``u`` (N,) for APS and RAPS,
    ``raps`` (``lam``, ``k_reg``, default :data:`RAPS_DEFAULTS`) for RAPS."""
    if method not in SET_METHODS:
        raise ValueError(f"method must be one of {SET_METHODS}, got {method!r}")
    if method == "lac":
        return lac_nonconformity(scores)
    if u is None:
        raise ValueError(f"{method} is randomised: pass u, one uniform draw per point")
    return aps_nonconformity(scores, u, **(RAPS_DEFAULTS | raps if method == "raps" else {}))


def prediction_sets(cal_nonconformity, cal_labels, eval_nonconformity, alpha: float) -> np.ndarray:
    """Boolean N_eval×C prediction sets {y : R[y] <= q̂}: q̂ from the calibration non-conformity matrix
    (N_cal×C) at the true labels, R the evaluation non-conformity matrix (N_eval×C)."""
    cal_nonconformity = np.asarray(cal_nonconformity)
    cal_labels = check_labels(cal_labels, len(cal_nonconformity), cal_nonconformity.shape[1])
    qhat = conformal_quantile(np.take_along_axis(cal_nonconformity, cal_labels[:, None], axis=1)[:, 0], alpha)
    return np.asarray(eval_nonconformity) <= qhat


def set_size_and_coverage(sets: np.ndarray, labels) -> tuple[float, float]:
    """Mean set size (labels) and empirical coverage (fraction of sets holding the true label)."""
    labels = check_labels(labels, len(sets), sets.shape[1])
    return float(sets.sum(axis=1).mean()), float(np.take_along_axis(sets, labels[:, None], axis=1).mean())


def calibration_split(n: int, n_cal: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A uniformly random split of range(n) into ``n_cal`` calibration and n − n_cal evaluation indices."""
    if not 0 < n_cal < n:
        raise ValueError(f"n_cal must lie in (0, {n}), got {n_cal}")
    order = rng.permutation(n)
    return order[:n_cal], order[n_cal:]


@dataclass(frozen=True)
class SetEfficiency:
    """Efficiency (mean set size) and coverage of one method at one α, each the mean over
    ``repeats`` draws of U (1 for LAC) with its standard deviation (ddof = 0)."""

    method: str
    alpha: float
    size: float
    size_std: float
    coverage: float
    coverage_std: float
    repeats: int


def evaluate_prediction_sets(scores, labels, *, n_cal: int, alphas=ALPHAS, methods=SET_METHODS,
                             repeats: int = 10, seed: int = 0, **raps) -> list[SetEfficiency]:
    """Table 2's protocol on one N×C score matrix: one seeded calibration/evaluation split (n_cal and
    N − n_cal points), then per method and α the mean set size and the coverage on the evaluation
    points; APS and RAPS are repeated ``repeats`` times with fresh uniforms U (both methods see the
    same draws of a repeat).  Randomness: one numpy Generator seeded by ``seed`` draws the split, then
    the U of each repeat.  ``raps``: ``lam``, ``k_reg`` (default :data:`RAPS_DEFAULTS`)."""
    scores = _matrix(scores)
    labels = check_labels(labels, len(scores), scores.shape[1])
    if int(repeats) != repeats or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    rng = np.random.default_rng(seed)
    cal, ev = calibration_split(len(scores), n_cal, rng)
    draws = [rng.random(len(scores)) for _ in range(repeats)]
    rows = []
    for method in methods:
        runs = [nonconformity(method, scores, u, **raps) for u in (draws if method in RANDOMISED else [None])]
        for alpha in alphas:
            sizes, coverages = np.array([
                set_size_and_coverage(prediction_sets(r[cal], labels[cal], r[ev], alpha), labels[ev]) for r in runs
            ]).T
            rows.append(SetEfficiency(method, float(alpha), float(sizes.mean()), float(sizes.std()),
                                      float(coverages.mean()), float(coverages.std()), len(runs)))
    return rows
