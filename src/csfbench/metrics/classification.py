"""Threshold-free separation and calibration metrics on ``(confidence, residual)``.

Orientation everywhere: higher ``confidence`` = more likely a success; ``residual`` 0 = success,
1 = failure (binary for AUROC, FPR@TPR and AUPR; ECE/MCE accept a continuous residual in [0, 1]).
Every value is a fraction in [0, 1].  AUROC, FPR@TPR and AUPR need both classes and raise
:class:`~csfbench.metrics.UndefinedMetricError` on a single-class set.
"""
from __future__ import annotations

import numpy as np

from csfbench.metrics._inputs import MetricInputError, check_binary, check_pair, check_two_classes, finite_1d

POSITIVES = ("success", "failure")
#: FPR@TPR threshold rules: (TPR tolerance, whether collinear ROC points are dropped first).
#: ``csfbench``: the first threshold whose TPR reaches the target (1e-12 absorbs the rounding of tp/n_pos, so
#: 19/20 counts as 0.95); pytorch-ood 0.4 and torch-uncertainty 0.13 use the same rule.  ``fd-shifts``: FD-Shifts
#: (c4467ae, fd_shifts/analysis/metrics.py ``fpr_at_95_tpr``) accepts a TPR of 0.9495 for 0.95 (target − 5e-4) on
#: scikit-learn's ``roc_curve`` with its default ``drop_intermediate=True``.  ``openood``: OpenOOD v1.5's evaluator
#: (3c35632, openood/evaluators/metrics.py ``auc_and_fpr_recall``): no tolerance, ``drop_intermediate=True``.
FPR_RULES = {"csfbench": (1e-12, False), "fd-shifts": (5e-4, True), "openood": (0.0, True)}
#: AUPR integration: ``step`` = average precision Σ (R_n − R_{n−1}) P_n (scikit-learn, FD-Shifts);
#: ``trapezoid`` = the trapezoidal area under the precision–recall points including (recall 0, precision 1)
#: (``sklearn.metrics.auc`` on ``precision_recall_curve``: OpenOOD's evaluator and pytorch-ood 0.4)
INTEGRATIONS = ("step", "trapezoid")
#: ECE/MCE bin edges: ``csfbench`` = n equal bins of [0, 1], a confidence on an inner edge k/n in the upper bin,
#: 1.0 in the last; ``fd-shifts`` = FD-Shifts' edges ``linspace(0, 1 + 1e-8, n + 1)`` (c4467ae,
#: fd_shifts/analysis/metrics.py ``calibration_stats``), which put a confidence on k/n in the lower bin
BINNINGS = ("csfbench", "fd-shifts")


def _curve(score: np.ndarray, positive: np.ndarray, weight: np.ndarray | None = None):
    """Cumulative (false, true) positive weights at each distinct threshold, by descending score.

    The same counts as scikit-learn's ROC machinery (tested against it), written in numpy because
    thousands of small evaluations per job made scikit-learn's per-call overhead the dominant cost.
    Index 0 is the point "nothing accepted" (0, 0).
    """
    order = np.argsort(-score, kind="stable")
    s = score[order]
    w = np.ones(s.size) if weight is None else weight[order]
    pos = positive[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]  # last index of each tie group
    tps = np.r_[0.0, np.cumsum(w * pos)[last]]
    fps = np.r_[0.0, np.cumsum(w * ~pos)[last]]
    return fps, tps


def _roc(score, positive, weight=None) -> tuple[np.ndarray, np.ndarray]:
    fps, tps = _curve(score, positive, weight)
    return fps / fps[-1], tps / tps[-1]


def _drop_collinear(fps: np.ndarray, tps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ROC counts without the points collinear with both neighbours, as ``sklearn.metrics.roc_curve``'s
    ``drop_intermediate=True`` (applied to the threshold points, before the point (0, 0) is put in front)."""
    f, t = fps[1:], tps[1:]
    if f.size > 2:
        keep = np.r_[True, (np.diff(f, 2) != 0) | (np.diff(t, 2) != 0), True]
        f, t = f[keep], t[keep]
    return np.r_[0.0, f], np.r_[0.0, t]


def _average_precision(score, positive, integration: str) -> float:
    """Area under the precision–recall points of the distinct thresholds (by descending score).

    ``step``: Σ (R_n − R_{n−1}) P_n (no interpolation, as scikit-learn's average precision);
    ``trapezoid``: trapezoids between consecutive points, starting from (recall 0, precision 1).
    """
    if integration not in INTEGRATIONS:
        raise ValueError(f"integration must be one of {INTEGRATIONS}, got {integration!r}")
    fps, tps = _curve(score, positive)
    precision = np.divide(tps[1:], tps[1:] + fps[1:])
    recall = tps / tps[-1]
    if integration == "step":
        return float(np.sum(np.diff(recall) * precision))
    return float(np.sum(np.diff(recall) * (np.r_[1.0, precision[:-1]] + precision)) / 2)


def _binary_pair(confidence, residual, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated confidence and boolean ``is_failure`` with both classes present."""
    conf, res = check_pair(confidence, residual)
    check_binary(res, metric)
    failure = res == 1
    check_two_classes(failure, metric)
    return conf, failure


def auroc(confidence, residual, sample_weight=None) -> float:
    """Area under the ROC curve separating successes from failures, in [0, 1]; higher is better.

    Positive class = success (residual 0), score = confidence, so 1 means every success is more
    confident than every failure and 0.5 is chance.  Ties between a success and a failure count ½
    (the weighted Mann–Whitney statistic, the trapezoid under the ROC curve; equal to
    :func:`sklearn.metrics.roc_auc_score`, tested).
    ``sample_weight`` (non-negative, e.g. 1/n per dataset for the ``failure`` scheme) weights each pair
    by the product of its two weights.  A class whose weights are all zero counts as absent.
    """
    conf, res = check_pair(confidence, residual)
    check_binary(res, "auroc")
    failure = res == 1
    if sample_weight is None:
        check_two_classes(failure, "auroc")
        return float(np.trapezoid(*_roc(conf, ~failure)[::-1]))
    weight = finite_1d(sample_weight, "sample_weight")
    if weight.size != conf.size:
        raise MetricInputError(f"length mismatch: sample_weight has {weight.size} values, confidence has {conf.size}")
    if np.any(weight < 0):
        raise MetricInputError("sample_weight must be non-negative; "
                               f"{int(np.count_nonzero(weight < 0))} value(s) are negative")
    keep = weight > 0
    check_two_classes(failure[keep], "auroc")
    fprs, tprs = _roc(conf[keep], ~failure[keep], weight[keep])
    return float(np.trapezoid(tprs, fprs))


def fpr_at_tpr(confidence, residual, tpr: float = 0.95, positive: str = "success", rule: str = "csfbench") -> float:
    """False-positive rate at the first threshold reaching a true-positive rate of ``tpr``, in [0, 1].

    ``positive="success"`` (ID = positive, FD-Shifts' convention): accept by descending confidence until
    at least ``tpr`` of the successes are accepted; return the fraction of failures accepted.
    ``positive="failure"`` (OOD = positive: OpenOOD v1.5, pytorch-ood, torch-uncertainty): flag by ascending
    confidence until at least ``tpr`` of the failures are flagged; return the fraction of successes flagged.
    The two differ in general.  Thresholds lie between distinct confidences (a tie is accepted or
    rejected whole); of those reaching ``tpr`` the smallest FPR is returned.  Lower is better.
    ``rule`` (:data:`FPR_RULES`): ``csfbench`` takes every threshold; ``fd-shifts`` accepts a TPR 5e-4 short
    of the target and, like ``openood``, first drops the ROC points scikit-learn's ``drop_intermediate``
    drops (collinear ones, which on tied scores can skip the first point reaching the target).
    """
    if positive not in POSITIVES:
        raise ValueError(f"positive must be one of {POSITIVES}, got {positive!r}")
    if rule not in FPR_RULES:
        raise ValueError(f"rule must be one of {tuple(FPR_RULES)}, got {rule!r}")
    if not 0 < tpr <= 1:
        raise ValueError(f"tpr must lie in (0, 1], got {tpr}")
    conf, failure = _binary_pair(confidence, residual, f"fpr_at_tpr(positive={positive!r})")
    fps, tps = _curve(conf, ~failure) if positive == "success" else _curve(-conf, failure)
    tolerance, drop_collinear = FPR_RULES[rule]
    if drop_collinear:
        fps, tps = _drop_collinear(fps, tps)
    fprs, tprs = fps / fps[-1], tps / tps[-1]
    return float(fprs[tprs >= tpr - tolerance].min())


def aupr_in(confidence, residual, integration: str = "step") -> float:
    """Area under the precision–recall curve with positive class = success (residual 0) and score = confidence,
    in [0, 1].

    Higher is better; chance level is the success rate.  ``integration="step"``: average precision,
    FD-Shifts' ``AP_fsuc``, equal to :func:`sklearn.metrics.average_precision_score` (tested);
    ``"trapezoid"``: OpenOOD's and pytorch-ood's AUPR-IN (:data:`INTEGRATIONS`).  A tie group is one point.
    """
    conf, failure = _binary_pair(confidence, residual, "aupr_in")
    return _average_precision(conf, ~failure, integration)


def aupr_out(confidence, residual, integration: str = "step") -> float:
    """Area under the precision–recall curve with positive class = failure (residual 1) and score = −confidence,
    in [0, 1].

    Higher is better; chance level is the failure rate.  ``"step"``: FD-Shifts' ``AP_ferr``;
    ``"trapezoid"``: OpenOOD's and pytorch-ood's AUPR-OUT (:data:`INTEGRATIONS`).
    """
    conf, failure = _binary_pair(confidence, residual, "aupr_out")
    return _average_precision(-conf, failure, integration)


def _calibration_gaps(confidence, residual, n_bins: int, binning: str) -> tuple[np.ndarray, np.ndarray]:
    """Per non-empty bin: its share of the samples and |accuracy − mean confidence|."""
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if binning not in BINNINGS:
        raise ValueError(f"binning must be one of {BINNINGS}, got {binning!r}")
    conf, res = check_pair(confidence, residual)
    conf = np.clip(conf, 0.0, 1.0)
    top = 1.0 if binning == "csfbench" else 1.0 + 1e-8
    edges = np.linspace(0.0, top, int(n_bins) + 1)
    bins = np.digitize(conf, edges[1:-1])  # bin k holds [edges[k], edges[k+1]); 1.0 goes in the last
    counts = np.bincount(bins, minlength=n_bins)
    conf_sum = np.bincount(bins, weights=conf, minlength=n_bins)
    acc_sum = np.bincount(bins, weights=1.0 - res, minlength=n_bins)
    filled = counts > 0
    gaps = np.abs(acc_sum[filled] - conf_sum[filled]) / counts[filled]
    return counts[filled] / conf.size, gaps


def ece(confidence, residual, n_bins: int = 20, binning: str = "csfbench") -> float:
    """Expected calibration error, in [0, 1]; lower is better.

    ``confidence`` is read as the probability of success and clipped to [0, 1]; accuracy is
    ``1 − residual``.  ``n_bins`` equal-width bins (last bin closed at 1), empty bins skipped:
    ``Σ_b (n_b / n)·|acc_b − conf_b|`` (FD-Shifts, 20 bins).  ``binning`` (:data:`BINNINGS`) decides the bin
    of a confidence exactly on an inner edge k/n: the upper one (``csfbench``) or the lower one (``fd-shifts``).
    """
    shares, gaps = _calibration_gaps(confidence, residual, n_bins, binning)
    return float(np.sum(shares * gaps))


def mce(confidence, residual, n_bins: int = 20, binning: str = "csfbench") -> float:
    """Maximum calibration error, in [0, 1]: the largest |acc_b − conf_b| over non-empty bins (as :func:`ece`)."""
    return float(_calibration_gaps(confidence, residual, n_bins, binning)[1].max())
