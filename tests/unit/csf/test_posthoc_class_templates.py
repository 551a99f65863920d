"""KLM, SHE, RMDS and MaxCosine (csfbench.csf.class_templates; MaxCosine is the CTM kernel
``distance_scores.max_cosine`` with the head rows): hand-computed values, orientation, and agreement
with pytorch-ood 0.4.0's KLMatching, SHE and RMD.  pytorch-ood has no MaxCosine.

Aligned differences: RMD uses the unnormalised scatter S (plus a 1e-6 ridge) for both Gaussians, so
its distances are ours / (N − 1) (ours: Σ = S / (N − 1)): ours = −(N − 1) · theirs.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from csfbench.csf.class_templates import (KLM_GRID, MAXCOSINE_GRID, RMDS_GRID, SHE_GRID, klm_fit, klm_score,
                                          rmds_fit, rmds_score, she_fit, she_score)
from csfbench.csf.distance_scores import max_cosine

from tests.helpers.posthoc_data import FLOAT32, N_TRAIN, agree, gaussian_outputs, outlier, pytorch_ood, separation, torch_head


@pytest.fixture(scope="module")
def data():
    return gaussian_outputs()


def _softmax(z: list[float]) -> list[float]:
    e = [math.exp(v) for v in z]
    return [v / sum(e) for v in e]


def test_klm_by_hand():
    fit = [[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [3.0, 1.0, 0.0]]  # predicted 0, 1, 0; class 2 never
    p = [_softmax(z) for z in fit]
    templates = [[(p[0][c] + p[2][c]) / 2 for c in range(3)], p[1]]
    state = klm_fit(np.array(fit))
    np.testing.assert_allclose(state["templates"], templates, rtol=1e-14)
    query = _softmax([1.0, 0.0, 0.5])
    kl = [sum(q * math.log(q / d) for q, d in zip(query, template)) for template in templates]
    assert klm_score(state, np.array([[1.0, 0.0, 0.5]]))[0] == pytest.approx(-min(kl), rel=1e-12)


def test_she_by_hand():
    features = np.array([[1.0, 0.0], [3.0, 2.0], [9.0, 9.0], [0.0, 1.0], [2.0, 5.0]])
    labels = np.array([0, 0, 0, 1, 1])
    logits = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])  # row 2 is misclassified
    state = she_fit(features, logits, labels)
    np.testing.assert_allclose(state["patterns"], [[2.0, 1.0], [1.0, 3.0]])  # correct rows only
    score = she_score(state, np.array([[1.0, 2.0], [1.0, 2.0]]), np.array([[5.0, 0.0], [0.0, 5.0]]))
    np.testing.assert_allclose(score, [1 * 2 + 2 * 1, 1 * 1 + 2 * 3])


def test_she_needs_a_correct_row_per_class():
    with pytest.raises(ValueError, match=r"classes \[1\]"):
        she_fit(np.ones((2, 2)), np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([0, 1]))


def test_rmds_by_hand():
    features, labels = np.array([[0.0], [1.0], [4.0], [5.0]]), np.array([0, 0, 1, 1])
    # class means 0.5, 4.5; within-class scatter 1 → Σ = 1/3; background mean 2.5, scatter 17 → Σ0 = 17/3
    md = [(2.0 - 0.5) ** 2 * 3, (2.0 - 4.5) ** 2 * 3]
    md0 = (2.0 - 2.5) ** 2 * 3 / 17
    score = rmds_score(rmds_fit(features, labels, 2), np.array([[2.0]]))
    assert score[0] == pytest.approx(-min(m - md0 for m in md), rel=1e-12)


def test_maxcosine_by_hand():
    weight = np.array([[1.0, 0.0], [0.0, 1.0]])
    score = max_cosine(np.array([[1.0, 1.0], [-1.0, -2.0]]), weight)
    np.testing.assert_allclose(score, [1 / math.sqrt(2), -1 / math.sqrt(5)], rtol=1e-14)


def test_no_hyper_parameters():
    assert KLM_GRID == SHE_GRID == RMDS_GRID == MAXCOSINE_GRID == {}


def test_orientation(data):
    scores = {"KLM": klm_score(klm_fit(data["z_train"]), data["z_test"]),
              "SHE": she_score(she_fit(data["train"], data["z_train"], data["y_train"]), data["test"], data["z_test"]),
              "RMDS": rmds_score(rmds_fit(data["train"], data["y_train"], 6), data["test"]),
              "MaxCosine": max_cosine(data["test"], data["weight"])}
    for name, score in scores.items():  # KLM 0.87 and RMDS 0.92 on this fixture; a flipped sign gives < 0.15
        assert separation(score) > 0.85, name


def test_klm_agrees_with_pytorch_ood(data):
    import torch

    detector = pytorch_ood().KLMatching(None).fit_logits(torch.tensor(data["z_train"]))
    theirs = outlier(detector.predict_logits(torch.tensor(data["z_test"])))
    agree(klm_score(klm_fit(data["z_train"]), data["z_test"]), theirs, 1e-10)


def test_she_agrees_with_pytorch_ood(data):
    import torch

    detector = pytorch_ood().SHE(None, head=torch_head(data["weight"], data["bias"]))
    detector.fit_features(torch.tensor(data["train"]), torch.tensor(data["y_train"]))
    theirs = outlier(detector.predict_features(torch.tensor(data["test"])))
    ours = she_score(she_fit(data["train"], data["z_train"], data["y_train"]), data["test"], data["z_test"])
    agree(ours, theirs, FLOAT32)


def test_rmds_agrees_with_pytorch_ood(data):
    import torch

    detector = pytorch_ood().RMD(None)
    detector.fit_features(torch.tensor(data["train"]), torch.tensor(data["y_train"]))
    theirs = outlier(detector.predict_features(torch.tensor(data["test"])))
    ours = rmds_score(rmds_fit(data["train"], data["y_train"], 6), data["test"])
    agree(ours, (N_TRAIN - 1) * theirs, 1e-4)
