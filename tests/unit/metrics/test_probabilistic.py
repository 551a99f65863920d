"""Brier score and NLL of the confidence as the probability of success: hand-computed values,
orientation, ties, bad input, and golden tests against scikit-learn (Brier) and a transcription of
FD-Shifts' fail-NLL."""
import math

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss

from csfbench.metrics import MetricInputError
from csfbench.metrics.probabilistic import brier, nll

METRICS = [brier, nll]


def fdshifts_failnll(confids, correct):
    """Plain-Python transcription of FD-Shifts' ``failnll`` (fd_shifts/analysis/metrics.py at commit
    c4467aec134e99691359da209f811d91283fc1e3):
    -mean(correct * log(confids + 1e-7) + (1 - correct) * log(1 - confids + 1e-7))."""
    total = 0.0
    for p, c in zip(confids, correct):
        total += c * math.log(p + 1e-7) + (1 - c) * math.log(1 - p + 1e-7)
    return -total / len(confids)


def random_case(rng, n, continuous=False):
    conf = np.round(rng.random(n), int(rng.integers(1, 3)))  # many ties, and exact 0 and 1
    res = rng.random(n) if continuous else (rng.random(n) < rng.uniform(0.1, 0.9)).astype(float)
    return conf, res


# ---------------------------------------------------------------- Brier


def test_brier_hand_computed():
    # targets 1 - residual = [1, 0, 1, 0]; squared errors 0.01, 0.04, 0.36, 0.49 -> mean 0.225
    assert brier([0.9, 0.2, 0.4, 0.7], [0, 1, 0, 1]) == pytest.approx(0.225, abs=1e-15)
    # continuous residual 0.25 -> target 0.75: (0.5 - 0.75)^2 = 0.0625
    assert brier([0.5], [0.25]) == pytest.approx(0.0625, abs=1e-15)
    assert brier([1.0, 0.0], [0, 1]) == 0.0 and brier([0.0, 1.0], [0, 1]) == 1.0
    assert brier([0.5] * 3, [0, 1, 1]) == pytest.approx(0.25, abs=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_brier_matches_sklearn(seed):
    """Golden: sklearn.metrics.brier_score_loss(y_true = 1 - residual, y_prob = confidence), binary."""
    rng = np.random.default_rng(seed)
    conf, res = random_case(rng, int(rng.integers(10, 300)))
    res[:2] = [0, 1]
    want = brier_score_loss((1 - res).astype(int), conf)
    assert brier(conf, res) == pytest.approx(want, abs=1e-12)


def test_brier_differs_from_the_multiclass_score():
    # torch-uncertainty's default BrierScore sums over the softmax vector: [0.6, 0.3, 0.1] with label 0
    # gives 0.16 + 0.09 + 0.01 = 0.26, [0.6, 0.2, 0.2] gives 0.16 + 0.04 + 0.04 = 0.24; both have
    # (confidence 0.6, residual 0), whose binary Brier is (0.6 - 1)^2 = 0.16 for each
    multiclass = [sum((p - (k == 0)) ** 2 for k, p in enumerate(probs)) for probs in ([0.6, 0.3, 0.1], [0.6, 0.2, 0.2])]
    assert multiclass == pytest.approx([0.26, 0.24])
    assert brier([0.6], [0]) == pytest.approx(0.16) == brier([0.6, 0.6], [0, 0])


# ---------------------------------------------------------------- NLL


def test_nll_hand_computed():
    # c = [1, 0]: -(log(0.8 + 1e-7) + log(1 - 0.4 + 1e-7)) / 2 ~= (0.22314 + 0.51083) / 2
    want = -(math.log(0.8 + 1e-7) + math.log(0.6 + 1e-7)) / 2
    assert nll([0.8, 0.4], [0, 1]) == pytest.approx(want, abs=1e-15)
    assert want == pytest.approx((0.2231435 + 0.5108256) / 2, abs=1e-6)
    # a fully confident correct prediction: -log(1 + 1e-7), slightly negative
    assert nll([1.0], [0]) == pytest.approx(-math.log1p(1e-7), abs=1e-15) and nll([1.0], [0]) < 0
    # a fully confident failure: -log(1e-7) ~= 16.118
    assert nll([1.0], [1]) == pytest.approx(-math.log(1e-7), abs=1e-12)
    # constant 1/2: -log(0.5 + 1e-7) ~= log 2
    assert nll([0.5] * 4, [0, 1, 1, 0]) == pytest.approx(-math.log(0.5 + 1e-7), abs=1e-15)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_nll_matches_fdshifts(seed, continuous):
    """Golden: the transcription of FD-Shifts' failnll, with correct = 1 - residual."""
    rng = np.random.default_rng(10 + seed)
    conf, res = random_case(rng, int(rng.integers(10, 300)), continuous)
    want = fdshifts_failnll(conf.tolist(), (1 - res).tolist())
    assert nll(conf, res) == pytest.approx(want, rel=1e-12, abs=1e-12)


# ---------------------------------------------------------------- shared


@pytest.mark.parametrize("metric", METRICS)
def test_orientation(metric):
    res = [0, 0, 1, 1]
    good = metric([0.9, 0.8, 0.2, 0.1], res)  # confident on the successes, not on the failures
    middling = metric([0.6, 0.5, 0.5, 0.4], res)
    bad = metric([0.1, 0.2, 0.8, 0.9], res)
    assert good < middling < bad


@pytest.mark.parametrize("metric", METRICS)
def test_ties_need_no_rule(metric):
    # a success and a failure tied at 0.7, with a third sample: the value is a mean of per-sample
    # terms, so it is (0.3^2 + 0.7^2 + 0.8^2) / 3 = 0.41333 for Brier whatever the order
    conf, res = np.array([0.7, 0.7, 0.2]), np.array([0, 1, 0])
    value = metric(conf, res)
    assert metric(conf[::-1], res[::-1]) == pytest.approx(value, abs=1e-15)
    if metric is brier:
        assert value == pytest.approx((0.09 + 0.49 + 0.64) / 3, abs=1e-15)


@pytest.mark.parametrize("metric", METRICS)
def test_single_class_is_defined(metric):
    assert metric([0.9, 0.8], [0, 0]) < metric([0.9, 0.8], [1, 1])


@pytest.mark.parametrize("metric", METRICS)
def test_confidence_out_of_range(metric):
    with pytest.raises(MetricInputError, match=r"\[0, 1\].*2 value\(s\).*\[-0\.1, 1\.2\]"):
        metric([-0.1, 0.5, 1.2], [0, 1, 0])


@pytest.mark.parametrize("metric", METRICS)
def test_bad_pair(metric):
    with pytest.raises(MetricInputError, match="length mismatch"):
        metric([0.1, 0.2], [0, 1, 0])
    with pytest.raises(MetricInputError, match="non-finite"):
        metric([0.1, np.nan], [0, 1])
    with pytest.raises(MetricInputError, match="residual must lie in"):
        metric([0.1, 0.2], [0, 2])
    with pytest.raises(MetricInputError, match="empty"):
        metric([], [])
