"""Metrics: hand-computed risk–coverage values, brute-force references, schemes, errors.

The AURC/AUGRC protocol is that of Claros-Olivares & Brockmeier, *A Systematic Analysis of
Out-of-Distribution Detection Under Representation and Training Paradigm Shifts* (preprint; no year or
arXiv id in its text), §4.1, computed with the tie-aware risk–coverage curves of FD-Shifts (Jaeger et
al., ICLR 2023) and the AUGRC of Traub et al. (NeurIPS 2024)."""
import logging
import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from csfbench import metrics as m
from csfbench.metrics import selective

# hand-computed risk–coverage values (×1000): confidences, residuals, AURC, AUGRC; B has a tie
ORACLE = {
    "A": ([0.9, 0.8, 0.7, 0.6, 0.5], [0, 0, 1, 0, 1], 156.666667, 120.0),
    "B": ([0.9, 0.8, 0.8, 0.6, 0.5], [0, 1, 0, 0, 1], 190.0, 140.0),
    "C": ([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1], 854.166667, 375.0),
    "D": ([0.4, 0.3, 0.2, 0.1], [0, 0, 1, 1], 145.833333, 125.0),
}


def brute_force_area(conf, res, kind):
    """Plain-loop transcription of FD-Shifts' tie-aware risk–coverage points (a point only where the
    confidence changes), then the trapezoid rule."""
    order = sorted(range(len(conf)), key=lambda i: conf[i])
    c = [float(conf[i]) for i in order]
    r = [float(res[i]) for i in order]
    n = len(c)
    cov, err = n, sum(r)
    points = [(1.0, err / n)]
    for i in range(n - 1):
        cov -= 1
        err -= r[i]
        if c[i] != c[i + 1]:
            points.append((cov / n, err / cov if kind == "selective" else err / n))
    points.append((0.0, points[-1][1] if kind == "selective" else 0.0))
    return sum((x0 - x1) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in zip(points, points[1:]))


def brute_force_auroc(conf, res, weight=None):
    """Weighted Mann–Whitney count over (success, failure) pairs with ties counting ½."""
    w = np.ones(len(conf)) if weight is None else np.asarray(weight, float)
    num = den = 0.0
    for i in np.flatnonzero(np.asarray(res) == 0):
        for j in np.flatnonzero(np.asarray(res) == 1):
            h = 1.0 if conf[i] > conf[j] else 0.5 if conf[i] == conf[j] else 0.0
            num += w[i] * w[j] * h
            den += w[i] * w[j]
    return num / den


def random_tied_case(rng, n, levels=7, continuous=False):
    conf = rng.integers(0, levels, n) / levels
    res = rng.random(n) if continuous else (rng.random(n) < rng.uniform(0.1, 0.9)).astype(float)
    return conf, res


# ---------------------------------------------------------------- risk-coverage


@pytest.mark.parametrize("case", sorted(ORACLE))
def test_oracle_cases(case):
    conf, res, want_aurc, want_augrc = ORACLE[case]
    assert m.aurc(conf, res) * 1000 == pytest.approx(want_aurc, abs=1e-6)
    assert m.augrc(conf, res) * 1000 == pytest.approx(want_augrc, abs=1e-6)


def test_rc_curve_points_of_tie_case():
    conf, res = ORACLE["B"][:2]
    cov, sel = m.rc_curve(conf, res, "selective")
    np.testing.assert_allclose(cov, [1.0, 0.8, 0.6, 0.2, 0.0])  # the 0.8 plateau leaves at once
    np.testing.assert_allclose(sel, [0.4, 0.25, 1 / 3, 0.0, 0.0])
    cov_g, gen = m.rc_curve(conf, res, "generalized")
    np.testing.assert_allclose(cov_g, cov)
    np.testing.assert_allclose(gen, [0.4, 0.2, 0.2, 0.0, 0.0])
    with pytest.raises(ValueError, match="kind"):
        m.rc_curve(conf, res, "other")


def test_rc_curve_final_point_holds_last_selective_risk():
    cov, sel = m.rc_curve([0.1, 0.2, 0.3], [0, 0, 1], "selective")
    assert cov[0] == 1.0 and cov[-1] == 0.0
    assert sel[-1] == sel[-2] == 1.0


def test_anchor_values_n100_alternating():
    n = 100
    correct = np.arange(n) % 2  # FD-Shifts' "some_correct": sample 0 is a failure
    res = 1 - correct
    assert m.aurc(np.full(n, 0.37), res) * 1000 == pytest.approx(500.0)
    assert m.augrc(np.full(n, 0.37), res) * 1000 == pytest.approx(250.0)
    two_plateaus = np.arange(n) % 2  # perfectly ranked: every success above every failure
    assert m.aurc(two_plateaus, res) * 1000 == pytest.approx(125.0)
    no_ties = np.arange(-(n // 2), n // 2)  # FD-Shifts' "unnormalized_confid"
    assert round(m.aurc(no_ties, res) * 1000, 2) == 482.81
    assert m.aurc(no_ties, res) == pytest.approx(brute_force_area(no_ties, res, "selective"), abs=1e-12)


def test_all_equal_scores_give_error_rate():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(1, 300))
        res = (rng.random(n) < rng.random()).astype(float)
        conf = np.full(n, rng.normal())
        assert m.aurc(conf, res) == pytest.approx(res.mean(), abs=1e-12)
        assert m.augrc(conf, res) == pytest.approx(res.mean() / 2, abs=1e-12)


def test_all_correct_and_all_wrong():
    conf = np.random.default_rng(2).random(50)
    assert m.aurc(conf, np.zeros(50)) == 0.0
    assert m.augrc(conf, np.zeros(50)) == 0.0
    assert m.aurc(conf, np.ones(50)) == pytest.approx(1.0, abs=1e-12)
    assert m.augrc(conf, np.ones(50)) == pytest.approx(0.5, abs=1e-12)
    assert m.aurc([0.3], [1]) == 1.0 and m.augrc([0.3], [1]) == 0.5


@pytest.mark.parametrize("continuous", [False, True])
def test_matches_brute_force_loop(continuous):
    rng = np.random.default_rng(3)
    for _ in range(200):
        conf, res = random_tied_case(rng, int(rng.integers(1, 60)), int(rng.integers(1, 10)), continuous)
        assert m.aurc(conf, res) == pytest.approx(brute_force_area(conf, res, "selective"), abs=1e-12)
        assert m.augrc(conf, res) == pytest.approx(brute_force_area(conf, res, "generalized"), abs=1e-12)


def test_invariant_to_order_inside_ties():
    rng = np.random.default_rng(4)
    for _ in range(100):
        conf, res = random_tied_case(rng, int(rng.integers(2, 80)), int(rng.integers(1, 6)))
        want = (m.aurc(conf, res), m.augrc(conf, res))
        for _ in range(5):
            perm = rng.permutation(conf.size)
            shuffled_res = res.copy()
            for level in np.unique(conf):  # permute residuals only among tied samples
                idx = np.flatnonzero(conf == level)
                shuffled_res[idx] = res[rng.permutation(idx)]
            got = (m.aurc(conf[perm], shuffled_res[perm]), m.augrc(conf[perm], shuffled_res[perm]))
            assert got == pytest.approx(want, abs=1e-12)


def test_augrc_auroc_identity_with_ties():
    rng = np.random.default_rng(5)
    for _ in range(100):
        conf, res = random_tied_case(rng, int(rng.integers(2, 200)), int(rng.integers(2, 12)))
        if res.min() == res.max():
            continue
        acc = 1 - res.mean()
        want = (1 - m.auroc(conf, res)) * acc * (1 - acc) + 0.5 * (1 - acc) ** 2
        assert m.augrc(conf, res) == pytest.approx(want, abs=1e-12)


def test_optima():
    rng = np.random.default_rng(6)
    for _ in range(30):
        n = int(rng.integers(1, 200))
        res = (rng.random(n) < rng.random()).astype(float)
        f = res.mean()
        for perfect in (-res, -res - np.arange(n) * 1e-6):  # two plateaus, and distinct scores
            assert m.augrc(perfect, res) == pytest.approx(f * f / 2, abs=1e-12)
            assert m.e_augrc(perfect, res) == pytest.approx(0.0, abs=1e-12)
        assert m.augrc_optimal(res) == pytest.approx(f * f / 2)
        want = 1.0 if f == 1 else f + (1 - f) * math.log(1 - f)
        assert m.aurc_optimal(res) == pytest.approx(want, abs=1e-12)
    # tie caveat: a perfectly ranked pair of plateaus scores below the analytic optimum
    res = np.arange(100) % 2
    assert m.aurc_optimal(res) * 1000 == pytest.approx(153.426, abs=1e-3)
    assert m.e_aurc(-res, res) * 1000 == pytest.approx(125.0 - 153.426, abs=1e-3)


def test_optimum_of_continuous_residuals_sorts_them():
    res = np.array([0.2, 0.9, 0.0, 0.5])
    perfect = np.array([3.0, 1.0, 4.0, 2.0])  # distinct scores, lowest residual most confident
    assert m.aurc_optimal(res) == pytest.approx(m.aurc(perfect, res))
    assert m.augrc_optimal(res) == pytest.approx(m.augrc(perfect, res))
    assert m.e_aurc(perfect, res) == pytest.approx(0.0, abs=1e-15)


def test_rc_values_stay_in_range():
    rng = np.random.default_rng(7)
    for _ in range(100):
        conf, res = random_tied_case(rng, int(rng.integers(1, 50)), int(rng.integers(1, 8)), rng.random() < 0.5)
        assert 0.0 <= m.aurc(conf, res) <= 1.0
        assert 0.0 <= m.augrc(conf, res) <= 0.5
        assert -1e-12 <= m.e_augrc(conf, res) <= 0.5


# ---------------------------------------------------------------- classification


def test_auroc_matches_sklearn_and_pairwise_count():
    rng = np.random.default_rng(8)
    for _ in range(30):
        conf, res = random_tied_case(rng, int(rng.integers(4, 60)), int(rng.integers(2, 6)))
        res[:2] = [0, 1]
        w = rng.uniform(0.1, 3.0, conf.size)
        assert m.auroc(conf, res) == pytest.approx(roc_auc_score(res == 0, conf), abs=1e-12)
        assert m.auroc(conf, res) == pytest.approx(brute_force_auroc(conf, res), abs=1e-12)
        assert m.auroc(conf, res, w) == pytest.approx(roc_auc_score(res == 0, conf, sample_weight=w), abs=1e-12)
        assert m.auroc(conf, res, w) == pytest.approx(brute_force_auroc(conf, res, w), abs=1e-12)


def test_auroc_hand_values():
    assert m.auroc([0.9, 0.1], [0, 1]) == 1.0
    assert m.auroc([0.1, 0.9], [0, 1]) == 0.0
    assert m.auroc([0.5, 0.5], [0, 1]) == 0.5  # a tie counts ½
    # weights: the success (w=1) beats failure a (w=3) and loses to failure b (w=1): 3 / 4
    assert m.auroc([0.5, 0.2, 0.8], [0, 1, 1], sample_weight=[1, 3, 1]) == pytest.approx(0.75)


def test_fpr_at_tpr_both_conventions():
    conf = [8, 7, 6, 5, 4, 3, 2, 1]
    res = [0, 1, 0, 0, 0, 1, 1, 1]  # successes 8 6 5 4, failures 7 3 2 1
    # success positive: accepting all 4 successes (threshold 4) also accepts failure 7 -> 1/4
    assert m.fpr_at_tpr(conf, res, 0.95, positive="success") == 0.25
    assert m.fpr_at_tpr(conf, res, 0.75, positive="success") == 0.25  # threshold 5
    assert m.fpr_at_tpr(conf, res, 0.5, positive="success") == 0.25  # accepting 8 7 6
    # failure positive: flagging all 4 failures (confidence <= 7) also flags successes 6 5 4 -> 3/4
    assert m.fpr_at_tpr(conf, res, 0.95, positive="failure") == 0.75
    assert m.fpr_at_tpr(conf, res, 0.75, positive="failure") == 0.0  # flag 1 2 3
    assert m.fpr_at_tpr(conf, res, 0.25, positive="success") == 0.0  # accept 8 only
    with pytest.raises(ValueError, match="positive"):
        m.fpr_at_tpr(conf, res, positive="ood")
    with pytest.raises(ValueError, match="tpr"):
        m.fpr_at_tpr(conf, res, tpr=0.0)


def test_fpr_at_tpr_ties_are_taken_whole():
    # reaching every success needs the 2-plateau, which carries one of the two failures along
    assert m.fpr_at_tpr([3, 2, 2, 1], [0, 0, 1, 1], 0.95) == 0.5
    assert m.fpr_at_tpr([3, 2, 2, 1], [0, 0, 1, 1], 0.5) == 0.0
    # exactly 19 of 20 successes reaches 0.95 despite rounding
    conf = np.concatenate([np.arange(20, 0, -1), [1.5]])
    res = np.concatenate([np.zeros(20), [1]])
    assert m.fpr_at_tpr(conf, res, 0.95) == 0.0


def test_aupr_matches_sklearn():
    rng = np.random.default_rng(9)
    for _ in range(30):
        conf, res = random_tied_case(rng, int(rng.integers(4, 80)), int(rng.integers(2, 9)))
        res[:2] = [0, 1]
        assert m.aupr_in(conf, res) == pytest.approx(average_precision_score(res == 0, conf), abs=1e-12)
        assert m.aupr_out(conf, res) == pytest.approx(average_precision_score(res == 1, -conf), abs=1e-12)
    assert m.aupr_in([0.9, 0.1], [0, 1]) == 1.0 and m.aupr_out([0.9, 0.1], [0, 1]) == 1.0


def test_ece_mce_hand_cases():
    # 2 bins: [0, .5) holds .1 .15 (acc .5, conf .125); [.5, 1] holds .6 .9 (acc 1, conf .75)
    conf, res = [0.1, 0.15, 0.6, 0.9], [0, 1, 0, 0]
    assert m.ece(conf, res, n_bins=2) == pytest.approx(0.5 * 0.375 + 0.5 * 0.25)
    assert m.mce(conf, res, n_bins=2) == pytest.approx(0.375)
    # 20 bins: .02 -> bin 0 (acc 0), .07 -> bin 1 (acc 1), .97 and 1.0 -> bin 19 (acc 1, conf .985)
    conf, res = [0.02, 0.07, 0.97, 1.0], [1, 0, 0, 0]
    assert m.ece(conf, res) == pytest.approx(0.25 * 0.02 + 0.25 * 0.93 + 0.5 * 0.015)
    assert m.mce(conf, res) == pytest.approx(0.93)
    # clipping to [0, 1] and a continuous residual (accuracy = 1 - residual)
    assert m.ece([1.7, -0.3], [0.25, 1.0], n_bins=2) == pytest.approx(0.5 * 0.25 + 0.5 * 0.0)
    with pytest.raises(ValueError, match="n_bins"):
        m.ece(conf, res, n_bins=0)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("fn", [
    m.aurc, m.augrc, m.e_aurc, m.auroc, m.fpr_at_tpr, m.aupr_in, m.ece,
    lambda c, r: m.aurc(c, r, convention="torch-uncertainty"),
    lambda c, r: selective.risk_at_coverage(c, r, 0.5),
    lambda c, r: selective.coverage_at_risk(c, r, 0.1),
    lambda c, r: selective.selective_guaranteed_risk(c, r, 0.1, 0.1),
    lambda c, r: selective.scod_aurc(c, r, np.zeros(len(r), bool)),
])
def test_bad_inputs_raise(fn):
    with pytest.raises(ValueError, match=r"confidence contains 2 non-finite"):
        fn([0.1, np.nan, np.inf, 0.4], [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"residual contains 1 non-finite"):
        fn([0.1, 0.2, 0.3, 0.4], [0, 1, np.nan, 1])
    with pytest.raises(ValueError, match=r"confidence has 3 values, residual has 4"):
        fn([0.1, 0.2, 0.3], [0, 1, 0, 1])
    with pytest.raises(ValueError, match="empty evaluation set"):
        fn([], [])
    with pytest.raises(ValueError, match=r"residual must lie in \[0, 1\]; 2 value"):
        fn([0.1, 0.2, 0.3, 0.4], [0, 1.5, -1, 1])
    with pytest.raises(m.MetricInputError, match="1-D"):
        fn(np.zeros((2, 2)), np.zeros((2, 2)))


def test_optimum_bad_input():
    with pytest.raises(ValueError, match="empty evaluation set"):
        m.aurc_optimal([])
    with pytest.raises(ValueError, match="residual contains 1 non-finite"):
        m.augrc_optimal([0, np.nan])


@pytest.mark.parametrize("fn", [m.auroc, m.fpr_at_tpr, m.aupr_in, m.aupr_out])
def test_classification_metrics_need_binary_residual(fn):
    with pytest.raises(ValueError, match="binary residual"):
        fn([0.1, 0.2, 0.3], [0, 0.5, 1])


@pytest.mark.parametrize("fn", [m.auroc, m.fpr_at_tpr, m.aupr_in, m.aupr_out])
def test_single_class_is_undefined(fn):
    with pytest.raises(m.UndefinedMetricError, match="no failures"):
        fn([0.1, 0.2, 0.3], [0, 0, 0])
    with pytest.raises(m.UndefinedMetricError, match="no successes"):
        fn([0.1, 0.2, 0.3], [1, 1, 1])
    assert issubclass(m.UndefinedMetricError, ValueError)


def test_auroc_weight_checks():
    with pytest.raises(ValueError, match="sample_weight has 2 values, confidence has 3"):
        m.auroc([0.1, 0.2, 0.3], [0, 1, 0], sample_weight=[1, 1])
    with pytest.raises(ValueError, match="non-negative"):
        m.auroc([0.1, 0.2, 0.3], [0, 1, 0], sample_weight=[1, -1, 1])
    with pytest.raises(ValueError, match="sample_weight contains 1 non-finite"):
        m.auroc([0.1, 0.2, 0.3], [0, 1, 0], sample_weight=[1, np.nan, 1])
    with pytest.raises(m.UndefinedMetricError, match="no failures"):  # the only failure weighs 0
        m.auroc([0.1, 0.2, 0.3], [0, 1, 0], sample_weight=[1, 0, 1])


# ---------------------------------------------------------------- schemes

ID_CONF, ID_CORRECT, SHIFT_CONF = [0.9, 0.8, 0.3], [True, True, False], [0.5, 0.1]


def test_scheme_misclf():
    d = m.build_scheme("misclf", ID_CONF, ID_CORRECT)
    np.testing.assert_array_equal(d.confidence, ID_CONF)
    np.testing.assert_array_equal(d.residual, [0, 0, 1])
    assert (d.n_pos, d.n_neg, d.weight, d.scheme) == (2, 1, None, "misclf")
    with pytest.raises(ValueError, match="shift_confidence must be None"):
        m.build_scheme("misclf", ID_CONF, ID_CORRECT, SHIFT_CONF)


def test_scheme_correct_vs_ood_drops_id_errors():
    d = m.build_scheme("correct_vs_ood", ID_CONF, [1, 1, 0], SHIFT_CONF)
    np.testing.assert_array_equal(d.confidence, [0.9, 0.8, 0.5, 0.1])
    np.testing.assert_array_equal(d.residual, [0, 0, 1, 1])
    assert (d.n_pos, d.n_neg, d.weight) == (2, 2, None)


def test_scheme_newclass_counts_all_id_as_success():
    d = m.build_scheme("newclass", ID_CONF, ID_CORRECT, SHIFT_CONF)
    np.testing.assert_array_equal(d.confidence, [0.9, 0.8, 0.3, 0.5, 0.1])
    np.testing.assert_array_equal(d.residual, [0, 0, 0, 1, 1])
    assert (d.n_pos, d.n_neg, d.weight) == (3, 2, None)


def test_scheme_failure_weights_each_set_equally():
    d = m.build_scheme("failure", ID_CONF, ID_CORRECT, SHIFT_CONF)
    np.testing.assert_array_equal(d.confidence, [0.9, 0.8, 0.3, 0.5, 0.1])
    np.testing.assert_array_equal(d.residual, [0, 0, 1, 1, 1])
    np.testing.assert_allclose(d.weight, [1 / 3] * 3 + [1 / 2] * 2)
    assert d.weight[:3].sum() == pytest.approx(1.0) and d.weight[3:].sum() == pytest.approx(1.0)
    assert (d.n_pos, d.n_neg) == (2, 3)
    with pytest.raises(ValueError):
        d.confidence[0] = 0.0  # read-only
    # AUROC uses the weights: pairs (success, ID error) weigh 1/9, (success, shifted) 1/6 each
    got = m.evaluate(d, ("auroc", "aurc"))
    assert got["auroc"] == pytest.approx(m.auroc(d.confidence, d.residual, d.weight))
    assert got["auroc"] == pytest.approx(brute_force_auroc(d.confidence, d.residual, d.weight))
    assert got["aurc"] == pytest.approx(m.aurc(d.confidence, d.residual))  # RC metrics unweighted


def test_scheme_input_errors():
    with pytest.raises(ValueError, match="unknown scheme"):
        m.build_scheme("ood", ID_CONF, ID_CORRECT, SHIFT_CONF)
    with pytest.raises(ValueError, match="needs shift_confidence"):
        m.build_scheme("newclass", ID_CONF, ID_CORRECT)
    with pytest.raises(ValueError, match="shifted set is empty"):
        m.build_scheme("failure", ID_CONF, ID_CORRECT, [])
    with pytest.raises(ValueError, match="id_confidence has 3 values, id_correct has 2"):
        m.build_scheme("misclf", ID_CONF, [1, 0])
    with pytest.raises(ValueError, match="id_correct must hold only 0/1"):
        m.build_scheme("misclf", ID_CONF, [1, 2, 0])
    with pytest.raises(ValueError, match="shift_confidence contains 1 non-finite"):
        m.build_scheme("newclass", ID_CONF, ID_CORRECT, [0.1, np.nan])
    with pytest.raises(ValueError, match="id_confidence contains 1 non-finite"):
        m.build_scheme("misclf", [0.1, np.inf, 0.2], ID_CORRECT)
    with pytest.raises(ValueError, match="empty evaluation set"):
        m.build_scheme("misclf", [], [])
    with pytest.raises(ValueError, match="ID set is empty"):
        m.build_scheme("failure", [], [], SHIFT_CONF)


# ---------------------------------------------------------------- evaluate


def test_evaluate_all_metrics():
    rng = np.random.default_rng(10)
    conf = rng.random(200)
    correct = rng.random(200) < conf
    d = m.build_scheme("misclf", conf, correct)
    got = m.evaluate(d)
    assert set(got) == set(m.DEFAULT_METRICS)
    res = 1.0 - correct
    assert got["aurc"] == m.aurc(conf, res) and got["e_augrc"] == m.e_augrc(conf, res)
    assert got["fpr95"] == m.fpr_at_tpr(conf, res, 0.95, "success")
    assert got["fpr95_failure_positive"] == m.fpr_at_tpr(conf, res, 0.95, "failure")
    assert got["fpr99"] == m.fpr_at_tpr(conf, res, 0.99, "success")
    assert got["fpr99_failure_positive"] == m.fpr_at_tpr(conf, res, 0.99, "failure")
    assert got["fpr99"] >= got["fpr95"] and got["fpr99_failure_positive"] >= got["fpr95_failure_positive"]
    assert got["ece"] == m.ece(conf, res) and got["mce"] == m.mce(conf, res)
    assert all(0.0 <= v <= 1.0 for k, v in got.items() if k != "e_aurc")


def test_evaluate_skips_calibration_for_unbounded_scores():
    d = m.build_scheme("newclass", [2.0, -1.0], [1, 0], [-3.0])
    assert set(m.evaluate(d)) == set(m.DEFAULT_METRICS) - {"ece", "mce"}


def test_evaluate_omits_undefined_metrics_with_warning(caplog):
    d = m.build_scheme("misclf", [0.9, 0.8, 0.7], [1, 1, 1])
    with caplog.at_level(logging.WARNING, logger="csfbench.metrics"):
        got = m.evaluate(d)
    assert set(got) == {"aurc", "augrc", "e_aurc", "e_augrc", "ece", "mce"}
    assert got["aurc"] == 0.0 and got["augrc"] == 0.0
    for name in ("auroc", "fpr95", "fpr95_failure_positive", "fpr99", "fpr99_failure_positive", "aupr_in", "aupr_out"):
        assert any(name in r.getMessage() and "no failures" in r.getMessage() for r in caplog.records)
    wrong = m.evaluate(m.build_scheme("correct_vs_ood", [0.9], [0], [0.4, 0.2]))  # only the shifted set remains
    assert set(wrong) == {"aurc", "augrc", "e_aurc", "e_augrc", "ece", "mce"}
    assert wrong["aurc"] == pytest.approx(1.0) and wrong["augrc"] == pytest.approx(0.5)


def test_evaluate_unknown_metric():
    with pytest.raises(ValueError, match="unknown metric"):
        m.evaluate(m.build_scheme("misclf", [0.1, 0.2], [0, 1]), ("aurc", "auc"))


# ---------------------------------------------------------------- schemes of Yang et al. (ICLR 2024)


def test_scheme_order_keeps_the_first_four():
    assert m.SCHEMES[:4] == ("misclf", "correct_vs_ood", "newclass", "failure")
    assert m.SCHEMES[4:] == ("incorrect_vs_ood", "failure_pooled", "shiftdetect")


def test_scheme_incorrect_vs_ood_keeps_id_errors_as_positives():
    d = m.build_scheme("incorrect_vs_ood", [0.9, 0.8, 0.3, 0.6], [1, 1, 0, 0], SHIFT_CONF)
    np.testing.assert_array_equal(d.confidence, [0.3, 0.6, 0.5, 0.1])
    np.testing.assert_array_equal(d.residual, [0, 0, 1, 1])
    assert (d.n_pos, d.n_neg, d.weight) == (2, 2, None)
    # pairs (0.3 | 0.5, 0.1) and (0.6 | 0.5, 0.1): 3 of 4 won
    assert m.evaluate(d, ("auroc",))["auroc"] == pytest.approx(0.75)


def test_scheme_failure_pooled_is_failure_without_weights():
    rng = np.random.default_rng(3)
    conf, correct, shift = rng.integers(0, 6, 40) / 6, rng.random(40) < 0.6, rng.integers(0, 6, 15) / 6
    pooled = m.build_scheme("failure_pooled", conf, correct, shift)
    weighted = m.build_scheme("failure", conf, correct, shift)
    np.testing.assert_array_equal(pooled.confidence, weighted.confidence)
    np.testing.assert_array_equal(pooled.residual, weighted.residual)
    assert pooled.weight is None and (pooled.n_pos, pooled.n_neg) == (weighted.n_pos, weighted.n_neg)
    got = m.evaluate(pooled, ("auroc",))["auroc"]
    assert got == pytest.approx(brute_force_auroc(pooled.confidence, pooled.residual))
    assert got == pytest.approx(roc_auc_score(1 - pooled.residual, pooled.confidence))


def test_scheme_shiftdetect_builds_the_newclass_set_and_needs_no_correctness():
    d = m.build_scheme("shiftdetect", ID_CONF, ID_CORRECT, SHIFT_CONF)
    n = m.build_scheme("newclass", ID_CONF, ID_CORRECT, SHIFT_CONF)
    np.testing.assert_array_equal(d.confidence, n.confidence)
    np.testing.assert_array_equal(d.residual, n.residual)
    assert (d.n_pos, d.n_neg, d.weight, d.scheme) == (3, 2, None, "shiftdetect")
    free = m.build_scheme("shiftdetect", ID_CONF, None, SHIFT_CONF)
    np.testing.assert_array_equal(free.residual, d.residual)
    with pytest.raises(ValueError, match="needs shift_confidence"):
        m.build_scheme("shiftdetect", ID_CONF, None)
    with pytest.raises(ValueError):
        m.build_scheme("newclass", ID_CONF, None, SHIFT_CONF)  # correctness still required there


def test_new_schemes_input_errors():
    with pytest.raises(ValueError, match="shifted set is empty"):
        m.build_scheme("incorrect_vs_ood", ID_CONF, ID_CORRECT, [])
    with pytest.raises(ValueError, match="needs shift_confidence"):
        m.build_scheme("failure_pooled", ID_CONF, ID_CORRECT)
    with pytest.raises(ValueError, match="id_correct must hold only 0/1"):
        m.build_scheme("incorrect_vs_ood", ID_CONF, [1, 2, 0], SHIFT_CONF)
