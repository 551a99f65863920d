"""Selective-classification metrics: the torch-uncertainty risk–coverage convention, risk@coverage,
coverage@risk, SGR and the SCOD areas.

Peer: torch-uncertainty 0.13.0 (PyPI wheel torch_uncertainty-0.13.0-py3-none-any.whl, sha256 a15b1a79…52396),
torch_uncertainty/metrics/classification/risk_coverage.py (RECORD sha256 D4qD3D30r_m75x-7K-LZOu2imBtp3uB-5_Ny2ORt2oI)
and scod_risk_coverage.py (RECORD sha256 e1h0V5Qb4jXg_aokxkWi0QuTJwecwVCgIfcjL2Trjw0); torch-uncertainty and
torchmetrics are not installed here, so the golden tests compare with plain-Python transcriptions below.
SGR: Geifman & El-Yaniv, "Selective Classification for Deep Neural Networks", NeurIPS 2017, arXiv 1705.08500,
Algorithm 1.
"""
import math

import numpy as np
import pytest
from scipy.stats import binom

from csfbench.metrics import risk_coverage as rc
from csfbench.metrics import selective as sel
from csfbench.metrics._inputs import MetricInputError, UndefinedMetricError

TU = "torch-uncertainty"
# hand case: descending confidence, errors at the 3rd and 5th sample
CONF = [0.9, 0.8, 0.7, 0.6, 0.5]
RES = [0, 0, 1, 0, 1]
# the same with a tie: the 2nd and 3rd sample share 0.8
TIED_CONF = [0.9, 0.8, 0.8, 0.6, 0.5]
TIED_RES = [0, 1, 0, 0, 1]


# ------------------------------------------------ transcriptions of torch-uncertainty 0.13.0 (see module docstring)


def tu_error_rates(scores, errors):
    """``_aurc_rejection_rate_compute``: errors sorted by descending score, cumulative sum / k.  Inside ties
    torch's argsort order is unspecified; Python's stable ``sorted`` keeps the input order, as csfbench does."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    rates, total = [], 0.0
    for k, i in enumerate(order, start=1):
        total += float(errors[i])
        rates.append(total / k)
    return rates


def tu_auc(x, y):
    """torchmetrics ``_auc_compute`` (reorder=False): trapezoid rule times the direction of x."""
    dx = [b - a for a, b in zip(x, x[1:])]
    direction = -1.0 if dx and all(d <= 0 for d in dx) and any(d < 0 for d in dx) else 1.0
    return direction * sum((x1 - x0) * (y0 + y1) / 2 for x0, x1, y0, y1 in zip(x, x[1:], y, y[1:]))


def tu_aurc(scores, errors, generalized=False):
    """``AURC.compute`` / ``AUGRC.compute``: the area over coverages k/N, k = 1..N, divided by 1 - 1/N."""
    rates = tu_error_rates(scores, errors)
    n = len(rates)
    if n < 2:
        return float("nan")
    cov = [k / n for k in range(1, n + 1)]
    y = [r * c for r, c in zip(rates, cov)] if generalized else rates
    return tu_auc(cov, y) / (1 - 1 / n)


def tu_risk_at_cov(scores, errors, cov_threshold):
    """``RiskAtxCov.compute``: the error rate at index ceil(N·cov) - 1."""
    return tu_error_rates(scores, errors)[math.ceil(len(scores) * cov_threshold) - 1]


def tu_cov_at_risk(scores, errors, risk_threshold):
    """``CovAtxRisk.compute``: (last index with error rate <= threshold + 1) / N, NaN if there is none."""
    admissible = [i for i, r in enumerate(tu_error_rates(scores, errors)) if r <= risk_threshold]
    return (admissible[-1] + 1) / len(scores) if admissible else float("nan")


def tu_scod_losses(classification_errors, is_ood, ood_cost):
    """``_SCODRiskCoverageMixin.update``: ood_cost for OOD inputs, classification_error·(1 - ood_cost) otherwise."""
    return [ood_cost if o else float(e) * (1 - ood_cost) for e, o in zip(classification_errors, is_ood)]


def random_case(rng, n, decimals=None, continuous=False):
    """Confidences (rounded to ``decimals`` for many ties, else untied) and residuals correlated with them."""
    conf = rng.random(n)
    if decimals is not None:
        conf = np.round(conf, decimals)
    p_fail = 0.6 - 0.5 * conf
    res = np.clip(p_fail + rng.normal(0, 0.2, n), 0, 1) if continuous else (rng.random(n) < p_fail).astype(float)
    return conf, res


def untied_cases(seed=0, count=30):
    rng = np.random.default_rng(seed)
    for i in range(count):
        conf, res = random_case(rng, int(rng.integers(2, 120)), continuous=i % 3 == 2)
        assert np.unique(conf).size == conf.size
        yield conf, res


def tied_cases(seed=1, count=30):
    rng = np.random.default_rng(seed)
    for i in range(count):
        conf, res = random_case(rng, int(rng.integers(2, 120)), decimals=1 + i % 2, continuous=i % 3 == 2)
        yield conf, res


# ------------------------------------------------ aurc / augrc, convention="torch-uncertainty"


def test_tu_convention_hand_case():
    # error rates r_k at k = 1..5: 0, 0, 1/3, 1/4, 2/5; trapezoids of width 1/5 over coverage 1/5..1:
    # 0.1·(0 + 1/3 + 7/12 + 13/20) = 47/300, / (1 - 1/5) = 47/240
    assert rc.aurc(CONF, RES, convention=TU) == pytest.approx(47 / 240, abs=1e-15)
    # generalized S_k/N: 0, 0, 0.2, 0.2, 0.4 -> 0.2·(0 + 0.1 + 0.2 + 0.3) = 0.12, / 0.8 = 0.15
    assert rc.augrc(CONF, RES, convention=TU) == pytest.approx(0.15, abs=1e-15)
    cov, risk = rc.rc_curve(CONF, RES, convention=TU)
    np.testing.assert_allclose(cov, [1.0, 0.8, 0.6, 0.4, 0.2])
    np.testing.assert_allclose(risk, [0.4, 0.25, 1 / 3, 0.0, 0.0])
    cov, risk = rc.rc_curve(CONF, RES, "generalized", convention=TU)
    np.testing.assert_allclose(risk, [0.4, 0.2, 0.2, 0.0, 0.0])
    # the default convention is untouched: FD-Shifts' tie-aware value of the same case (test_metrics ORACLE "A")
    assert rc.aurc(CONF, RES) * 1000 == pytest.approx(156.666667, abs=1e-6)
    assert rc.aurc(CONF, RES, convention="csfbench") == rc.aurc(CONF, RES)


def test_tu_convention_extremes():
    conf = np.linspace(0, 1, 7)
    assert rc.aurc(conf, np.zeros(7), convention=TU) == 0.0
    assert rc.augrc(conf, np.zeros(7), convention=TU) == 0.0
    assert rc.aurc(conf, np.ones(7), convention=TU) == pytest.approx(1.0, abs=1e-15)
    # all wrong: S_k = k, Σ_{k=1}^{N-1} (2k + 1) / (2N²) / (1 - 1/N) = (N + 1) / (2N) = 8/14
    assert rc.augrc(conf, np.ones(7), convention=TU) == pytest.approx(8 / 14, abs=1e-15)


@pytest.mark.parametrize("cases", [untied_cases, tied_cases])
def test_tu_convention_matches_transcription(cases):
    """Golden: torch-uncertainty 0.13.0 ``AURC``/``AUGRC`` (transcribed above), binary and continuous residuals;
    on tied arrays with the stable order inside ties that csfbench documents."""
    for conf, res in cases():
        assert rc.aurc(conf, res, convention=TU) == pytest.approx(tu_aurc(conf, res), abs=1e-12)
        assert rc.augrc(conf, res, convention=TU) == pytest.approx(tu_aurc(conf, res, True), abs=1e-12)


def test_tu_convention_depends_on_order_inside_ties():
    # conf [0.5, 0.5]: residuals [0, 1] in input order give r = 0, 1/2: (1/2)·(1/4) / (1/2) = 1/4;
    # [1, 0] give r = 1, 1/2: (1/2)·(3/4) / (1/2) = 3/4.  The tie-aware curve gives the mean, 1/2, for both.
    assert rc.aurc([0.5, 0.5], [0, 1], convention=TU) == pytest.approx(0.25, abs=1e-15)
    assert rc.aurc([0.5, 0.5], [1, 0], convention=TU) == pytest.approx(0.75, abs=1e-15)
    assert rc.aurc([0.5, 0.5], [0, 1]) == rc.aurc([0.5, 0.5], [1, 0]) == pytest.approx(0.5, abs=1e-15)
    # ties in input order (stable sort): three tied samples, residuals 1, 0, 0 read in that order
    # r = 1, 1/2, 1/3 at coverage 1/3, 2/3, 1: (1/3)·[(1 + 1/2)/2 + (1/2 + 1/3)/2] = 7/18, / (2/3) = 7/12
    assert rc.aurc([0.2, 0.2, 0.2], [1, 0, 0], convention=TU) == pytest.approx(7 / 12, abs=1e-15)


def test_tu_convention_orientation():
    res = np.array([0, 0, 0, 1, 0, 1, 1, 0, 1, 1], float)
    good = -np.arange(10.0)  # failures mostly last
    for fn in (rc.aurc, rc.augrc):
        assert fn(good, res, convention=TU) < fn(-good, res, convention=TU)


def test_convention_bad_input():
    with pytest.raises(ValueError, match="convention must be one of"):
        rc.aurc(CONF, RES, convention="fd-shifts")
    with pytest.raises(ValueError, match="convention must be one of"):
        rc.rc_curve(CONF, RES, convention="TU")
    with pytest.raises(UndefinedMetricError, match="at least 2 samples"):
        rc.aurc([0.3], [1], convention=TU)
    with pytest.raises(UndefinedMetricError, match="at least 2 samples"):
        rc.augrc([0.3], [1], convention=TU)
    assert rc.aurc([0.3], [1]) == 1.0  # csfbench's curve is defined for one sample
    with pytest.raises(ValueError, match="confidence has 3 values, residual has 2"):
        rc.aurc([0.1, 0.2, 0.3], [0, 1], convention=TU)
    assert rc.RC_CONVENTIONS == ("csfbench", TU)


# ------------------------------------------------ risk_at_coverage


def test_risk_at_coverage_hand_cases():
    # untied: k = ceil(c·5); risk = errors among the k most confident / k
    assert sel.risk_at_coverage(CONF, RES, 0.2) == 0.0          # k = 1
    assert sel.risk_at_coverage(CONF, RES, 0.5) == pytest.approx(1 / 3)  # k = ceil(2.5) = 3: one error
    assert sel.risk_at_coverage(CONF, RES, 0.8) == pytest.approx(0.25)   # k = 4
    assert sel.risk_at_coverage(CONF, RES, 1.0) == pytest.approx(0.4)    # k = 5


def test_risk_at_coverage_takes_ties_whole():
    # TIED_CONF groups by descending confidence end at k = 1, 3, 4, 5 (0.8 twice, errors at the 2nd and 5th)
    assert sel.risk_at_coverage(TIED_CONF, TIED_RES, 0.2) == 0.0                  # k = 1: a group end
    assert sel.risk_at_coverage(TIED_CONF, TIED_RES, 0.4) == pytest.approx(1 / 3)  # k = 2 -> the 0.8 group: 3
    assert sel.risk_at_coverage(TIED_CONF, TIED_RES, 0.6) == pytest.approx(1 / 3)  # k = 3
    # sample-wise (torch-uncertainty) would read 1/2 at k = 2 in this input order
    assert tu_risk_at_cov(TIED_CONF, TIED_RES, 0.4) == 0.5
    # all-equal confidences: one group, the mean residual at every coverage
    assert sel.risk_at_coverage(np.full(4, 0.3), [0, 1, 1, 1], 0.01) == pytest.approx(0.75)
    # the order inside ties does not matter
    assert sel.risk_at_coverage(TIED_CONF, [0, 0, 1, 0, 1], 0.4) == pytest.approx(1 / 3)


def test_risk_at_coverage_matches_transcription_on_untied():
    """Golden: torch-uncertainty 0.13.0 ``RiskAtxCov`` (transcribed above), including float products such as
    0.07·100 = 7.000000000000001 that both round up to k = 8."""
    for conf, res in untied_cases():
        for c in (0.01, 0.07, 0.1, 0.25, 0.5, 0.8, 0.95, 1.0):
            assert sel.risk_at_coverage(conf, res, c) == pytest.approx(tu_risk_at_cov(conf, res, c), abs=1e-12)


def test_risk_at_coverage_orientation():
    res = np.array([0, 0, 1, 0, 1, 1, 0, 1], float)
    good = -np.arange(8.0) - 10 * res  # failures ranked last
    assert sel.risk_at_coverage(good, res, 0.5) == 0.0
    assert sel.risk_at_coverage(-good, res, 0.5) == 1.0


# ------------------------------------------------ coverage_at_risk


def test_coverage_at_risk_hand_cases():
    # selective risks at k = 1..5: 0, 0, 1/3, 1/4, 2/5
    assert sel.coverage_at_risk(CONF, RES, 0.0) == pytest.approx(0.4)
    assert sel.coverage_at_risk(CONF, RES, 0.3) == pytest.approx(0.8)   # 1/4 at k = 4; 2/5 > 0.3
    assert sel.coverage_at_risk(CONF, RES, 0.4) == 1.0
    # not monotone: risks 1, 1/2, 1/3, 1/4 -> at 0.3 the largest admissible is k = 4
    assert sel.coverage_at_risk([4, 3, 2, 1], [1, 0, 0, 0], 0.3) == 1.0
    # none admissible: 0.0 (torch-uncertainty returns NaN)
    assert sel.coverage_at_risk([4, 3, 2, 1], [1, 0, 0, 0], 0.2) == 0.0
    assert math.isnan(tu_cov_at_risk([4, 3, 2, 1], [1, 0, 0, 0], 0.2))


def test_coverage_at_risk_takes_ties_whole():
    # conf 0.9, 0.8, 0.8 with the error on the last: groups end at k = 1 (risk 0) and k = 3 (risk 1/3);
    # k = 2 is no threshold, so at risk 0 the coverage is 1/3 (sample-wise it would be 2/3)
    assert sel.coverage_at_risk([0.9, 0.8, 0.8], [0, 0, 1], 0.0) == pytest.approx(1 / 3)
    assert sel.coverage_at_risk([0.9, 0.8, 0.8], [0, 1, 0], 0.0) == pytest.approx(1 / 3)
    assert tu_cov_at_risk([0.9, 0.8, 0.8], [0, 0, 1], 0.0) == pytest.approx(2 / 3)
    assert sel.coverage_at_risk(np.full(5, 0.2), [0, 0, 1, 0, 0], 0.1) == 0.0  # one group of risk 1/5


def test_coverage_at_risk_matches_transcription_on_untied():
    """Golden: torch-uncertainty 0.13.0 ``CovAtxRisk`` (transcribed above) where it is defined; 0.0 where NaN."""
    n_nan = 0
    for conf, res in untied_cases():
        for r in (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0):
            want = tu_cov_at_risk(conf, res, r)
            n_nan += math.isnan(want)
            assert sel.coverage_at_risk(conf, res, r) == (0.0 if math.isnan(want) else pytest.approx(want, abs=1e-12))
    assert n_nan > 0


def test_coverage_at_risk_orientation():
    res = np.array([0, 0, 1, 0, 1, 1, 0, 1], float)
    good = -np.arange(8.0) - 10 * res
    assert sel.coverage_at_risk(good, res, 0.1) == 0.5
    assert sel.coverage_at_risk(-good, res, 0.1) == 0.0


# ------------------------------------------------ selective_guaranteed_risk


def bisection_bound(errors, accepted, delta):
    """The b with P(Bin(accepted, b) <= errors) = delta, by plain bisection on scipy.stats.binom.cdf."""
    if errors == accepted:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if binom.cdf(errors, accepted, mid) > delta else (lo, mid)
    return (lo + hi) / 2


def sgr_loop(conf, res, risk, delta):
    """Algorithm 1 (SGR) of Geifman & El-Yaniv (NeurIPS 2017, arXiv 1705.08500) as a plain loop with the
    bisection bound; a threshold θ accepts every sample with confidence >= θ."""
    n = len(conf)
    asc = sorted(conf)
    steps = math.ceil(math.log2(n))
    z_min, z_max, best = 1, n, 0
    for _ in range(steps):
        z = math.ceil((z_min + z_max) / 2)
        theta = asc[z - 1]
        accepted = [r for c, r in zip(conf, res) if c >= theta]
        if bisection_bound(int(sum(accepted)), len(accepted), delta / steps) <= risk:
            z_max, best = z, len(accepted)
        else:
            z_min = z
    return best / n


def test_risk_bound_matches_binomial_bisection():
    for delta in (0.5, 0.05, 1e-3, 1e-5):
        for accepted in (1, 2, 7, 50, 400):
            for errors in sorted({0, 1, accepted // 3, accepted - 1, accepted}):
                got = float(sel._risk_upper_bound(errors, accepted, delta))
                assert got == pytest.approx(bisection_bound(errors, accepted, delta), abs=1e-10)
    # e = 0: (1 - b)^k = δ, b = 1 - δ^(1/k)
    assert float(sel._risk_upper_bound(0, 10, 0.05)) == pytest.approx(1 - 0.05 ** 0.1, abs=1e-14)
    np.testing.assert_allclose(sel._risk_upper_bound([0, 3, 5], [10, 10, 5], 0.05),
                               [bisection_bound(0, 10, 0.05), bisection_bound(3, 10, 0.05), 1.0], atol=1e-10)


def test_sgr_hand_case():
    # 4 correct samples, ascending positions 1..4 = 0.1..0.4; 2 steps, δ/2 = 0.05; with no errors b* = 1 - 0.05^(1/k)
    conf, res = [0.4, 0.3, 0.2, 0.1], [0, 0, 0, 0]
    # r* = 0.8: z = ceil(2.5) = 3, k = 2, b* = 0.776 <= 0.8 pass; z = ceil(2) = 2, k = 3, b* = 0.632 pass -> 3/4.
    # Position 1 (all four, b* = 0.527) is never a candidate.
    assert sel.selective_guaranteed_risk(conf, res, 0.8, 0.1) == 0.75
    # r* = 0.7: z = 3 fails (0.776); z = ceil(3.5) = 4, k = 1, b* = 0.95 fails -> nothing passes -> 0.0
    assert sel.selective_guaranteed_risk(conf, res, 0.7, 0.1) == 0.0
    # N = 2: one step, z = 2, k = 1, b* = 1 - δ = 0.9
    assert sel.selective_guaranteed_risk([0.2, 0.1], [0, 1], 0.91, 0.1) == 0.5
    assert sel.selective_guaranteed_risk([0.2, 0.1], [0, 1], 0.89, 0.1) == 0.0


def test_sgr_takes_ties_whole():
    # as the hand case but the two least confident tied: z = 2 has θ = 0.2, which accepts all four:
    # k = 4, b* = 1 - 0.05^(1/4) = 0.527 <= 0.8 -> coverage 1
    assert sel.selective_guaranteed_risk([0.4, 0.3, 0.2, 0.2], [0, 0, 0, 0], 0.8, 0.1) == 1.0
    # r* = 0.7 with positions 2 and 3 tied at 0.3: z = 3 accepts k = 3 (b* = 0.632) and passes; z = 2 (θ = 0.3)
    # accepts the same 3 -> 3/4, where the untied hand case gives 0.0
    assert sel.selective_guaranteed_risk([0.4, 0.3, 0.3, 0.1], [0, 0, 0, 0], 0.7, 0.1) == 0.75


def test_sgr_matches_algorithm_loop():
    rng = np.random.default_rng(3)
    for i in range(12):
        conf, res = random_case(rng, int(rng.integers(2, 300)), decimals=None if i % 2 else 2)
        for risk, delta in ((0.05, 0.001), (0.2, 0.01), (0.4, 0.1)):
            assert sel.selective_guaranteed_risk(conf, res, risk, delta) == sgr_loop(conf, res, risk, delta)


def test_sgr_orientation():
    rng = np.random.default_rng(4)
    res = (rng.random(2000) < 0.2).astype(float)
    good = rng.random(2000) - res  # failures ranked below successes
    assert sel.selective_guaranteed_risk(good, res, 0.05, 0.001) > 0.7
    assert sel.selective_guaranteed_risk(-good, res, 0.05, 0.001) == 0.0


def test_sgr_bad_input():
    with pytest.raises(ValueError, match="binary residual"):
        sel.selective_guaranteed_risk([0.1, 0.2], [0, 0.5], 0.1, 0.1)
    with pytest.raises(UndefinedMetricError, match="at least 2 samples"):
        sel.selective_guaranteed_risk([0.1], [0], 0.1, 0.1)
    for risk, delta in ((-0.1, 0.1), (1.5, 0.1), (np.nan, 0.1), (0.1, 0.0), (0.1, 1.5), (0.1, np.nan)):
        with pytest.raises(ValueError, match="must lie in"):
            sel.selective_guaranteed_risk([0.1, 0.2], [0, 1], risk, delta)


# ------------------------------------------------ SCOD


def test_scod_loss_hand_case():
    # ID correct 0; ID wrong 1 - 0.3; shifted 0.3 whatever its residual
    loss = sel.scod_loss([0, 1, 1, 0], [False, False, True, True], 0.3)
    assert loss.dtype == np.float64
    np.testing.assert_allclose(loss, [0.0, 0.7, 0.3, 0.3], atol=1e-15)
    np.testing.assert_array_equal(sel.scod_loss([0, 1, 1], [0, 0, 1], 1.0), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(sel.scod_loss([0, 1, 1], np.array([0.0, 0.0, 1.0]), 0.0), [0.0, 1.0, 0.0])
    np.testing.assert_allclose(sel.scod_loss([0.25], [0], 0.5), [0.125])  # a continuous residual is scaled


def test_scod_loss_bad_input():
    with pytest.raises(MetricInputError, match=r"shifted must be 1-D with one value per sample \(3\)"):
        sel.scod_loss([0, 1, 1], [0, 1], 0.5)
    with pytest.raises(MetricInputError, match="shifted must hold only 0/1"):
        sel.scod_loss([0, 1, 1], [0, 2, 1], 0.5)
    with pytest.raises(MetricInputError, match="shifted must be bool or 0/1, got dtype"):
        sel.scod_loss([0, 1, 1], ["a", "b", "c"], 0.5)
    with pytest.raises(MetricInputError, match="shifted contains 1 non-finite"):
        sel.scod_loss([0, 1, 1], [0, np.nan, 1], 0.5)
    for cost in (-0.1, 1.1, np.nan):
        with pytest.raises(ValueError, match="ood_cost must lie in"):
            sel.scod_loss([0, 1], [0, 1], cost)
    with pytest.raises(ValueError, match=r"residual must lie in \[0, 1\]"):
        sel.scod_loss([0, 2], [0, 1], 0.5)


def test_scod_areas_hand_case():
    # conf 0.9..0.6; the 2nd is shifted, the 3rd an ID error; c = 0.5: losses 0, 0.5, 0.5, 0
    conf, res, shifted = [0.9, 0.8, 0.7, 0.6], [0, 1, 1, 0], [0, 1, 0, 0]
    # csfbench: (coverage, risk) = (1, 1/4), (3/4, 1/3), (1/2, 1/4), (1/4, 0), (0, 0):
    # 1/4·[(1/4 + 1/3)/2 + (1/3 + 1/4)/2 + 1/8] = 17/96
    assert sel.scod_aurc(conf, res, shifted) == pytest.approx(17 / 96, abs=1e-15)
    # generalized S_k/N: (1, 1/4), (3/4, 1/4), (1/2, 1/8), (1/4, 0), (0, 0): 1/4·(1/4 + 3/16 + 1/16) = 1/8
    assert sel.scod_augrc(conf, res, shifted) == pytest.approx(1 / 8, abs=1e-15)
    # torch-uncertainty: r_k = 0, 1/4, 1/3, 1/4 over 1/4..1: 1/4·(1/8 + 7/24 + 7/24) = 17/96, / (3/4) = 17/72
    assert sel.scod_aurc(conf, res, shifted, convention=TU) == pytest.approx(17 / 72, abs=1e-15)
    # S_k/N = 0, 1/8, 1/4, 1/4: 1/4·(1/16 + 3/16 + 1/4) = 1/8, / (3/4) = 1/6
    assert sel.scod_augrc(conf, res, shifted, convention=TU) == pytest.approx(1 / 6, abs=1e-15)


@pytest.mark.parametrize("cases", [untied_cases, tied_cases])
def test_scod_areas_match_transcription(cases):
    """Golden: torch-uncertainty 0.13.0 ``SCODAURC``/``SCODAUGRC`` (scores = -ood_scores, losses transcribed
    above); our confidence is the acceptance score, so ood_scores = -confidence."""
    rng = np.random.default_rng(7)
    for conf, res in cases():
        res = (res > 0.5).astype(float)
        shifted = rng.random(conf.size) < 0.3
        failure_res = np.where(shifted, 1.0, res)  # the failure scheme: every shifted sample has residual 1
        for cost in (0.0, 0.3, 0.5, 1.0):
            losses = tu_scod_losses(res, shifted, cost)
            ood_scores = -conf  # torch-uncertainty's input: higher = more OOD
            scores = -ood_scores  # what its mixin stores and ranks by
            assert sel.scod_aurc(conf, failure_res, shifted, cost, convention=TU) == pytest.approx(
                tu_aurc(scores, losses), abs=1e-12)
            assert sel.scod_augrc(conf, failure_res, shifted, cost, convention=TU) == pytest.approx(
                tu_aurc(scores, losses, True), abs=1e-12)
            loss = sel.scod_loss(failure_res, shifted, cost)
            assert sel.scod_aurc(conf, failure_res, shifted, cost) == rc.aurc(conf, loss)
            assert sel.scod_augrc(conf, failure_res, shifted, cost) == rc.augrc(conf, loss)


def test_scod_operating_points_match_transcription_on_untied():
    """Golden: torch-uncertainty 0.13.0 ``SCODRiskAtxCov`` / ``SCODCovAtxRisk`` (the RiskAtxCov / CovAtxRisk
    transcriptions above on the SCOD losses) on untied confidences; 0.0 where CovAtxRisk gives NaN."""
    rng = np.random.default_rng(11)
    for conf, res in untied_cases():
        res = (res > 0.5).astype(float)
        shifted = rng.random(conf.size) < 0.3
        failure_res = np.where(shifted, 1.0, res)
        for cost in (0.2, 0.5):
            losses = tu_scod_losses(res, shifted, cost)
            for c in (0.3, 0.8, 1.0):
                assert sel.scod_risk_at_coverage(conf, failure_res, shifted, c, cost) == pytest.approx(
                    tu_risk_at_cov(conf, losses, c), abs=1e-12)
            for r in (0.05, 0.2):
                want = tu_cov_at_risk(conf, losses, r)
                got = sel.scod_coverage_at_risk(conf, failure_res, shifted, r, cost)
                assert got == (0.0 if math.isnan(want) else pytest.approx(want, abs=1e-12))


def test_scod_operating_points_hand_case():
    # descending confidence: correct ID (loss 0), OOD (0.5), misclassified ID (0.5), correct ID (0), OOD (0.5)
    conf = [0.9, 0.8, 0.7, 0.6, 0.5]
    res, shifted = [0, 1, 1, 0, 1], [False, True, False, False, True]
    # coverage 0.4: the 2 most confident, losses (0, 0.5): risk 0.25; the risks at k = 1..5: 0, .25, 1/3, .25, .3
    assert sel.scod_risk_at_coverage(conf, res, shifted, 0.4) == pytest.approx(0.25)
    # risk <= 0.25 holds up to k = 4 (0.25): coverage 0.8
    assert sel.scod_coverage_at_risk(conf, res, shifted, 0.25) == pytest.approx(0.8)
    assert sel.scod_coverage_at_risk(conf, res, shifted, 0.1) == pytest.approx(0.2)


def test_scod_areas_ties_and_orientation():
    # all tied: csfbench gives the mean loss (AURC) and half of it (AUGRC) whatever the order
    conf, res, shifted = np.full(4, 0.5), [0, 1, 1, 0], [0, 1, 0, 0]
    assert sel.scod_aurc(conf, res, shifted, 0.4) == pytest.approx((0.4 + 0.6) / 4)
    assert sel.scod_augrc(conf, res, shifted, 0.4) == pytest.approx((0.4 + 0.6) / 8)
    assert sel.scod_aurc(conf, res[::-1], shifted[::-1], 0.4) == sel.scod_aurc(conf, res, shifted, 0.4)
    # orientation: rejecting the shifted sample and the ID error first is better
    conf = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    res, shifted = np.array([1, 0, 0, 1, 0]), np.array([1, 0, 0, 0, 0])
    good = np.array([0.1, 0.9, 0.8, 0.2, 0.7])
    for fn in (sel.scod_aurc, sel.scod_augrc):
        for convention in rc.RC_CONVENTIONS:
            assert fn(good, res, shifted, convention=convention) < fn(conf, res, shifted, convention=convention)


def test_scod_areas_bad_input():
    with pytest.raises(MetricInputError, match="shifted must be 1-D"):
        sel.scod_aurc([0.1, 0.2], [0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="confidence has 2 values, residual has 3"):
        sel.scod_augrc([0.1, 0.2], [0, 1, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="ood_cost must lie in"):
        sel.scod_aurc([0.1, 0.2], [0, 1], [0, 1], 2.0)
    with pytest.raises(ValueError, match="convention must be one of"):
        sel.scod_augrc([0.1, 0.2], [0, 1], [0, 1], convention="x")
    with pytest.raises(UndefinedMetricError):
        sel.scod_aurc([0.1], [1], [1], convention=TU)


def test_operating_point_parameters_checked():
    for bad in (0.0, -0.1, 1.01, np.nan):
        with pytest.raises(ValueError, match=r"coverage must lie in \(0, 1\]"):
            sel.risk_at_coverage(CONF, RES, bad)
    for bad in (-0.01, 1.01, np.nan):
        with pytest.raises(ValueError, match=r"risk must lie in \[0, 1\]"):
            sel.coverage_at_risk(CONF, RES, bad)
