"""Neural-collapse (NC) metrics of the training features (Claros-Olivares & Brockmeier, §3.4, App. D, Table 7;
Papyan et al., 2020).

Inputs are the training features H (N×D, float32 or float64), their **ground-truth** labels y (N,)
and the classifier head W (C×D), b (C,).  All arithmetic is float64.  Notation: μ_c is the mean of
class c, μ the mean of all N rows (so classes are weighted by their size), μ̃_c = μ_c − μ, and M the
C×D matrix with rows μ̃_c.

The eight metrics, under the names of the paper's Table 7 (keys of :func:`nc_metrics`):

==================  ==========================================================  =====  ========
name                definition                                                  ideal  range
==================  ==========================================================  =====  ========
EqNorm (means)      Std_c ‖μ̃_c‖ / Avg_c ‖μ̃_c‖ (unbiased std, ddof 1)             0      [0, ∞)
EqNorm (weights)    Std_c ‖w_c‖ / Avg_c ‖w_c‖                                    0      [0, ∞)
EqAng (means)       Std (ddof 1) of cos(μ̃_c, μ̃_c') over the C(C−1) ordered      0      [0, ~1]
                    pairs c ≠ c'
EqAng (weights)     the same for the rows of W                                   0      [0, ~1]
max-EqAng (means)   Avg over c ≠ c' of |cos(μ̃_c, μ̃_c') + 1/(C−1)|               0      [0, C/(C−1)]
max-EqAng (weights) the same for the rows of W                                   0      [0, C/(C−1)]
Var Collapse        NC1 = (1/C) Tr(Σ_W Σ_B†), Σ_B = (1/C) Σ_c μ̃_c μ̃_cᵀ,          0      [0, ∞)
                    Σ_W = (1/Z) Σ_c Σ_{i:y_i=c} (h_i − μ_c)(h_i − μ_c)ᵀ
Self Duality        ‖W/‖W‖_F − M/‖M‖_F‖_F² = 2 − 2 Tr(W Mᵀ)/(‖W‖_F‖M‖_F)        0      [0, 4]
==================  ==========================================================  =====  ========

Orientation and units: every metric is dimensionless, non-negative and **lower = more collapse**;
the ideal value 0 is reached by a centred simplex equiangular tight frame (ETF) of class means with
zero within-class variability and a head W proportional to M (equal norms, cosines −1/(C−1)).
The mean metrics and NC1 are invariant to translating the features, to scaling them by any
non-zero factor and to rotating them; Self Duality is invariant to positive scalings of the
features or of W, to translations of the features and to rotating features and W together.

Normaliser Z of Σ_W: ``"authors"`` (default) uses Z = N·C as the authors' code
does, which reproduces the Table 7 values; ``"papyan"`` uses Z = N (the average over samples of
Papyan et al.).  NC1 under ``"papyan"`` is exactly C times NC1 under ``"authors"``.  Σ_W is built
around the **class** mean μ_c as in Papyan et al. and the authors' code (the paper's §3.4 writes Σ_W
about the global mean μ, which is the total covariance).

The pseudo-inverse Σ_B† is taken in the eigenbasis of Σ_B, i.e. from the thin SVD of M
(M = U S Vᵀ, eigenvalues λ_j = s_j²/C): NC1 = (1/C) Σ_j v_jᵀΣ_W v_j / λ_j over the kept j.  Neither
Σ_B nor Σ_W is formed in D×D and no N×N matrix appears: two chunked passes over the rows (class
sums, then the squared projections of h_i − μ_{y_i} on the ≤ C kept directions) keep memory at
O(chunk·D + C·D), e.g. a few tens of MB for N = 50,000, D = 512, C = 100 besides the input.
Eigen-directions with λ_j ≤ rtol·λ_max are treated as zero (default rtol = (max(C, D)·ε)², the
round-off level of the SVD of M); M is made to satisfy Σ_c n_c μ̃_c = 0 exactly, so the
direction that is zero by construction never enters through round-off.

Regimes (the paper's §3.4): the caller may pass projected features to :func:`nc_metrics` directly, or use
:func:`nc_regimes`, which builds the unfiltered, global-projection and class-predicted-projection
features with the CSF projection code (:mod:`csfbench.csf.projection`; refitted from the variance
kept v, or the CSFs' fitted projection states as stored in ``fit.h5``) and returns the metrics of
each under the keys of :data:`REGIMES`.  The weight metrics do not depend on the regime.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from csfbench.csf.projection import ClassSubspaces, Pca, class_fit_data, project
from csfbench.heads import class_outputs

EQNORM_MEANS = "EqNorm (means)"
EQNORM_WEIGHTS = "EqNorm (weights)"
EQANG_MEANS = "EqAng (means)"
EQANG_WEIGHTS = "EqAng (weights)"
MAX_EQANG_MEANS = "max-EqAng (means)"
MAX_EQANG_WEIGHTS = "max-EqAng (weights)"
VAR_COLLAPSE = "Var Collapse"
SELF_DUALITY = "Self Duality"

#: All eight metrics, in the row order of the module docstring's table.
METRICS = (EQNORM_MEANS, EQNORM_WEIGHTS, EQANG_MEANS, EQANG_WEIGHTS, MAX_EQANG_MEANS, MAX_EQANG_WEIGHTS,
           VAR_COLLAPSE, SELF_DUALITY)
#: The classifier-weight metrics, in the column order of Table 7 (c); regime-independent.
WEIGHT_METRICS = (EQNORM_WEIGHTS, EQANG_WEIGHTS, MAX_EQANG_WEIGHTS)
#: The value of every metric under perfect neural collapse (lower = more collapse for all eight).
IDEAL = {name: 0.0 for name in METRICS}
NORMALIZERS = ("authors", "papyan")
#: Regime keys of :func:`nc_regimes`: unfiltered h, global projection ĥ, class-predicted ĥ^pred.
REGIMES = ("none", "global", "class_pred")
CHUNK_ROWS = 4096


# ---------------------------------------------------------------- validation

def _check_features(features) -> np.ndarray:
    x = np.asarray(features)
    if x.ndim != 2:
        raise ValueError(f"features must be a 2-D array (N×D), got shape {x.shape}")
    if x.dtype == bool or not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
        raise ValueError(f"features must be real numbers, got dtype {x.dtype}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"features must have at least one row and one column, got shape {x.shape}")
    if np.issubdtype(x.dtype, np.floating):
        for start in range(0, len(x), CHUNK_ROWS):      # chunked: no N×D boolean temporary
            finite = np.isfinite(x[start:start + CHUNK_ROWS]).all(axis=1)
            if not finite.all():
                row = start + int(np.flatnonzero(~finite)[0])
                raise ValueError(f"features contain NaN or infinite values (first at row {row})")
    return x


def _check_labels(labels, n_rows: int, n_classes: int | None, name: str = "labels") -> tuple[np.ndarray, int]:
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) != n_rows:
        raise ValueError(f"{name} must be 1-D with one entry per feature row ({n_rows}), got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer) or y.dtype == bool:
        integral = (np.issubdtype(y.dtype, np.floating) and np.isfinite(y).all() and (y == np.round(y)).all())
        if not integral:
            raise ValueError(f"{name} must be integer class indices, got dtype {y.dtype}"
                             + (" with NaN/inf or fractional values" if np.issubdtype(y.dtype, np.floating) else ""))
    y = y.astype(np.intp)
    if n_classes is None:
        n_classes = int(y.max()) + 1
    bad = (y < 0) | (y >= n_classes)
    if bad.any():
        raise ValueError(f"{name} must lie in [0, {n_classes}) (C = {n_classes} classes); "
                         f"found {int(y[bad][0])} at row {int(np.flatnonzero(bad)[0])}")
    if n_classes < 2:
        raise ValueError(f"the NC metrics need at least 2 classes, got C = {n_classes}")
    return y, n_classes


def _check_counts(labels: np.ndarray, n_classes: int) -> np.ndarray:
    counts = np.bincount(labels, minlength=n_classes)
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        shown = ", ".join(str(c) for c in missing[:10]) + (", ..." if len(missing) > 10 else "")
        raise ValueError(f"class(es) {shown} of C = {n_classes} have no training sample: "
                         "their class mean, and so the NC metrics, are undefined")
    return counts


def _check_head(weight, bias, dim: int, n_classes: int | None) -> tuple[np.ndarray, np.ndarray | None]:
    w = np.asarray(weight, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"weight must be a 2-D array (C×D), got shape {w.shape}")
    if w.shape[1] != dim:
        raise ValueError(f"weight has {w.shape[1]} columns but the features have D = {dim}")
    b = None
    if bias is not None:
        b = np.asarray(bias, dtype=np.float64)
        if b.shape != (w.shape[0],):
            raise ValueError(f"bias must have shape ({w.shape[0]},) to match weight {w.shape}, got {b.shape}")
        if not np.isfinite(b).all():
            raise ValueError("bias contains NaN or infinite values")
    if not np.isfinite(w).all():
        raise ValueError("weight contains NaN or infinite values")
    if n_classes is not None:
        if not 2 <= n_classes <= w.shape[0]:
            raise ValueError(f"n_classes must be in [2, {w.shape[0]}] (the rows of weight), got {n_classes}")
        w, b = class_outputs(w, n_classes, axis=0), (None if b is None else class_outputs(b, n_classes, axis=0))
    return w, b


def _check_normalizer(normalizer: str) -> None:
    if normalizer not in NORMALIZERS:
        raise ValueError(f"normalizer must be one of {NORMALIZERS}, got {normalizer!r}")


def _check_rows(rows, what: str) -> np.ndarray:
    r = np.asarray(rows, dtype=np.float64)
    if r.ndim != 2 or len(r) < 2:
        raise ValueError(f"{what} must be a 2-D array with at least 2 rows (one per class), got shape {r.shape}")
    if not np.isfinite(r).all():
        raise ValueError(f"{what} contain NaN or infinite values")
    return r


# ---------------------------------------------------------------- class statistics

@dataclass(frozen=True)
class ClassStats:
    """Class sizes n_c (C,), class means μ_c (C×D), global mean μ (D,) and M (C×D rows μ_c − μ), float64."""

    counts: np.ndarray
    means: np.ndarray
    global_mean: np.ndarray
    centred: np.ndarray


def _class_stats(x: np.ndarray, y: np.ndarray, n_classes: int) -> ClassStats:
    counts = _check_counts(y, n_classes)
    shift = x[0].astype(np.float64)           # sums relative to one row: no cancellation on offset features
    sums = np.zeros((n_classes, x.shape[1]))
    for start in range(0, len(x), CHUNK_ROWS):
        rows = slice(start, start + CHUNK_ROWS)
        yc = y[rows]
        order = np.argsort(yc, kind="stable")
        ys = yc[order]
        first = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
        h = x[rows][order].astype(np.float64)
        h -= shift
        sums[ys[first]] += np.add.reduceat(h, first, axis=0)
    rel_means = sums / counts[:, None]
    rel_global = sums.sum(0) / len(x)
    centred = rel_means - rel_global
    # Σ_c n_c μ̃_c = 0 exactly: remove the round-off along n so that the rank of M is the true one
    centred -= np.outer(counts, counts @ centred) / float(counts @ counts)
    return ClassStats(counts, rel_means + shift, rel_global + shift, centred)


def class_statistics(features, labels, n_classes: int | None = None) -> ClassStats:
    """Class sizes, class means, global mean and the centred class means M of the training features.

    ``n_classes`` defaults to max(labels) + 1; every class must have at least one sample.
    """
    x = _check_features(features)
    y, n_classes = _check_labels(labels, len(x), n_classes)
    return _class_stats(x, y, n_classes)


# ---------------------------------------------------------------- the metrics

def equinorm(rows) -> float:
    """EqNorm of C vectors (rows): Std_c ‖r_c‖ / Avg_c ‖r_c‖ with the unbiased (ddof 1) std.

    Apply it to M (``EqNorm (means)``) or to W (``EqNorm (weights)``).  A coefficient of variation:
    dimensionless, ≥ 0, 0 when all norms are equal (ideal); lower = more collapse.  Scale-invariant.
    """
    r = _check_rows(rows, "rows")
    norms = np.linalg.norm(r, axis=1)
    if norms.mean() == 0:
        raise ValueError("all rows are zero: EqNorm (std/mean of the norms) is undefined")
    return float(np.std(norms, ddof=1) / norms.mean())


def _off_diagonal_cosines(rows, what: str) -> np.ndarray:
    r = _check_rows(rows, what)
    norms = np.linalg.norm(r, axis=1)
    zero = np.flatnonzero(norms == 0)
    if len(zero):
        raise ValueError(f"{what} row {int(zero[0])} is zero: its cosine with the other rows is undefined "
                         "(for class means: the class mean equals the global mean)")
    unit = r / norms[:, None]
    cos = unit @ unit.T
    return cos[~np.eye(len(r), dtype=bool)]


def equiangularity(rows) -> float:
    """EqAng of C vectors: the unbiased std of cos(r_c, r_c') over the C(C−1) ordered pairs c ≠ c'.

    Apply it to M (``EqAng (means)``) or to W (``EqAng (weights)``).  Dimensionless, ≥ 0; 0 when all
    pairwise angles are equal (ideal); lower = more collapse.
    """
    return float(np.std(_off_diagonal_cosines(rows, "rows"), ddof=1))


def max_equiangularity(rows) -> float:
    """max-EqAng of C vectors: Avg over c ≠ c' of |cos(r_c, r_c') + 1/(C−1)|.

    The mean distance of the pairwise cosines from the simplex-ETF value −1/(C−1) (the most
    separated equiangular configuration).  Dimensionless, in [0, C/(C−1)]; 0 at the ETF (ideal);
    lower = more collapse.  Apply it to M (``max-EqAng (means)``) or W (``max-EqAng (weights)``).
    """
    n_classes = len(np.asarray(rows))
    return float(np.mean(np.abs(_off_diagonal_cosines(rows, "rows") + 1.0 / (n_classes - 1))))


def _var_collapse(x: np.ndarray, y: np.ndarray, stats: ClassStats, normalizer: str, rtol: float | None) -> float:
    _check_normalizer(normalizer)
    n_classes, dim = stats.centred.shape
    _, s, vt = np.linalg.svd(stats.centred, full_matrices=False)
    if s[0] == 0:
        raise ValueError("all class means coincide: the between-class covariance Σ_B is zero and "
                         "NC1 (Var Collapse) is undefined")
    eig = s ** 2 / n_classes                                    # eigenvalues of Σ_B
    cut = (max(n_classes, dim) * np.finfo(np.float64).eps) ** 2 if rtol is None else float(rtol)
    keep = eig > cut * eig[0]
    basis = vt[keep].T                                          # D × r eigenvectors of Σ_B
    within = np.zeros(basis.shape[1])                           # Σ_i ((h_i − μ_{y_i})·v_j)²
    for start in range(0, len(x), CHUNK_ROWS):
        rows = slice(start, start + CHUNK_ROWS)
        h = x[rows].astype(np.float64)
        h -= stats.means[y[rows]]
        z = h @ basis
        within += np.einsum("ij,ij->j", z, z)
    scale = len(x) * n_classes if normalizer == "authors" else len(x)
    return float(np.sum(within / scale / eig[keep]) / n_classes)


def var_collapse(features, labels, n_classes: int | None = None, normalizer: str = "authors", *,
                 rtol: float | None = None) -> float:
    """Var Collapse (NC1) = (1/C) Tr(Σ_W Σ_B†) of the training features with ground-truth labels.

    Σ_B = (1/C) Σ_c μ̃_c μ̃_cᵀ; Σ_W = (1/Z) Σ_c Σ_{i:y_i=c} (h_i − μ_c)(h_i − μ_c)ᵀ with Z = N·C for
    ``normalizer="authors"`` (default, matches Table 7) or Z = N for ``"papyan"``
    (then NC1 is exactly C times larger).  Dimensionless (a variance ratio), ≥ 0; 0 when every
    sample sits on its class mean (ideal); lower = more collapse.  Invariant to translating,
    rotating and scaling the features.  ``rtol``: eigenvalues of Σ_B at or below rtol·λ_max count as
    zero in the pseudo-inverse (default (max(C, D)·ε)²).  ``n_classes`` defaults to max(labels) + 1.
    """
    _check_normalizer(normalizer)
    x = _check_features(features)
    y, n_classes = _check_labels(labels, len(x), n_classes)
    return _var_collapse(x, y, _class_stats(x, y, n_classes), normalizer, rtol)


def self_duality(weight, centred_means) -> float:
    """Self Duality ‖W/‖W‖_F − M/‖M‖_F‖_F² of the head W (C×D) and the centred class means M (C×D).

    Equal to 2 − 2 Tr(W Mᵀ)/(‖W‖_F ‖M‖_F): dimensionless, in [0, 4]; 0 when W ∝ M (ideal, the
    classifier is self-dual to the class means); lower = more collapse.  Invariant to positive
    scalings of W or M.
    """
    w = _check_rows(weight, "weight")
    m = _check_rows(centred_means, "centred class means")
    if w.shape != m.shape:
        raise ValueError(f"weight {w.shape} and centred class means {m.shape} must have the same shape (C×D)")
    nw, nm = np.linalg.norm(w), np.linalg.norm(m)
    if nw == 0 or nm == 0:
        raise ValueError("Self Duality is undefined for a zero weight matrix or zero class means")
    return float(np.sum((w / nw - m / nm) ** 2))


def nc_metrics(features, labels, weight, bias=None, normalizer: str = "authors", *, n_classes: int | None = None,
               rtol: float | None = None) -> dict[str, float]:
    """All eight NC metrics (keys :data:`METRICS`) of training features with their true labels.

    ``features`` N×D (already projected for the projected regimes), ``labels`` (N,) ground-truth
    class indices in [0, C), ``weight`` C×D and ``bias`` (C,) the classifier head; C is the number
    of rows of ``weight``, or ``n_classes`` = that number − 1 to drop Deep Gamblers' abstention row, the last
    (:func:`csfbench.heads.class_outputs`).
    ``bias`` is only shape-checked: none of the eight metrics uses it.  ``normalizer``
    selects Σ_W's normaliser (see :func:`var_collapse`).  Every metric is ≥ 0, 0 under perfect
    collapse (:data:`IDEAL`) and lower = more collapse.  Raises ValueError on mismatched shapes,
    NaN/inf, labels outside [0, C) or a class without samples.
    """
    _check_normalizer(normalizer)
    x = _check_features(features)
    w, _ = _check_head(weight, bias, x.shape[1], n_classes)
    y, n_classes = _check_labels(labels, len(x), len(w))
    stats = _class_stats(x, y, n_classes)
    m = stats.centred
    if not m.any():
        raise ValueError("all class means coincide (M = 0): the mean metrics and NC1 are undefined")
    return {
        EQNORM_MEANS: equinorm(m),
        EQNORM_WEIGHTS: equinorm(w),
        EQANG_MEANS: equiangularity(m),
        EQANG_WEIGHTS: equiangularity(w),
        MAX_EQANG_MEANS: max_equiangularity(m),
        MAX_EQANG_WEIGHTS: max_equiangularity(w),
        VAR_COLLAPSE: _var_collapse(x, y, stats, normalizer, rtol),
        SELF_DUALITY: self_duality(w, m),
    }


# ---------------------------------------------------------------- regimes

def _check_variance(v, group: str) -> float:
    v = float(v)
    if not 0 < v <= 1:
        raise ValueError(f"the {group} projection variance must be in (0, 1], got {v}")
    return v


def global_projection(features, correct, variance: float) -> np.ndarray:
    """ĥ = P Pᵀ(h − μ) + μ with the CSFs' global PCA: fitted on the correctly classified rows
    (all rows when none is correct, as in ``csfbench.csf.engine.fit_projection``), k components by
    the variance-kept rule ``n_components``."""
    x = np.asarray(features)
    correct = np.asarray(correct, dtype=bool)
    pca = Pca.fit(x[correct] if correct.any() else x)
    return project(x, pca.mean, pca.basis(_check_variance(variance, "global")))


def class_subspaces(features, labels, correct, variance: float, n_classes: int) -> ClassSubspaces:
    """The CSFs' class PCA subspaces: per class the correctly classified rows of that class (all its
    rows if none is correct, ``class_fit_data``), k_c by the variance-kept rule ``n_components``."""
    x = np.asarray(features)
    pcas = [Pca.fit(x[rows]) for rows in class_fit_data(x, np.asarray(labels), np.asarray(correct, bool), n_classes)]
    return ClassSubspaces.from_pcas(pcas, _check_variance(variance, "class"))


def project_predicted(features, pred, subspaces: ClassSubspaces) -> np.ndarray:
    """ĥ^pred = ĥ^ŷ: every row projected on the subspace of its **predicted** class.

    Equals ``class_views(features, pred, subspaces, ...).pred`` but projects each row onto its own
    predicted class only (cost N·D·k, memory one N×D array).
    """
    x = np.asarray(features)
    pred = np.asarray(pred)
    out = np.empty(x.shape, dtype=np.result_type(x.dtype, subspaces.bases.dtype))
    for c in np.unique(pred):
        rows = np.flatnonzero(pred == c)
        out[rows] = subspaces.project_class(x[rows], int(c))
    return out


def class_pred_projection(features, labels, pred, variance: float, n_classes: int) -> np.ndarray:
    """ĥ^pred with the class subspaces fitted as for the CSFs (:func:`class_subspaces`)."""
    labels, pred = np.asarray(labels), np.asarray(pred)
    return project_predicted(features, pred, class_subspaces(features, labels, pred == labels, variance, n_classes))


def _regime_inputs(variance, projections, dim: int, n_classes: int) -> dict:
    """Per projection group ("global", "class"): a fitted state or the variance to fit it with."""
    projections = dict(projections or {})
    unknown = set(projections) - {"global", "class"}
    if unknown:
        raise ValueError(f"projections has unknown keys {sorted(unknown)}; expected 'global' and/or 'class'")
    if isinstance(variance, Mapping):
        variances = dict(variance)
    else:
        variances = {} if variance is None else {"global": variance, "class": variance}
    out = {}
    for group in ("global", "class"):
        if group in projections:
            state = projections[group]
            if group == "global":
                if not {"mean", "basis"} <= set(state):
                    raise ValueError("projections['global'] needs 'mean' and 'basis' (the CSF global projection state)")
                if np.shape(state["mean"]) != (dim,) or np.shape(state["basis"])[0] != dim:
                    raise ValueError(f"projections['global'] does not match the feature dimension D = {dim}")
            else:
                if "subspaces" not in state:
                    raise ValueError("projections['class'] needs 'subspaces' (the CSF class projection state)")
                if np.shape(state["subspaces"].means) != (n_classes, dim):
                    raise ValueError(f"projections['class'] subspaces have means of shape "
                                     f"{np.shape(state['subspaces'].means)}, expected ({n_classes}, {dim})")
            out[group] = state
        elif group in variances:
            out[group] = _check_variance(variances[group], group)
        else:
            raise ValueError(f"no variance and no fitted projection given for the {group} projection "
                             "(pass variance=v, variance={'global': v_g, 'class': v_c} or projections=...)")
    return out


def nc_regimes(features, labels, pred, weight, bias, variance: float | Mapping[str, float] | None = None,
               normalizer: str = "authors", *, projections: Mapping[str, dict] | None = None,
               n_classes: int | None = None, rtol: float | None = None) -> dict[str, dict[str, float]]:
    """The NC metrics of the training features in the three regimes of the paper's §3.4.

    Returns {"none": unfiltered h, "global": global projection ĥ, "class_pred": class-predicted
    projection ĥ^pred (each row projected with its predicted class ``pred``, grouped by its true
    label)} → :func:`nc_metrics`.  The projections are the CSFs' (§3.2): either refitted here
    with the variance kept v — one float for both, or {"global": v_g, "class": v_c} with the values
    tuned for the CSFs; refitting on the same training rows reproduces their subspaces — or passed
    already fitted as ``projections={"global": state, "class": state}``, the projection states of
    ``csfbench.csf.engine.fit_projection`` / ``csfbench.csf.store.read_fit`` (``mean``/``basis``
    and ``subspaces``), which skips the C class PCAs.  The weight metrics are identical in every
    regime.  Memory: at most one projected N×D copy at a time.
    """
    _check_normalizer(normalizer)
    x = _check_features(features)
    w, b = _check_head(weight, bias, x.shape[1], n_classes)
    y, n_classes = _check_labels(labels, len(x), len(w))
    p, _ = _check_labels(pred, len(x), n_classes, name="pred")
    _check_counts(y, n_classes)
    fits = _regime_inputs(variance, projections, x.shape[1], n_classes)

    def global_view():
        state = fits["global"]
        if isinstance(state, float):
            return global_projection(x, p == y, state)
        return project(x, np.asarray(state["mean"]), np.asarray(state["basis"]))

    def class_pred_view():
        state = fits["class"]
        if isinstance(state, float):
            return class_pred_projection(x, y, p, state, n_classes)
        return project_predicted(x, p, state["subspaces"])

    views = {"none": lambda: x, "global": global_view, "class_pred": class_pred_view}  # one N×D copy at a time
    return {regime: nc_metrics(views[regime](), y, w, b, normalizer, rtol=rtol) for regime in REGIMES}
