"""Conformal OOD evaluation: conformal p-values, calibration-conditional FPR bands, and the conformal
ROC, AUROC and FPR@TPRβ of Novello, Dalmau & Andéol, "Out-of-Distribution Detection Should Use
Conformal Prediction (and Vice-versa?)", 2024, arXiv 2403.11532 (§3–§4, Eqs. 3–15).

**Orientation.** Every score is a csfbench confidence: higher = more in-distribution (ID).  The paper
writes ``s_ood = −confidence``; the conversion happens here and nowhere else.  "Flagged as OOD at
threshold t" means ``confidence <= t``.  FPR is the fraction of **ID** points flagged as OOD and TPR
the fraction of OOD points flagged (the paper's §2.1: OOD = positive class), because only an FPR
measured on ID data can be bounded with an ID calibration set.  The AUROC is the same number with
either class positive, so :func:`conformal_auroc` is compared with :func:`csfbench.metrics.auroc`
(ID = success = positive); :func:`conformal_fpr_at_tpr` corrects, and is compared with,
:func:`csfbench.metrics.fpr_at_tpr` with ``positive="failure"`` (OOD = failure = positive).

**Bands.** A band b_1 ≤ … ≤ b_n (n = calibration size) is a simultaneous upper bound on the order
statistics of n iid Uniform(0, 1): P(U_(i) <= b_i for all i) >= 1 − δ.  With k(t) = #{calibration
scores <= t} the empirical FPR is k/n and the calibration-conditional FPR is FPR⁺(t) = b_{k+1}
(1 when k = n), so that P(FPR(t) <= FPR⁺(t) for every t) >= 1 − δ (Eq. 10); applied to the
marginal p-value u = (k + 1)/(n + 1) the same map gives calibration-conditional p-values (Eq. 7).
Methods (:data:`METHODS`):

* ``simes`` — the generalised Simes band of Eq. 11 with k = ⌊n/2⌋ (b_1 = 1 − δ^{1/k}; the top
  k − 1 entries are 1).  Finite-sample valid; tight at small FPR only.
* ``dkwm`` — b_i = min(i/n + ε, 1), ε = sqrt(log(2/δ) / (2n)) (Eq. 12).  Finite-sample valid.
* ``asymptotic`` — b_i = min(i/n + c_n(δ) sqrt(i(n − i)) / n^{3/2}, 1) with c_n of Eq. 13 (Eq. 14).
  Valid only as n → ∞; needs n >= 16 so that log log log n >= 0.
* ``mc_gamma0`` — the hybrid of Eq. 15, min(Simes at δ, asymptotic at δ), with the asymptotic part
  continued as a straight line beyond i = ⌊n/2⌋ (the construction of the authors' reference, Bates
  et al.'s ``conditional-conformal-pvalues``).  No simulation: this is the γ = 0 hybrid, which
  reproduces the corrections printed in the paper's Tables 1 and 3–5.  It is NOT valid at level δ:
  its simulated crossing probability is about 1.7 δ at δ = 0.01 and 1.3 δ at δ = 0.05 (n = 9,000).
* ``mc_search`` — the same hybrid with its asymptotic part at level δ − γ̂, γ̂ the reference code's
  bisection of the Monte-Carlo crossing probability (``n_mc`` simulated order-statistic vectors,
  numpy Generator seeded by ``seed``).  Valid up to Monte-Carlo error; since the Simes part alone
  already crosses with probability ≈ δ, the search drives δ − γ̂ toward 0 and the band is wider
  than ``mc_gamma0``'s.  Never mix the two in one table (docs/methods.md §14: which band to use).

Bands are cached per (n, δ, method, n_mc, seed) and returned read-only; :func:`write_band` and
:func:`read_band` keep one as a ``.npy`` file (the workflow's cache, rule ``conformal_band``, whose job
imports only this module).  Values are fractions in [0, 1].  Bad scores raise
:class:`~csfbench.metrics.MetricInputError`; bad band arguments ValueError.
"""
from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from csfbench.atomic import save_npy
from csfbench.metrics._inputs import MetricInputError, finite_1d
from csfbench.metrics.classification import _curve, fpr_at_tpr

log = logging.getLogger(__name__)
METHODS = ("simes", "dkwm", "asymptotic", "mc_gamma0", "mc_search")
#: the methods built on c_n(δ) of Eq. 13, which needs log log log n >= 0
ASYMPTOTIC_METHODS = ("asymptotic", "mc_gamma0", "mc_search")
MIN_N_ASYMPTOTIC = 16
#: float64 entries of one block of simulated order statistics (64 MiB): memory is bounded by this
#: block, whatever ``n_mc``
MC_BLOCK_ENTRIES = 1 << 23
#: γ search of ``mc_search``: bracket [−(1 − δ − GAMMA_MARGIN), δ − GAMMA_MARGIN], stopped at this width
GAMMA_MARGIN = 1e-6


def _check_band_args(n: int, delta: float, method: str, n_mc: int) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if int(n) != n or n < 1:
        raise ValueError(f"the calibration size n must be a positive integer, got {n!r}")
    if method in ASYMPTOTIC_METHODS and n < MIN_N_ASYMPTOTIC:
        raise ValueError(f"method {method!r} needs n >= {MIN_N_ASYMPTOTIC} (log log log n >= 0), got n = {n}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if method == "mc_search" and (int(n_mc) != n_mc or n_mc < 1):
        raise ValueError(f"n_mc must be a positive integer, got {n_mc!r}")


def correction_band(n: int, delta: float, method: str, *, n_mc: int = 10_000, seed: int = 0) -> np.ndarray:
    """The band b_1 … b_n (float64 (n,), non-decreasing, in [0, 1], read-only) of ``method`` for n
    calibration points at level ``delta`` (module docstring).  ``n_mc`` and ``seed`` matter only for
    ``mc_search``; each band is computed once per process and key."""
    _check_band_args(n, delta, method, n_mc)
    if method != "mc_search":
        n_mc, seed = 0, 0  # the deterministic bands share one cache entry
    return _cached_band(int(n), float(delta), method, int(n_mc), int(seed))


@lru_cache(maxsize=128)
def _cached_band(n: int, delta: float, method: str, n_mc: int, seed: int) -> np.ndarray:
    if method == "simes":
        band = _simes(n, delta)
    elif method == "dkwm":
        band = np.minimum(np.arange(1, n + 1) / n + np.sqrt(np.log(2.0 / delta) / (2.0 * n)), 1.0)
    elif method == "asymptotic":
        i = np.arange(1, n + 1)
        band = np.minimum(i / n + _cn(n, delta) * np.sqrt(i * (n - i)) / (n * np.sqrt(n)), 1.0)
    else:
        gamma = 0.0 if method == "mc_gamma0" else _search_gamma(n, delta, n_mc, seed)
        band = _hybrid(n, delta, gamma)
    band.setflags(write=False)
    return band


def write_band(n: int, delta: float, method: str, n_mc: int, seed: int, out: str | Path) -> None:
    """Compute :func:`correction_band` ``(n, delta, method, n_mc=n_mc, seed=seed)`` into ``out`` (.npy,
    written atomically)."""
    band = correction_band(n, delta, method, n_mc=n_mc, seed=seed)
    save_npy(band, out)
    log.info("band %s n=%d delta=%g n_mc=%d seed=%d: b_1=%.6g, b_n/2=%.6g", method, n, delta, n_mc, seed, band[0],
             band[n // 2])


def read_band(path: str | Path, n: int) -> np.ndarray:
    """A band file of :func:`write_band` for ``n`` calibration points; ValueError naming the file unless it
    holds n non-decreasing values in [0, 1]."""
    band = np.load(path, allow_pickle=False)
    if band.shape != (n,) or not np.all(np.diff(band) >= 0) or band.min() < 0 or band.max() > 1:
        raise ValueError(f"{path}: not a correction band for n = {n} (shape {band.shape})")
    return band


def _simes(n: int, delta: float) -> np.ndarray:
    """Eq. 11 with k = max(⌊n/2⌋, 1): b_{n+1−i} = 1 − a_i, a_i = (δ Π_{l=0}^{k−1} (i − l)/(n − l))^{1/k}
    for i >= k and 0 below, the products as log-gamma differences."""
    from scipy.special import gammaln  # here, not at the top: csfbench.workflow.settings imports this module's constants

    k = max(n // 2, 1)
    i = np.arange(k, n + 1)
    a = np.zeros(n)
    a[k - 1:] = np.exp((np.log(delta) + gammaln(i + 1) - gammaln(i - k + 1) - gammaln(n + 1) + gammaln(n - k + 1)) / k)
    return 1.0 - a[::-1]


def _cn(n: int, delta: float) -> float:
    """c_n(δ) of Eq. 13."""
    loglog = np.log(np.log(n))
    return float((-np.log(-np.log1p(-delta)) + 2.0 * loglog + 0.5 * np.log(loglog) - 0.5 * np.log(np.pi))
                 / np.sqrt(2.0 * loglog))


def _hybrid_shape(n: int) -> np.ndarray:
    """G_i with asymptotic band = i/n + c·G_i: sqrt(i(n − i))/n^{3/2} up to i = m = ⌊n/2⌋, then the
    straight line through i = m − 1 and m (all entries > 0)."""
    i = np.arange(1, n + 1)
    shape = np.sqrt(i * (n - i)) / (n * np.sqrt(n))
    m = n // 2
    shape[m:] = shape[m - 1] + (shape[m - 1] - shape[m - 2]) * (i[m:] - m)
    return shape


def _hybrid(n: int, delta: float, gamma: float) -> np.ndarray:
    """Eq. 15's band: min(Simes at δ, linear-tail asymptotic at δ − γ), as the reference code."""
    return np.minimum(_simes(n, delta), np.arange(1, n + 1) / n + _cn(n, delta - gamma) * _hybrid_shape(n))


def _crossing_statistics(n: int, delta: float, n_mc: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per simulated order-statistic vector U: whether it crosses the Simes band, and
    c* = max_i (U_(i) − i/n)/G_i, so that it crosses the asymptotic part iff c_n(δ − γ) < c*.

    One pass over ``n_mc`` vectors in blocks of :data:`MC_BLOCK_ENTRIES`; U_(i) = S_i / S_{n+1} with
    S the cumulative sums of n + 1 standard exponentials (exactly the law of sorted uniforms, without
    a sort).  The crossing probability of every γ then costs O(n_mc), not a new simulation.
    """
    simes, shape, diagonal = _simes(n, delta), _hybrid_shape(n), np.arange(1, n + 1) / n
    rng = np.random.default_rng(seed)
    rows = max(1, MC_BLOCK_ENTRIES // (n + 1))
    crosses_simes, c_star = np.empty(n_mc, dtype=bool), np.empty(n_mc)
    for start in range(0, n_mc, rows):
        block = rng.standard_exponential((min(rows, n_mc - start), n + 1))
        np.cumsum(block, axis=1, out=block)
        order = block[:, :n]
        order /= block[:, n:]
        done = slice(start, start + len(block))
        crosses_simes[done] = np.any(order > simes, axis=1)
        order -= diagonal
        order /= shape
        c_star[done] = order.max(axis=1)
    return crosses_simes, c_star


def _search_gamma(n: int, delta: float, n_mc: int, seed: int) -> float:
    """γ̂ of the reference code's bisection: the crossing probability p̂(γ) of the hybrid band at
    δ − γ is pushed up to δ.  Returns the upper end of the final bracket (p̂ <= δ there unless even
    the loosest band crosses more often); the reference returns the last midpoint, either side."""
    crosses_simes, c_star = _crossing_statistics(n, delta, n_mc, seed)
    low, high = -(1.0 - GAMMA_MARGIN - delta), delta - GAMMA_MARGIN
    while high - low > GAMMA_MARGIN:
        gamma = 0.5 * (low + high)
        crossing = np.count_nonzero(crosses_simes | (_cn(n, delta - gamma) < c_star)) / n_mc
        low, high = (gamma, high) if crossing > delta else (low, gamma)
    return high


def _scores(values, name: str) -> np.ndarray:
    scores = finite_1d(values, name)
    if not scores.size:
        raise MetricInputError(f"{name} is empty")
    return scores


def _upper(counts: np.ndarray, band: np.ndarray) -> np.ndarray:
    """b_{k+1} for counts k < n and 1 for k = n (n = len(band))."""
    return np.append(band, 1.0)[counts]


def conformal_pvalues(calibration_scores, test_scores, band: np.ndarray | None = None) -> np.ndarray:
    """Conformal p-values of the test points under H0 "x is ID", float64 (m,) in (0, 1].

    Scores are confidences (higher = more ID), so a small p-value means "unusually low confidence".
    Marginal (``band=None``, the paper's Eq. 3 in this orientation, Eq. 9's identity):
    u(x) = (1 + #{i: cal_i <= s(x)}) / (1 + n); a tie with a calibration score counts toward the
    larger p-value (conservative).  P(u(x) <= t) <= t for every t, over calibration and test draws.
    With ``band`` (:func:`correction_band` for n = len(calibration_scores)): the
    calibration-conditional p-value h(u) = b_{(n+1)u} (Eq. 7), and 1 when u = 1.
    """
    calibration = np.sort(_scores(calibration_scores, "calibration_scores"))
    counts = np.searchsorted(calibration, _scores(test_scores, "test_scores"), side="right")
    if band is None:
        return (counts + 1.0) / (calibration.size + 1.0)
    if np.shape(band) != calibration.shape:
        raise ValueError(f"band has shape {np.shape(band)}, expected ({calibration.size},) for the calibration set")
    return _upper(counts, np.asarray(band, dtype=np.float64))


def correct_fpr(fpr, n_cal: int, delta: float, method: str, *, n_mc: int = 10_000, seed: int = 0) -> np.ndarray:
    """Calibration-conditional FPR⁺ = h(FPR) for empirical FPRs (fractions in [0, 1]) measured on
    ``n_cal`` ID calibration points: b_{k+1}, k = FPR·n_cal, and 1 at FPR = 1.

    An empirical FPR is a multiple of 1/n_cal; any other value (e.g. a mean over OOD sets, as in
    published tables) is read as the nearest count.  Returns float64 of ``fpr``'s shape.
    """
    fpr = np.asarray(fpr, dtype=np.float64)
    if not np.all((fpr >= 0) & (fpr <= 1)):
        raise ValueError("fpr must lie in [0, 1]")
    band = correction_band(n_cal, delta, method, n_mc=n_mc, seed=seed)
    return _upper(np.rint(fpr * n_cal).astype(np.int64), band)


def conformal_fpr(calibration_scores, thresholds, delta: float, method: str, *, n_mc: int = 10_000,
                  seed: int = 0) -> np.ndarray:
    """FPR⁺(t) at each threshold t (confidence units; ID flagged as OOD iff confidence <= t), float64
    of ``thresholds``' length: h of the empirical FPR #{cal <= t}/n (Eq. 10).  Always >= the empirical
    FPR; with probability >= 1 − δ over the calibration draw it bounds the true FPR at every t."""
    calibration = np.sort(_scores(calibration_scores, "calibration_scores"))
    counts = np.searchsorted(calibration, finite_1d(thresholds, "thresholds"), side="right")
    return _upper(counts, correction_band(calibration.size, delta, method, n_mc=n_mc, seed=seed))


class ConformalROC(NamedTuple):
    """ROC points from (0, 0) to (1, 1), one per distinct threshold: the classical FPR k/n, the
    conformal FPR⁺ and the TPR (OOD flagged), each float64 and non-decreasing."""

    fpr: np.ndarray
    fpr_conformal: np.ndarray
    tpr: np.ndarray


def conformal_roc(id_scores, ood_scores, delta: float, method: str, *, n_mc: int = 10_000,
                  seed: int = 0) -> ConformalROC:
    """The classical and the conformal ROC of confidences (higher = more ID) of ID calibration points
    ``id_scores`` and OOD points ``ood_scores``.  Thresholds are the distinct pooled scores, swept from
    flagging nothing to flagging all; a tie is flagged whole.  The conformal curve replaces the FPR
    k/n by FPR⁺ = b_{k+1} at every threshold (the OOD side is not corrected) and keeps the anchor
    (0, 0) of flagging nothing; it ends at (1, 1)."""
    id_scores = _scores(id_scores, "id_scores")
    return band_roc(id_scores, ood_scores, correction_band(id_scores.size, delta, method, n_mc=n_mc, seed=seed))


def band_roc(id_scores, ood_scores, band: np.ndarray) -> ConformalROC:
    """:func:`conformal_roc` with a given band (:func:`correction_band` for n = len(id_scores))."""
    id_scores, ood_scores = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    band = _band_for(band, id_scores.size)
    is_ood = np.r_[np.zeros(id_scores.size, dtype=bool), np.ones(ood_scores.size, dtype=bool)]
    id_flagged, ood_flagged = _curve(-np.r_[id_scores, ood_scores], is_ood)
    counts = id_flagged.astype(np.int64)
    fpr_conformal = _upper(counts, band)
    fpr_conformal[0] = 0.0
    return ConformalROC(counts / id_scores.size, fpr_conformal, ood_flagged / ood_scores.size)


def _band_for(band, n: int) -> np.ndarray:
    band = np.asarray(band, dtype=np.float64)
    if band.shape != (n,):
        raise ValueError(f"band has shape {band.shape}, expected ({n},) for {n} ID calibration scores")
    return band


def conformal_auroc(id_scores, ood_scores, delta: float, method: str, *, n_mc: int = 10_000,
                    seed: int = 0) -> float:
    """Area under the conformal ROC (:func:`conformal_roc`, trapezoids), in [0, 1], higher = better.

    Confidences, higher = more ID; the classical counterpart is :func:`csfbench.metrics.auroc` of
    the pooled scores with residual 1 for OOD (ID = positive; the same area as OOD-positive on the
    negated scores).  The conformal value is <= the classical one: with probability >= 1 − δ the true
    ROC lies above the conformal curve at every threshold.
    """
    roc = conformal_roc(id_scores, ood_scores, delta, method, n_mc=n_mc, seed=seed)
    return float(np.trapezoid(roc.tpr, roc.fpr_conformal))


def conformal_fpr_at_tpr(id_scores, ood_scores, delta: float, method: str, tpr: float = 0.95, *,
                         n_mc: int = 10_000, seed: int = 0) -> float:
    """Conformal FPR@TPRβ (β = ``tpr``, e.g. 0.95 or 0.99), in [0, 1], lower = better.

    Confidences, higher = more ID; OOD = positive: flag by ascending confidence until at least β of
    the OOD points are flagged, the classical value is the fraction k/n of ID calibration points then
    flagged — :func:`csfbench.metrics.fpr_at_tpr` with ``positive="failure"`` and residual 1 for OOD,
    reused here — and the conformal value is FPR⁺ = b_{k+1} at that threshold.
    """
    id_scores = _scores(id_scores, "id_scores")
    band = correction_band(id_scores.size, delta, method, n_mc=n_mc, seed=seed)
    return band_metrics(id_scores, ood_scores, band, tprs=(tpr,))[f"fpr@{tpr:g}"][1]


def band_metrics(id_scores, ood_scores, band: np.ndarray, tprs=(0.95, 0.99)) -> dict[str, tuple[float, float]]:
    """(classical, conformal) values of the AUROC (key ``"auroc"``) and of FPR@TPRβ for each β of
    ``tprs`` (keys ``"fpr@0.95"``, ...) of ID calibration confidences ``id_scores`` against OOD
    confidences ``ood_scores`` (higher = more ID), corrected with ``band`` (:func:`correction_band`
    for n = len(id_scores)).  Fractions in [0, 1]; conformal AUROC <= classical, conformal FPR >=
    classical.  The workflow computes each band once (a cached file) and evaluates every CSF with it.
    """
    id_scores, ood_scores = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    band = _band_for(band, id_scores.size)
    roc = band_roc(id_scores, ood_scores, band)
    out = {"auroc": (float(np.trapezoid(roc.tpr, roc.fpr)), float(np.trapezoid(roc.tpr, roc.fpr_conformal)))}
    residual = np.r_[np.zeros(id_scores.size), np.ones(ood_scores.size)]
    pooled = np.r_[id_scores, ood_scores]
    for tpr in tprs:
        classical = fpr_at_tpr(pooled, residual, tpr, positive="failure")
        conformal = float(_upper(np.rint(np.asarray(classical) * id_scores.size).astype(np.int64), band))
        out[f"fpr@{tpr:g}"] = (float(classical), conformal)
    return out
