"""Bootstrap percentile intervals of the binary-label metrics, computed without re-sorting per replicate.

:func:`interval` returns the percentile interval (Efron & Tibshirani, *An Introduction to the Bootstrap*,
1993, ch. 13) of a metric of :mod:`csfbench.metrics.registry` from ``n_boot`` bootstrap replicates.

Inputs, as every metric of the registry takes them: ``confidence`` (higher = more in-distribution or more
likely correct) and ``labels``, the binary array passed to the metric as its ``residual``: 1 for a failure
(a misclassified sample, failure-detection schemes) or an OOD sample (OOD schemes), 0 for a correct or an
ID sample.

Resampling: with ``stratify=True`` the two label classes are resampled separately, each with its own size
(n₀ draws with replacement among the n₀ samples of label 0, n₁ among those of label 1), so every
replicate keeps the class sizes and both classes; with ``stratify=False`` the N samples are resampled
together and a replicate that lost a class makes the metric undefined.

Replicate method: a bootstrap resample is a vector of multinomial counts over the original samples, and
every supported metric is a function of the per-tie-group class totals along the order of descending
confidence.  The samples are sorted once (stably) and grouped into plateaus of equal confidence — the tie
groups the metrics themselves use (a plateau is accepted or rejected whole: ``classification._curve``,
``risk_coverage._accepted_sums``) — and each replicate's count vector is summed per group and class; the
metric then follows from cumulative sums of those weights, vectorised over chunks of :data:`CHUNK`
replicates (memory O(CHUNK · N)).  A group whose weight is 0 in a replicate adds a zero-width step, so the
value equals the metric evaluated on the explicit resample ``np.repeat(confidence, counts)``,
``np.repeat(labels, counts)`` (tested to 1e-12).  :func:`replicates` takes an explicit count matrix.

Supported metrics (:data:`SUPPORTED`): AUROC, FPR@95/99 TPR (success or failure positive), AUPR-In/Out
(step and trapezoid), AURC, AUGRC, e-AURC, e-AUGRC (csfbench's tie-aware curves) and AUTC — every default row
but ECE/MCE.  The others raise ValueError: rows needing context arrays (``shifted``, ``labels``), those with
no weighted replicate here (ECE, MCE, Brier, NLL, the achievable AURC, the parametric ``risk@``/``coverage@``/
``sgr_`` families), the sample-wise (``@torch-uncertainty``) and collinear-dropping (``fpr95@openood``,
``fpr95@fd-shifts``) peer conventions, and the conformal corrections.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from csfbench.metrics._inputs import (
    MetricInputError,
    UndefinedMetricError,
    check_binary,
    check_pair,
    check_two_classes,
)
from csfbench.metrics.classification import FPR_RULES
from csfbench.metrics.registry import metric_spec

#: replicates evaluated at once: the working arrays are CHUNK × N (fixed, so a seed gives one stream of draws)
CHUNK = 64
_TPR_TOLERANCE = FPR_RULES["csfbench"][0]


class _Groups:
    """Per replicate (rows) and tie group (columns, descending confidence): ``good`` = weight of label 0
    (correct / ID), ``bad`` = weight of label 1 (failure / OOD); ``value`` = each group's confidence."""

    def __init__(self, good: np.ndarray, bad: np.ndarray, value: np.ndarray):
        self.good, self.bad, self.value = good, bad, value
        self.n_good = good.sum(axis=1, keepdims=True)
        self.n_bad = bad.sum(axis=1, keepdims=True)


def _auroc(g: _Groups) -> np.ndarray:
    """Weighted Mann–Whitney: P(conf of label 0 > conf of label 1) + ½ P(tie)."""
    bad_below = g.n_bad - np.cumsum(g.bad, axis=1)
    pairs = np.sum(g.good * (bad_below + 0.5 * g.bad), axis=1)
    return pairs / (g.n_good[:, 0] * g.n_bad[:, 0])


def _fpr_at_tpr(tpr: float, positive: str) -> Callable[[_Groups], np.ndarray]:
    def fpr(g: _Groups) -> np.ndarray:
        pos, neg = (g.good, g.bad) if positive == "success" else (g.bad[:, ::-1], g.good[:, ::-1])
        tprs = np.cumsum(pos, axis=1) / pos.sum(axis=1, keepdims=True)
        fprs = np.cumsum(neg, axis=1) / neg.sum(axis=1, keepdims=True)
        return np.where(tprs >= tpr - _TPR_TOLERANCE, fprs, np.inf).min(axis=1)
    return fpr


def _average_precision(positive: str, integration: str) -> Callable[[_Groups], np.ndarray]:
    def ap(g: _Groups) -> np.ndarray:
        pos, neg = (g.good, g.bad) if positive == "success" else (g.bad[:, ::-1], g.good[:, ::-1])
        tps, fps = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)
        accepted = tps + fps
        # precision 1 before the first accepted sample: those steps have zero width, and the trapezoid that
        # follows starts from the curve's point (recall 0, precision 1)
        precision = np.divide(tps, accepted, out=np.ones_like(tps), where=accepted > 0)
        recall = tps / tps[:, -1:]
        step = np.diff(recall, axis=1, prepend=0.0)
        if integration == "step":
            return np.sum(step * precision, axis=1)
        previous = np.concatenate([np.ones((tps.shape[0], 1)), precision[:, :-1]], axis=1)
        return np.sum(step * (previous + precision), axis=1) / 2
    return ap


def _rc_points(g: _Groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group end (ascending coverage): the weight accepted, its failure weight, and the total (B × 1)."""
    accepted = np.cumsum(g.good + g.bad, axis=1)
    return accepted, np.cumsum(g.bad, axis=1), accepted[:, -1:]


def _trapezoid_from_zero(coverage: np.ndarray, risk: np.ndarray, risk_at_zero: np.ndarray) -> np.ndarray:
    widths = np.diff(coverage, axis=1, prepend=0.0)
    previous = np.concatenate([risk_at_zero, risk[:, :-1]], axis=1)
    return np.sum(widths * (previous + risk), axis=1) / 2


def _aurc(g: _Groups) -> np.ndarray:
    """Trapezoids over the tie-aware selective risk curve; at coverage 0 the curve keeps the risk of the most
    confident non-empty group (csfbench's convention); empty leading groups get that risk too (zero width)."""
    accepted, failures, total = _rc_points(g)
    nonempty = accepted > 0
    risk = np.divide(failures, accepted, out=np.zeros_like(failures), where=nonempty)
    first = np.take_along_axis(risk, np.argmax(nonempty, axis=1)[:, None], axis=1)
    return _trapezoid_from_zero(accepted / total, np.where(nonempty, risk, first), first)


def _augrc(g: _Groups) -> np.ndarray:
    """Trapezoids over the tie-aware generalized risk curve (failures accepted / N), from (0, 0)."""
    accepted, failures, total = _rc_points(g)
    return _trapezoid_from_zero(accepted / total, failures / total, np.zeros_like(total))


def _failure_rate(g: _Groups) -> np.ndarray:
    return (g.n_bad / (g.n_good + g.n_bad))[:, 0]


def _e_aurc(g: _Groups) -> np.ndarray:
    f = _failure_rate(g)
    return _aurc(g) - (f + (1.0 - f) * np.log1p(-f))  # aurc_optimal; f < 1 as both classes are present


def _e_augrc(g: _Groups) -> np.ndarray:
    f = _failure_rate(g)
    return _augrc(g) - 0.5 * f * f


def _autc(g: _Groups) -> np.ndarray:
    """(mean_ID s + mean_OOD (1 − s)) / 2 with s = (max c − c) / (max c − min c) over the replicate's samples."""
    present = (g.good + g.bad) > 0
    top = g.value[np.argmax(present, axis=1)]
    bottom = g.value[present.shape[1] - 1 - np.argmax(present[:, ::-1], axis=1)]
    span = top - bottom
    if np.any(span == 0):
        raise UndefinedMetricError("autc is undefined on a replicate of constant confidences")
    mean_good = (g.good @ g.value) / g.n_good[:, 0]
    mean_bad = (g.bad @ g.value) / g.n_bad[:, 0]
    return ((top - mean_good) + (mean_bad - bottom)) / span / 2


#: the metric names with a weighted replicate, and their functions of the per-group weights
SUPPORTED: dict[str, Callable[[_Groups], np.ndarray]] = {
    "auroc": _auroc, "aurc": _aurc, "augrc": _augrc, "e_aurc": _e_aurc, "e_augrc": _e_augrc, "autc": _autc,
    "aupr_in": _average_precision("success", "step"), "aupr_out": _average_precision("failure", "step"),
    "aupr_in@trapezoid": _average_precision("success", "trapezoid"),
    "aupr_out@trapezoid": _average_precision("failure", "trapezoid"),
    **{f"fpr{p}{suffix}": _fpr_at_tpr(p / 100, positive)
       for p in (95, 99) for suffix, positive in (("", "success"), ("_failure_positive", "failure"))},
}


def _supported(metric: str) -> Callable[[_Groups], np.ndarray]:
    spec = metric_spec(metric)  # an unknown name raises UnknownMetricError (a ValueError) listing the known ones
    if metric in SUPPORTED:
        return SUPPORTED[metric]
    reason = (f"it needs the context array(s) {', '.join(spec.needs)}" if spec.needs
              else "no weighted replicate is implemented for it")
    raise ValueError(f"bootstrap intervals are not available for metric {metric!r}: {reason}; "
                     f"supported: {', '.join(sorted(SUPPORTED))}")


class _Sorted:
    """The validated inputs sorted once: ``order`` (stable, descending confidence), ``starts`` (the sorted
    position where each tie group begins), ``value`` (each group's confidence), ``bad`` (label 1, input order)
    and ``key`` (input order: 2 × the sample's group + its label, the cell it adds its weight to)."""

    def __init__(self, confidence, labels):
        conf, res = check_pair(confidence, labels)
        check_binary(res, "bootstrap labels")
        self.bad = res == 1
        check_two_classes(self.bad, "the bootstrap")
        self.order = np.argsort(-conf, kind="stable")
        sorted_conf = conf[self.order]
        first = np.r_[True, sorted_conf[1:] != sorted_conf[:-1]]
        self.starts, self.value = np.flatnonzero(first), sorted_conf[first]
        group = np.empty(conf.size, dtype=np.int64)
        group[self.order] = np.cumsum(first) - 1
        self.key = 2 * group + self.bad

    def groups(self, good: np.ndarray, bad: np.ndarray) -> _Groups:
        """The :class:`_Groups` of per-group weights, checked for both classes in every replicate."""
        groups = _Groups(good, bad, self.value)
        missing = (groups.n_good[:, 0] == 0) | (groups.n_bad[:, 0] == 0)
        if np.any(missing):
            raise UndefinedMetricError(f"{int(np.count_nonzero(missing))} replicate(s) lack one label class; the "
                                       "metrics need both (resample with stratify=True)")
        return groups

    def from_counts(self, counts: np.ndarray) -> _Groups:
        """Per-group weights of count vectors (replicates × N, input order)."""
        w = counts[:, self.order].astype(np.float64)
        is_bad = self.bad[self.order]
        return self.groups(np.add.reduceat(np.where(is_bad, 0.0, w), self.starts, axis=1),
                           np.add.reduceat(np.where(is_bad, w, 0.0), self.starts, axis=1))

    def from_picks(self, picks: np.ndarray) -> _Groups:
        """Per-group weights of resamples given as drawn sample indices (replicates × draws, input order):
        one bincount over (replicate, group, label) cells, no N-wide count matrix or gather."""
        cells = 2 * self.value.size
        flat = (np.arange(picks.shape[0])[:, None] * cells + self.key[picks]).ravel()
        weights = np.bincount(flat, minlength=picks.shape[0] * cells).reshape(picks.shape[0], -1, 2)
        return self.groups(weights[:, :, 0].astype(np.float64), weights[:, :, 1].astype(np.float64))


def replicates(metric: str, confidence, labels, counts) -> np.ndarray:
    """The metric on each bootstrap resample given as a row of ``counts`` (B × N non-negative integers, the
    number of times each sample, in input order, is drawn), as a float array of B values.

    Equal to ``csfbench.metrics.metric(metric)(np.repeat(confidence, c), np.repeat(labels, c))`` for each row
    ``c``, computed from one sort.  ``confidence``: higher = more in-distribution / more likely correct;
    ``labels``: 1 = failure or OOD, 0 = correct or ID.  A row that leaves out a class raises
    :class:`UndefinedMetricError`.
    """
    function = _supported(metric)
    data = _Sorted(confidence, labels)
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != data.order.size:
        raise MetricInputError(f"counts must have shape (B, {data.order.size}), got {counts.shape}")
    if not np.issubdtype(counts.dtype, np.integer) or np.any(counts < 0):
        raise MetricInputError("counts must be non-negative integers")
    return np.concatenate([function(data.from_counts(counts[i:i + CHUNK]))
                           for i in range(0, counts.shape[0], CHUNK)]) if counts.shape[0] else np.empty(0)


def _draw(rng: np.random.Generator, size: int, members: list[np.ndarray]) -> np.ndarray:
    """``size`` resamples as sample indices (size × Σ len(members)): for each index set in ``members``,
    len(set) draws with replacement among its samples."""
    return np.concatenate([index[rng.integers(0, index.size, size=(size, index.size))] for index in members],
                          axis=1)


def _replicate_values(function, data: _Sorted, rng: np.random.Generator, n_boot: int,
                      members: list[np.ndarray]) -> np.ndarray:
    """The metric on ``n_boot`` resamples drawn by :func:`_draw` in chunks of :data:`CHUNK`."""
    return np.concatenate([function(data.from_picks(_draw(rng, min(CHUNK, n_boot - i), members)))
                           for i in range(0, n_boot, CHUNK)])


def interval(metric: str, confidence, labels, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
             stratify: bool = True) -> tuple[float, float]:
    """The bootstrap percentile interval ``(low, high)`` of ``metric`` at confidence ``level``, in the metric's
    units (fractions; AURC/AUGRC unscaled, not ×1000).

    ``metric``: a name of :data:`SUPPORTED` (registry names, e.g. ``"auroc"``, ``"fpr95"``, ``"augrc"``).
    ``confidence``: higher = more in-distribution / more likely correct.  ``labels``: the binary array the
    metric takes as its residual — 1 = failure (failure-detection schemes) or OOD sample (OOD schemes),
    0 = correct or ID.  ``n_boot`` replicates drawn with ``numpy.random.default_rng(seed)`` (deterministic);
    ``stratify=True`` resamples the two label classes separately with their own sizes.  The interval is the
    (1 − level)/2 and (1 + level)/2 quantiles of the replicates (numpy's linear interpolation; Efron &
    Tibshirani 1993, ch. 13).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    function = _supported(metric)
    data = _Sorted(confidence, labels)
    members = ([np.flatnonzero(~data.bad), np.flatnonzero(data.bad)] if stratify
               else [np.arange(data.bad.size)])
    values = _replicate_values(function, data, np.random.default_rng(seed), int(n_boot), members)
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)
