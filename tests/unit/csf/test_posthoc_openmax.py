"""OpenMax (csfbench.csf.openmax): the fit and Algorithm 2 written out by hand on a two-class fixture,
orientation under both rules, and agreement with pytorch-ood 0.4.0's OpenMax.

pytorch-ood fits the classes of whatever rows it is given, so it gets the correctly classified training
rows only; its outlier score is the unknown-class probability (ours with ``rule="unknown"``).  It
computes the distance to a class centre only for classes that are some row's argmax in the batch (0
otherwise), so the test batch predicts every class.  Its Weibull fit (``exponweib``, a = 1, Nelder–Mead)
and ours (``weibull_min``) reach the same maximum-likelihood fit to about 1e-6.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import weibull_min

from csfbench.csf.openmax import ALPHA, OPENMAX_GRID, TAIL_SIZE, TRANSLATION, openmax_fit, openmax_score

from tests.helpers.posthoc_data import agree, gaussian_outputs, outlier, pytorch_ood, separation

FIT = np.array([[3.0, 0.0], [4.0, 1.0], [6.0, 0.0], [0.0, 2.0], [1.0, 4.0], [0.0, 5.0], [9.0, 0.0]])
LABELS = np.array([0, 0, 0, 1, 1, 1, 1])  # the last row is misclassified: left out of the fit


@pytest.fixture(scope="module")
def data():
    return gaussian_outputs()


def _hand_fit() -> list[dict]:
    """Per class: mean, then the 2 largest distances, shifted as libMR does, fitted with scipy."""
    classes = []
    for rows in (FIT[:3], FIT[3:6]):
        mean = [sum(r[j] for r in rows) / 3 for j in range(2)]
        distances = sorted(math.dist(r, mean) for r in rows)[-2:]
        shape, _, scale = weibull_min.fit([d + TRANSLATION - distances[0] for d in distances], floc=0.0)
        classes.append({"mean": mean, "tail_min": distances[0], "shape": shape, "scale": scale})
    return classes


def test_fit_by_hand():
    state = openmax_fit(FIT, LABELS, tail_size=2)
    for k, expected in enumerate(_hand_fit()):
        np.testing.assert_allclose(state["means"][k], expected["mean"], rtol=1e-14)
        for key in ("tail_min", "shape", "scale"):
            assert state[key][k] == pytest.approx(expected[key], rel=1e-12), key


def test_probabilities_by_hand():
    z = [2.0, 1.0]
    classes = _hand_fit()
    omega = [1.0, 0.5]  # alpha = 2: ranks 1 and 2
    revised, unknown = [], 0.0
    for k, c in enumerate(classes):
        x = math.dist(z, c["mean"]) + TRANSLATION - c["tail_min"]
        w = 1.0 - math.exp(-((x / c["scale"]) ** c["shape"]))
        revised.append(z[k] * (1.0 - omega[k] * w))
        unknown += z[k] * omega[k] * w
    e = [math.exp(v) for v in revised + [unknown]]
    probs = [v / sum(e) for v in e]
    state = openmax_fit(FIT, LABELS, tail_size=2)
    assert openmax_score(state, np.array([z]), alpha=2, rule="max")[0] == pytest.approx(max(probs), rel=1e-12)
    assert openmax_score(state, np.array([z]), alpha=2, rule="unknown")[0] == pytest.approx(-probs[-1], rel=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="class 1 has 1 correctly classified"):
        openmax_fit(FIT[[0, 1, 2, 3]], LABELS[[0, 1, 2, 3]], tail_size=2)
    state = openmax_fit(FIT, LABELS, tail_size=2)
    with pytest.raises(ValueError, match="alpha"):
        openmax_score(state, FIT, alpha=3)
    with pytest.raises(ValueError, match="rule"):
        openmax_score(state, FIT, alpha=2, rule="min")


def test_fixed_hyper_parameters():
    assert (TAIL_SIZE, ALPHA, OPENMAX_GRID) == (20, 3, {})


def test_orientation():
    """Each rule against the shift it detects, on peaked positive logits (ID: 8 on the class, noise):
    ``"max"`` ranks flat, small logits low (every OpenMax probability near 1/(C+1)); ``"unknown"``
    ranks logits far from every class centre low (two strong classes: the unknown class takes their
    revised mass).  Each rule ranks the other shift as confident: ``"max"`` counts a dominant unknown
    probability as confidence (OpenOOD's rule), and far *negative* logits are revised upwards."""
    rng = np.random.default_rng(7)
    n_classes, n = 6, 150
    y_train, y_test = np.arange(600) % n_classes, np.arange(n) % n_classes
    state = openmax_fit(8.0 * np.eye(n_classes)[y_train] + rng.normal(size=(600, n_classes)), y_train)
    id_rows = 8.0 * np.eye(n_classes)[y_test] + rng.normal(size=(n, n_classes))
    shifts = {"max": 0.1 * rng.normal(size=(n, n_classes)),
              "unknown": 8.0 * (np.eye(n_classes)[y_test] + np.eye(n_classes)[(y_test + 1) % n_classes])
              + rng.normal(size=(n, n_classes))}
    for rule, shifted in shifts.items():
        assert separation(openmax_score(state, np.vstack([id_rows, shifted]), rule=rule), n) > 0.95, rule


def test_agrees_with_pytorch_ood(data):
    import torch

    z_train, y_train, z_test = data["z_train"], data["y_train"], data["z_test"]
    assert len(np.unique(z_test.argmax(axis=1))) == z_test.shape[1]  # see the module docstring
    correct = z_train.argmax(axis=1) == y_train
    detector = pytorch_ood().OpenMax(None, tailsize=TAIL_SIZE, alpha=ALPHA, euclid_weight=1.0)
    detector.fit_logits(torch.tensor(z_train[correct]), torch.tensor(y_train[correct]))
    theirs = outlier(detector.predict_logits(torch.tensor(z_test)))
    agree(openmax_score(openmax_fit(z_train, y_train), z_test, rule="unknown"), theirs, 1e-5)
