"""Class-dependent OOD scores as conformity scores for conformal prediction sets (Novello, Dalmau &
Andéol, "Out-of-Distribution Detection Should Use Conformal Prediction (and Vice-versa?)", 2024,
arXiv 2403.11532, §5 and its Appendix B), computed from stored outputs.

Each function returns an N×C float64 matrix ŝ(x, y) = softmax over classes of a class-dependent
score, rows summing to 1, higher = x conforms better to label y — the input of
:mod:`csfbench.metrics.prediction_sets`.  Two sign/scale traps of the paper's formula
ŝ(x, y_i) = exp(s(x, y_i)) / Σ_j exp(s(x, y_j)):

* for **distances** (KNN, Mahalanobis) a larger distance means less conforming, so the softmax is
  taken of the **negated** distance (literal exp(s) would rank the farthest class first);
* for **ReAct and ODIN** the softmax input is the logits (clipped-feature logits; logits / T), not
  probabilities: a second softmax over probabilities would flatten them.

GRAM's class-dependent score needs per-layer Gram statistics from a network pass, which stored
outputs do not hold; it is not implemented.

Shapes: ``features`` N×D pooled penultimate activations, ``head_weight`` C×D, ``head_bias`` (C,),
``logits`` N×C, training ``train_features`` M×D with ``train_classes`` M integers in [0, C) — the
paper groups the training features by **predicted** class f(x_i); the caller chooses what to pass.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.blocks import row_blocks
from csfbench.csf.distance_scores import check_labels
from csfbench.csf.knn import knn_fit, knn_score
from csfbench.csf.logit_scores import softmax


def react_class_scores(features, head_weight, head_bias, threshold: float) -> np.ndarray:
    """ReAct: softmax of the logits W min(h, c) + b of the clipped features, c = ``threshold``
    (:func:`csfbench.csf.feature_shaping.react_fit`: a percentile of the training activations; the
    paper does not give the percentile)."""
    clipped = np.minimum(np.asarray(features, dtype=np.float64), threshold)
    return softmax(clipped @ np.asarray(head_weight, dtype=np.float64).T + np.asarray(head_bias, dtype=np.float64))


def odin_class_scores(logits, temperature: float) -> np.ndarray:
    """ODIN without input perturbation (ε = 0, the only variant computable from stored logits):
    softmax(logits / T).  The paper does not give T or ε."""
    if not temperature > 0:
        raise ValueError(f"ODIN temperature must be > 0, got {temperature}")
    return softmax(logits, temperature)


def knn_class_fit(train_features, train_classes, n_classes: int) -> list[dict[str, np.ndarray]]:
    """One KNN search bank per class (:func:`csfbench.csf.knn.knn_fit`: L2-normalised rows) of the
    training features of that class; a class without a training row raises ValueError."""
    train_features = np.asarray(train_features)
    train_classes = check_labels(train_classes, len(train_features), n_classes)
    banks = []
    for k in range(n_classes):
        members = train_features[train_classes == k]
        if not len(members):
            raise ValueError(f"class {k} has no training feature: cannot build its KNN bank")
        banks.append(knn_fit(members))
    return banks


def knn_class_distances(banks: list[dict[str, np.ndarray]], features, k: int) -> np.ndarray:
    """N×C distances ‖ĥ − b_(k)‖₂ to the k-th nearest normalised training feature of each class
    (in [0, 2]); the paper writes the nearest one (k = 1), oodeel's DKNN uses the k-th on
    normalised features, as here."""
    return np.stack([-knn_score(bank, features, k) for bank in banks], axis=1)


def knn_class_scores(banks: list[dict[str, np.ndarray]], features, k: int = 1) -> np.ndarray:
    """KNN: softmax(−distance) over the per-class k-th-NN distances (:func:`knn_class_distances`)."""
    return softmax(-knn_class_distances(banks, features, k))


def mahalanobis_class_distances(state: dict[str, np.ndarray], features) -> np.ndarray:
    """N×C distances sqrt((h − μ_y)ᵀ P (h − μ_y)) to every class mean μ_y, with ``state`` =
    :func:`csfbench.csf.distance_scores.maha_fit` of the training features: P the pseudo-inverse of
    the shared (tied) covariance, as csfbench's Mahalanobis detector (Lee et al. 2018).  The paper's
    Appendix B uses a per-class covariance Σ_y for this class-dependent version.  Row blocks."""
    features = np.asarray(features, dtype=np.float64)
    means, precision = np.asarray(state["means"], dtype=np.float64), np.asarray(state["precision"], dtype=np.float64)
    means_p = means @ precision
    means_quad = np.sum(means_p * means, axis=1)
    squared = np.empty((len(features), len(means)))
    for block in row_blocks(len(features), max(features.shape[1], len(means))):
        h = features[block]
        squared[block] = np.sum((h @ precision) * h, axis=1)[:, None] - 2.0 * (h @ means_p.T) + means_quad
    return np.sqrt(np.maximum(squared, 0.0))


def mahalanobis_class_scores(state: dict[str, np.ndarray], features) -> np.ndarray:
    """Mahalanobis: softmax(−distance) over the class distances (:func:`mahalanobis_class_distances`)."""
    return softmax(-mahalanobis_class_distances(state, features))
