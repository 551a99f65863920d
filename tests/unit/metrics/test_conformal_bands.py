"""Conformal OOD evaluation (csfbench.metrics.conformal): the correction bands against the equations of
Novello, Dalmau & Andéol, "Out-of-Distribution Detection Should Use Conformal Prediction (and
Vice-versa?)", 2024, arXiv 2403.11532 (Eqs. 3–15), their validity by simulation, the conformal
p-values, ROC, AUROC and FPR@TPR, and the paper's Tables 4–5 recomputed from their classical columns.
Every simulation is seeded."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from csfbench.metrics import MetricInputError, auroc, fpr_at_tpr
from csfbench.metrics import conformal as cf

GRID = [(n, delta) for n in (16, 17, 100, 1001, 9000) for delta in (0.01, 0.05, 0.1, 0.5)]


def binomial_slack(p: float, reps: int, sds: float = 3.0) -> float:
    return sds * math.sqrt(p * (1 - p) / reps)


# ---------------------------------------------------------------- closed forms


def simes_literal(n: int, delta: float) -> np.ndarray:
    """Eq. 11 with k = ⌊n/2⌋, products written out: b_{n+1−i} = 1 − δ^{1/k} (Π_{l<k} (i−l)/(n−l))^{1/k},
    and 1 where the product has a non-positive factor (i < k)."""
    k = n // 2
    b = np.empty(n)
    for i in range(1, n + 1):
        product = math.prod((i - l) / (n - l) for l in range(k))
        b[n - i] = 1.0 - delta ** (1 / k) * product ** (1 / k) if i >= k else 1.0
    return b


def cn_literal(n: int, delta: float) -> float:
    """Eq. 13."""
    ll = math.log(math.log(n))
    return (-math.log(-math.log(1 - delta)) + 2 * ll + 0.5 * math.log(ll) - 0.5 * math.log(math.pi)) / math.sqrt(2 * ll)


@pytest.mark.parametrize("n", [20, 101, 400])
@pytest.mark.parametrize("delta", [0.01, 0.1])
def test_simes_band_is_eq_11(n, delta):
    np.testing.assert_allclose(cf.correction_band(n, delta, "simes"), simes_literal(n, delta), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [100, 1000, 9000])
@pytest.mark.parametrize("delta", [0.01, 0.05])
def test_simes_first_entry_and_flat_top(n, delta):
    band = cf.correction_band(n, delta, "simes")
    assert band[0] == pytest.approx(1 - delta ** (2 / n), rel=1e-12)
    assert np.all(band[n - n // 2 + 1:] == 1.0)  # the top k − 1 entries
    assert band[n - n // 2] < 1.0


@pytest.mark.parametrize("n, delta", [(50, 0.1), (9000, 0.01), (9000, 0.05)])
def test_dkwm_band_is_eq_12(n, delta):
    band = cf.correction_band(n, delta, "dkwm")
    epsilon = math.sqrt(math.log(2 / delta) / (2 * n))
    i = np.arange(1, n + 1)
    np.testing.assert_allclose(band, np.minimum(i / n + epsilon, 1.0), rtol=0, atol=1e-15)


@pytest.mark.parametrize("n, delta", [(16, 0.1), (1000, 0.01), (9000, 0.05)])
def test_asymptotic_band_is_eq_13_14(n, delta):
    band = cf.correction_band(n, delta, "asymptotic")
    i = np.arange(1, n + 1)
    expected = np.minimum(i / n + cn_literal(n, delta) * np.sqrt(i * (n - i)) / (n * math.sqrt(n)), 1.0)
    np.testing.assert_allclose(band, expected, rtol=0, atol=1e-14)


def test_mc_gamma0_is_the_minimum_of_simes_and_the_linear_tail_asymptotic_band():
    n, delta = 1000, 0.05
    i = np.arange(1, n + 1)
    asym = i / n + cn_literal(n, delta) * np.sqrt(i * (n - i)) / (n * math.sqrt(n))
    m = n // 2
    asym[m:] = asym[m - 1] + (asym[m - 1] - asym[m - 2]) * (i[m:] - m)  # straight line beyond ⌊n/2⌋
    expected = np.minimum(simes_literal(n, delta), asym)
    np.testing.assert_allclose(cf.correction_band(n, delta, "mc_gamma0"), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", cf.METHODS)
@pytest.mark.parametrize("n, delta", GRID)
def test_bands_are_non_decreasing_in_unit_interval_and_above_the_empirical_fpr(method, n, delta):
    band = cf.correction_band(n, delta, method, n_mc=500)
    assert band.shape == (n,)
    assert np.all(np.diff(band) >= 0)
    assert band[0] >= 0 and band[-1] <= 1
    k = np.arange(n + 1)
    assert np.all(cf.correct_fpr(k / n, n, delta, method, n_mc=500) >= k / n)  # conformal >= classical


def test_bands_are_cached_and_read_only():
    first = cf.correction_band(300, 0.05, "mc_search", n_mc=200, seed=3)
    assert cf.correction_band(300, 0.05, "mc_search", n_mc=200, seed=3) is first
    assert cf.correction_band(300, 0.05, "dkwm", n_mc=1, seed=1) is cf.correction_band(300, 0.05, "dkwm")
    with pytest.raises(ValueError):
        first[0] = 0.0


@pytest.mark.parametrize("args, match", [
    ((0, 0.1, "simes"), "positive integer"), ((2.5, 0.1, "simes"), "positive integer"),
    ((100, 0.0, "simes"), "delta"), ((100, 1.0, "dkwm"), "delta"), ((100, 0.1, "bonferroni"), "method"),
    ((15, 0.1, "asymptotic"), "n >= 16"), ((15, 0.1, "mc_gamma0"), "n >= 16"),
])
def test_band_arguments_are_validated(args, match):
    with pytest.raises(ValueError, match=match):
        cf.correction_band(*args)


def test_mc_search_draw_count_is_validated():
    with pytest.raises(ValueError, match="n_mc"):
        cf.correction_band(100, 0.1, "mc_search", n_mc=0)


def test_small_calibration_sets_get_a_simes_and_dkwm_band():
    assert cf.correction_band(1, 0.1, "simes")[0] == pytest.approx(0.9)  # k = 1: P(U <= 1 − δ) = 1 − δ
    assert cf.correction_band(1, 0.1, "dkwm")[0] == 1.0


# ---------------------------------------------------------------- Monte Carlo search


def test_one_pass_crossing_statistics_equal_explicit_band_crossings():
    """The crossing probability of every γ from (Simes crossing, c*) equals counting the crossings of
    the explicit hybrid band on the same simulated order statistics (the reference code's p̂(γ))."""
    n, delta, n_mc, seed = 300, 0.1, 2000, 5
    crosses_simes, c_star = cf._crossing_statistics(n, delta, n_mc, seed)
    spacings = np.cumsum(np.random.default_rng(seed).standard_exponential((n_mc, n + 1)), axis=1)
    order = spacings[:, :n] / spacings[:, n:]
    for gamma in (-0.8, -0.3, 0.0, 0.05, 0.09, delta - 1e-6):
        explicit = np.mean(np.any(order > cf._hybrid(n, delta, gamma), axis=1))
        assert np.mean(crosses_simes | (cf._cn(n, delta - gamma) < c_star)) == explicit


def test_streamed_draws_do_not_depend_on_the_block_size(monkeypatch):
    n = 200
    whole = cf._crossing_statistics(n, 0.05, 1000, 7)
    monkeypatch.setattr(cf, "MC_BLOCK_ENTRIES", 3 * (n + 1))  # blocks of 3 vectors
    blocked = cf._crossing_statistics(n, 0.05, 1000, 7)
    np.testing.assert_array_equal(whole[0], blocked[0])
    np.testing.assert_array_equal(whole[1], blocked[1])


def test_sorted_uniforms_from_exponential_spacings_have_the_uniform_order_statistic_law():
    """U_(i) = S_i / S_{n+1}: U_(i) ~ Beta(i, n + 1 − i)."""
    n = 20
    spacings = np.cumsum(np.random.default_rng(0).standard_exponential((4000, n + 1)), axis=1)
    order = spacings[:, :n] / spacings[:, n:]
    for i in (1, 7, 20):
        assert stats.kstest(order[:, i - 1], stats.beta(i, n + 1 - i).cdf).pvalue > 0.01


def test_mc_search_is_wider_than_gamma0_and_reproducible():
    n, delta = 2000, 0.05
    search = cf.correction_band(n, delta, "mc_search", n_mc=2000, seed=1)
    assert np.all(search >= cf.correction_band(n, delta, "mc_gamma0") - 1e-15)
    np.testing.assert_array_equal(search, cf._cached_band.__wrapped__(n, delta, "mc_search", 2000, 1))


# ---------------------------------------------------------------- validity by simulation


def order_statistics(n: int, reps: int, seed: int) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).random((reps, n)), axis=1)


@pytest.mark.parametrize("method", ["simes", "dkwm", "mc_search"])
def test_calibration_conditional_fpr_bound_holds_with_probability_1_minus_delta(method):
    """Eq. 10 on Uniform(0, 1) ID confidences (true FPR(t) = t): over calibration draws, FPR⁺ bounds
    the true FPR at every threshold with probability >= 1 − δ.  The supremum of FPR − FPR⁺ is
    approached just below each calibration point."""
    n, delta, reps = 200, 0.1, 1500
    calibrations = order_statistics(n, reps, seed=11)
    violated = 0
    for cal in calibrations:
        thresholds = np.nextafter(cal, -np.inf)
        violated += np.any(thresholds > cf.conformal_fpr(cal, thresholds, delta, method))
    assert violated / reps <= delta + binomial_slack(delta, reps)


def test_gamma0_hybrid_crosses_more_often_than_delta():
    """The hazard the docs warn of: ``mc_gamma0`` is not valid at level δ (Simes alone is ≈ δ)."""
    n, delta, reps = 2000, 0.1, 3000
    calibrations = order_statistics(n, reps, seed=12)
    crossing = np.mean(np.any(calibrations > cf.correction_band(n, delta, "mc_gamma0"), axis=1))
    assert crossing > delta + binomial_slack(delta, reps)


def test_marginal_pvalues_are_valid():
    """P(u <= t) <= t over calibration and test draws (Eq. 4); equality at t = j/(n + 1)."""
    n, reps = 19, 20000
    rng = np.random.default_rng(3)
    cal, test = rng.random((reps, n)), rng.random(reps)
    u = np.array([cf.conformal_pvalues(c, [x])[0] for c, x in zip(cal[:2000], test[:2000])])
    counts = np.sum(cal <= test[:, None], axis=1)  # the same p-values, vectorised, for all reps
    u_all = (counts + 1) / (n + 1)
    np.testing.assert_array_equal(u, u_all[:2000])
    for j in (1, 2, 5, 10, 19):
        t = j / (n + 1)
        assert np.mean(u_all <= t) <= t + binomial_slack(t, reps)
        assert np.mean(u_all <= t) >= t - binomial_slack(t, reps)


def test_pvalue_fluctuation_follows_the_beta_law_of_eq_5():
    """F(τ; D_cal) = P_x(u(x) <= τ | D_cal) ~ Beta(ℓ, n + 1 − ℓ), ℓ = ⌊(n + 1)τ⌋ (Eq. 5): F is
    measured on a fine grid of Uniform(0, 1) test confidences for each calibration set."""
    n, tau, reps = 50, 0.2, 400
    grid = (np.arange(20000) + 0.5) / 20000
    rng = np.random.default_rng(4)
    f = np.array([np.mean(cf.conformal_pvalues(rng.random(n), grid) <= tau) for _ in range(reps)])
    ell = math.floor((n + 1) * tau)
    assert stats.kstest(f, stats.beta(ell, n + 1 - ell).cdf).pvalue > 0.01


def test_calibration_conditional_pvalues_are_valid_for_all_t_with_probability_1_minus_delta():
    """Eq. 7: P_D(P_x(h(u(x)) <= t | D) <= t for all t) >= 1 − δ, on Uniform(0, 1) scores."""
    n, delta, reps = 100, 0.1, 600
    band = cf.correction_band(n, delta, "simes")
    grid = (np.arange(5000) + 0.5) / 5000
    ts = np.linspace(0.01, 0.99, 99)
    rng = np.random.default_rng(5)
    violated = 0
    for _ in range(reps):
        corrected = cf.conformal_pvalues(rng.random(n), grid, band)
        violated += np.any(np.mean(corrected[:, None] <= ts, axis=0) > ts + 1 / 5000)
    assert violated / reps <= delta + binomial_slack(delta, reps)


# ---------------------------------------------------------------- p-values, FPR, ROC on given scores


def test_pvalue_edges_and_ties():
    cal = np.array([0.1, 0.2, 0.2, 0.7])
    u = cf.conformal_pvalues(cal, [0.9, 0.0, 0.2])
    np.testing.assert_allclose(u, [1.0, 1 / 5, 4 / 5])  # above all: 1; below all: 1/(n+1); ties counted
    band = cf.correction_band(4, 0.1, "simes")
    np.testing.assert_allclose(cf.conformal_pvalues(cal, [0.9, 0.0, 0.2], band), [1.0, band[0], band[3]])
    assert np.all(cf.conformal_pvalues(cal, [0.9, 0.0, 0.2], band) >= u)


def test_pvalue_input_errors():
    with pytest.raises(MetricInputError, match="empty"):
        cf.conformal_pvalues([], [0.1])
    with pytest.raises(MetricInputError, match="non-finite"):
        cf.conformal_pvalues([0.1, np.nan], [0.1])
    with pytest.raises(ValueError, match="band"):
        cf.conformal_pvalues([0.1, 0.2], [0.1], np.array([0.5, 0.8, 1.0]))


def test_conformal_fpr_is_at_least_the_empirical_fpr_at_every_threshold():
    rng = np.random.default_rng(6)
    cal, thresholds = rng.normal(size=500), np.linspace(-4, 4, 401)
    empirical = np.mean(cal[:, None] <= thresholds, axis=0)
    for method in cf.METHODS:
        upper = cf.conformal_fpr(cal, thresholds, 0.05, method, n_mc=500)
        assert np.all(upper >= empirical)
        assert np.all(np.diff(upper) >= 0)


def gaussian_scores(separation: float, n_id: int, n_ood: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(separation, 1.0, n_id), rng.normal(0.0, 1.0, n_ood)


def pooled(id_scores, ood_scores):
    return np.r_[id_scores, ood_scores], np.r_[np.zeros(id_scores.size), np.ones(ood_scores.size)]


@pytest.mark.parametrize("method", cf.METHODS)
def test_conformal_roc_matches_the_classical_one_and_lies_to_its_right(method):
    id_scores, ood_scores = gaussian_scores(1.0, 400, 300, seed=7)
    id_scores[:20] = np.round(id_scores[:20], 1)  # some ties
    ood_scores[:20] = np.round(ood_scores[:20], 1)
    roc = cf.conformal_roc(id_scores, ood_scores, 0.05, method, n_mc=500)
    assert (roc.fpr[0], roc.tpr[0], roc.fpr_conformal[0]) == (0.0, 0.0, 0.0)
    assert (roc.fpr[-1], roc.tpr[-1], roc.fpr_conformal[-1]) == (1.0, 1.0, 1.0)
    assert np.all(roc.fpr_conformal >= roc.fpr) and np.all(np.diff(roc.fpr_conformal) >= 0)
    assert float(np.trapezoid(roc.tpr, roc.fpr)) == pytest.approx(auroc(*pooled(id_scores, ood_scores)), abs=1e-12)
    assert cf.conformal_auroc(id_scores, ood_scores, 0.05, method, n_mc=500) <= auroc(*pooled(id_scores, ood_scores))


def test_orientation_a_score_higher_on_id_gives_a_conformal_auroc_near_the_classical_one():
    id_scores, ood_scores = gaussian_scores(1.5, 5000, 5000, seed=8)
    classical = auroc(*pooled(id_scores, ood_scores))
    conformal = cf.conformal_auroc(id_scores, ood_scores, 0.05, "mc_gamma0")
    assert classical > 0.8 and 0.5 < conformal < classical and classical - conformal < 0.03
    assert cf.conformal_auroc(-id_scores, -ood_scores, 0.05, "mc_gamma0") < 0.5  # reversed orientation


def test_conformal_auroc_drop_at_the_papers_size():
    """Binormal confidences with AUROC ≈ 0.877, n_cal = 9,000, 20,000 OOD points: the γ = 0 drop is
    about one AUROC point at δ = 0.01 and smaller at 0.05 (the paper's Table 1/3: MSP, CIFAR-10 near,
    87.68 → 86.56 at δ = 0.01 and → 86.76 at δ = 0.05)."""
    id_scores, ood_scores = gaussian_scores(math.sqrt(2) * stats.norm.ppf(0.877), 9000, 20000, seed=9)
    classical = auroc(*pooled(id_scores, ood_scores))
    drops = [100 * (classical - cf.conformal_auroc(id_scores, ood_scores, d, "mc_gamma0")) for d in (0.01, 0.05)]
    assert 0.8 < drops[0] < 1.4 and 0.6 < drops[1] < drops[0]


@pytest.mark.parametrize("tpr", [0.95, 0.99])
def test_conformal_fpr_at_tpr_corrects_the_csfbench_fpr_at_tpr(tpr):
    id_scores, ood_scores = gaussian_scores(2.0, 1000, 700, seed=10)
    classical = fpr_at_tpr(*pooled(id_scores, ood_scores), tpr, positive="failure")
    # independently: the largest confidence threshold flagging >= β of OOD, then the ID fraction flagged
    threshold = np.sort(ood_scores)[math.ceil(tpr * ood_scores.size) - 1]
    assert classical == pytest.approx(np.mean(id_scores <= threshold), abs=1e-12)
    for method in ("dkwm", "mc_gamma0"):
        conformal = cf.conformal_fpr_at_tpr(id_scores, ood_scores, 0.05, method, tpr)
        k = round(classical * id_scores.size)
        assert conformal == cf.correction_band(id_scores.size, 0.05, method)[k] > classical


# ---------------------------------------------------------------- the paper's Tables 4 and 5

COLUMNS = ("CIFAR-10 near", "CIFAR-10 far", "CIFAR-100 near", "CIFAR-100 far", "ImageNet-200 near", "ImageNet-200 far")
# FPR@TPR95 (%), per column: classical ("marg."), conformal (Monte Carlo correction), as printed
TABLE_4 = """
OpenMax    46.77  48.98  29.48  31.48  55.57  57.80  54.77  57.00  63.32  65.75  32.29  35.35
MSP        53.57  55.80  31.44  33.45  54.73  56.96  59.08  61.31  55.25  57.69  35.44  38.29
TempScale  56.85  59.08  33.36  35.38  54.77  56.99  58.24  60.47  55.03  57.50  34.11  37.06
ODIN       84.55  86.78  60.90  62.97  58.44  60.67  57.75  59.98  66.38  68.80  33.66  36.75
MDS        46.22  48.44  30.30  32.30  82.75  84.98  70.46  72.68  79.34  81.52  61.26  63.81
MDSEns     92.06  94.29  61.09  62.87  95.84  98.07  66.97  68.85  91.69  93.80  80.43  82.89
Gram       93.52  95.75  69.29  71.48  92.48  94.71  63.10  65.20  85.43  87.63  84.95  87.44
EBO        67.54  69.77  40.55  42.58  55.49  57.72  56.41  58.64  59.46  61.93  34.00  37.07
GradNorm   95.37  97.60  89.34  91.52  86.13  88.36  82.79  85.02  83.07  85.33  66.78  69.67
ReAct      71.56  73.78  42.43  44.52  56.74  58.97  56.32  58.55  65.37  67.80  27.21  30.28
MLS        67.54  69.77  40.53  42.56  55.48  57.71  56.53  58.76  58.94  61.44  33.59  36.68
KLM        86.41  88.63  76.42  78.65  79.52  81.75  70.16  72.39  69.42  71.91  39.57  42.56
VIM        48.07  50.29  25.77  27.65  62.96  65.19  49.72  51.95  59.91  62.32  26.86  29.81
KNN        34.54  36.65  23.88  25.77  61.32  63.54  54.04  56.27  60.42  62.90  26.49  29.66
DICE       80.15  82.38  53.93  56.06  58.10  60.33  55.95  58.17  60.98  63.46  35.93  39.04
RankFeat   67.38  69.61  68.24  70.47  79.94  82.17  68.89  71.11  92.02  93.91  98.48  99.58
ASH        89.03  91.26  76.66  78.89  66.14  68.37  62.67  64.89  65.95  68.44  26.26  29.46
SHE        84.49  86.72  63.26  65.41  59.32  61.54  62.74  64.97  65.92  68.31  41.50  44.62
"""
TABLE_5 = """
OpenMax    46.77  48.58  29.48  31.11  55.57  57.39  54.77  56.59  63.32  65.14  32.29  33.98
MSP        53.57  55.39  31.44  33.08  54.73  56.55  59.08  60.90  55.25  57.06  35.44  37.16
TempScale  56.85  58.67  33.36  35.01  54.77  56.59  58.24  60.06  55.03  56.85  34.11  35.80
ODIN       84.55  86.37  60.90  62.59  58.44  60.26  57.75  59.57  66.38  68.20  33.66  35.34
MDS        46.22  48.03  30.30  31.94  82.75  84.57  70.46  72.28  79.34  81.16  61.26  63.08
MDSEns     92.06  93.88  61.09  62.54  95.84  97.66  66.97  68.50  91.69  93.51  80.43  82.25
Gram       93.52  95.34  69.29  71.08  92.48  94.30  63.10  64.81  85.43  87.25  84.95  86.77
EBO        67.54  69.36  40.55  42.21  55.49  57.31  56.41  58.23  59.46  61.28  34.00  35.70
GradNorm   95.37  97.19  89.34  91.16  86.13  87.95  82.79  84.61  83.07  84.89  66.78  68.60
ReAct      71.56  73.38  42.43  44.14  56.74  58.56  56.32  58.14  65.37  67.19  27.21  28.81
MLS        67.54  69.36  40.53  42.19  55.48  57.30  56.53  58.35  58.94  60.76  33.59  35.28
KLM        86.41  88.23  76.42  78.24  79.52  81.34  70.16  71.98  69.42  71.24  39.57  41.30
VIM        48.07  49.88  25.77  27.30  62.96  64.78  49.72  51.54  59.91  61.72  26.86  28.46
KNN        34.54  36.27  23.88  25.42  61.32  63.14  54.04  55.86  60.42  62.23  26.49  28.09
DICE       80.15  81.97  53.93  55.67  58.10  59.92  55.95  57.77  60.98  62.80  35.93  37.66
RankFeat   67.38  69.20  68.24  70.06  79.94  81.76  68.89  70.71  92.02  93.84  98.48  99.55
ASH        89.03  90.85  76.66  78.48  66.14  67.96  62.67  64.49  65.95  67.77  26.26  27.85
SHE        84.49  86.31  63.26  65.02  59.32  61.14  62.74  64.56  65.92  67.74  41.50  43.27
"""
N_CAL = 9000  # the calibration size the printed corrections imply (about 9,000 ID points)


def table_cells(table: str, delta: float, columns: tuple[str, ...]) -> list:
    cells = []
    for line in table.strip().splitlines():
        method, *values = line.split()
        pairs = np.array(values, dtype=float).reshape(-1, 2)
        cells += [pytest.param(delta, classical, conformal, id=f"delta={delta}-{method}-{column}")
                  for column, (classical, conformal) in zip(COLUMNS, pairs) if column in columns]
    return cells


def recomputed(classical: float, delta: float) -> float:
    return 100 * float(cf.correct_fpr(classical / 100, N_CAL, delta, "mc_gamma0"))


# The near columns (the γ = 0 hybrid reproduces every one but ImageNet-200 at δ = 0.01, whose corrections are
# larger: a partially searched γ, as the docs explain) are reproduction targets of csfbench.reproduction, checked by
# tests/unit/reproduction with every data-free target.


# Far groups average four or five OOD sets of widely different FPRs; the paper corrects each set and
# averages, and the correction h is concave, so the printed mean(h(FPR_d)) <= h(mean FPR_d) (Jensen):
# the printed value must not exceed the recomputed one by more than the 0.02-point rounding.
FAR_4 = ("CIFAR-10 far", "CIFAR-100 far")
FAR_5 = ("CIFAR-10 far", "CIFAR-100 far", "ImageNet-200 far")


@pytest.mark.parametrize("delta, classical, conformal",
                         table_cells(TABLE_4, 0.01, FAR_4) + table_cells(TABLE_5, 0.05, FAR_5))
def test_tables_4_5_far_columns_are_at_most_the_gamma0_correction_of_their_mean(delta, classical, conformal):
    assert conformal <= recomputed(classical, delta) + 0.02
    assert conformal > classical
