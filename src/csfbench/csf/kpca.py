"""KPCA reconstruction-error confidence with a Nyström feature map (Fang et al., 2025; Claros-Olivares &
Brockmeier, App. A.3.11), as in the authors' code (src/csfs/kernel_pca.py of
github.com/cesar-claros/ood_systematic).

Shapes: N samples, D feature dimensions, L landmarks, q kept components, C classes.

1. ĥ = h / (‖h‖ + 1e-12); RBF kernel k(a, b) = exp(−γ‖a − b‖²) between unit vectors.
2. Landmarks X_ref: the L training points with the smallest T·LSE(z/T) (the highest-energy, least
   confident points, as in the authors' code; the paper's "low-energy ID points near the boundary"
   contradicts itself), all points if L >= N.
3. K_mm = V Λ Vᵀ with Λ clamped >= 1e-12; ``normalizer`` N = V Λ^(-1/2) Vᵀ;
   ψ(x) = k(ĥ, X_ref) Nᵀ ∈ R^L.
4. ``mean`` ψ̄ = training mean of ψ; the unbiased covariance of ψ − ψ̄, eigen-decomposed in
   descending order; q = #{j: ρ_j <= v} + 1 (capped at L); ``components`` U = top-q eigenvectors.
5. conf(x) = −‖(I − U Uᵀ)(ψ(x) − ψ̄)‖₂: unsquared, not norm-regularised (the authors' code; the
   paper's norm-regularised r̃ is ``normalized=True`` of :func:`kpca_score`).
6. Class mode: one KPCA per class on that class's training samples (:func:`kpca_fit_classes`).

Every score is a float64 array (N,), oriented as a **confidence**: higher = more in-distribution
(the reconstruction error is negated).  Work over samples is done in row blocks, so no
N×L array is ever held: the training pass accumulates Σψ and ψᵀψ blockwise (shifted by the first
block's mean to avoid cancellation).  States are dicts of numpy arrays (HDF5-storable).

Hyper-parameter tuning: :func:`kpca_decompose` does the expensive part for fixed (γ, L) and
:func:`kpca_truncate` picks the components for a variance v, so several v reuse one decomposition
(:func:`kpca_fit` is the two in sequence; the ``_classes`` functions mirror them per class).

Precision: everything is float64.  A float32 kernel is not used: the Nyström map and the residual
projection multiply kernel rows by K_mm^(-1/2)-sized matrices, whose entries are unbounded in general
(the eigenvalue floor is 1e-12), which would amplify the ~1e-7 float32 kernel error far beyond the
1e-8 agreement with the direct computation that the tests require.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.projection import n_components
from csfbench.csf.blocks import row_blocks
from csfbench.csf.subspace_scores import as_matrix, as_vector, eigh_descending

#: eigenvalue floor of K_mm before the inverse square root (step 3 of the module docstring)
EIGENVALUE_FLOOR = 1e-12
#: largest λ_max/λ_min of K_mm for which the covariance of ψ is formed from the kernel rows' scatter
#: (see :func:`kpca_decompose`): the relative error amplification stays below ~1e6 · 1e-16
SANDWICH_MAX_CONDITION = 1e6
#: added to ‖h‖ before normalising (step 1) and to ‖ψ‖ in the normalised score
NORM_EPS = 1e-12

_STATE_KEYS = ("landmarks", "normalizer", "mean", "components")

def _unit_rows(features: np.ndarray) -> np.ndarray:
    """ĥ = h / (‖h‖₂ + 1e-12) per row, float64."""
    h = features.astype(np.float64)
    return h / (np.linalg.norm(h, axis=1, keepdims=True) + NORM_EPS)


def _exponent_rows(a: np.ndarray, gamma: float) -> np.ndarray:
    """[2γa, −γ‖a‖², −γ] per row (n×(D+2)): the left factor of :func:`_rbf`."""
    sq = np.einsum("ij,ij->i", a, a)[:, None]
    return np.hstack([(2.0 * gamma) * a, -gamma * sq, np.full_like(sq, -gamma)])


def _distance_rows(b: np.ndarray) -> np.ndarray:
    """[b, 1, ‖b‖²] per row (m×(D+2)): the right factor of :func:`_rbf`."""
    sq = np.einsum("ij,ij->i", b, b)[:, None]
    return np.hstack([b, np.ones_like(sq), sq])


def _rbf(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """exp(min(left rightᵀ, 0)) = exp(−γ max(‖a_i − b_j‖², 0)) from the factors of a and b.

    The exponent 2γa·b − γ‖a‖² − γ‖b‖² comes out of one matrix product, so only the clamp and the
    exp pass over the n×m result (instead of six elementwise passes).
    """
    exponent = left @ right.T
    np.minimum(exponent, 0.0, out=exponent)
    return np.exp(exponent, out=exponent)


def rbf_kernel(a: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    """exp(−γ‖a_i − b_j‖²) for rows a (n×D) and b (m×D): n×m (squared distances clamped >= 0)."""
    return _rbf(_exponent_rows(a, gamma), _distance_rows(b))


def _check_gamma(gamma: float) -> float:
    if not (np.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be a finite positive number, got {gamma!r}")
    return float(gamma)


def select_landmarks(energy, n_landmarks: int) -> np.ndarray:
    """Indices (int64, ascending energy) of the ``n_landmarks`` smallest values of ``energy`` (N,).

    ``energy`` is T·LSE(z/T) of the training points, so these are the highest-energy (least
    confident) points (step 2 of the module docstring).  Ties keep the original order (stable sort);
    all N indices when ``n_landmarks`` >= N.
    """
    energy = as_vector(energy, "energy")
    if int(n_landmarks) != n_landmarks or n_landmarks < 1:
        raise ValueError(f"n_landmarks must be an integer >= 1, got {n_landmarks!r}")
    return np.argsort(energy, kind="stable")[: int(n_landmarks)].astype(np.int64)


def _feature_map(features: np.ndarray, landmarks: np.ndarray, normalizer: np.ndarray, gamma: float) -> np.ndarray:
    """Nyström map ψ(x) = k(ĥ, X_ref) Nᵀ for one block of raw features: B×L."""
    return rbf_kernel(_unit_rows(features), landmarks, gamma) @ normalizer.T


def kernel_scatter_is_safe(eigenvalues: np.ndarray) -> bool:
    """Whether Cov(ψ) may be formed from the kernel rows' scatter: K_mm's descending ``eigenvalues``
    are all above the floor and λ_max / λ_min <= :data:`SANDWICH_MAX_CONDITION`."""
    return bool(eigenvalues[-1] >= EIGENVALUE_FLOOR and eigenvalues[0] <= SANDWICH_MAX_CONDITION * eigenvalues[-1])


def kpca_decompose(features, energy, gamma: float, n_landmarks: int) -> dict[str, np.ndarray]:
    """The variance-independent part of :func:`kpca_fit` for fixed (γ, n_landmarks).

    ``features`` N×D and ``energy`` (N,) are the training ones (N >= 2).  Returns ``landmarks``
    (L×D, the unit-normalised X_ref), ``normalizer`` (L×L), ``mean`` ψ̄ (L,), and the descending
    ``eigenvalues`` (L,) / ``eigenvectors`` (L×L, columns) of the unbiased covariance of ψ − ψ̄.

    Since ψ = k Nᵀ is linear in the kernel row k = k(ĥ, X_ref), Cov(ψ) = N Cov(k) Nᵀ and ψ̄ = N k̄.
    When K_mm is well conditioned (λ_max / λ_min <= :data:`SANDWICH_MAX_CONDITION`) the training
    pass therefore accumulates only the kernel rows' scatter (one N×L×L/2 syrk) and applies N twice
    to the L×L result, instead of mapping every row through N (an N×L×L product) and then
    accumulating ψ's scatter: about half the work of the dominant products.  The rounding error of
    Cov(k) is amplified by at most ‖N‖² = 1/λ_min relative to ‖K_mm‖, so past the threshold (and
    whenever the eigenvalue floor is active) the rows are mapped explicitly (step 3).
    """
    features = as_matrix(features, "features", min_rows=2)
    n = features.shape[0]
    energy = as_vector(energy, "energy", length=n)
    gamma = _check_gamma(gamma)
    landmarks = _unit_rows(features[select_landmarks(energy, n_landmarks)])
    values, vectors = eigh_descending(rbf_kernel(landmarks, landmarks, gamma))
    normalizer = (vectors / np.sqrt(np.maximum(values, EIGENVALUE_FLOOR))) @ vectors.T
    well_conditioned = kernel_scatter_is_safe(values)
    right = _distance_rows(landmarks)
    n_land = landmarks.shape[0]
    shift, offset_sum, scatter = None, np.zeros(n_land), np.zeros((n_land, n_land))
    for rows in row_blocks(n, max(n_land, features.shape[1])):
        rows_out = _rbf(_exponent_rows(_unit_rows(features[rows]), gamma), right)  # kernel rows k
        if not well_conditioned:
            rows_out = rows_out @ normalizer.T                                      # ψ = k Nᵀ
        if shift is None:
            shift = rows_out.mean(axis=0)
        rows_out -= shift
        offset_sum += rows_out.sum(axis=0)
        scatter += np.dot(rows_out.T, rows_out)  # np.dot of a transposed self-product uses BLAS syrk
    offset = offset_sum / n
    covariance = (scatter - n * np.outer(offset, offset)) / (n - 1)
    mean = shift + offset
    if well_conditioned:
        covariance = normalizer @ covariance @ normalizer.T
        covariance = (covariance + covariance.T) / 2  # symmetric up to rounding; eigh reads one triangle
        mean = normalizer @ mean
    eigenvalues, eigenvectors = eigh_descending(covariance)
    return {"landmarks": landmarks, "normalizer": normalizer, "mean": mean,
            "eigenvalues": eigenvalues, "eigenvectors": eigenvectors}


def kpca_truncate(decomposition: dict[str, np.ndarray], variance: float) -> dict[str, np.ndarray]:
    """KPCA state for variance v from a :func:`kpca_decompose` result (step 4 of the module docstring).

    q = #{j: ρ_j <= v} + 1, capped at L, with ρ the cumulative explained-variance ratio; returns
    ``landmarks`` (L×D), ``normalizer`` (L×L), ``mean`` (L,), ``components`` (L×q).
    """
    if not 0 <= variance <= 1:
        raise ValueError(f"variance must lie in [0, 1], got {variance!r}")
    eigenvalues = decomposition["eigenvalues"]
    if not eigenvalues.sum() > 0:
        raise ValueError("the training features have zero variance in the kernel feature space "
                         "(all points map to the same ψ); KPCA needs distinct training features")
    q = n_components(eigenvalues, variance)
    state = {key: decomposition[key] for key in ("landmarks", "normalizer", "mean")}
    state["components"] = np.ascontiguousarray(decomposition["eigenvectors"][:, :q])
    return state


def kpca_fit(features, energy, gamma: float, n_landmarks: int, variance: float) -> dict[str, np.ndarray]:
    """Fit global KPCA RecError (steps 1–4): ``kpca_truncate(kpca_decompose(...), variance)``.

    ``features`` N×D (N >= 2) and ``energy`` (N,) = T·LSE(z/T) of the training split; γ > 0;
    v ∈ [0, 1].  State layout: see :func:`kpca_truncate`.
    """
    return kpca_truncate(kpca_decompose(features, energy, gamma, n_landmarks), variance)


def _residuals(features: np.ndarray, state: dict[str, np.ndarray], gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """ψ(x) and the residual (I − U Uᵀ)(ψ(x) − ψ̄) for one block of raw features: both B×L."""
    psi = _feature_map(features, state["landmarks"], state["normalizer"], gamma)
    centred = psi - state["mean"]
    components = state["components"]
    return psi, centred - (centred @ components) @ components.T


def _residual_map(state: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(landmarks, A, m) with (I − UUᵀ)(ψ(x) − ψ̄) = k(ĥ, X_ref) A − m: one L×L product per block.

    A = Nᵀ(I − UUᵀ) and m = (I − UUᵀ)ψ̄ fold the Nyström normaliser and the residual projection
    into one matrix, which the class-mode scoring applies for every class and row block.
    """
    components = state["components"]
    normalizer_t = state["normalizer"].T
    linear = normalizer_t - (normalizer_t @ components) @ components.T
    offset = state["mean"] - components @ (components.T @ state["mean"])
    return state["landmarks"], linear, offset


def _check_features(features, landmarks: np.ndarray) -> np.ndarray:
    return as_matrix(features, "features", n_cols=landmarks.shape[-1])


def kpca_score(features, state: dict[str, np.ndarray], gamma: float, *, normalized: bool = False) -> np.ndarray:
    """KPCA RecError confidence (step 5); (N,), <= 0, higher = more ID.

    ``normalized=False`` (default, authors' code): −‖(I − U Uᵀ)(ψ(x) − ψ̄)‖₂.
    ``normalized=True``: the norm-regularised −r̃ = −error / (‖ψ(x)‖₂ + 1e-12) (the paper's r̃, unsquared),
    with the raw, uncentred ψ(x).  ``gamma`` must be the one used in the fit.
    """
    gamma = _check_gamma(gamma)
    features = _check_features(features, state["landmarks"])
    conf = np.empty(features.shape[0])
    for rows in row_blocks(features.shape[0], max(state["landmarks"].shape)):
        psi, residual = _residuals(features[rows], state, gamma)
        error = np.linalg.norm(residual, axis=1)
        if normalized:
            error /= np.linalg.norm(psi, axis=1) + NORM_EPS
        conf[rows] = -error
    return conf


def _class_members(labels, n_classes: int, n_rows: int) -> list[np.ndarray]:
    """Row indices of each class 0..C−1; ValueError unless every class has >= 2 samples."""
    labels = np.asarray(labels)
    if labels.shape != (n_rows,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be {n_rows} integers, got shape {labels.shape} and dtype {labels.dtype}")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}), got range [{labels.min()}, {labels.max()}]")
    members = [np.flatnonzero(labels == c) for c in range(n_classes)]
    too_small = {c: len(m) for c, m in enumerate(members) if len(m) < 2}
    if too_small:
        raise ValueError(f"class KPCA needs >= 2 training samples per class; too few in {too_small}")
    return members


def kpca_decompose_classes(features, labels, energy, n_classes: int, gamma: float,
                           n_landmarks: int) -> dict[str, np.ndarray]:
    """:func:`kpca_decompose` per class on that class's training samples, stacked (step 6).

    Every class gets L_c = min(n_landmarks, smallest class size) landmarks, chosen inside the class
    by the energy rule, so that ``class_avg`` is defined.  Arrays gain a leading class axis:
    ``landmarks`` C×L×D, ``normalizer`` C×L×L, ``mean`` C×L, ``eigenvalues`` C×L,
    ``eigenvectors`` C×L×L.
    """
    features = as_matrix(features, "features", min_rows=2)
    energy = as_vector(energy, "energy", length=features.shape[0])
    members = _class_members(labels, n_classes, features.shape[0])
    n_land = min(int(n_landmarks), min(len(m) for m in members))
    parts = [kpca_decompose(features[m], energy[m], gamma, n_land) for m in members]
    return {key: np.stack([p[key] for p in parts]) for key in parts[0]}


def kpca_truncate_classes(decomposition: dict[str, np.ndarray], variance: float) -> dict[str, np.ndarray]:
    """:func:`kpca_truncate` per class with one shared v.

    State: ``landmarks`` C×L×D, ``normalizer`` C×L×L, ``mean`` C×L, ``components`` C×L×q_max
    (class c's U_c in the first ``q[c]`` columns, zeros after), ``q`` (C,) int64.
    """
    n_classes, n_land = decomposition["mean"].shape
    states = [kpca_truncate({key: value[c] for key, value in decomposition.items()}, variance)
              for c in range(n_classes)]
    q = np.array([s["components"].shape[1] for s in states], dtype=np.int64)
    components = np.zeros((n_classes, n_land, int(q.max())))
    for c, s in enumerate(states):
        components[c, :, : q[c]] = s["components"]
    stacked = {key: decomposition[key] for key in ("landmarks", "normalizer", "mean")}
    return {**stacked, "components": components, "q": q}


def kpca_fit_classes(features, labels, energy, n_classes: int, gamma: float, n_landmarks: int,
                     variance: float) -> dict[str, np.ndarray]:
    """Class-mode KPCA: ``kpca_truncate_classes(kpca_decompose_classes(...), variance)``.

    ``labels`` (N,) are the training labels in [0, C); every class needs >= 2 samples.
    """
    return kpca_truncate_classes(
        kpca_decompose_classes(features, labels, energy, n_classes, gamma, n_landmarks), variance)


def _class_state(state: dict[str, np.ndarray], c: int) -> dict[str, np.ndarray]:
    """Class c's global-layout state from a stacked class state (padding columns dropped)."""
    single = {key: state[key][c] for key in _STATE_KEYS}
    single["components"] = single["components"][:, : state["q"][c]]
    return single


def kpca_score_classes(features, state: dict[str, np.ndarray], gamma: float, pred) -> dict[str, np.ndarray]:
    """Class-mode KPCA RecError confidences (step 6); each (N,), higher = more ID.

    With per-class confidences conf_c(x) = −‖r_c(x)‖, r_c = (I − U_cU_cᵀ)(ψ_c(x) − ψ̄_c):

    - ``class``: max_c conf_c(x);
    - ``class_pred``: conf_c(x) at c = ``pred`` (the predicted class, (N,) ints in [0, C));
    - ``class_avg``: −‖mean_c[U_cU_cᵀ(ψ_c − ψ̄_c)] − mean_c[ψ_c − ψ̄_c]‖ = −‖Σ_c r_c(x)‖ / C.
    """
    gamma = _check_gamma(gamma)
    features = _check_features(features, state["landmarks"])
    n_classes, n_land = state["mean"].shape
    pred = np.asarray(pred)
    if pred.shape != (features.shape[0],) or not np.issubdtype(pred.dtype, np.integer) \
            or (pred.size and (pred.min() < 0 or pred.max() >= n_classes)):
        raise ValueError(f"pred must be {features.shape[0]} integers in [0, {n_classes}), "
                         f"got shape {pred.shape} and dtype {pred.dtype}")
    per_class = np.empty((features.shape[0], n_classes))
    class_avg = np.empty(features.shape[0])
    maps = [_residual_map(_class_state(state, c)) for c in range(n_classes)]
    maps = [(_distance_rows(landmarks), linear, offset) for landmarks, linear, offset in maps]
    for rows in row_blocks(features.shape[0], max(n_land, features.shape[1])):
        left = _exponent_rows(_unit_rows(features[rows]), gamma)  # once per block, not once per class
        residual_sum = np.zeros((rows.stop - rows.start, n_land))
        for c, (right, linear, offset) in enumerate(maps):
            residual = _rbf(left, right) @ linear
            residual -= offset
            per_class[rows, c] = -np.sqrt(np.einsum("ij,ij->i", residual, residual))
            residual_sum += residual
        class_avg[rows] = -np.linalg.norm(residual_sum, axis=1) / n_classes
    return {"class": per_class.max(axis=1),
            "class_pred": per_class[np.arange(features.shape[0]), pred],
            "class_avg": class_avg}
