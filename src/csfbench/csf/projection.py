"""Projection filtering (Claros-Olivares & Brockmeier, §3.2, App. A.4): PCA subspaces of the training features and the
projected views.

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
from typing import Callable

import numpy as np

from csfbench.csf.distance_scores import class_means

GROUPS = ("none", "global", "class")
GROUP_VARIANTS = {"none": ("none",), "global": ("global",), "class": ("class", "class_avg", "class_pred")}
VARIANTS = tuple(v for group in GROUPS for v in GROUP_VARIANTS[group])
#: the scorer of the CSFs that run the network on images (ODIN-IP, GRAM, RankFeat: csfbench.network_csf); a
#: model's scores and metric files are one per scorer: each fit group of :data:`GROUPS`, and this one
NETWORK_SCORER = "network"
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
        mean = features.mean(0, dtype=np.float64)
        centred = features - mean  # float64, also for float32 features
        values, vectors = np.linalg.eigh(centred.T @ centred / len(features))
        return cls(mean, np.clip(values[::-1], 0.0, None), vectors[:, ::-1])

    def basis(self, variance: float) -> np.ndarray:
        return self.eigenvectors[:, :n_components(self.eigenvalues, variance)]


def project(features: np.ndarray, mean: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """P Pᵀ(h − μ) + μ for row features h (N×D), basis P (D×k)."""
    return (features - mean) @ basis @ basis.T + mean


def rec_confidence(features: np.ndarray, projected: np.ndarray) -> np.ndarray:
    """PCA RecError confidence −‖h − ĥ‖₂ / ‖h‖₂ (Guan et al.; higher = better reconstructed = more ID)."""
    norm = np.sqrt(np.einsum("ij,ij->i", features, features, dtype=np.float64))
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


@dataclass
class _StackedBases:
    """All class bases side by side (D × Σk_c), with what every class-wise quantity needs per column."""

    bases: list
    stacked: np.ndarray      # D × Σk
    starts: np.ndarray       # first stacked column of each class
    k: np.ndarray            # k_c
    mu_coords: np.ndarray    # P_cᵀμ_c per stacked column
    mu_sq: np.ndarray        # ‖μ_c‖² (C,)

    @classmethod
    def of(cls, subspaces: ClassSubspaces) -> "_StackedBases":
        c_count = len(subspaces.means)
        bases = [subspaces.basis(c) for c in range(c_count)]
        means = subspaces.means
        return cls(bases, np.concatenate(bases, axis=1), np.r_[0, np.cumsum(subspaces.k)[:-1]], subspaces.k,
                   np.concatenate([means[c] @ bases[c] for c in range(c_count)]),
                   np.einsum("cd,cd->c", means, means))

    def coordinates(self, h: np.ndarray) -> np.ndarray:
        """a_c = P_cᵀ(h − μ_c) for every class, rows × Σk."""
        return h @ self.stacked - self.mu_coords

    def segment_sum(self, x: np.ndarray) -> np.ndarray:
        """Sums of stacked columns per class (rows × C); classes with k_c = 0 give 0."""
        sums = np.zeros((len(x), len(self.k)))
        nonempty = self.k > 0
        sums[:, nonempty] = np.add.reduceat(x, self.starts[nonempty], axis=1) if x.shape[1] else 0.0
        return sums

    def rec(self, h: np.ndarray, h_sq: np.ndarray, h_mu: np.ndarray, a_sq: np.ndarray) -> np.ndarray:
        """−‖h − ĥᶜ‖/‖h‖ per class from ‖h − ĥᶜ‖² = ‖h − μ_c‖² − ‖a_c‖² (rows × C)."""
        residual_sq = np.maximum(h_sq - 2 * h_mu + self.mu_sq - a_sq, 0.0)
        return -np.sqrt(residual_sq) / np.maximum(np.sqrt(h_sq), 1e-12)


def class_rec_confidence(features: np.ndarray, subspaces: ClassSubspaces) -> np.ndarray:
    """The class-wise PCA RecError confidences −‖h − ĥᶜ‖/‖h‖ alone (N×C, higher = better
    reconstructed): the ``rec`` of :func:`class_views` without the other class-wise quantities,
    which is all the validation objective of the class projection's variance needs."""
    sb = _StackedBases.of(subspaces)
    out = np.empty((len(features), len(subspaces.means)))
    for start in range(0, len(features), CHUNK_ROWS):
        h = features[start:start + CHUNK_ROWS].astype(np.float64, copy=False)
        h_sq = np.einsum("nd,nd->n", h, h)[:, None]
        out[start:start + len(h)] = sb.rec(h, h_sq, h @ subspaces.means.T, sb.segment_sum(sb.coordinates(h) ** 2))
    return out


def class_views(features: np.ndarray, pred: np.ndarray, subspaces: ClassSubspaces, weight: np.ndarray,
                bias: np.ndarray, mean_targets: np.ndarray | None = None) -> ClassViews:
    """Project every row onto every class subspace once and collect the class-wise quantities.

    Per row block, the coordinates a_c = P_cᵀ(h − μ_c) of all classes come from one matrix product
    with the concatenated bases; everything per class follows in the k-dimensional coordinates
    (ĥᶜ = P_c a_c + μ_c is orthogonal-decomposed: ‖h − ĥᶜ‖² = ‖h − μ_c‖² − ‖a_c‖²), and only
    ĥ^avg and ĥ^pred are formed in D dimensions.  Cost ≈ 2 N·D·Σk_c, without a Python loop over
    classes per row block beyond segment sums.
    """
    n, d = features.shape
    c_count = len(subspaces.means)
    sb = _StackedBases.of(subspaces)
    bases, stacked, starts, mu_coords = sb.bases, sb.stacked, sb.starts, sb.mu_coords
    means = subspaces.means
    w_coords = np.concatenate([weight[c] @ bases[c] for c in range(c_count)])      # P_cᵀw_c
    w_norm = np.linalg.norm(weight[:c_count], axis=1)
    wmu = np.einsum("cd,cd->c", weight[:c_count], means)
    if mean_targets is not None:
        t_coords = np.concatenate([mean_targets[c] @ bases[c] for c in range(c_count)])
        t_norm = np.linalg.norm(mean_targets, axis=1)
        tmu = np.einsum("cd,cd->c", mean_targets, means)
    out = ClassViews(*(np.zeros((n, c_count)) for _ in range(4)), np.zeros((n, d)), np.zeros((n, d)))
    segment_sum = sb.segment_sum

    for start in range(0, n, CHUNK_ROWS):
        rows = slice(start, min(start + CHUNK_ROWS, n))
        h = features[rows].astype(np.float64, copy=False)
        coords = sb.coordinates(h)                                  # a_c for every class, rows × Σk
        a_sq = segment_sum(coords ** 2)                             # ‖a_c‖²
        h_sq = np.einsum("nd,nd->n", h, h)[:, None]
        h_mu = h @ means.T                                          # h·μ_c
        # ĥᶜ = P_c a_c + μ_c, and P_cᵀμ_c lies in the subspace, so ĥᶜ·v = a_c·P_cᵀv + μ_c·v
        hc_sq = a_sq + 2 * segment_sum(coords * mu_coords) + sb.mu_sq
        hc_norm = np.sqrt(np.maximum(hc_sq, 0.0))
        wdot = segment_sum(coords * w_coords) + wmu
        out.logits[rows] = wdot + bias[:c_count]
        out.cos_weight[rows] = _safe_ratio(wdot, hc_norm * w_norm)
        if mean_targets is not None:
            out.cos_mean[rows] = _safe_ratio(segment_sum(coords * t_coords) + tmu, hc_norm * t_norm)
        out.rec[rows] = sb.rec(h, h_sq, h_mu, a_sq)
        out.avg[rows] = coords @ stacked.T / c_count + means.mean(0)
        for c in np.unique(pred[rows]):
            hit = np.flatnonzero(pred[rows] == c)
            cols = slice(starts[c], starts[c] + subspaces.k[c])
            out.pred[start + hit] = coords[hit, cols] @ bases[c].T + means[c]
    return out


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def projection_states(group: str, features: np.ndarray, labels: np.ndarray, correct: np.ndarray,
                      n_classes: int) -> Callable[[float], dict]:
    """The projection state of fit group ``global`` or ``class`` as a function of the variance fraction v
    it keeps: the PCAs are fitted once here (one of the correctly classified training features, all of
    them if none is; or one per class, :func:`class_fit_data`), the basis is cut at v per call.  The
    ``class`` state carries the class targets m̂_c of the class variants (``mean_targets``)."""
    if group == "global":
        pca = Pca.fit(features[correct if correct.any() else np.ones(len(features), bool)])
        return lambda v: {"group": "global", "variance": v, "mean": pca.mean, "basis": pca.basis(v)}
    if group != "class":
        raise ValueError(f"fit group {group!r} has no projection (expected 'global' or 'class')")
    pcas = [Pca.fit(features[rows]) for rows in class_fit_data(features, labels, correct, n_classes)]
    raw_means = class_means(features, labels, n_classes)

    def state(v: float) -> dict:
        subspaces = ClassSubspaces.from_pcas(pcas, v)
        return {"group": "class", "variance": v, "subspaces": subspaces,
                "mean_targets": subspaces.mean_targets(raw_means)}
    return state


def parse_variant(name: str) -> tuple[str, str]:
    """``"KPCA RecError class_pred"`` → (``"KPCA RecError"``, ``"class_pred"``); no suffix = ``none``."""
    head, _, tail = name.rpartition(" ")
    variants = {v for vs in GROUP_VARIANTS.values() for v in vs}
    return (head, tail) if head and tail in variants else (name, "none")


def group_of(variant: str) -> str:
    """The fit group (scores file) that produces a variant."""
    return next(g for g, variants in GROUP_VARIANTS.items() if variant in variants)
