"""Class-statistics and feature-distance scores: Maha, CTM, CTMmean(OC)
(Claros-Olivares & Brockmeier, App. A.3.1 and A.3.5; CTMmeanOC is only in the authors' code).

Shapes: ``features`` N×D penultimate features (float32 or float64; computed in float64),
``labels`` N integer class indices in [0, C), class means C×D, precision D×D.  Scores are float64
(N,) confidences, higher = more in-distribution (Maha is the max over classes of the negated squared
distance, as in Lee et al. 2018; the paper prints the max of the distance).  Work on N rows against many
columns runs in row blocks (:func:`csfbench.csf.blocks.row_blocks`), so temporaries stay bounded for
N ~ 1e5; the fits read their training rows as row blocks (an array or a
:class:`~csfbench.csf.blocks.RowSource`), summing in float64.  Labels are checked by
:func:`csfbench.metrics._inputs.check_labels`.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf import torch_kernels
from csfbench.csf.blocks import row_blocks, rows_or_array, sum_row_blocks, unit_rows
from csfbench.csf.device import torch_device
from csfbench.metrics._inputs import check_labels


def grouped_sums(features, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group g in [0, ``n_groups``): the float64 sum of the rows of ``features`` (N×D, array or row
    source) with ``groups == g`` and their count, ``n_groups × (D + 1)`` (the count last).  One pass over
    row blocks: each block's rows ordered by group (stable sort) and summed by :func:`numpy.add.reduceat`,
    the blocks' sums added in row order (:func:`~csfbench.csf.blocks.sum_row_blocks`); on a torch device
    :func:`csfbench.csf.torch_kernels.grouped_sums` (float64, within 1e-9 relative of this)."""
    groups = np.asarray(groups, dtype=np.int64)
    if torch_device() is not None:
        return torch_kernels.grouped_sums(features, groups, n_groups)
    dim = features.shape[1]

    def block(rows: slice) -> np.ndarray:
        g = groups[rows]
        order = np.argsort(g, kind="stable")
        ordered = g[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        totals = np.zeros((n_groups, dim + 1))
        totals[ordered[starts], :-1] = np.add.reduceat(np.asarray(features[rows], dtype=np.float64)[order], starts,
                                                        axis=0)
        totals[:, -1] = np.bincount(g, minlength=n_groups)
        return totals

    return sum_row_blocks(block, len(groups), dim)


def class_means(features: np.ndarray, labels: np.ndarray, n_classes: int,
                mask: np.ndarray | None = None) -> np.ndarray:
    """Per-class feature means μ_k, C×D, of the training features of the variant being scored.

    With a boolean ``mask`` (N,) — e.g. the correctly classified samples for CTMmeanOC — each class
    mean uses only its masked samples, falling back to all samples of the class when none is masked.
    Raises ValueError naming the class when a class has no sample at all.  One pass over row blocks of
    ``features`` (an array or a row source), summed in float64 (:func:`grouped_sums`).
    """
    features = rows_or_array(features)
    labels = check_labels(labels, len(features), n_classes)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != labels.shape:
            raise ValueError(f"mask must have shape {labels.shape}, got {mask.shape}")
    counts = np.bincount(labels, minlength=n_classes)
    if not counts.all():
        absent = np.flatnonzero(counts == 0)
        raise ValueError(f"class {absent[0]} has no sample: cannot compute its mean (C = {n_classes} classes; no "
                         f"sample of {absent.size} of them: {', '.join(map(str, absent[:10]))}"
                         f"{', …' if absent.size > 10 else ''})")
    if mask is None:
        sums = grouped_sums(features, labels, n_classes)
        return sums[:, :-1] / sums[:, -1:]
    # groups k (class k, unmasked) and C + k (class k, masked)
    sums = grouped_sums(features, labels + n_classes * mask, 2 * n_classes)
    masked, everything = sums[n_classes:], sums[:n_classes] + sums[n_classes:]
    chosen = np.where(masked[:, -1:] > 0, masked, everything)
    return chosen[:, :-1] / chosen[:, -1:]


def maha_fit(features: np.ndarray, labels: np.ndarray, n_classes: int) -> dict[str, np.ndarray]:
    """Class means and the pseudo-inverse of the tied class-conditional covariance (Lee et al. 2018).

    ``Σ = 1/(N-1) sum_k sum_{i: y_i = k} (h_i - μ_k)(h_i - μ_k)^T``;
    ``precision = pinv(Σ, hermitian=True, rtol=1e-6)``, replaced by the zero matrix when Σ or its
    pseudo-inverse has a NaN/Inf entry.  Returns ``{"means": C×D, "precision": D×D}``.  The scatter
    Σ_i (h_i − μ_{y_i})(h_i − μ_{y_i})ᵀ is summed in float64 row blocks, on a torch device there
    (:func:`csfbench.csf.torch_kernels.scatter`, within 1e-9 relative of the host's).
    """
    features = rows_or_array(features, np.float64)
    if len(features) < 2:
        raise ValueError(f"Maha needs at least 2 training samples for a covariance, got {len(features)}")
    means = class_means(features, labels, n_classes)
    labels = np.asarray(labels)
    n_rows, dim = features.shape
    if torch_device() is not None:
        scatter = torch_kernels.scatter(features, means, labels)
    else:
        scatter = np.zeros((dim, dim))
        for block in row_blocks(n_rows, dim):
            centred = np.asarray(features[block], dtype=np.float64) - means[labels[block]]
            scatter += centred.T @ centred
    covariance = scatter / (n_rows - 1)
    precision = np.zeros((dim, dim))
    if np.isfinite(covariance).all():
        with np.errstate(over="ignore", invalid="ignore"):  # a non-finite result is replaced below
            candidate = np.linalg.pinv(covariance, hermitian=True, rtol=1e-6)
        if np.isfinite(candidate).all():
            precision = candidate
    return {"means": means, "precision": precision}


def maha_score(features: np.ndarray, means: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """Maha confidence ``max_k -(h - μ_k)^T Σ^+ (h - μ_k)``, shape (N,), <= 0 (squared feature units).

    Evaluated as ``-(h^T P h) + max_k (2 h^T P μ_k - μ_k^T P μ_k)`` with P = ``precision`` (D×D,
    symmetric), in float64 row blocks; on a torch device there (:func:`csfbench.csf.torch_kernels.maha_scores`,
    within 1e-9 relative of the terms' magnitude hᵀPh + max_k μ_kᵀPμ_k).
    """
    means = np.asarray(means, dtype=np.float64)
    precision = np.asarray(precision, dtype=np.float64)
    if torch_device() is not None:
        return torch_kernels.maha_scores(np.asarray(features), means, precision)
    features = np.asarray(features, dtype=np.float64)
    means_p = means @ precision
    means_quad = np.sum(means_p * means, axis=1)
    scores = np.empty(len(features))
    for block in row_blocks(len(features), max(features.shape[1], len(means))):
        h = features[block]
        h_quad = np.sum((h @ precision) * h, axis=1)
        scores[block] = np.max(2.0 * (h @ means_p.T) - means_quad, axis=1) - h_quad
    return scores


def max_cosine(features: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Maximum cosine similarity ``max_k cos(d_k, h)``, shape (N,), in [-1, 1] (CTM, CTMmean, CTMmeanOC).

    ``directions`` K×D: the head weights W for CTM, class means μ_k (raw, not centred) for CTMmean,
    correct-only means μ_k^OC for CTMmeanOC.  A zero feature or direction has cosine 0.
    """
    features = np.asarray(features, dtype=np.float64)
    unit_directions = unit_rows(directions)
    scores = np.empty(len(features))
    for block in row_blocks(len(features), max(features.shape[1], len(unit_directions))):
        scores[block] = np.max(unit_rows(features[block]) @ unit_directions.T, axis=1)
    return scores
