"""Risk–coverage areas whose risk is 1 − balanced accuracy (AURC-BA, AUGRC-BA), as in FD-Shifts.

FD-Shifts (IML-DKFZ/fd-shifts, commit c4467aec, ``fd_shifts/analysis/rc_stats.py`` ``aurc_ba`` /
``augrc_ba`` built on ``rc_stats_utils.py`` ``selective_risk_ba_stats`` / ``generalized_risk_ba_stats``)
and Traub et al., "Overcoming Common Flaws in the Evaluation of Selective Classification Systems",
NeurIPS 2024, arXiv 2407.01032 (balanced-accuracy variants for class-imbalanced data).

``labels`` are the true class of each sample; the K classes are the distinct labels present in the set
(``np.unique``, as FD-Shifts), ``n_c`` the number of samples of class ``c``.  Orientation and tie rule
are those of :func:`csfbench.metrics.risk_coverage.rc_curve`: higher confidence = more likely a
success, samples are rejected lowest confidence first, and a point is emitted only at the boundary of
a plateau of equal confidences (the value does not depend on the order inside ties); the areas are
trapezoidal.  Values are fractions (FD-Shifts reports ×1000).  Lower is better.
"""
from __future__ import annotations

import numpy as np

from csfbench.metrics._inputs import MetricInputError, check_pair
from csfbench.metrics.risk_coverage import rc_curve


def _class_index(labels, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``labels`` (n integers) as class indices 0..K-1 over the distinct labels, and each class's count."""
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise MetricInputError(f"labels must be 1-D with one label per sample ({n}), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise MetricInputError(f"labels must be integers (the true class of each sample), got dtype {arr.dtype}")
    _, index, counts = np.unique(arr, return_inverse=True, return_counts=True)
    return index, counts


def _trapezoid(coverages: np.ndarray, risks: np.ndarray) -> float:
    """Trapezoidal area under ``risks`` over descending ``coverages``."""
    return float(np.trapezoid(risks[::-1], coverages[::-1]))


def aurc_ba(confidence, residual, labels) -> float:
    """Area under the selective balanced-risk–coverage curve (FD-Shifts' ``aurc-ba``), in [0, 1].

    At each point the risk is ``(1/K) Σ_c E_c / N_c`` with ``E_c`` the residual sum and ``N_c`` the
    number of the still-accepted samples of class ``c``: 1 − the balanced accuracy of the accepted
    samples (for binary residuals).  A class whose samples are all rejected while others remain
    counts as error rate 0 and stays in the mean over K (FD-Shifts' default
    ``drop_empty_classes=False``), so deferring a whole class lowers the risk.  The last point is
    coverage 0 with the last risk; trapezoid rule.  Lower is better.  Residuals may be continuous.
    With a single class it equals :func:`~csfbench.metrics.risk_coverage.aurc`.

    Ties: one point per plateau of equal confidences, which is rejected whole.
    """
    conf, res = check_pair(confidence, residual)
    cls, counts = _class_index(labels, conf.size)
    n = conf.size
    order = np.argsort(conf)
    conf, res, cls = conf[order], res[order], cls[order]
    # Rejecting a sample changes only its class's term E_c / N_c.  Per sample (grouped by class, in
    # rejection order), the term once it is rejected; the term before is the previous one of its class.
    by_class = np.argsort(cls, kind="stable")
    grouped, grouped_cls = res[by_class], cls[by_class]
    class_end = np.cumsum(counts)
    cum = np.cumsum(grouped)
    error_left = cum[class_end - 1][grouped_cls] - cum  # class residuals still accepted
    left = class_end[grouped_cls] - 1 - np.arange(n)  # class samples still accepted
    after = np.divide(error_left, left, out=np.zeros(n), where=left > 0)
    initial = np.bincount(cls, weights=res, minlength=counts.size) / counts
    before = np.roll(after, 1)
    before[class_end - counts] = initial
    change = np.empty(n)
    change[by_class] = after - before
    term_sums = np.concatenate(([0.0], np.cumsum(change))) + np.sum(initial)
    rejected = np.concatenate(([0], np.flatnonzero(conf[:-1] != conf[1:]) + 1))
    risks = term_sums[rejected] / counts.size
    return _trapezoid(np.append((n - rejected) / n, 0.0), np.append(risks, risks[-1]))


def augrc_ba(confidence, residual, labels) -> float:
    """Area under the generalized risk–coverage curve with class-balanced residuals (FD-Shifts'
    ``augrc-ba``), in [0, 1]: at most 0.5 for balanced classes, more when the residuals of a rare class
    are the most confident (their weight exceeds 1).

    Each residual is reweighted by ``n / (K·n_c)`` (classes of prevalence 1/K keep their residuals),
    so the generalized risk at a point is ``(1/K) Σ_c E_c / n_c`` with ``E_c`` the residual sum of the
    accepted samples of class ``c`` and ``n_c`` the class's full count: the balanced rate of
    "accepted and failed".  Coverage 1 gives 1 − balanced accuracy, coverage 0 gives 0; trapezoid
    rule.  Lower is better.  Residuals may be continuous.  With a single class or balanced classes
    it equals :func:`~csfbench.metrics.risk_coverage.augrc`.

    Ties: one point per plateau of equal confidences, which is rejected whole.
    """
    conf, res = check_pair(confidence, residual)
    cls, counts = _class_index(labels, conf.size)
    smallest = counts.min()
    # the weights n / (K n_c) divided by their largest, n / (K n_min), so the residuals stay in [0, 1]
    coverages, risks = rc_curve(conf, res * (smallest / counts[cls]), "generalized")
    return _trapezoid(coverages, risks) * conf.size / (counts.size * smallest)
