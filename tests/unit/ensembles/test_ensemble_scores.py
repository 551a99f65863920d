"""The ensemble's own CSFs against hand-computed values, and the member mean."""
from __future__ import annotations

import math

import numpy as np
import pytest

from csfbench.ensembles.scores import ENSEMBLE_CSFS, ensemble_confidences, ensemble_prediction, member_average

# three members, two samples, three classes: on sample 0 the members disagree (two vote class 0, one class 1, each
# certain); on sample 1 they agree, each uncertain between classes 0 and 1
PROBS = np.array([[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]],
                  [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]],
                  [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]])
LOGITS = np.array([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]],
                   [[3.0, 2.0, 1.0], [1.0, 1.0, -1.0]],
                   [[0.0, 0.0, 0.0], [2.0, 2.0, 0.0]]])


def test_three_member_values_by_hand():
    out = ensemble_confidences(PROBS, LOGITS)
    assert list(out) == list(ENSEMBLE_CSFS)
    h0 = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))  # H([2/3, 1/3, 0]) = 0.6365141682948128
    np.testing.assert_allclose(out["Ensemble MSR"], [2 / 3, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["Predictive Entropy"], [-h0, -math.log(2)], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["Expected Entropy"], [0.0, -math.log(2)], rtol=0, atol=1e-15)
    # mutual information = entropy of the mean - mean of the entropies
    np.testing.assert_allclose(out["Mutual Information"], [-(h0 - 0.0), 0.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["Variation Ratio"], [-1 / 3, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["Mean Max-Logit"], [(3 + 3 + 0) / 3, (0 + 1 + 2) / 3], rtol=0, atol=1e-15)
    # energy of the mean logits: sample 0 has mean logits (4/3, 4/3, 4/3), sample 1 (1, 1, -1/3)
    np.testing.assert_allclose(out["Ensemble Energy"], [4 / 3 + math.log(3), math.log(2 * math.e + math.exp(-1 / 3))],
                               rtol=1e-15)
    assert ensemble_prediction(PROBS).tolist() == [0, 0]


def test_orientation_higher_is_more_in_distribution():
    """The disagreeing sample (0) is less in-distribution under the disagreement scores, the uncertain one (1) under
    the confidence scores; every score is oriented higher = more in-distribution."""
    out = ensemble_confidences(PROBS, LOGITS)
    for name in ("Mutual Information", "Variation Ratio"):
        assert out[name][0] < out[name][1], name
    for name in ("Ensemble MSR", "Expected Entropy"):
        assert out[name][1] < out[name][0], name
    confident, spread = np.array([[[8.0, 0.0, 0.0]]] * 3), np.array([[[1.0, 1.0, 1.0]]] * 3)
    probs = [np.exp(z) / np.exp(z).sum(2, keepdims=True) for z in (confident, spread)]
    high, low = (ensemble_confidences(p, z) for p, z in zip(probs, (confident, spread)))
    for name in ENSEMBLE_CSFS:
        if name not in ("Mutual Information", "Variation Ratio"):  # both 0 when the members agree
            assert high[name][0] > low[name][0], name


def test_variation_ratio_hand_cases():
    """1 - f/M with f the count of the modal vote; a tie between classes leaves f unchanged."""
    eye = np.eye(3)
    votes = {(2, 2, 1, 0): 0.5, (0, 0, 1, 1): 0.5, (1, 1, 1, 1): 0.0, (0, 1, 2, 2): 0.5, (0, 0, 0, 2): 0.25}
    for members, ratio in votes.items():
        probs = np.stack([eye[[c]] * 0.9 + 0.1 / 3 for c in members])  # M×1×3, argmax = the vote
        value = ensemble_confidences(probs, np.log(probs))["Variation Ratio"]
        np.testing.assert_allclose(value, [-ratio], rtol=0, atol=1e-15, err_msg=str(members))


def test_one_member_reduces_to_the_member():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(1, 50, 4)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(2, keepdims=True)
    out = ensemble_confidences(probs, logits)
    np.testing.assert_array_equal(out["Ensemble MSR"], probs[0].max(1))
    np.testing.assert_array_equal(out["Mean Max-Logit"], logits[0].max(1))
    np.testing.assert_array_equal(out["Mutual Information"], np.zeros(50))
    np.testing.assert_array_equal(out["Variation Ratio"], np.zeros(50))
    np.testing.assert_allclose(out["Predictive Entropy"], out["Expected Entropy"], rtol=0, atol=1e-15)
    assert ensemble_prediction(probs).tolist() == probs[0].argmax(1).tolist()


def test_member_average_and_its_checks():
    a = {("KNN", "none"): np.array([1.0, 2.0]), ("MSR", "global"): np.array([0.5, 0.25])}
    b = {("KNN", "none"): np.array([3.0, 4.0]), ("MSR", "global"): np.array([0.0, 0.75])}
    out, left_out = member_average({"run1": a, "run2": b})
    np.testing.assert_array_equal(out[("KNN", "none")], [2.0, 3.0])
    np.testing.assert_array_equal(out[("MSR", "global")], [0.25, 0.5])
    assert left_out == {}
    # a CSF undefined for one member (e.g. SHE without a correct training row of some class) is left out, named
    out, left_out = member_average({"run1": a, "run2": {("KNN", "none"): b[("KNN", "none")]}})
    assert list(out) == [("KNN", "none")] and left_out == {("MSR", "global"): ["run2"]}
    with pytest.raises(ValueError, match="different numbers of samples"):
        member_average({"run1": a, "run2": {**b, ("KNN", "none"): np.zeros(3)}})
    with pytest.raises(ValueError, match="members × samples × classes"):
        ensemble_confidences(PROBS[0], LOGITS[0])
