"""Achievable AURC / e-AURC: hand cases, ties, orientation, properties, bad input, golden references.

Peer: FD-Shifts (IML-DKFZ/fd-shifts) at commit c4467aec134e99691359da209f811d91283fc1e3,
``fd_shifts/analysis/rc_stats.py`` (``aurc_achievable``, ``eaurc_achievable``, ``dominant_point_mask``,
``evaluate_auc`` with ``achievable=True, interpolation="non-linear"``) and
``fd_shifts/analysis/rc_stats_utils.py`` (``selective_risk_stats``).
"""
import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull
from sklearn.metrics import roc_curve

from csfbench.metrics import MetricInputError
from csfbench.metrics.achievable import aurc_achievable, e_aurc_achievable
from csfbench.metrics.risk_coverage import aurc, aurc_optimal


def fdshifts_aurc_achievable(conf, res, achievable=True):
    """Plain transcription of FD-Shifts' steps (commit c4467aec134e99691359da209f811d91283fc1e3):
    the RC points of rc_stats_utils.py ``selective_risk_stats``, the mask of rc_stats.py
    ``dominant_point_mask`` (ROC convex hull with the extra point (2, -1), via scikit-learn's
    ``roc_curve`` and scipy's ``ConvexHull`` as FD-Shifts calls them), and the non-linear integration of
    rc_stats.py ``evaluate_auc`` over coverage [0, 1] (unscaled).  ``achievable=False`` keeps every
    point (FD-Shifts' ``evaluate_auc(risk="selective-risk", interpolation="non-linear")``)."""
    conf, res = np.asarray(conf, float), np.asarray(res, float)
    n = len(res)
    order = sorted(range(n), key=lambda i: conf[i])
    c_sorted = [conf[i] for i in order]
    cov, error = n, sum(res)
    coverages, risks = [1.0], [error / cov]
    for i in range(n - 1):
        cov -= 1
        error -= res[order[i]]
        if c_sorted[i] != c_sorted[i + 1]:
            coverages.append(cov / n)
            risks.append(error / cov)
    coverages.append(0.0)
    risks.append(risks[-1])
    m = len(coverages)
    binary = all(r in (0.0, 1.0) for r in res)
    if not binary or not achievable:
        mask = [True] * (m - 1) + [False]
    elif sum(res) in (0, n):
        mask = [True] + [False] * (m - 1)
    elif m == 2:
        mask = [True, False]
    else:
        fpr, tpr, _ = roc_curve(1 - res, conf, drop_intermediate=False)
        points = np.column_stack((np.append(fpr, 2.0), np.append(tpr, -1.0)))
        vertices = [int(v) for v in ConvexHull(points).vertices if v not in (0, m)]
        roc_mask = [j in vertices for j in range(m)]
        mask = roc_mask[::-1]  # ROC runs from coverage 0 up, the RC points from coverage 1 down
    cov = [c * n for c, keep in zip(coverages, mask) if keep]
    err = [r * c * n for r, c, keep in zip(risks, coverages, mask) if keep]
    total = 0.0
    for c1, c2, e1, e2 in zip(cov, cov[1:], err, err[1:]):
        total += e1 - e2 + (e2 * c1 - e1 * c2) * math.log(c1 / c2) / (c1 - c2)
    total += err[-1]
    return total / n


def random_case(rng, continuous=False, tied=True):
    n = int(rng.integers(1, 150))
    conf = np.round(rng.random(n), int(rng.integers(0, 3))) if tied else rng.permutation(n) / 3.0
    res = rng.random(n) if continuous else (rng.random(n) < rng.uniform(0.05, 0.95)).astype(float)
    return conf, res


FOUR = ([0.9, 0.8, 0.7, 0.6], [0, 1, 0, 1])


def test_hand_four_samples():
    # operating points (accepted a, errors e): (4, 2), (3, 1), (2, 1), (1, 0), (0, 0).  Lower hull from the
    # origin: (1, 0); from there slopes 1 to (2, 1), 1/2 to (3, 1), 2/3 to (4, 2) -> (3, 1); then (4, 2).
    # (2, 1) is dominated.  Along e = a - 2 on [3, 4]: ∫ (a - 2)/a da = 1 - 2 ln(4/3); along e = (a - 1)/2
    # on [1, 3]: ∫ (a - 1)/(2a) da = 1 - ln(3)/2; below (1, 0) risk 0.  Sum / 4.
    expected = (2 - 2 * math.log(4 / 3) - math.log(3) / 2) / 4  # 0.218832...
    assert aurc_achievable(*FOUR) == pytest.approx(expected, abs=1e-15)
    assert aurc(*FOUR) == pytest.approx(0.25 * (5 / 12 + 5 / 12 + 1 / 4), abs=1e-15)  # trapezoid: 0.2708
    assert e_aurc_achievable(*FOUR) == pytest.approx(expected - (0.5 + 0.5 * math.log(0.5)), abs=1e-15)


@pytest.mark.parametrize("conf", [[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.1, 0.1]])
def test_all_correct_and_all_wrong(conf):
    # a straight line in (a, e) space: risk 0 everywhere, or 1 everywhere
    assert aurc_achievable(conf, [0, 0, 0, 0]) == 0.0
    assert aurc_achievable(conf, [1, 1, 1, 1]) == pytest.approx(1.0, abs=1e-15)
    assert e_aurc_achievable(conf, [0, 0, 0, 0]) == 0.0
    assert e_aurc_achievable(conf, [1, 1, 1, 1]) == pytest.approx(0.0, abs=1e-15)


def test_one_error():
    # least confident: points (4, 1), (3, 0), (2, 0), (1, 0); hull (3, 0), (4, 1): ∫_3^4 (a - 3)/a da / 4
    #   = (1 - 3 ln(4/3))/4 = 0.034239, the analytic optimum f + (1 - f) ln(1 - f) at f = 1/4
    last = ([4, 3, 2, 1], [0, 0, 0, 1])
    assert aurc_achievable(*last) == pytest.approx((1 - 3 * math.log(4 / 3)) / 4, abs=1e-15)
    assert e_aurc_achievable(*last) == pytest.approx(0.0, abs=1e-15)
    # most confident: points (4, 1), (3, 1), (2, 1), (1, 1); all above the chord to the origin, so only
    #   (4, 1) is dominant: constant risk 1/4 (randomised rejection), while the trapezoid AURC is 0.6146
    first = ([4, 3, 2, 1], [1, 0, 0, 0])
    assert aurc_achievable(*first) == pytest.approx(0.25, abs=1e-15)
    assert aurc(*first) == pytest.approx(0.25 * (7 / 24 + 5 / 12 + 3 / 4 + 1), abs=1e-15)


def test_ties_hand_case():
    # the two 0.7 samples are rejected together: points (4, 1), (2, 0), (1, 0); hull (2, 0), (4, 1):
    # ∫_2^4 (a - 2)/(2a) da / 4 = (1 - ln 2)/4; untied (0.7, 0.6) it would be (1 - 3 ln(4/3))/4
    assert aurc_achievable([0.9, 0.8, 0.7, 0.7], [0, 0, 0, 1]) == pytest.approx((1 - math.log(2)) / 4, abs=1e-15)
    assert aurc_achievable([0.9, 0.8, 0.7, 0.6], [0, 0, 0, 1]) == pytest.approx((1 - 3 * math.log(4 / 3)) / 4,
                                                                                abs=1e-15)


@pytest.mark.parametrize("continuous", [False, True])
def test_all_equal_confidences_give_mean_residual(continuous):
    rng = np.random.default_rng(1)
    _, res = random_case(rng, continuous)
    assert aurc_achievable(np.full(res.size, 0.3), res) == pytest.approx(res.mean(), abs=1e-12)


def test_order_inside_ties_and_input_order_do_not_matter():
    rng = np.random.default_rng(2)
    for continuous in (False, True):
        for _ in range(10):
            conf, res = random_case(rng, continuous)
            perm = rng.permutation(conf.size)
            assert aurc_achievable(conf[perm], res[perm]) == pytest.approx(aurc_achievable(conf, res), abs=1e-12)


@pytest.mark.parametrize("fn", [aurc_achievable, e_aurc_achievable])
def test_orientation(fn):
    rng = np.random.default_rng(3)
    res = (rng.random(300) < 0.3).astype(float)
    noise = rng.normal(0, 0.5, 300)
    assert fn(-res + noise, res) < fn(noise, res) < fn(res + noise, res)
    assert fn(-res - rng.random(300), res) == pytest.approx(fn(-res, res), abs=1e-12)  # both perfect


def test_fd_shifts_toy_example():
    # FD-Shifts' test_achievable_rc (fd_shifts/tests/test_analysis.py): achievable below the trapezoid here
    conf, res = [0.0, 0.0, 0.2, 0.4, 0.6, 0.8], 1 - np.array([1, 0, 1, 0, 1, 1])
    assert aurc_achievable(conf, res) < aurc(conf, res)
    assert e_aurc_achievable(conf, res) < aurc(conf, res) - aurc_optimal(res)


# FD-Shifts' expected values, fd_shifts/tests/utils.py RC_STATS_TEST_CASES (N = 100, correct -> residual 1 - correct)
_N = 100
_ALT = np.arange(_N) % 2
_PLATEAU = np.repeat([0.2, 0.4, 0.6, 0.8], _N // 4)


@pytest.mark.parametrize(("conf", "correct", "expected"), [
    (_ALT, _ALT, 0.15342640972002733),  # above its trapezoid AURC 0.125
    ((np.arange(_N) + 1) % 2, _ALT, 0.5),
    (np.linspace(0, 1, _N), _ALT, 0.4719992328225763),
    (_PLATEAU, _ALT, 0.4887532971076239),
    (_ALT, np.linspace(0, 1, _N), 0.4964992566638387),  # continuous residuals
    (np.linspace(0, 1, _N), np.linspace(0, 1, _N), 0.24753863826243439),
    (_PLATEAU, np.linspace(0, 1, _N), 0.27047759219727724),
    (_PLATEAU, _PLATEAU, 0.31821825302024637),
])
def test_fd_shifts_expected_values(conf, correct, expected):
    assert aurc_achievable(conf, 1 - correct) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("tied", [True, False])
def test_golden_against_fd_shifts_transcription(continuous, tied):
    rng = np.random.default_rng(10 + 2 * continuous + tied)
    for _ in range(30):
        conf, res = random_case(rng, continuous, tied)
        assert aurc_achievable(conf, res) == pytest.approx(fdshifts_aurc_achievable(conf, res), abs=1e-12)
        assert e_aurc_achievable(conf, res) == pytest.approx(
            fdshifts_aurc_achievable(conf, res) - aurc_optimal(res), abs=1e-12)


def test_binary_bounds():
    # optimum <= achievable <= min(failure rate, non-linear area over every point); the trapezoid AURC
    # is no bound: it interpolates the risk linearly and can lie below (FD-Shifts' test cases note it)
    rng = np.random.default_rng(20)
    below_trapezoid = 0
    for _ in range(60):
        conf, res = random_case(rng)
        value = aurc_achievable(conf, res)
        assert aurc_optimal(res) - 1e-12 <= value <= res.mean() + 1e-12
        assert value <= fdshifts_aurc_achievable(conf, res, achievable=False) + 1e-12
        below_trapezoid += value <= aurc(conf, res) + 1e-12
    assert 0 < below_trapezoid < 60
    # a perfect ranking: trapezoid AURC 0.125, achievable = optimum 1/2 + ln(1/2)/2 = 0.1534
    assert aurc_achievable([2, 1], [0, 1]) == pytest.approx(0.5 + 0.5 * math.log(0.5), abs=1e-15)
    assert aurc([2, 1], [0, 1]) == pytest.approx(0.125, abs=1e-15)


def test_continuous_keeps_every_point():
    # continuous residuals: no hull, the non-linear area over all points, which differs from the trapezoid
    conf, res = [0.9, 0.8, 0.7, 0.6], [0.1, 0.9, 0.2, 0.6]
    # points (4, 1.8), (3, 1.2), (2, 1.0), (1, 0.1); (2, 1.0) lies above the chord (3, 1.2)-(1, 0.1), and would
    # be dropped for binary residuals
    expected = sum(e1 - e2 + (e2 * a1 - e1 * a2) * math.log(a1 / a2) / (a1 - a2)
                   for (a1, e1), (a2, e2) in [((4, 1.8), (3, 1.2)), ((3, 1.2), (2, 1.0)), ((2, 1.0), (1, 0.1))])
    assert aurc_achievable(conf, res) == pytest.approx((expected + 0.1) / 4, abs=1e-12)
    assert aurc_achievable(conf, res) != pytest.approx(aurc(conf, res), abs=1e-4)


@pytest.mark.parametrize("fn", [aurc_achievable, e_aurc_achievable])
@pytest.mark.parametrize(("conf", "res", "match"), [
    ([0.1, np.nan], [0, 1], "confidence contains 1 non-finite"),
    ([0.1, 0.2], [0, np.inf], "residual contains 1 non-finite"),
    ([0.1, 0.2], [0, -0.5], r"residual must lie in \[0, 1\]"),
    ([0.1, 0.2, 0.3], [0, 1], "length mismatch"),
    ([[0.1, 0.2]], [[0, 1]], "confidence must be 1-D"),
    ([], [], "empty evaluation set"),
])
def test_bad_input(fn, conf, res, match):
    with pytest.raises(MetricInputError, match=match):
        fn(conf, res)
