"""Evaluation schemes: who counts as a failure (Claros-Olivares & Brockmeier, §4.1; Yang, Zhang &
Russakovsky, "ImageNet-OOD: Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024,
Tables 1 and 4, App. E; docs/methods.md).

A scheme turns one ID-role set (``id_*``: the clean ID test set or a covariate-shifted set, with
per-sample correctness) and optionally one shifted set (``shift_confidence``: every sample of it is a
failure, labels are not used) into one ``(confidence, residual)`` evaluation set, ID samples first.
"Success" (residual 0) means the positive class of AUROC, the class a detector should score higher:

====================  =============================  ===========================================  =================
scheme                successes (residual 0)         failures (residual 1)                        weights
====================  =============================  ===========================================  =================
``misclf``            correct ID                     incorrect ID (no shifted set allowed)        none
``correct_vs_ood``    correct ID                     every shifted sample; incorrect ID dropped   none
``newclass``          all ID                         every shifted sample                         none
``failure``           correct ID                     incorrect ID and every shifted sample        1/n_id, 1/n_shift
``incorrect_vs_ood``  incorrect ID                   every shifted sample; correct ID dropped     none
``failure_pooled``    correct ID                     incorrect ID and every shifted sample        none
``shiftdetect``       all ID                         every shifted sample                         none
====================  =============================  ===========================================  =================

The ``failure`` weights give the ID set and the shifted set equal total mass (as in Yang et al.'s
evaluation code) and are used by AUROC only.  The risk–coverage metrics, FPR@TPR, AUPR and ECE/MCE are
unweighted, like FD-Shifts (whose RC code takes no weights), so they see the pooled set.
``failure_pooled`` is the same set without weights (every sample counts once, so the larger of the
two sets dominates AUROC too).

``correct_vs_ood``, ``incorrect_vs_ood`` and ``misclf`` give the three conditional AUROCs of Yang et
al.'s App. E / Table 4 (A_co, A_io, A_ci; :mod:`csfbench.analysis.decomposition`).  In
``incorrect_vs_ood`` the misclassified ID samples are the *positives* (residual 0): the residual there
is the role in the comparison, not the correctness of a prediction, so its risk–coverage and
calibration values have no failure-detection meaning (AUROC, FPR@TPR and AUPR do).

``shiftdetect`` builds exactly the evaluation set of ``newclass`` (all of the ID-role set against all
of the shifted set, no weights); the two differ in which sets play the roles.  ``newclass`` is
Yang et al.'s new-class detection: any labelled set (the ID test split or a covariate-shifted set) in
the ID role against a *semantic* set.  ``shiftdetect`` asks whether a score separates the *clean ID
reference set* from any shifted set, covariate or semantic, as in their distance-controlled AUROC
(§4.2, Fig. 3) and random-network check (§4.2, Fig. 4); correctness plays no part, so
``id_correct`` may be None for it.  The roles are the caller's to keep: the function cannot tell
which set is which.

Yang et al.'s false rejection at a transferred threshold (Table 2) is not an evaluation set of its
own but a statistic over the ``correct_vs_ood`` set (the correct ID-role samples below the q-quantile
of the semantic set's confidences): :func:`csfbench.analysis.frr.false_rejection_rate`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from csfbench.metrics._inputs import MetricInputError, UndefinedMetricError, check_labels, check_pair, finite_1d
from csfbench.metrics.registry import DEFAULT_METRICS, MetricSpec, metric_spec

log = logging.getLogger(__name__)

SCHEMES = ("misclf", "correct_vs_ood", "newclass", "failure", "incorrect_vs_ood", "failure_pooled", "shiftdetect")
#: schemes whose ID-role samples all count as successes, whatever their correctness
_ALL_ID_SUCCESS = ("newclass", "shiftdetect")


@dataclass(frozen=True, eq=False)
class SchemeData:
    """One evaluation set: ``confidence`` (higher = more likely success), ``residual`` (1 = failure),
    optional per-sample ``weight`` (``failure`` scheme only), the success count ``n_pos``, the
    failure count ``n_neg``, the ``scheme`` name, ``shifted`` (bool: the samples of the shifted set; None for
    ``misclf``) and ``labels`` (the true classes of a ``misclf`` set when given, else None).  Arrays are
    read-only."""

    confidence: np.ndarray
    residual: np.ndarray
    weight: np.ndarray | None
    n_pos: int
    n_neg: int
    scheme: str
    shifted: np.ndarray | None = None
    labels: np.ndarray | None = None


def _correct_flags(id_correct, n: int) -> np.ndarray:
    """``id_correct`` as a bool array of length ``n``; it must hold only 0/1 (or bools)."""
    values = finite_1d(id_correct, "id_correct")
    if values.size != n:
        raise MetricInputError(f"length mismatch: id_confidence has {n} values, id_correct has {values.size}")
    if not np.all((values == 0) | (values == 1)):
        raise MetricInputError("id_correct must hold only 0/1 or booleans; "
                               f"{int(np.count_nonzero((values != 0) & (values != 1)))} value(s) are neither")
    return values == 1


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def build_scheme(scheme: str, id_confidence, id_correct, shift_confidence=None, id_labels=None) -> SchemeData:
    """Compose the evaluation set of ``scheme`` (see the module table); ID samples come first.

    ``id_correct`` marks correct ID predictions (bool or 0/1); for ``shiftdetect`` it may be None
    (unused).  ``misclf`` takes the ID set alone and ``shift_confidence`` must be None; the other
    schemes need a non-empty ``shift_confidence``.  ``id_labels`` (integers, the true classes; ``misclf`` only,
    optional) are kept for the balanced-accuracy metrics.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {SCHEMES}")
    id_conf = finite_1d(id_confidence, "id_confidence")
    if scheme == "shiftdetect" and id_correct is None:
        correct = np.ones(id_conf.size, dtype=bool)
    else:
        correct = _correct_flags(id_correct, id_conf.size)
    if scheme == "misclf":
        if shift_confidence is not None:
            raise ValueError("scheme 'misclf' evaluates the ID set alone; shift_confidence must be None")
        shift = np.empty(0)
    else:
        if shift_confidence is None:
            raise ValueError(f"scheme {scheme!r} needs shift_confidence (the shifted set)")
        shift = finite_1d(shift_confidence, "shift_confidence")
        if shift.size == 0:
            raise MetricInputError(f"scheme {scheme!r}: the shifted set is empty")

    if scheme == "correct_vs_ood":
        keep = correct
    elif scheme == "incorrect_vs_ood":
        keep = ~correct
    else:
        keep = np.ones(id_conf.size, dtype=bool)
    if scheme in _ALL_ID_SUCCESS or scheme == "incorrect_vs_ood":
        id_residual = np.zeros(id_conf.size)  # every kept ID-role sample is a positive
    else:
        id_residual = (~correct).astype(np.float64)
    confidence = np.concatenate([id_conf[keep], shift])
    residual = np.concatenate([id_residual[keep], np.ones(shift.size)])
    confidence, residual = check_pair(confidence, residual)  # raises on an empty set
    weight = None
    if scheme == "failure":
        if id_conf.size == 0:
            raise MetricInputError("scheme 'failure': the ID set is empty")
        weight = _readonly(np.concatenate([np.full(id_conf.size, 1.0 / id_conf.size),
                                           np.full(shift.size, 1.0 / shift.size)]))
    n_neg = int(residual.sum())
    shifted = None if scheme == "misclf" else _readonly(np.r_[np.zeros(int(keep.sum()), bool), np.ones(shift.size, bool)])
    labels = None
    if id_labels is not None:
        if scheme != "misclf":
            raise ValueError(f"id_labels are kept for scheme 'misclf' only, not {scheme!r}")
        labels = check_labels(np.asarray(id_labels), id_conf.size, np.iinfo(np.int64).max).copy()
        labels = _readonly(labels)
    return SchemeData(_readonly(confidence), _readonly(residual), weight, residual.size - n_neg, n_neg, scheme,
                      shifted, labels)


def _within_unit_interval(confidence: np.ndarray) -> bool:
    return bool(confidence.min() >= 0.0 and confidence.max() <= 1.0)


def evaluate(data: SchemeData, metrics=DEFAULT_METRICS) -> dict[str, float]:
    """Compute ``metrics`` (names of :mod:`csfbench.metrics.registry`) on ``data``; values are fractions.

    Orientation per name: :func:`~csfbench.metrics.registry.higher_is_better`.  ``fpr95`` / ``fpr99`` (at TPR
    0.95 / 0.99) have success as the positive class, ``fpr95_failure_positive`` / ``fpr99_failure_positive``
    failure (see :func:`~csfbench.metrics.fpr_at_tpr`).  Only the weighted metrics (``auroc``) use
    ``data.weight``; the open-set metrics get ``data.shifted``, the balanced-accuracy ones ``data.labels``.

    Omitted from the result: a metric that is undefined on a single-class set (auroc, fpr*, aupr_* when
    there are no failures or no successes), with a logged warning naming it and why; with a debug message,
    a probability metric (ece, mce, brier, nll) when any confidence lies outside [0, 1] (the CSF is not a
    probability), a metric whose context (``labels``) the set lacks, and a joint metric on a scheme it does
    not apply to (:attr:`~csfbench.metrics.registry.MetricSpec.schemes`).
    """
    specs = [metric_spec(name) for name in metrics]
    out: dict[str, float] = {}
    for spec in specs:
        _evaluate_one(spec, data, out)
    return out


def _evaluate_one(spec: MetricSpec, data: SchemeData, out: dict) -> None:
    context = {"shifted": data.shifted, "labels": data.labels}
    skip = None
    if spec.schemes is not None and data.scheme not in spec.schemes:
        skip = f"it applies to the {spec.schemes} schemes only"
    elif spec.probability and not _within_unit_interval(data.confidence):
        skip = "confidences are not within [0, 1]"
    elif any(context[need] is None for need in spec.needs):
        skip = f"the set has no {[need for need in spec.needs if context[need] is None]}"
    if skip:
        log.debug("%s skipped for scheme %s: %s", spec.name, data.scheme, skip)
        return
    kwargs = {need: context[need] for need in spec.needs}
    if spec.weighted:
        kwargs["weight"] = data.weight
    try:
        out[spec.name] = float(spec.function(data.confidence, data.residual, **kwargs))
    except UndefinedMetricError as err:
        log.warning("%s omitted for scheme %s (%d successes, %d failures): %s",
                    spec.name, data.scheme, data.n_pos, data.n_neg, err)
