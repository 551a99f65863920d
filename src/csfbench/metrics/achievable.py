"""Achievable AURC and e-AURC: the selective risk–coverage area that mixing thresholds can attain.

FD-Shifts (IML-DKFZ/fd-shifts, commit c4467aec, ``fd_shifts/analysis/rc_stats.py``: ``aurc_achievable``
= ``evaluate_auc(risk="selective-risk", achievable=True, interpolation="non-linear")`` over the full
coverage range, with the points chosen by ``dominant_point_mask``) and Traub et al., "Overcoming
Common Flaws in the Evaluation of Selective Classification Systems", NeurIPS 2024, arXiv 2407.01032.

Each operating point of the tie-aware risk–coverage curve
(:func:`csfbench.metrics.risk_coverage.rc_curve`: one point per plateau of equal confidences) accepts
``a`` samples with residual sum ``e``.  Accepting by one threshold or the next at random, with any
mixing weight, attains every point of the straight line between two operating points in
(accepted count, error count) space, i.e. the ROC chord between them.  Along that line the selective
risk ``e(a)/a`` is a hyperbola in ``a``, not a straight line, and its integral between points
``(a1, e1)`` and ``(a2, e2)``, ``a1 > a2``, is

    (e1 − e2) + (e2·a1 − e1·a2) / (a1 − a2) · ln(a1 / a2);

below the lowest-coverage point ``(a_k, e_k)`` the line runs to the origin (reject everything) at the
constant risk ``e_k / a_k``, adding ``e_k``.  The sum divided by ``n`` is the area over coverage
[0, 1].  For binary residuals only the dominant points, the vertices of the lower convex hull of the
points in that space (the ROC convex hull), are joined: a dominated point is beaten by mixing its
neighbours.  For continuous residuals every point is kept (as FD-Shifts: the optimal subset is not
simply a hull there).
"""
from __future__ import annotations

import numpy as np

from csfbench.metrics._inputs import is_binary
from csfbench.metrics.risk_coverage import aurc_optimal, rc_curve


def _dominant(accepted: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """Mask of the points on the lower convex hull of ``(accepted, errors)`` joined to the origin.

    The points run from coverage 1 down.  The hull is closed by the origin and an apex above every
    point on the line ``a = 0``, so its other vertices are exactly the lower chain.  A point exactly
    on a hull edge may be left out: it does not change the area (the edge is one straight line).
    """
    apex = errors[0] + 1.0  # above every point: none accepts more errors than all, errors[0]
    points = np.column_stack((np.append(accepted, [0.0, 0.0]), np.append(errors, [0.0, apex])))
    mask = np.zeros(accepted.size + 2, dtype=bool)
    from scipy.spatial import ConvexHull  # here, not at the top: jobs that import csfbench.metrics skip scipy
    mask[ConvexHull(points).vertices] = True
    return mask[:accepted.size]


def aurc_achievable(confidence, residual) -> float:
    """Achievable AURC (FD-Shifts' ``aurc_achievable``), in [0, 1]; lower is better.

    The area under the selective risk along straight lines in (coverage, error count) space between
    the dominant operating points (binary residuals) or all points (continuous residuals); see the
    module docstring for the integral.  Ties: one point per plateau of equal confidences; the plateau
    is crossed by the straight line.  An all-correct set gives 0, an all-wrong set 1, all-equal
    confidences the mean residual.  For binary residuals it lies between
    :func:`~csfbench.metrics.risk_coverage.aurc_optimal` (a perfect ranking) and the failure rate
    (constant confidence), but it can exceed the trapezoidal
    :func:`~csfbench.metrics.risk_coverage.aurc`, which interpolates the risk itself linearly.
    """
    coverages, risks = rc_curve(confidence, residual, "selective")
    res = np.asarray(residual, dtype=np.float64)
    n = res.size
    accepted = coverages[:-1] * n  # the coverage-0 point is the last segment's end, handled below
    errors = risks[:-1] * accepted
    if is_binary(res):
        keep = _dominant(np.rint(accepted), np.rint(errors))
        accepted, errors = accepted[keep], errors[keep]
    a1, a2, e1, e2 = accepted[:-1], accepted[1:], errors[:-1], errors[1:]
    segments = e1 - e2 + (e2 * a1 - e1 * a2) * np.log(a1 / a2) / (a1 - a2)
    return float((np.sum(segments) + errors[-1]) / n)


def e_aurc_achievable(confidence, residual) -> float:
    """Achievable excess AURC = ``aurc_achievable - aurc_optimal(residual)``, at most 1; 0 = optimal,
    lower is better.

    FD-Shifts' ``eaurc_achievable``.  For binary residuals it lies in [0, 1): every dominant point lies
    on or above the perfect ranking's curve ``e = max(0, a − n_success)``, whose achievable area is the
    analytic optimum ``f + (1 − f)·ln(1 − f)``; :func:`~csfbench.metrics.risk_coverage.e_aurc` can be
    negative instead.  For continuous residuals the reference is FD-Shifts' trapezoidal AURC of the
    sorted residuals and no sign is guaranteed.  Ties as :func:`aurc_achievable`.
    """
    return aurc_achievable(confidence, residual) - aurc_optimal(residual)
