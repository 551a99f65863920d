"""Tie-aware risk–coverage curves and their areas (AURC, AUGRC), as in FD-Shifts' current code.

Orientation: higher ``confidence`` = more likely a success; samples are rejected lowest confidence
first.  ``residual`` is the loss of each prediction in [0, 1] (``1 - correct`` for classification, so
1 = failure); it may be continuous.

The curve (Traub et al., 2024, as in FD-Shifts and the authors' src/rc_stats_utils.py): start at
coverage 1 with the risk of accepting everything, reject in ascending confidence, and emit a point
only at the boundary of a plateau of equal confidences, so a plateau is removed at once and crossed
by a straight chord (the value does not depend on the order inside ties).  The last point is
coverage 0 with the last selective risk (AURC) or generalized risk 0 (AUGRC).  Areas are trapezoidal.

All values are fractions in [0, 1] (AUGRC in [0, 0.5]), NOT the ×1000 of the papers' tables.  An
all-correct set has AURC = AUGRC = 0; an all-wrong set has AURC = 1 and AUGRC = 0.5.  Lower is better.
"""
from __future__ import annotations

import numpy as np

from csfbench.metrics._inputs import check_pair, check_residual, is_binary

KINDS = ("selective", "generalized")


def rc_curve(confidence, residual, kind: str = "selective") -> tuple[np.ndarray, np.ndarray]:
    """Points of the tie-aware risk–coverage curve, coverage descending from 1 to 0.

    ``kind="selective"``: risk = mean residual of the accepted samples (the AURC curve);
    ``kind="generalized"``: risk = sum of accepted residuals / n, the probability of "accepted and
    failed" (the AUGRC curve).  Coverages and risks are fractions in [0, 1].  O(n log n).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    conf, res = check_pair(confidence, residual)
    n = conf.size
    order = np.argsort(conf)  # the order inside ties does not matter: plateaus are removed whole
    conf, res = conf[order], res[order]
    # remaining[k]: residual sum of the samples still accepted after the k least confident are rejected
    remaining = np.cumsum(res[::-1])[::-1]
    rejected = np.concatenate(([0], np.flatnonzero(conf[:-1] != conf[1:]) + 1))
    accepted = n - rejected
    coverages = np.append(accepted / n, 0.0)
    if kind == "selective":
        risks = remaining[rejected] / accepted
        risks = np.append(risks, risks[-1])
    else:
        risks = np.append(remaining[rejected] / n, 0.0)
    return coverages, risks


def _area(coverages: np.ndarray, risks: np.ndarray) -> float:
    """Trapezoidal area under ``risks`` over descending ``coverages``."""
    return float(np.sum((coverages[:-1] - coverages[1:]) * (risks[:-1] + risks[1:])) / 2)


def aurc(confidence, residual) -> float:
    """Area under the selective risk–coverage curve, in [0, 1]; lower is better.

    Higher confidence = more likely a success; residual in [0, 1] with 1 = failure.  An all-correct
    set gives 0, an all-wrong set 1, all-equal confidences give the mean residual.
    """
    return _area(*rc_curve(confidence, residual, "selective"))


def augrc(confidence, residual) -> float:
    """Area under the generalized risk–coverage curve, in [0, 0.5]; lower is better.

    Higher confidence = more likely a success; residual in [0, 1] with 1 = failure.  An all-correct
    set gives 0, an all-wrong set 0.5, all-equal confidences give half the mean residual.
    """
    return _area(*rc_curve(confidence, residual, "generalized"))


def _sorted_residual_area(res: np.ndarray, kind: str) -> float:
    """Area of the curve whose distinct confidences sort the residuals perfectly (lowest most confident)."""
    return _area(*rc_curve(-np.arange(res.size, dtype=np.float64), np.sort(res), kind))


def aurc_optimal(residual) -> float:
    """AURC of a perfect confidence ranking for these residuals, in [0, 1].

    Binary residuals: the analytic optimum ``f + (1 - f)·ln(1 - f)`` with ``f`` the failure rate (1 for
    ``f = 1``).  Continuous residuals: the AURC of residuals sorted ascending under distinct
    confidences (FD-Shifts).  Because plateaus are crossed by a linear chord, a real CSF can score
    below this reference (negative e-AURC).
    """
    res = check_residual(residual)
    if not is_binary(res):
        return _sorted_residual_area(res, "selective")
    f = float(res.mean())
    return 1.0 if f == 1.0 else f + (1.0 - f) * float(np.log1p(-f))


def augrc_optimal(residual) -> float:
    """AUGRC of a perfect confidence ranking for these residuals, in [0, 0.5].

    Binary residuals: ``f²/2`` with ``f`` the failure rate.  Continuous residuals: the AUGRC of
    residuals sorted ascending under distinct confidences (FD-Shifts).
    """
    res = check_residual(residual)
    if not is_binary(res):
        return _sorted_residual_area(res, "generalized")
    f = float(res.mean())
    return 0.5 * f * f


def e_aurc(confidence, residual) -> float:
    """Excess AURC = ``aurc - aurc_optimal(residual)``, a fraction; 0 = optimal, lower is better.

    Can be slightly negative when confidences have plateaus (see :func:`aurc_optimal`).
    """
    return aurc(confidence, residual) - aurc_optimal(residual)


def e_augrc(confidence, residual) -> float:
    """Excess AUGRC = ``augrc - augrc_optimal(residual)``, in [0, 0.5]; 0 = optimal, lower is better."""
    return augrc(confidence, residual) - augrc_optimal(residual)
