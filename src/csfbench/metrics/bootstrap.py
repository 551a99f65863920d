"""Bootstrap percentile intervals of the binary-label metrics, computed without re-sorting per replicate.

:func:`intervals` returns the percentile intervals (Efron & Tibshirani, *An Introduction to the Bootstrap*,
1993, ch. 13) of several metrics of :mod:`csfbench.metrics.registry` from the same ``n_boot`` bootstrap
replicates; :func:`interval` is the one-metric form (the same draws for the same seed).

Inputs, as every metric of the registry takes them: ``confidence`` (higher = more in-distribution or more
likely correct) and ``labels``, the binary array passed to the metric as its ``residual``: 1 for a failure
(a misclassified sample, failure-detection schemes) or an OOD sample (OOD schemes), 0 for a correct or an
ID sample.  Optional: ``weight``, the per-sample weights of the metrics that take them (``auroc`` in the
``failure`` scheme, :attr:`~csfbench.metrics.registry.MetricSpec.weighted`), and ``strata``, labels of samples
that must also keep their numbers (the ``shifted`` flags of a scheme's set: the ID and the shifted set are
separate samples).

Resampling: with ``stratify=True`` the two label classes are resampled separately, each with its own size
(n₀ draws with replacement among the n₀ samples of label 0, n₁ among those of label 1) — and, with
``strata``, every (label, stratum) cell separately — so every replicate keeps the class (and cell) sizes and
both classes; with ``stratify=False`` the N samples are resampled together and a replicate that lost a class
makes the metrics undefined.  A drawn sample carries its own weight, so a weighted metric's replicate equals
the metric on the resample with the resampled weights; the ``failure`` scheme's weights (1/n_id, 1/n_shift,
:func:`~csfbench.metrics.schemes.build_scheme`) are the resample's own when ``strata`` keeps n_id and n_shift.

Replicate method: a bootstrap resample is a vector of multinomial counts over the original samples, and
every supported metric is a function of the per-tie-group class totals along the order of descending
confidence.  The samples are sorted once (stably) and grouped into plateaus of equal confidence — the tie
groups the metrics themselves use (a plateau is accepted or rejected whole: ``classification._curve``,
``risk_coverage._accepted_sums``) — and each replicate's count vector is summed per group and class; the
metrics then follow from cumulative sums of those weights, vectorised over chunks of :data:`CHUNK`
replicates (memory O(CHUNK · N)).  Per chunk the draw, the group weights and the cumulative sums the metrics
share are computed once for every requested metric.  A group whose weight is 0 in a replicate adds a
zero-width step, so the value equals the metric evaluated on the explicit resample
``np.repeat(confidence, counts)``, ``np.repeat(labels, counts)`` (tested to 1e-12).  :func:`replicates` takes
an explicit count matrix.

Supported metrics (:data:`SUPPORTED`): AUROC, FPR@95/99 TPR (success or failure positive), AUPR-In/Out
(step and trapezoid), AURC, AUGRC, e-AURC, e-AUGRC (csfbench's tie-aware curves) and AUTC — every default row
but ECE/MCE.  The others raise ValueError: rows needing context arrays (``shifted``, ``labels``), those with
no weighted replicate here (ECE, MCE, Brier, NLL, the achievable AURC, the parametric ``risk@``/``coverage@``/
``sgr_`` families), the sample-wise (``@torch-uncertainty``) and collinear-dropping (``fpr95@openood``,
``fpr95@fd-shifts``) peer conventions, and the conformal corrections.
"""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np

from csfbench.metrics._inputs import (
    MetricInputError,
    UndefinedMetricError,
    check_binary,
    check_pair,
    check_two_classes,
    finite_1d,
)
from csfbench.metrics.classification import FPR_RULES
from csfbench.metrics.registry import metric_spec

log = logging.getLogger(__name__)

#: replicates evaluated at once: the working arrays are CHUNK × N (fixed, so a seed gives one stream of draws)
CHUNK = 64
_TPR_TOLERANCE = FPR_RULES["csfbench"][0]
_TINY = np.finfo(np.float64).tiny  # the divisor of an empty group (0 accepted, 0 on top): its ratio is 0


class _Groups:
    """Per replicate (rows) and tie group (columns, descending confidence): ``good`` = weight of label 0
    (correct / ID), ``bad`` = weight of label 1 (failure / OOD), float64; ``value`` = each group's confidence.
    The weights come as int64 draw counts or float64 sample weights (:meth:`_Sorted.from_picks`); cumulative sums
    are taken on them as given (numpy's integer cumulative sums are exact and several times faster than its
    float ones) and then converted.  :meth:`shared` computes an intermediate several metrics read once."""

    def __init__(self, good: np.ndarray, bad: np.ndarray, value: np.ndarray):
        self._given = {"good": good, "bad": bad}
        self.good, self.bad, self.value = good.astype(np.float64), bad.astype(np.float64), value
        self.n_good = self.good.sum(axis=1, keepdims=True)
        self.n_bad = self.bad.sum(axis=1, keepdims=True)
        self._shared: dict = {}

    def shared(self, compute: Callable, *args):
        """``compute(self, *args)``, computed on the first call and kept for the others."""
        key = (compute, *args)
        if key not in self._shared:
            self._shared[key] = compute(self, *args)
        return self._shared[key]

    def cumulative(self, label: str, descending: bool) -> np.ndarray:
        """Cumulative ``label`` ("good" or "bad") weight along the groups in descending (or ascending)
        confidence, float64; the ascending sums are the total minus the descending ones before each group."""
        given = self._given[label]
        down = self.shared(_cumsum, label)
        if descending:
            return down.astype(np.float64)
        up = np.subtract(down[:, -1:], down, dtype=np.float64)
        up += given
        return up[:, ::-1]


def _cumsum(g: _Groups, label: str) -> np.ndarray:
    return np.cumsum(g._given[label], axis=1)


def _ranked(g: _Groups, positive: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(positive weight per group, cumulative positive weight, cumulative negative weight, positive total,
    negative total; totals B × 1) with the groups in descending order of the positive class's score:
    descending confidence for ``positive="success"`` (label 0), ascending for ``"failure"`` (label 1)."""
    if positive == "success":
        return g.good, g.cumulative("good", True), g.cumulative("bad", True), g.n_good, g.n_bad
    return g.bad[:, ::-1], g.cumulative("bad", False), g.cumulative("good", False), g.n_bad, g.n_good


def _tpr(g: _Groups, positive: str) -> np.ndarray:
    """True-positive rate at each group end (:func:`_ranked` order)."""
    _, tps, _, n_pos, _ = g.shared(_ranked, positive)
    return tps / n_pos


def _accepted(g: _Groups, positive: str) -> tuple[np.ndarray, np.ndarray]:
    """The weight accepted down to each group end (:func:`_ranked` order), and per replicate (B × 1) the index of
    the first group that accepts any weight (the groups before it are empty in that replicate)."""
    _, tps, fps, _, _ = g.shared(_ranked, positive)
    accepted = tps + fps
    return accepted, np.argmax(accepted > 0, axis=1)[:, None]


def _precision(g: _Groups, positive: str) -> np.ndarray:
    """Precision at each group end (:func:`_ranked` order); 0 before the first accepted sample."""
    _, tps, _, _, _ = g.shared(_ranked, positive)
    accepted, _ = g.shared(_accepted, positive)
    divisor = np.maximum(accepted, _TINY)
    return np.divide(tps, divisor, out=divisor)


def _trapezoid_sum(width: np.ndarray, height: np.ndarray, first: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Σ_k width_k · (height_{k-1} + height_k) per replicate, where the group ``first`` (B × 1; the groups before
    it have zero width) takes ``start`` (B × 1) as its previous height: twice the trapezoid area of a curve
    whose k-th step is ``width_k`` wide."""
    inner = np.einsum("ij,ij->i", width, height) + np.einsum("ij,ij->i", width[:, 1:], height[:, :-1])
    before = np.take_along_axis(height, np.maximum(first - 1, 0), axis=1) * (first > 0)
    return inner + (np.take_along_axis(width, first, axis=1) * (start - before))[:, 0]


def _auroc(g: _Groups) -> np.ndarray:
    """Weighted Mann–Whitney: P(conf of label 0 > conf of label 1) + ½ P(tie)."""
    _, _, bad_above, _, _ = g.shared(_ranked, "success")
    n_pairs = g.n_good[:, 0] * g.n_bad[:, 0]
    # Σ good · (bad below + ½ bad tied), the bad weight below a group being n_bad − bad_above
    pairs = n_pairs - np.einsum("ij,ij->i", g.good, bad_above) + 0.5 * np.einsum("ij,ij->i", g.good, g.bad)
    return pairs / n_pairs


def _fpr_at_tpr(tpr: float, positive: str) -> Callable[[_Groups], np.ndarray]:
    def fpr(g: _Groups) -> np.ndarray:
        _, _, fps, _, n_neg = g.shared(_ranked, positive)
        # both rates never decrease along the groups: the least FPR reaching the TPR is at the first group that does
        first = np.count_nonzero(g.shared(_tpr, positive) < tpr - _TPR_TOLERANCE, axis=1)
        first = np.minimum(first, fps.shape[1] - 1)[:, None]
        return np.take_along_axis(fps, first, axis=1)[:, 0] / n_neg[:, 0]
    return fpr


def _average_precision(positive: str, integration: str) -> Callable[[_Groups], np.ndarray]:
    def ap(g: _Groups) -> np.ndarray:
        # recall grows by the group's positive weight / the positive total at each group
        pos, _, _, n_pos, _ = g.shared(_ranked, positive)
        precision = g.shared(_precision, positive)
        if integration == "step":
            return np.einsum("ij,ij->i", pos, precision) / n_pos[:, 0]
        # the trapezoid from the curve's start (recall 0, precision 1) to the first accepted group
        _, first = g.shared(_accepted, positive)
        return _trapezoid_sum(pos, precision, first, np.ones_like(first, dtype=np.float64)) / (2 * n_pos[:, 0])
    return ap


def _rc_points(g: _Groups) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group (descending confidence): its weight, the failure weight and the weight accepted down to its end;
    the total weight and the index of the first non-empty group (B × 1)."""
    _, _, failures, _, _ = g.shared(_ranked, "success")
    accepted, first = g.shared(_accepted, "success")
    return g.good + g.bad, failures, accepted, accepted[:, -1:], first


def _aurc_values(g: _Groups) -> np.ndarray:
    """Trapezoids over the tie-aware selective risk curve (coverage steps = group weight / total); at coverage 0
    the curve keeps the risk of the most confident non-empty group (csfbench's convention)."""
    width, failures, accepted, total, first = g.shared(_rc_points)
    risk = np.maximum(accepted, _TINY)
    risk = np.divide(failures, risk, out=risk)  # 0 in the empty leading groups, whose width is 0
    return _trapezoid_sum(width, risk, first, np.take_along_axis(risk, first, axis=1)) / (2 * total[:, 0])


def _augrc_values(g: _Groups) -> np.ndarray:
    """Trapezoids over the tie-aware generalized risk curve (failures accepted / N) from (0, 0): the group of
    weight w ending at F accepted failures adds w · (2F − its failures) / 2N² (exact sums for draw counts)."""
    width, failures, _, total, _ = g.shared(_rc_points)
    area = 2 * np.einsum("ij,ij->i", width, failures) - np.einsum("ij,ij->i", width, g.bad)
    return area / (2 * total[:, 0] ** 2)


def _aurc(g: _Groups) -> np.ndarray:
    return g.shared(_aurc_values)


def _augrc(g: _Groups) -> np.ndarray:
    return g.shared(_augrc_values)


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
    position where each tie group begins), ``value`` (each group's confidence), ``bad`` (label 1, input order),
    ``group`` (input order: the sample's tie group) and ``weight`` (input order; None without)."""

    def __init__(self, confidence, labels, weight=None):
        conf, res = check_pair(confidence, labels)
        check_binary(res, "bootstrap labels")
        self.bad = res == 1
        check_two_classes(self.bad, "the bootstrap")
        self.weight = None
        if weight is not None:
            self.weight = finite_1d(weight, "bootstrap weight")
            if self.weight.size != conf.size:
                raise MetricInputError(f"weight must hold one value per sample ({conf.size}), got {self.weight.size}")
            if np.any(self.weight < 0):
                raise MetricInputError(f"weight must be non-negative, got minimum {self.weight.min():g}")
        self.order = np.argsort(-conf, kind="stable")
        sorted_conf = conf[self.order]
        first = np.r_[True, sorted_conf[1:] != sorted_conf[:-1]]
        self.starts, self.value = np.flatnonzero(first), sorted_conf[first]
        self.group = np.empty(conf.size, dtype=np.int64)
        self.group[self.order] = np.cumsum(first) - 1

    def groups(self, good: np.ndarray, bad: np.ndarray) -> _Groups:
        """The :class:`_Groups` of per-group weights, checked for both classes in every replicate."""
        groups = _Groups(good, bad, self.value)
        missing = (groups.n_good[:, 0] == 0) | (groups.n_bad[:, 0] == 0)
        if np.any(missing):
            raise UndefinedMetricError(f"{int(np.count_nonzero(missing))} replicate(s) lack one label class; the "
                                       "metrics need both (resample with stratify=True)")
        return groups

    def from_counts(self, counts: np.ndarray, weighted: bool = False) -> _Groups:
        """Per-group weights of count vectors (replicates × N, input order), times each sample's weight when
        ``weighted``."""
        w = counts[:, self.order].astype(np.int64)
        if weighted:
            w = w * self.weight[self.order]
        is_bad = self.bad[self.order]
        return self.groups(np.add.reduceat(np.where(is_bad, 0, w), self.starts, axis=1),
                           np.add.reduceat(np.where(is_bad, w, 0), self.starts, axis=1))

    def from_picks(self, picks: np.ndarray, weighted: bool = False) -> _Groups:
        """Per-group weights of resamples given as drawn sample indices (replicates × draws, input order): one
        bincount over (label, replicate, group) cells, no N-wide count matrix; each draw counts 1, or its sample's
        weight when ``weighted``."""
        rows, n_groups = picks.shape[0], self.value.size
        cell = self.group + self.bad * (rows * n_groups)  # the sample's cell in replicate 0
        flat = cell[picks]
        flat += np.arange(0, rows * n_groups, n_groups)[:, None]
        flat = flat.ravel()
        weights = np.bincount(flat, weights=self.weight[picks].ravel() if weighted else None,
                              minlength=2 * rows * n_groups).reshape(2, rows, n_groups)
        return self.groups(weights[0], weights[1])

    def reads_weight(self, metric: str) -> bool:
        """Whether ``metric``'s replicates take the sample weights: it is weighted and weights were given."""
        return self.weight is not None and metric_spec(metric).weighted


def replicates(metric: str, confidence, labels, counts, weight=None) -> np.ndarray:
    """The metric on each bootstrap resample given as a row of ``counts`` (B × N non-negative integers, the
    number of times each sample, in input order, is drawn), as a float array of B values.

    Equal to ``csfbench.metrics.metric(metric)(np.repeat(confidence, c), np.repeat(labels, c))`` for each row
    ``c`` (with ``weight=np.repeat(weight, c)`` for a weighted metric given ``weight``), computed from one sort.
    ``confidence``: higher = more in-distribution / more likely correct; ``labels``: 1 = failure or OOD,
    0 = correct or ID.  A row that leaves out a class raises :class:`UndefinedMetricError`.
    """
    function = _supported(metric)
    data = _Sorted(confidence, labels, weight)
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != data.order.size:
        raise MetricInputError(f"counts must have shape (B, {data.order.size}), got {counts.shape}")
    if not np.issubdtype(counts.dtype, np.integer) or np.any(counts < 0):
        raise MetricInputError("counts must be non-negative integers")
    weighted = data.reads_weight(metric)
    return np.concatenate([function(data.from_counts(counts[i:i + CHUNK], weighted))
                           for i in range(0, counts.shape[0], CHUNK)]) if counts.shape[0] else np.empty(0)


def _cells(bad: np.ndarray, stratify: bool, strata) -> list[np.ndarray]:
    """The index sets resampled separately (:func:`_draw`): with ``stratify`` label 0 then label 1, each split by
    the values of ``strata`` (ascending) when given; without, every sample together."""
    if not stratify:
        if strata is not None:
            raise ValueError("strata refine the stratification by label: they need stratify=True")
        return [np.arange(bad.size)]
    if strata is None:
        return [np.flatnonzero(~bad), np.flatnonzero(bad)]
    strata = np.asarray(strata)
    if strata.shape != bad.shape:
        raise MetricInputError(f"strata must hold one value per sample ({bad.size}), got shape {strata.shape}")
    return [np.flatnonzero(in_class & (strata == value)) for in_class in (~bad, bad)
            for value in np.unique(strata[in_class])]


def _draw(rng: np.random.Generator, size: int, members: list[np.ndarray]) -> np.ndarray:
    """``size`` resamples as sample indices (size × Σ len(members)): for each index set in ``members``,
    len(set) draws with replacement among its samples."""
    return np.concatenate([index[rng.integers(0, index.size, size=(size, index.size))] for index in members],
                          axis=1)


def _replicate_values(metrics: tuple[str, ...], data: _Sorted, rng: np.random.Generator, n_boot: int,
                      members: list[np.ndarray]) -> dict[str, np.ndarray | UndefinedMetricError]:
    """{metric: its values on ``n_boot`` resamples drawn by :func:`_draw` in chunks of :data:`CHUNK`, or the
    :class:`UndefinedMetricError` of the first replicate it is undefined on}.  Every metric reads the same draws
    and, per chunk, the same group weights (one set counting draws, one weighting them for the weighted
    metrics) and shared intermediates."""
    functions = {name: (_supported(name), data.reads_weight(name)) for name in metrics}
    values: dict = {name: [] for name in metrics}
    for start in range(0, n_boot, CHUNK):
        picks = _draw(rng, min(CHUNK, n_boot - start), members)
        groups: dict[bool, _Groups] = {}
        for name, (function, weighted) in functions.items():
            if isinstance(values[name], UndefinedMetricError):
                continue
            if weighted not in groups:
                groups[weighted] = data.from_picks(picks, weighted)
            try:
                values[name].append(function(groups[weighted]))
            except UndefinedMetricError as err:
                values[name] = err
    return {name: v if isinstance(v, UndefinedMetricError) else np.concatenate(v) for name, v in values.items()}


def _values(metrics, confidence, labels, n_boot, seed, stratify, strata, weight):
    """({metric: its ``n_boot`` replicate values}, {metric: UndefinedMetricError}) of :func:`replicate_values`."""
    if int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    metrics = tuple(dict.fromkeys(metrics))
    for name in metrics:
        _supported(name)
    data = _Sorted(confidence, labels, weight)
    members = _cells(data.bad, stratify, strata)
    values = _replicate_values(metrics, data, np.random.default_rng(seed), int(n_boot), members)
    undefined = {name: v for name, v in values.items() if isinstance(v, UndefinedMetricError)}
    return {name: values[name] for name in metrics if name not in undefined}, undefined


def _warn(undefined: dict) -> None:
    for name, err in undefined.items():
        log.warning("bootstrap replicates of %s omitted: %s", name, err)


def replicate_values(metrics, confidence, labels, *, n_boot: int = 1000, seed: int = 0, stratify: bool = True,
                     strata=None, weight=None) -> dict[str, np.ndarray]:
    """{metric: its values on the ``n_boot`` replicates} (float64 arrays, in draw order) of every name in
    ``metrics``: the replicates :func:`intervals` takes its quantiles of, with the same arguments and draws.

    Two calls with the same ``labels``, ``strata``, ``n_boot`` and ``seed`` draw the same resamples whatever the
    ``confidence``: the replicates of two confidence scores of the same samples are paired (replicate b of each is
    computed on the same resample).  A metric undefined on some replicate is left out with a logged warning; data
    with a single label class raises :class:`UndefinedMetricError`."""
    values, undefined = _values(metrics, confidence, labels, n_boot, seed, stratify, strata, weight)
    _warn(undefined)
    return values


def _check_level(level: float) -> None:
    """ValueError unless the interval's confidence ``level`` lies in (0, 1) (checked before any draw)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of replicate ``values``: their (1 − level)/2 and (1 + level)/2 quantiles (numpy's
    linear interpolation; Efron & Tibshirani 1993, ch. 13)."""
    _check_level(level)
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def intervals(metrics, confidence, labels, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
              stratify: bool = True, strata=None, weight=None) -> dict[str, tuple[float, float]]:
    """{metric: bootstrap percentile interval ``(low, high)`` at confidence ``level``} of every name in ``metrics``,
    all from the same ``n_boot`` replicates (one draw, one set of group weights per chunk), in the metrics'
    units (fractions; AURC/AUGRC unscaled, not ×1000).  Each equals :func:`interval` of that metric with the same
    arguments.

    ``metrics``: names of :data:`SUPPORTED` (registry names, e.g. ``"auroc"``, ``"fpr95"``, ``"augrc"``; another
    raises ValueError).  ``confidence``: higher = more in-distribution / more likely correct.  ``labels``: the
    binary array the metric takes as its residual — 1 = failure (failure-detection schemes) or OOD sample (OOD
    schemes), 0 = correct or ID.  ``n_boot`` replicates drawn with ``numpy.random.default_rng(seed)``
    (deterministic); ``stratify=True`` resamples the two label classes separately with their own sizes, and
    within them each value of ``strata`` (one value per sample, e.g. a scheme's ``shifted`` flags) separately.
    ``weight``: per-sample weights read by the weighted metrics (AUROC), each drawn copy carrying its sample's.
    The interval is :func:`percentile_interval` of the :func:`replicate_values`.  A metric undefined on some
    replicate (AUTC on a replicate of one confidence) is left out of the result with a logged warning; data with
    a single label class raises :class:`UndefinedMetricError`.
    """
    _check_level(level)
    values = replicate_values(metrics, confidence, labels, n_boot=n_boot, seed=seed, stratify=stratify,
                              strata=strata, weight=weight)
    return {name: percentile_interval(v, level) for name, v in values.items()}


def interval(metric: str, confidence, labels, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
             stratify: bool = True, strata=None, weight=None) -> tuple[float, float]:
    """The bootstrap percentile interval ``(low, high)`` of one metric: :func:`intervals` of ``(metric,)`` with the
    same arguments (the same draws for the same seed), raising :class:`UndefinedMetricError` where the metric is
    undefined on a replicate."""
    _check_level(level)
    values, undefined = _values((metric,), confidence, labels, n_boot, seed, stratify, strata, weight)
    if metric in undefined:
        raise undefined[metric]
    return percentile_interval(values[metric], level)
