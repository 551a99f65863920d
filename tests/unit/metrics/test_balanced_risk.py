"""AURC-BA and AUGRC-BA: hand cases, ties, orientation, bad input, and a golden plain-loop reference.

Peer: FD-Shifts (IML-DKFZ/fd-shifts) at commit c4467aec134e99691359da209f811d91283fc1e3,
``fd_shifts/analysis/rc_stats.py`` (``aurc_ba``, ``augrc_ba``, the trapezoid of ``evaluate_auc``) and
``fd_shifts/analysis/rc_stats_utils.py`` (``selective_risk_ba_stats``, ``generalized_risk_ba_stats``).
"""
import numpy as np
import pytest

from csfbench.metrics import MetricInputError
from csfbench.metrics.balanced_risk import augrc_ba, aurc_ba
from csfbench.metrics.risk_coverage import augrc, aurc

FUNCTIONS = (aurc_ba, augrc_ba)


def fdshifts_ba_area(conf, res, labels, kind):
    """Plain-loop transcription of FD-Shifts' ``selective_risk_ba_stats`` (kind "selective") and
    ``generalized_risk_ba_stats`` (kind "generalized"), fd_shifts/analysis/rc_stats_utils.py at commit
    c4467aec134e99691359da209f811d91283fc1e3, with its default ``drop_empty_classes=False``, then the
    trapezoid of rc_stats.py ``evaluate_auc`` (unscaled: FD-Shifts multiplies by 1000)."""
    conf, res, labels = [float(c) for c in conf], [float(r) for r in res], [int(v) for v in labels]
    n = len(conf)
    classes = sorted(set(labels))
    count = {c: labels.count(c) for c in classes}
    order = sorted(range(n), key=lambda i: conf[i])
    c_sorted = [conf[i] for i in order]
    if kind == "generalized":
        weighted = [res[i] * n / (len(classes) * count[labels[i]]) for i in order]
        error = sum(weighted)
        points = [(1.0, error / n)]
        for i in range(n - 1):
            error -= weighted[i]
            if c_sorted[i] != c_sorted[i + 1]:
                points.append(((n - i - 1) / n, error / n))
        points.append((0.0, 0.0))
    else:
        error = {c: sum(res[i] for i in range(n) if labels[i] == c) for c in classes}
        left = dict(count)

        def risk():
            return sum(error[c] / left[c] if left[c] else 0.0 for c in classes) / len(classes)

        points = [(1.0, risk())]
        for i in range(n - 1):
            c = labels[order[i]]
            left[c] -= 1
            error[c] -= res[order[i]]
            if c_sorted[i] != c_sorted[i + 1]:
                points.append(((n - i - 1) / n, risk()))
        points.append((0.0, points[-1][1]))
    return sum((x0 - x1) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in zip(points, points[1:]))


def random_case(rng, continuous=False):
    n = int(rng.integers(1, 120))
    conf = np.round(rng.random(n), int(rng.integers(0, 3)))  # 0-2 decimals: many ties
    res = rng.random(n) if continuous else (rng.random(n) < rng.uniform(0.05, 0.95)).astype(float)
    labels = rng.choice([-3, 0, 2, 7, 11], size=n, p=[0.5, 0.2, 0.15, 0.1, 0.05])  # imbalanced, not 0..K-1
    return conf, res, labels


# ascending confidences; labels 0 1 1 1 (imbalanced), residuals 1 0 1 0
HAND = ([0.1, 0.2, 0.3, 0.4], [1, 0, 1, 0], [0, 1, 1, 1])


def test_fd_shifts_toy_case():
    # FD-Shifts' own class-aware test (fd_shifts/tests/utils.py, RC_STATS_CLASS_AWARE_TEST_CASES):
    # confids 0 1 2 3, residuals 0 1 0 1, labels 0 0 1 1, aurc_ba 0.5, augrc_ba 0.3125.
    # selective: cov 1: (1/2 + 1/2)/2 = .5; cov .75: (1/1 + 1/2)/2 = .75; cov .5: class 0 empty -> 0,
    #   (0 + 1/2)/2 = .25; cov .25: (0 + 1/1)/2 = .5; cov 0: .5.  trapezoid: .25·(.625 + .5 + .375 + .5) = .5
    # generalized: weights 4/(2·2) = 1, risks .5 .5 .25 .25 0 -> .25·(.5 + .375 + .25 + .125) = .3125
    args = ([0, 1, 2, 3], [0, 1, 0, 1], [0, 0, 1, 1])
    assert aurc_ba(*args) == pytest.approx(0.5, abs=1e-15)
    assert augrc_ba(*args) == pytest.approx(0.3125, abs=1e-15)


def test_hand_case_imbalanced_and_empty_class():
    # selective: cov 1: (1/1 + 1/3)/2 = 2/3; cov .75: class 0 rejected whole -> error rate 0, still in the
    #   mean: (0 + 1/3)/2 = 1/6; cov .5: (0 + 1/2)/2 = 1/4; cov .25: (0 + 0/1)/2 = 0; cov 0: 0.
    #   trapezoid: .25·(5/12 + 5/24 + 1/8 + 0) = 3/16.  (Dropping the empty class would give 1/3 at .75.)
    assert aurc_ba(*HAND) == pytest.approx(3 / 16, abs=1e-15)
    # generalized: weights n/(K n_c) = 4/2 = 2 (class 0), 4/6 = 2/3 (class 1); weighted residuals 2 0 2/3 0;
    #   risks (sum accepted)/4: 2/3, 1/6, 1/6, 0, 0 -> .25·(5/12 + 1/6 + 1/12 + 0) = 1/6
    assert augrc_ba(*HAND) == pytest.approx(1 / 6, abs=1e-15)
    assert augrc(*HAND[:2]) == pytest.approx(0.1875, abs=1e-15)  # unweighted AUGRC differs


def test_augrc_ba_can_exceed_one_half():
    # all wrong; the single class-0 sample (weight 4/(2·1) = 2) is the most confident, class 1 weighs 2/3:
    # risks 4/4, (2 + 4/3)/4, (2 + 2/3)/4, 2/4, 0 -> .25·(11/12 + 3/4 + 7/12 + 1/4) = 0.625 (AUGRC: 0.5)
    args = ([0.4, 0.1, 0.2, 0.3], [1, 1, 1, 1], [0, 1, 1, 1])
    assert augrc_ba(*args) == pytest.approx(0.625, abs=1e-15)
    assert augrc(*args[:2]) == pytest.approx(0.5, abs=1e-15)


def test_ties_hand_case():
    # samples 2 and 3 tie at 0.2 and are rejected together: points (1, 2/3), (.75, 1/6), (.25, 0), (0, 0)
    # selective: .25·(2/3 + 1/6)/2 + .5·(1/6 + 0)/2 = 5/48 + 2/48 = 7/48
    # generalized: risks 2/3, 1/6, 0, 0 (the tie takes both class-1 samples' 0 and 2/3 away at once) -> 7/48
    args = ([0.1, 0.2, 0.2, 0.4], [1, 0, 1, 0], [0, 1, 1, 1])
    assert aurc_ba(*args) == pytest.approx(7 / 48, abs=1e-15)
    assert augrc_ba(*args) == pytest.approx(7 / 48, abs=1e-15)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_order_inside_ties_and_input_order_do_not_matter(fn):
    rng = np.random.default_rng(3)
    for _ in range(20):
        conf, res, labels = random_case(rng)
        perm = rng.permutation(conf.size)
        assert fn(conf[perm], res[perm], labels[perm]) == pytest.approx(fn(conf, res, labels), abs=1e-12)


def test_all_equal_confidences():
    # one point: the risk at coverage 1 held to coverage 0 (selective) or falling to 0 (generalized)
    conf, res, labels = [0.5] * 4, HAND[1], HAND[2]
    assert aurc_ba(conf, res, labels) == pytest.approx(2 / 3, abs=1e-15)
    assert augrc_ba(conf, res, labels) == pytest.approx(1 / 3, abs=1e-15)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_orientation(fn):
    rng = np.random.default_rng(4)
    res = (rng.random(400) < 0.3).astype(float)
    labels = rng.integers(0, 4, 400)
    noise = rng.normal(0, 0.5, 400)
    good, bad = -res + noise, res + noise
    assert fn(good, res, labels) < fn(noise, res, labels) < fn(bad, res, labels)


@pytest.mark.parametrize(("fn", "plain"), [(aurc_ba, aurc), (augrc_ba, augrc)])
def test_single_class_equals_plain_area(fn, plain):
    rng = np.random.default_rng(5)
    for continuous in (False, True):
        conf, res, _ = random_case(rng, continuous)
        assert fn(conf, res, np.full(conf.size, 4)) == pytest.approx(plain(conf, res), abs=1e-12)


def test_balanced_classes_augrc_ba_equals_augrc():
    rng = np.random.default_rng(6)
    conf, res = np.round(rng.random(90), 1), (rng.random(90) < 0.4).astype(float)
    labels = np.repeat([0, 1, 2], 30)
    assert augrc_ba(conf, res, labels) == pytest.approx(augrc(conf, res), abs=1e-12)
    assert aurc_ba(conf, res, labels) != pytest.approx(aurc(conf, res), abs=1e-6)


@pytest.mark.parametrize("kind", ["selective", "generalized"])
@pytest.mark.parametrize("continuous", [False, True])
def test_golden_against_fd_shifts_transcription(kind, continuous):
    fn = aurc_ba if kind == "selective" else augrc_ba
    rng = np.random.default_rng(7 + continuous)
    for _ in range(40):
        conf, res, labels = random_case(rng, continuous)
        assert fn(conf, res, labels) == pytest.approx(fdshifts_ba_area(conf, res, labels, kind), abs=1e-12)
    conf = rng.permutation(200) / 7.0  # untied
    res, labels = rng.random(200) < 0.3, rng.integers(0, 5, 200)
    assert fn(conf, res, labels) == pytest.approx(fdshifts_ba_area(conf, res, labels, kind), abs=1e-12)


@pytest.mark.parametrize("fn", FUNCTIONS)
@pytest.mark.parametrize(("conf", "res", "labels", "match"), [
    ([0.1, 0.2], [0, 1], [0, 1, 1], "labels must be 1-D with one label per sample"),
    ([0.1, 0.2], [0, 1], [[0], [1]], "labels must be 1-D"),
    ([0.1, 0.2], [0, 1], [0.0, 1.0], "labels must be integers"),
    ([0.1, 0.2], [0, 1], [True, False], "labels must be integers"),
    ([0.1, np.nan], [0, 1], [0, 1], "confidence contains 1 non-finite"),
    ([0.1, 0.2], [0, 1.5], [0, 1], r"residual must lie in \[0, 1\]"),
    ([0.1, 0.2, 0.3], [0, 1], [0, 1, 1], "length mismatch"),
    ([], [], [], "empty evaluation set"),
])
def test_bad_input(fn, conf, res, labels, match):
    with pytest.raises(MetricInputError, match=match):
        fn(conf, res, labels)


def test_labels_keyword():
    assert aurc_ba(HAND[0], HAND[1], labels=HAND[2]) == aurc_ba(*HAND)
