"""fDBD, fast decision-boundary distance (Liu & Qin, 2023; Claros-Olivares & Brockmeier,
App. A.3.7, whose printed double sum is a typo for the single sum below).

``conf(h) = 1/(C-1) sum_{c != ŷ} |z_ŷ - z_c| / ||w_ŷ - w_c||_2  ·  1 / ||h - μ_train||_2``

with ŷ = argmax z (first index on ties).  For logits of the same linear head the summand is the
Euclidean distance from h to the ŷ-vs-c decision boundary, so the score is a mean boundary distance
relative to the distance from the training mean: larger = more in-distribution (returned as is).
The logits are an argument of their own because the authors' code feeds logits other than
``W h + b`` in some variants; this kernel uses whatever it is given.  A sample equal to the
training mean, or two identical weight rows, divide by zero (inf), as the formula does.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.blocks import map_row_blocks


def fdbd(features: np.ndarray, logits: np.ndarray, weight: np.ndarray, train_mean: np.ndarray) -> np.ndarray:
    """fDBD confidence, shape (N,), >= 0 (unitless ratio).

    ``features`` N×D, ``logits`` N×C, ``weight`` C×D (rows w_c), ``train_mean`` (D,) = μ_train.
    Computed in float64, in row blocks on several threads.
    """
    from scipy.spatial.distance import cdist  # here: the workflow imports the CSF registry to build its DAG

    features = np.asarray(features)
    logits = np.asarray(logits)
    weight = np.asarray(weight, dtype=np.float64)
    train_mean = np.asarray(train_mean, dtype=np.float64)
    n_classes = logits.shape[1]
    boundary_norms = cdist(weight, weight)
    np.fill_diagonal(boundary_norms, np.inf)  # drops the c = ŷ term (1 / inf = 0)
    inverse_norms = 1.0 / boundary_norms  # C×C, 1 / ||w_a - w_b||_2
    scores = np.empty(len(logits))

    def block(rows):
        z = logits[rows]
        pred = np.argmax(z, axis=1)
        # z_ŷ - z_c >= 0 since ŷ is the argmax, so the |.| of the formula is the difference itself
        margins = np.subtract(np.take_along_axis(z, pred[:, None], axis=1), z, dtype=np.float64)
        mean_distance = np.einsum("nc,nc->n", margins, inverse_norms[pred]) / (n_classes - 1)
        centred = np.subtract(features[rows], train_mean, dtype=np.float64)
        scores[rows] = mean_distance / np.sqrt(np.einsum("nd,nd->n", centred, centred))

    map_row_blocks(block, len(logits), max(n_classes, features.shape[1]))
    return scores
