"""The registry of class-dependent conformity scores (csfbench.csf.conformity_scores): the names the config
offers, the values of the if-chain it replaced, the orientation (higher = the label conforms better) and the
error on an unknown name."""
from __future__ import annotations

import numpy as np
import pytest

from csfbench.csf import class_conformity as conformity
from csfbench.csf.conformity_scores import CONFORMITY_SCORES, conformity_score
from csfbench.csf.distance_scores import maha_fit
from csfbench.csf.feature_shaping import react_fit
from csfbench.csf.logit_scores import softmax
from csfbench.workflow.settings import schema

PARAMS = {"react_percentile": 90, "odin_temperature": 1000, "knn_k": 1}


def old_class_scores(name, test, train, head, settings):
    """The if-chain of csfbench.stages.conformal.class_scores that the registry replaced, verbatim."""
    weight, bias = head
    if name == "softmax":
        return softmax(test["logits"])
    if name == "react":
        threshold = float(react_fit(train["features"], settings["react_percentile"])["threshold"])
        return conformity.react_class_scores(test["features"], weight, bias, threshold)
    if name == "odin":
        return conformity.odin_class_scores(test["logits"], settings["odin_temperature"])
    labels, n_classes = train["labels"], weight.shape[0]
    if name == "knn":
        banks = conformity.knn_class_fit(train["features"], labels, n_classes)
        return conformity.knn_class_scores(banks, test["features"], settings["knn_k"])
    if name == "mahalanobis":
        return conformity.mahalanobis_class_scores(maha_fit(train["features"], labels, n_classes), test["features"])
    raise ValueError(f"unknown conformity score {name!r}")


@pytest.fixture(scope="module")
def outputs():
    """Three classes of 6-d non-negative features around distinct means, a head whose logits favour each
    sample's own class."""
    rng = np.random.default_rng(3)
    means = np.abs(4.0 * np.eye(3, 6) + 0.5 * rng.random((3, 6)))
    weight, bias = means / np.linalg.norm(means, axis=1, keepdims=True), np.zeros(3)

    def split(n):
        labels = rng.integers(0, 3, n)
        features = np.abs(means[labels] + 0.3 * rng.normal(size=(n, 6)))
        return {"features": features, "logits": features @ weight.T + bias, "labels": labels}

    train, test = split(90), split(20)
    return test, train, (weight, bias)


def compute(name, test, train, head):
    score = conformity_score(name)
    return score.compute(test, train, head, **{key: PARAMS[key] for key in score.params})


def test_the_registry_holds_the_scores_the_config_offers():
    items = schema()["properties"]["conformal"]["properties"]["prediction_sets"]["properties"]["scores"]["items"]
    assert list(CONFORMITY_SCORES) == items["enum"]
    assert [s.name for s in CONFORMITY_SCORES.values() if s.network] == ["gram"]


@pytest.mark.parametrize("name", [n for n, s in CONFORMITY_SCORES.items() if not s.network])
def test_each_score_equals_the_if_chain_it_replaced(outputs, name):
    test, train, head = outputs
    np.testing.assert_array_equal(compute(name, test, train, head), old_class_scores(name, test, train, head, PARAMS))


@pytest.mark.parametrize("name", [n for n, s in CONFORMITY_SCORES.items() if not s.network])
def test_higher_means_the_label_conforms_better(outputs, name):
    """Rows are distributions over the classes, and a sample's own class, whose mean it lies near and whose
    logit is largest, conforms best."""
    test, train, head = outputs
    scores = compute(name, test, train, head)
    assert scores.shape == (20, 3)
    np.testing.assert_allclose(scores.sum(axis=1), 1.0)
    assert np.array_equal(scores.argmax(axis=1), test["labels"])


def test_an_unknown_score_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown conformity score 'energy'; valid: \['softmax', 'react', 'odin', "
                                         r"'knn', 'mahalanobis', 'gram'\]"):
        conformity_score("energy")
