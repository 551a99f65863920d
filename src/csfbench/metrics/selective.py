"""Operating points of selective classification, the SGR risk guarantee, and the SCOD risk–coverage areas.

Orientation as everywhere in :mod:`csfbench.metrics`: higher ``confidence`` = accept first; ``residual``
in [0, 1], 1 = failure.  A threshold accepts every sample whose confidence reaches it, so the realisable
acceptance sets are the k most confident samples with k the end of a tie group in descending confidence
(a tie group is accepted or rejected whole).  The selective risk of such a set is its mean residual.
All values are fractions.

The SCOD functions take csfbench's ``failure`` evaluation set: ``residual`` 1 for a misclassified ID
sample or any shifted sample, 0 for a correct ID sample, and ``shifted`` (bool or 0/1) marking the
shifted (OOD) samples.
"""
from __future__ import annotations

import math

import numpy as np

from csfbench.metrics._inputs import UndefinedMetricError, check_binary, check_pair, check_residual, check_shifted
from csfbench.metrics.risk_coverage import _accepted_sums, aurc, augrc


def _selective_risks(confidence, residual) -> tuple[np.ndarray, np.ndarray, int]:
    """The realisable accepted counts k (ascending), their selective risks S_k / k, and N."""
    conf, res = check_pair(confidence, residual)
    ends, sums = _accepted_sums(conf, res)
    return ends, sums / ends, conf.size


def risk_at_coverage(confidence, residual, coverage: float) -> float:
    """Selective risk at the smallest realisable coverage of at least ``coverage``, in [0, 1]; lower is better.

    Accept in descending confidence whole tie groups until at least k = ceil(coverage·N) samples are
    accepted (k computed in floating point, ``math.ceil(coverage * N)``, as torch-uncertainty does); return
    the mean residual of the accepted samples.  ``coverage`` in (0, 1].  Ties: a tie group straddling the
    k-th sample is accepted whole, so more than k samples may be accepted.  On untied confidences this is
    torch-uncertainty 0.13.0's ``RiskAtxCov`` (torch_uncertainty/metrics/classification/risk_coverage.py;
    tested), the risk at a coverage of Geifman & El-Yaniv, "Selective Classification for Deep Neural
    Networks", NeurIPS 2017, arXiv 1705.08500, §2.
    """
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage must lie in (0, 1], got {coverage}")
    ends, risks, n = _selective_risks(confidence, residual)
    return float(risks[np.searchsorted(ends, math.ceil(coverage * n))])


def coverage_at_risk(confidence, residual, risk: float) -> float:
    """The largest realisable coverage whose selective risk is at most ``risk``, in [0, 1]; higher is better.

    Over the thresholds a confidence can realise (coverage k/N with k the end of a tie group in descending
    confidence, ties accepted whole), the largest k/N with mean residual of the k accepted <= ``risk``
    (the risk need not be monotone in the coverage; every threshold is considered).  ``risk`` in [0, 1].
    0.0 when no threshold qualifies, where torch-uncertainty 0.13.0's ``CovAtxRisk``
    (torch_uncertainty/metrics/classification/risk_coverage.py) returns NaN; elsewhere equal to it on
    untied confidences (tested).  Geifman & El-Yaniv, NeurIPS 2017, arXiv 1705.08500, §2.
    """
    if not 0 <= risk <= 1:
        raise ValueError(f"risk must lie in [0, 1], got {risk}")
    ends, risks, n = _selective_risks(confidence, residual)
    admissible = ends[risks <= risk]
    return float(admissible[-1] / n) if admissible.size else 0.0


def _risk_upper_bound(errors, accepted, delta: float) -> np.ndarray:
    """Geifman & El-Yaniv's B*(r, δ, S): the b solving Σ_{j=0}^{e} C(k, j) b^j (1 - b)^{k-j} = δ for e errors
    among k accepted samples (Langford's binomial tail inversion), 1 when e = k.

    By the binomial–beta identity P(Bin(k, b) <= e) = 1 - I_b(e + 1, k - e), the root is the
    (1 - δ)-quantile of Beta(e + 1, k - e), i.e. the one-sided Clopper–Pearson upper bound at level 1 - δ.
    """
    errors, accepted = np.asarray(errors, dtype=np.float64), np.asarray(accepted, dtype=np.float64)
    below = errors < accepted
    from scipy.stats import beta  # here, not at the top: jobs that import csfbench.metrics skip scipy.stats
    bound = beta.ppf(1.0 - delta, errors + 1.0, np.where(below, accepted - errors, 1.0))
    return np.where(below, bound, 1.0)


def selective_guaranteed_risk(confidence, residual, risk: float, delta: float) -> float:
    """Coverage of the threshold chosen by Selection with Guaranteed Risk (SGR), in [0, 1]; higher is better.

    Geifman & El-Yaniv, "Selective Classification for Deep Neural Networks", NeurIPS 2017, arXiv 1705.08500,
    §3, Algorithm 1.  With the N samples sorted by ascending confidence (positions 1..N), z_min = 1,
    z_max = N, and for i = 1..ceil(log2 N): z = ceil((z_min + z_max) / 2), threshold θ = the confidence at
    position z, accept every sample with confidence >= θ (k samples, e errors; a tie group is accepted whole),
    b* = B*(e / k, δ / ceil(log2 N), k) (:func:`_risk_upper_bound`, the binomial tail inversion, via
    ``scipy.stats.beta.ppf``); if b* <= ``risk`` then z_max = z (try more coverage) else z_min = z.
    Returns k / N of the last candidate with b* <= ``risk`` (the largest coverage among those that passed),
    0.0 if none did (reject everything).  With probability at least 1 - δ over the sample the true selective
    risk of each tested threshold is below its b*.  As in the paper, position 1 (accepting everything) is
    never a candidate: the coverage is 1 only when the least confident sample is tied with position 2.
    The pass test b* <= ``risk`` is that of the authors' code (geifmany/selective_deep_learning, b367eae,
    risk_control.py, which moves to less coverage when bound > r*); unlike that code this runs exactly
    ceil(log2 N) steps (as Algorithm 1, and as δ is split) and counts a tie group whole.
    ``risk`` (the target r*) in [0, 1]; ``delta`` in (0, 1]; binary residual required; N >= 2.
    """
    if not 0 <= risk <= 1:
        raise ValueError(f"risk must lie in [0, 1], got {risk}")
    if not 0 < delta <= 1:
        raise ValueError(f"delta must lie in (0, 1], got {delta}")
    conf, res = check_pair(confidence, residual)
    check_binary(res, "selective_guaranteed_risk")
    n = conf.size
    if n < 2:
        raise UndefinedMetricError("selective_guaranteed_risk needs at least 2 samples (ceil(log2 N) = 0 steps)")
    ends, errors = _accepted_sums(conf, res)
    steps = (n - 1).bit_length()  # ceil(log2 N), exactly
    z_min, z_max, accepted = 1, n, 0
    for _ in range(steps):
        z = (z_min + z_max + 1) // 2
        group = np.searchsorted(ends, n - z + 1)  # the tie group of the z-th least confident sample
        if _risk_upper_bound(errors[group], ends[group], delta / steps) <= risk:
            z_max, accepted = z, int(ends[group])
        else:
            z_min = z
    return accepted / n


def scod_loss(residual, shifted, ood_cost: float) -> np.ndarray:
    """Per-sample SCOD loss (float64): ``ood_cost`` for a shifted sample, ``(1 - ood_cost)·residual`` otherwise.

    Selective classification with OOD detection charges an accepted OOD sample ``ood_cost`` and an accepted
    misclassified ID sample ``1 - ood_cost`` (Xia & Bouganis, "Augmenting Softmax Information for Selective
    Classification with Out-of-Distribution Data", ACCV 2022, whose β = 1 - ood_cost; Narasimhan et al.,
    "Plugin Estimators for Selective Classification with Out-of-Distribution Detection", arXiv 2301.12386,
    whose c_fn = ood_cost), as torch-uncertainty 0.13.0 (torch_uncertainty/metrics/classification/
    scod_risk_coverage.py).  ``ood_cost`` in [0, 1]; ``shifted`` bool or 0/1 of the residual's length; the
    residual of a shifted sample is ignored.  Values in [0, 1].
    """
    if not 0 <= ood_cost <= 1:
        raise ValueError(f"ood_cost must lie in [0, 1], got {ood_cost}")
    res = check_residual(residual)
    return np.where(check_shifted(shifted, res.size), float(ood_cost), (1.0 - ood_cost) * res)


def _scod_pair(confidence, residual, shifted, ood_cost: float):
    conf, res = check_pair(confidence, residual)
    return conf, scod_loss(res, shifted, ood_cost)


def scod_aurc(confidence, residual, shifted, ood_cost: float = 0.5, *, convention: str = "csfbench") -> float:
    """SCOD-AURC: :func:`~csfbench.metrics.risk_coverage.aurc` of ``confidence`` against :func:`scod_loss`, in
    [0, 1]; lower is better.

    The selective risk at coverage k/N is the mean SCOD loss of the k most confident samples (accepted OOD
    samples cost ``ood_cost``, accepted misclassified ID samples ``1 - ood_cost``).  ``convention``
    (:data:`~csfbench.metrics.risk_coverage.RC_CONVENTIONS`): ``"csfbench"`` = tie-aware curve (ties accepted
    whole); ``"torch-uncertainty"`` = torch-uncertainty 0.13.0's ``SCODAURC`` (its acceptance score is
    -ood_score, our ``confidence``), sample-wise with ties in input order.  Xia & Bouganis, ACCV 2022;
    Narasimhan et al., arXiv 2301.12386.
    """
    return aurc(*_scod_pair(confidence, residual, shifted, ood_cost), convention=convention)


def scod_augrc(confidence, residual, shifted, ood_cost: float = 0.5, *, convention: str = "csfbench") -> float:
    """SCOD-AUGRC: :func:`~csfbench.metrics.risk_coverage.augrc` of ``confidence`` against :func:`scod_loss`,
    in [0, 0.5] (``"csfbench"``); lower is better.

    The generalized risk at coverage k/N is the SCOD loss summed over the k most confident samples, / N.
    ``convention`` as :func:`scod_aurc`; ``"torch-uncertainty"`` = torch-uncertainty 0.13.0's ``SCODAUGRC``
    (a torch-uncertainty construction, not named in the SCOD papers), sample-wise with ties in input order.
    """
    return augrc(*_scod_pair(confidence, residual, shifted, ood_cost), convention=convention)


def scod_risk_at_coverage(confidence, residual, shifted, coverage: float, ood_cost: float = 0.5) -> float:
    """:func:`risk_at_coverage` of ``confidence`` against :func:`scod_loss`, in [0, 1]; lower is better.

    torch-uncertainty 0.13.0's ``SCODRiskAtxCov`` (``SCOD_Risk_80Cov`` at coverage 0.8) on untied confidences;
    ties are accepted whole, as :func:`risk_at_coverage`.
    """
    return risk_at_coverage(*_scod_pair(confidence, residual, shifted, ood_cost), coverage)


def scod_coverage_at_risk(confidence, residual, shifted, risk: float, ood_cost: float = 0.5) -> float:
    """:func:`coverage_at_risk` of ``confidence`` against :func:`scod_loss`, in [0, 1]; higher is better.

    torch-uncertainty 0.13.0's ``SCODCovAtxRisk`` (``SCOD_Cov_5Risk`` at risk 0.05) on untied confidences, 0.0
    where it returns NaN; ties are accepted whole, as :func:`coverage_at_risk`.
    """
    return coverage_at_risk(*_scod_pair(confidence, residual, shifted, ood_cost), risk)
