"""False rejection at a threshold transferred from a semantic set (Yang, Zhang & Russakovsky,
"ImageNet-OOD: Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024, Table 2;
the ``frr_at_q`` of the pair analyses, a statistic and not an evaluation scheme: docs/methods.md §15).

The threshold is set on the semantic OOD set alone: ``τ = quantile_q(semantic confidences)``, so
that a fraction ``q`` of the semantic set is rejected (the paper: q = 0.75, "75 % of ImageNet-OOD
rejected").  Applied to an ID-role set D (the clean ID test set or a covariate-shifted set), the
false rejection rate is the fraction of D's *correctly classified* samples with confidence strictly
below τ: correct predictions that the detector would throw away.  It is a statistic of the
``correct_vs_ood`` evaluation set of the pair (D, semantic set) (:mod:`csfbench.metrics.schemes`): the
fraction of its positives below the q-quantile of its negatives, i.e. 1 − TPR at the threshold that
accepts a fraction ≈ 1 − q of the negatives; not an evaluation set of its own.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from csfbench.metrics._inputs import MetricInputError, UndefinedMetricError, finite_1d

DEFAULT_Q = 0.75
#: the columns of :func:`frr_table`
FRR_COLUMNS = ("csf", "set", "q", "threshold", "frr", "n_correct")


def transferred_threshold(semantic_confidence, q: float = DEFAULT_Q, method: str = "linear") -> float:
    """``τ = numpy.quantile(semantic_confidence, q, method=method)`` (confidence units).

    ``method="linear"`` is numpy's default (``np.percentile(s, 100·q)``); with n distinct semantic
    scores exactly ⌈q·(n − 1)⌉ of them lie strictly below τ under it (a fraction → q as n grows).
    """
    if not 0 <= q <= 1:
        raise ValueError(f"q must lie in [0, 1], got {q}")
    values = finite_1d(semantic_confidence, "semantic_confidence")
    if values.size == 0:
        raise MetricInputError("the semantic set is empty")
    return float(np.quantile(values, q, method=method))


def false_rejection_rate(confidence, correct, semantic_confidence, q: float = DEFAULT_Q,
                         method: str = "linear") -> float:
    """Fraction (in [0, 1]; the paper prints ×100) of the correct samples of an ID-role set whose
    ``confidence`` (higher = more ID) is strictly below :func:`transferred_threshold`
    ``(semantic_confidence, q, method)``; lower is better.  Raises
    :class:`~csfbench.metrics.UndefinedMetricError` if the set has no correct sample."""
    conf = finite_1d(confidence, "confidence")
    flags = finite_1d(correct, "correct")
    if flags.size != conf.size:
        raise MetricInputError(f"length mismatch: confidence has {conf.size} values, correct has {flags.size}")
    if not np.all((flags == 0) | (flags == 1)):
        raise MetricInputError("correct must hold only 0/1 or booleans")
    kept = conf[flags == 1]
    if kept.size == 0:
        raise UndefinedMetricError("false rejection rate is undefined: the set has no correct sample")
    tau = transferred_threshold(semantic_confidence, q, method)
    return float(np.count_nonzero(kept < tau) / kept.size)


def frr_table(sets: Mapping[str, tuple[Mapping[str, np.ndarray], np.ndarray]],
              semantic_scores: Mapping[str, np.ndarray], q: float = DEFAULT_Q, method: str = "linear") -> pd.DataFrame:
    """Table 2's shape for one model: one row per (CSF, ID-role set).

    ``sets[name] = ({csf: confidence}, correct)``: an ID-role set's confidences per CSF and its
    correctness; ``semantic_scores[csf]``: the semantic set's confidences (the threshold is per
    CSF).  Columns: ``csf``, ``set``, ``q``, ``threshold`` (τ), ``frr`` (fraction), ``n_correct``.
    """
    rows = []
    for csf, semantic in semantic_scores.items():
        tau = transferred_threshold(semantic, q, method)
        for name, (scores, correct) in sets.items():
            if csf not in scores:
                raise ValueError(f"set {name!r} lacks scores of CSF {csf!r}")
            rows.append({"csf": csf, "set": name, "q": q, "threshold": tau,
                         "frr": false_rejection_rate(scores[csf], correct, semantic, q, method),
                         "n_correct": int(np.count_nonzero(np.asarray(correct) == 1))})
    return pd.DataFrame(rows, columns=list(FRR_COLUMNS))
