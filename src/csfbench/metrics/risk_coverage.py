"""Risk–coverage curves and their areas (AURC, AUGRC), in two named conventions.

Orientation: higher ``confidence`` = more likely a success; samples are rejected lowest confidence
first.  ``residual`` is the loss of each prediction in [0, 1] (``1 - correct`` for classification, so
1 = failure); it may be continuous in both conventions.

``convention`` (:data:`RC_CONVENTIONS`) chooses the points of the curve; the selective risk of the k
most confident samples is ``S_k / k`` and the generalized risk ``S_k / N`` (``S_k`` their residual sum):

- ``"csfbench"`` (default; FD-Shifts' current code and Traub et al., "Overcoming Common Flaws in the
  Evaluation of Selective Classification Systems", NeurIPS 2024, arXiv 2407.01032, as in the authors'
  src/rc_stats_utils.py): a point only at the end of a plateau of equal confidences, so a plateau is
  accepted or rejected at once and crossed by a straight chord (the value does not depend on the order
  inside ties); the curve starts at coverage 1 and ends at coverage 0 with the last selective risk
  (AURC) or generalized risk 0 (AUGRC).
- ``"torch-uncertainty"`` (torch-uncertainty 0.13.0, torch_uncertainty/metrics/classification/
  risk_coverage.py, ``AURC``/``AUGRC``): sample-wise, a point at every coverage k/N, k = N, ..., 1, in the
  order of descending confidence, no point at coverage 0; the area is divided by the span 1 - 1/N.
  Inside ties its value depends on the order of the samples: csfbench makes it deterministic with a
  stable sort (tied samples taken in input order); torch's ``argsort`` does not guarantee an order there.

Areas are trapezoidal, divided by the coverage span of the curve (1 for ``"csfbench"``).  All values are
fractions in [0, 1] (AUGRC in [0, 0.5]), NOT the ×1000 of the papers' tables.  In both conventions an
all-correct set has AURC = AUGRC = 0 and an all-wrong set AURC = 1; its AUGRC is 0.5 for ``"csfbench"``
and (N + 1) / (2N) for ``"torch-uncertainty"``.  Lower is better.
"""
from __future__ import annotations

import numpy as np

from csfbench.metrics._inputs import UndefinedMetricError, check_pair, check_residual, is_binary

KINDS = ("selective", "generalized")
#: the risk–coverage curve constructions (see the module docstring)
RC_CONVENTIONS = ("csfbench", "torch-uncertainty")


def _check_convention(convention: str) -> None:
    if convention not in RC_CONVENTIONS:
        raise ValueError(f"convention must be one of {RC_CONVENTIONS}, got {convention!r}")


def _accepted_sums(conf: np.ndarray, res: np.ndarray, convention: str = "csfbench") -> tuple[np.ndarray, np.ndarray]:
    """The realisable accepted counts k (ascending) and the residual sums ``S_k`` of the k most confident samples.

    ``conf`` and ``res`` are validated float arrays (:func:`~csfbench.metrics._inputs.check_pair`).
    ``"csfbench"``: k runs over the ends of the tie groups in descending confidence (a tie group is
    accepted whole); ``"torch-uncertainty"``: k = 1, ..., N with ties in input order (stable sort).
    """
    _check_convention(convention)
    if convention == "csfbench":
        # the permutation of the original code (bit-identical sums); inside a tie group any order does
        order = np.argsort(conf)[::-1]
        conf = conf[order]
        ends = np.append(np.flatnonzero(conf[:-1] != conf[1:]) + 1, conf.size)
    else:
        order = np.argsort(-conf, kind="stable")
        ends = np.arange(1, conf.size + 1)
    return ends, np.cumsum(res[order])[ends - 1]


def rc_curve(confidence, residual, kind: str = "selective", *,
             convention: str = "csfbench") -> tuple[np.ndarray, np.ndarray]:
    """Points of the risk–coverage curve, coverage descending from 1.

    ``kind="selective"``: risk = mean residual of the accepted samples (the AURC curve);
    ``kind="generalized"``: risk = sum of accepted residuals / n, the probability of "accepted and
    failed" (the AUGRC curve).  ``convention`` (:data:`RC_CONVENTIONS`): ``"csfbench"`` = one point per
    tie-group boundary, ending at coverage 0; ``"torch-uncertainty"`` = one point per sample (ties in input
    order), ending at coverage 1/n.  Coverages and risks are fractions in [0, 1].  O(n log n).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    conf, res = check_pair(confidence, residual)
    n = conf.size
    accepted, sums = _accepted_sums(conf, res, convention)
    accepted, sums = accepted[::-1], sums[::-1]
    coverages = accepted / n
    risks = sums / accepted if kind == "selective" else sums / n
    if convention == "csfbench":
        coverages = np.append(coverages, 0.0)
        risks = np.append(risks, risks[-1] if kind == "selective" else 0.0)
    return coverages, risks


def _area(coverages: np.ndarray, risks: np.ndarray) -> float:
    """Trapezoidal area under ``risks`` over descending ``coverages``, divided by the coverage span."""
    area = np.sum((coverages[:-1] - coverages[1:]) * (risks[:-1] + risks[1:])) / 2
    return float(area / (coverages[0] - coverages[-1]))


def _rc_area(confidence, residual, kind: str, convention: str) -> float:
    coverages, risks = rc_curve(confidence, residual, kind, convention=convention)
    if coverages.size < 2:
        raise UndefinedMetricError(f"the {convention} risk–coverage area needs at least 2 samples "
                                   "(its curve starts at coverage 1/N and is divided by 1 - 1/N)")
    return _area(coverages, risks)


def aurc(confidence, residual, *, convention: str = "csfbench") -> float:
    """Area under the selective risk–coverage curve, in [0, 1]; lower is better.

    Higher confidence = more likely a success; residual in [0, 1] with 1 = failure.  An all-correct
    set gives 0, an all-wrong set 1.  ``convention`` (:data:`RC_CONVENTIONS`, module docstring):

    - ``"csfbench"``: trapezoids over the tie-aware curve (FD-Shifts; Traub et al., NeurIPS 2024,
      arXiv 2407.01032); ties are accepted whole, all-equal confidences give the mean residual.
    - ``"torch-uncertainty"`` (torch-uncertainty 0.13.0 ``AURC``): with r_k = S_k / k the mean residual of
      the k most confident samples, ``Σ_{k=1}^{N-1} (r_k + r_{k+1}) / (2N) / (1 - 1/N)``; sample-wise, ties
      in input order (stable sort); N < 2 raises :class:`UndefinedMetricError`.
    """
    return _rc_area(confidence, residual, "selective", convention)


def augrc(confidence, residual, *, convention: str = "csfbench") -> float:
    """Area under the generalized risk–coverage curve, in [0, 0.5] (``"csfbench"``); lower is better.

    Higher confidence = more likely a success; residual in [0, 1] with 1 = failure; the generalized
    risk at coverage k/N is S_k / N, the rate of "accepted and failed" (Traub et al., NeurIPS 2024,
    arXiv 2407.01032).  ``convention`` (:data:`RC_CONVENTIONS`, module docstring):

    - ``"csfbench"``: trapezoids over the tie-aware curve ending at (0, 0); ties are accepted whole; an
      all-correct set gives 0, an all-wrong set 0.5, all-equal confidences half the mean residual.
    - ``"torch-uncertainty"`` (torch-uncertainty 0.13.0 ``AUGRC``): ``Σ_{k=1}^{N-1} (S_k + S_{k+1}) / (2N²)
      / (1 - 1/N)``, in [0, 1] (an all-wrong set gives (N + 1) / (2N)); sample-wise, ties in input order
      (stable sort); N < 2 raises :class:`UndefinedMetricError`.
    """
    return _rc_area(confidence, residual, "generalized", convention)


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
