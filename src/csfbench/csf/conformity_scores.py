"""The registry of class-dependent conformity scores of the conformal prediction sets (Novello, Dalmau &
Andéol, arXiv 2403.11532, §5; ``conformal.prediction_sets.scores``): name → how a model's N×C matrix
ŝ(x, y) is computed.

Orientation, for every score: **higher = x conforms better to label y** (more in-distribution for that
class); each row is a softmax over the classes, summing to 1, which :mod:`csfbench.metrics.prediction_sets`
turns into non-conformities (lower = conforms better).  The kernels are :mod:`csfbench.csf.class_conformity`'s;
the fits here use the training features grouped by their **labels** (the paper groups them by the model's
predicted class, which leaves a class the model never predicts without a bank: a weak model, a rare class),
as csfbench's Mahalanobis detector does.

A score's ``compute(test, train, head, **params)`` reads ``test`` {features N×D, logits N×C}, ``train``
{features M×D, logits M×C, labels (M,)}, ``head`` (W C×D, b (C,)) and the settings named by ``params``
(keys of ``conformal.prediction_sets``).  ``gram`` has no ``compute``: its Gram statistics come from a
network pass (:func:`csfbench.stages.network_csf.gram_class_scores`), not from stored outputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from csfbench.csf import class_conformity as conformity
from csfbench.csf.distance_scores import maha_fit
from csfbench.csf.feature_shaping import react_fit
from csfbench.csf.logit_scores import softmax


@dataclass(frozen=True)
class ConformityScore:
    """One conformity score: its name, the settings it reads and its computation (None: a network pass)."""

    name: str
    compute: Callable[..., np.ndarray] | None
    params: tuple[str, ...] = ()

    @property
    def network(self) -> bool:
        """Whether the score needs a network pass (no ``compute`` from stored outputs)."""
        return self.compute is None


def softmax_scores(test: dict, train: dict, head: tuple) -> np.ndarray:
    """softmax(logits): the classifier's class probabilities; higher = more conforming."""
    return softmax(test["logits"])


def react_scores(test: dict, train: dict, head: tuple, *, react_percentile: float) -> np.ndarray:
    """ReAct: softmax of the logits of the features clipped at the ``react_percentile``-th percentile (0-100)
    of the training activations; higher = more conforming."""
    weight, bias = head
    threshold = float(react_fit(train["features"], react_percentile)["threshold"])
    return conformity.react_class_scores(test["features"], weight, bias, threshold)


def odin_scores(test: dict, train: dict, head: tuple, *, odin_temperature: float) -> np.ndarray:
    """ODIN without input perturbation: softmax(logits / T), T = ``odin_temperature``; higher = more
    conforming."""
    return conformity.odin_class_scores(test["logits"], odin_temperature)


def knn_scores(test: dict, train: dict, head: tuple, *, knn_k: int) -> np.ndarray:
    """KNN: softmax of the negated distance to the ``knn_k``-th nearest normalised training feature of each
    class (a distance conforms less as it grows, hence the sign); higher = more conforming."""
    banks = conformity.knn_class_fit(train["features"], train["labels"], head[0].shape[0])
    return conformity.knn_class_scores(banks, test["features"], knn_k)


def mahalanobis_scores(test: dict, train: dict, head: tuple) -> np.ndarray:
    """Mahalanobis: softmax of the negated distance to each class mean (tied covariance); higher = more
    conforming."""
    state = maha_fit(train["features"], train["labels"], head[0].shape[0])
    return conformity.mahalanobis_class_scores(state, test["features"])


#: name → conformity score, in the order of the config schema's ``conformal.prediction_sets.scores``
CONFORMITY_SCORES = {score.name: score for score in (
    ConformityScore("softmax", softmax_scores),
    ConformityScore("react", react_scores, ("react_percentile",)),
    ConformityScore("odin", odin_scores, ("odin_temperature",)),
    ConformityScore("knn", knn_scores, ("knn_k",)),
    ConformityScore("mahalanobis", mahalanobis_scores),
    # softmax of the negated normalised deviation from each class's Gram bounds; higher = more conforming
    ConformityScore("gram", None),
)}


def conformity_score(name: str) -> ConformityScore:
    """The registered conformity score ``name``; ValueError listing the valid names otherwise."""
    try:
        return CONFORMITY_SCORES[name]
    except KeyError:
        raise ValueError(f"unknown conformity score {name!r}; valid: {list(CONFORMITY_SCORES)}") from None
