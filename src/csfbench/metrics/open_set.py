"""Open-set metrics: the area under the threshold curve of an OOD score (AUTC), and the joint
classification-and-rejection metrics OSCR and CCR@FPR.

Higher ``confidence`` = more in-distribution everywhere.  :func:`autc` takes the ``newclass``
evaluation set: ``residual`` is the OOD indicator (1 = OOD, 0 = ID).  :func:`oscr` and
:func:`ccr_at_fpr` take the ``failure`` set: ``residual`` 1 = a misclassified ID sample or any shifted
sample, 0 = a correctly classified ID sample, and the keyword ``shifted`` (bool or 0/1) marks the
shifted (OOD) samples, each of which must have residual 1.  "ID and correct" is then exactly
``residual == 0``; the ID samples are ``shifted == 0``.  All values are fractions.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from csfbench.metrics._inputs import (
    MetricInputError,
    UndefinedMetricError,
    check_binary,
    check_shifted,
    check_pair,
    check_two_classes,
)
from csfbench.metrics.classification import _curve

_FPR_TOLERANCE = 1e-12  # absorbs the rounding of fpr·n_OOD, so 0.07 of 100 is 7 (as fpr_at_tpr's 1e-12)


def _shifted_mask(shifted, residual: np.ndarray, metric: str) -> np.ndarray:
    """``shifted`` as a boolean mask consistent with the failure-scheme ``residual``; both ID and OOD present."""
    arr = check_shifted(shifted, residual.size, metric)
    n_clash = int(np.count_nonzero(arr & (residual == 0)))
    if n_clash:
        raise MetricInputError(f"{metric}: {n_clash} shifted sample(s) have residual 0; in the failure scheme "
                               "every shifted (OOD) sample is a failure (residual 1)")
    n_ood = int(np.count_nonzero(arr))
    if n_ood == 0:
        raise UndefinedMetricError(f"{metric} is undefined: no shifted (OOD) samples, it needs ID and OOD samples")
    if n_ood == residual.size:
        raise UndefinedMetricError(f"{metric} is undefined: no ID samples (all are shifted), "
                                   "it needs ID and OOD samples")
    return arr


def _failure_set(confidence, residual, shifted, metric: str):
    """Validated confidence, boolean ``correct`` (ID and correctly classified) and boolean ``ood``."""
    conf, res = check_pair(confidence, residual)
    check_binary(res, metric)
    ood = _shifted_mask(shifted, res, metric)
    return conf, res == 0, ood


def autc(confidence, residual) -> float:
    """Area under the threshold curve (AUTC) of the outlier score ``-confidence``, in [0, 1]; lower is better.

    Humblot-Renaux, Escalera & Moeslund, "Beyond AUROC & co. for evaluating out-of-distribution
    detection performance", CVPR Workshops 2023, arXiv 2306.14658, as pytorch-ood 0.4's
    ``metrics.functional.autc`` computes it.  ``residual`` is the OOD indicator (1 = OOD, binary).
    The outlier score is min-max normalised over the set, ``s = (max c − c) / (max c − min c)``, and
    AUTC is the mean of the areas under FPR(τ) (ID flagged) and FNR(τ) (OOD missed) over τ ∈ [0, 1]:
    ``(mean_ID s + mean_OOD (1 − s)) / 2``.  0 when every ID sample has the largest and every OOD
    sample the smallest confidence, 1 for the reverse.  The paper assumes scores already in [0, 1];
    the normalisation is pytorch-ood's choice, followed here, so the value depends on the score
    values, not only on their ranking.  Ties need no rule: each sample adds its own term.
    Raises :class:`UndefinedMetricError` for constant confidences or a single-class set.
    """
    conf, res = check_pair(confidence, residual)
    check_binary(res, "autc")
    ood = res == 1
    check_two_classes(ood, "autc")
    low, high = conf.min(), conf.max()
    if low == high:
        raise UndefinedMetricError(f"autc is undefined for constant confidences (all {low:g}): "
                                   "the min-max normalisation divides by zero")
    score = (high - conf) / (high - low)
    return float((score[~ood].mean() + (1.0 - score[ood]).mean()) / 2)


def oscr(confidence, residual, shifted) -> float:
    """Open-set classification rate: the area under CCR against FPR, in [0, ID accuracy]; higher is better.

    Dhamija, Günther & Boult, "Reducing Network Agnostophobia", NeurIPS 2018, arXiv 1811.04110, §4
    (evaluation approach), as pytorch-ood 0.4's ``metrics.functional.oscr_score`` computes it.
    Accepting the samples with confidence ≥ t, CCR(t) = (ID samples accepted and correct) / n_ID and
    FPR(t) = (OOD samples accepted) / n_OOD; every distinct confidence is a threshold, the curve runs
    from (0, 0) to (1, ID accuracy) and its area is trapezoidal.  A perfect detector reaches the ID
    accuracy, a constant confidence half of it.
    Ties: a plateau of equal confidences is accepted whole, so where ID and OOD samples tie CCR and
    FPR change at the same threshold and the curve has a diagonal segment (pytorch-ood's rule).  The
    paper counts CCR with a strict and FPR with a non-strict inequality, which makes ties pessimistic
    (the OOD samples of a tie enter first; a constant confidence gives 0); that rule is not followed.
    Needs ID and OOD samples (``shifted``, see the module docstring).
    """
    conf, correct, ood = _failure_set(confidence, residual, shifted, "oscr")
    # weight 0 drops the misclassified ID samples from both cumulative counts (they stay in n_ID):
    # tps counts the accepted correct ID samples, fps the accepted OOD samples
    fps, tps = _curve(conf, correct, (correct | ood).astype(np.float64))
    n_ood = int(np.count_nonzero(ood))
    return float(np.trapezoid(tps / (conf.size - n_ood), fps / n_ood))


def ccr_at_fpr(confidence, residual, shifted, fpr: float) -> float:
    """Correct classification rate at a false-positive rate of ``fpr``, in [0, ID accuracy]; higher is better.

    OpenOOD's ``ccr_fpr`` (openood/evaluators/metrics.py at 3c35632ee91b54b09d1f085d04f94744cece7d0b),
    the operating point of the OSCR curve of Dhamija, Günther & Boult, NeurIPS 2018, arXiv 1811.04110.
    With k = ⌈fpr·n_OOD⌉, the threshold is the k-th largest OOD confidence and
    CCR = (ID samples with confidence strictly above it and correctly classified) / n_ID.
    Ties: an ID sample tied with the threshold is rejected (strict inequality).  The operating point
    "confidence > threshold" accepts at most k − 1 OOD samples (fewer when OOD confidences tie at the
    threshold), so its actual FPR lies below ``fpr``.
    ``fpr`` must lie in (0, 1].  ``fpr = 0`` is refused: OpenOOD computes k = 0 and indexes
    ``np.sort(ood)[-0]``, the *smallest* OOD confidence, i.e. the CCR of fpr = 1.  Unlike OpenOOD's
    ``np.ceil(fpr * n_ood)``, rounding error in the product is absorbed (as in
    :func:`~csfbench.metrics.fpr_at_tpr`): 0.07 of 100 OOD samples gives k = 7, where OpenOOD's float
    product 7.000000000000001 rounds up to 8.
    Needs ID and OOD samples (``shifted``, see the module docstring).
    """
    if isinstance(fpr, bool) or not isinstance(fpr, numbers.Real):
        raise ValueError(f"fpr must be a number in (0, 1], got {fpr!r}")
    if fpr == 0:
        raise ValueError("fpr must lie in (0, 1]; fpr = 0 is refused because OpenOOD's ccr_fpr indexes "
                         "np.sort(ood)[-0], the smallest OOD confidence, and so returns the CCR of fpr = 1")
    if not 0 < fpr <= 1:
        raise ValueError(f"fpr must lie in (0, 1], got {fpr}")
    conf, correct, ood = _failure_set(confidence, residual, shifted, "ccr_at_fpr")
    ood_conf = conf[ood]
    n_ood = ood_conf.size
    k = max(1, math.ceil((fpr - _FPR_TOLERANCE) * n_ood))
    threshold = np.partition(ood_conf, n_ood - k)[n_ood - k]  # the k-th largest OOD confidence
    return float(np.count_nonzero(correct & (conf > threshold)) / (conf.size - n_ood))
