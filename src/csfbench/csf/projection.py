"""Projection filtering (spec 000 §3): PCA subspaces of the training features and the projected views.

Fit groups and the variants they produce:

- ``none``  -> ``none`` (the unprojected features and logits);
- ``global`` -> ``global``: ĥ = P Pᵀ(h − μ) + μ with one PCA of the correctly classified training
  features;
- ``class`` -> ``class``, ``class_avg``, ``class_pred``: one PCA per class c on the correctly
  classified training samples of c (all of c if none is correct); ĥᶜ per class, their mean
  ĥ^avg, and ĥ^pred = ĥ^ŷ.  ``class`` itself has no single feature vector: it exposes per-class
  columns (class-projected logits ĝᶜ = w_cᵀĥᶜ + b_c, cos(w_c, ĥᶜ), cos(m̂_c, ĥᶜ) and the
  reconstruction confidence −‖h − ĥᶜ‖/‖h‖) that the CSFs supporting ``class`` use.

The number of components keeps at least a fraction v of the variance: k = #{j: ρ_j ≤ v} + 1.
All class-wise work is done once per (model, fit group) in one pass over the classes, in row
chunks, so memory stays bounded by the chunk, not by N × C × D.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GROUPS = ("none", "global", "class")
GROUP_VARIANTS = {"none": ("none",), "global": ("global",), "class": ("class", "class_avg", "class_pred")}
VARIANTS = tuple(v for group in GROUPS for v in GROUP_VARIANTS[group])
CHUNK_ROWS = 8192


def n_components(eigenvalues: np.ndarray, variance: float) -> int:
    """k = #{j: ρ_j ≤ v} + 1 for eigenvalues sorted descending (ρ = cumulative explained ratio), ≤ D.

    All-zero eigenvalues (a single training sample) give k = 0: the subspace is the mean point.
    """
    total = float(eigenvalues.sum())
    if total <= 0:
        return 0
    ratio = np.cumsum(eigenvalues) / total
    return int(min(np.count_nonzero(ratio <= variance) + 1, len(eigenvalues)))


@dataclass
class Pca:
    """Mean (D,), eigenvalues (D,) descending and eigenvectors (D×D, columns) of 1/N H̃ᵀH̃."""

    mean: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray

    @classmethod
    def fit(cls, features: np.ndarray) -> "Pca":
        if len(features) == 0:
            raise ValueError("PCA fit on zero samples")
        mean = features.mean(0)
        centred = features - mean
        values, vectors = np.linalg.eigh(centred.T @ centred / len(features))
        return cls(mean, np.clip(values[::-1], 0.0, None), vectors[:, ::-1])

    def basis(self, variance: float) -> np.ndarray:
        return self.eigenvectors[:, :n_components(self.eigenvalues, variance)]


def project(features: np.ndarray, mean: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """P Pᵀ(h − μ) + μ for row features h (N×D), basis P (D×k)."""
    return (features - mean) @ basis @ basis.T + mean


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cos(a_i, b) for a (N×D) and one vector b (D,); 0 where a norm is 0."""
    denom = np.linalg.norm(a, axis=1) * np.linalg.norm(b)
    return np.divide(a @ b, denom, out=np.zeros(len(a)), where=denom > 0)


def rec_confidence(features: np.ndarray, projected: np.ndarray) -> np.ndarray:
    """PCA RecError confidence −‖h − ĥ‖₂ / ‖h‖₂ (Guan et al.; higher = better reconstructed = more ID)."""
    norm = np.linalg.norm(features, axis=1)
    return -np.linalg.norm(features - projected, axis=1) / np.maximum(norm, 1e-12)


def class_fit_data(features: np.ndarray, labels: np.ndarray, correct: np.ndarray, n_classes: int) -> list:
    """Per class, the correctly classified training rows (all rows of the class when none is correct)."""
    rows = []
    for c in range(n_classes):
        members = labels == c
        if not members.any():
            raise ValueError(f"class {c} has no training sample: the class PCA cannot be fitted")
        chosen = members & correct
        rows.append(np.flatnonzero(chosen if chosen.any() else members))
    return rows


@dataclass
class ClassSubspaces:
    """Per-class means μ_c (C×D), bases padded to a common width (C×D×k_max), k per class (C,)."""

    means: np.ndarray
    bases: np.ndarray
    k: np.ndarray

    @classmethod
    def from_pcas(cls, pcas: list[Pca], variance: float) -> "ClassSubspaces":
        bases = [p.basis(variance) for p in pcas]
        width = max(b.shape[1] for b in bases)
        padded = np.zeros((len(pcas), pcas[0].mean.shape[0], width))
        for c, b in enumerate(bases):
            padded[c, :, :b.shape[1]] = b
        return cls(np.stack([p.mean for p in pcas]), padded, np.array([b.shape[1] for b in bases]))

    def basis(self, c: int) -> np.ndarray:
        return self.bases[c, :, :self.k[c]]

    def project_class(self, features: np.ndarray, c: int) -> np.ndarray:
        return project(features, self.means[c], self.basis(c))

    def mean_targets(self, class_means: np.ndarray) -> np.ndarray:
        """m̂_c: the mean of ĥᶜ over class-c training samples = the projection of their raw mean m_c."""
        return np.stack([self.project_class(class_means[c][None], c)[0] for c in range(len(class_means))])


@dataclass
class ClassViews:
    """Everything the class-wise variants need for one split (N rows)."""

    logits: np.ndarray        # ĝ^class (N×C)
    cos_weight: np.ndarray    # cos(w_c, ĥᶜ) (N×C)
    cos_mean: np.ndarray      # cos(m̂_c, ĥᶜ) (N×C)
    rec: np.ndarray           # −‖h − ĥᶜ‖/‖h‖ (N×C)
    avg: np.ndarray           # ĥ^avg (N×D)
    pred: np.ndarray          # ĥ^ŷ (N×D)
    extra: dict = field(default_factory=dict)


def class_views(features: np.ndarray, pred: np.ndarray, subspaces: ClassSubspaces, weight: np.ndarray,
                bias: np.ndarray, mean_targets: np.ndarray | None = None) -> ClassViews:
    """Project every row onto every class subspace once and collect the class-wise quantities."""
    n, d = features.shape
    c_count = len(subspaces.means)
    out = ClassViews(*(np.zeros((n, c_count)) for _ in range(4)), np.zeros((n, d)), np.zeros((n, d)))
    for start in range(0, n, CHUNK_ROWS):
        rows = slice(start, min(start + CHUNK_ROWS, n))
        h = features[rows]
        norm_h = np.maximum(np.linalg.norm(h, axis=1), 1e-12)
        for c in range(c_count):
            hc = subspaces.project_class(h, c)
            out.logits[rows, c] = hc @ weight[c] + bias[c]
            out.cos_weight[rows, c] = _cosine(hc, weight[c])
            if mean_targets is not None:
                out.cos_mean[rows, c] = _cosine(hc, mean_targets[c])
            out.rec[rows, c] = -np.linalg.norm(h - hc, axis=1) / norm_h
            out.avg[rows] += hc
            hit = pred[rows] == c
            out.pred[rows][hit] = hc[hit]
    out.avg /= c_count
    return out
