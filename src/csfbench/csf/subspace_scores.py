"""Feature-subspace confidence scores: Residual and ViM (Wang et al., 2022) and NeCo (Ammar et al., 2023);
Claros-Olivares & Brockmeier, App. A.3.12–A.3.13.

Shapes: N samples, D feature dimensions, C classes, Dp principal dimensions.  ``features`` are the
penultimate features h (N×D), ``logits`` z = W h + b (N×C), ``weight`` W (C×D), ``bias`` b (C,).
For Deep Gamblers the caller decides whether the abstention row is dropped (the authors'
code keeps it for these three scores only).

Every score is a float64 array (N,), oriented as a **confidence**: higher = more in-distribution
(the residual norm and the ViM virtual logit are negated).  Inputs may be float32 or
float64.  Arithmetic runs in row blocks (on several threads:
:func:`csfbench.csf.blocks.map_row_blocks`) so that the copies stay bounded for large N.
Fitted states are dicts of numpy arrays (HDF5-storable).

Precision: the matrix products run in float32 (BLAS, accumulating in float32 within a row block),
the features' storage precision in the feature files; float64 features are rounded to float32 for them. The
sums over the blocks, alpha's means and the eigenvectors are float64.
- The second moment (:func:`scatter_about`): float32 products of row blocks centred on their own
  mean, plus the float64 remainder for the centre.  A float32 product about u, as pytorch-ood and the
  ViM authors' code form it, is rounded relative to the mean term, which dwarfs the spread.  The
  residual subspace can be ill-determined (a tiny eigenvalue gap at Dp); centring each block keeps
  the numerical error far below the fit's own sensitivity to its data (dropping one training row).
- The per-row residual ``Rᵀ(h − u)`` (the dominant cost of fitting alpha and of scoring) is
  evaluated as ``Rᵀh − Rᵀu``, without a centred copy: its error, about 2^-24 (‖h‖ + ‖u‖) per
  coordinate, is of the order of what rounding the features themselves to float32 already changes
  as long as the origin u = −W⁺b is not far larger than the features (‖u‖ ≲ ‖h‖, the usual case
  of a small bias), and is tested against the float64 rule.
Float32 products are cheaper than float64 ones (docs/benchmarks.md).

The validation, blocking and eigen-decomposition helpers here are shared with
:mod:`csfbench.csf.kpca`.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf import blocks, torch_kernels
from csfbench.csf.blocks import (column_mean, is_row_source, map_row_blocks, row_blocks, single_threaded_blas,
                                 sum_row_blocks)
from csfbench.csf.device import torch_device
from csfbench.csf.logit_scores import energy, row_max

#: a mean training residual below this fraction of RMS ‖h − u‖ + ‖u‖ counts as zero (ViM's alpha
#: undefined); the float32 residual products leave rounding noise of about 2^-24 (‖h‖ + ‖u‖), and
#: ‖h‖ <= ‖h − u‖ + ‖u‖
RESIDUAL_RTOL = 1e-5
#: rows per block of :func:`scatter_about`'s float32 products
SCATTER_BLOCK_ROWS = 2048
#: :func:`scatter_about` redoes a block scaled by a power of two when its float32 products overflowed or
#: its columns' largest |mean| or RMS spread is below this: entries down to 2^-24 of the largest then
#: keep normal float32 squares
SMALLEST_UNSCALED = 2.0**-38


def _finite(x: np.ndarray, name: str) -> np.ndarray:
    # a NaN/Inf entry makes its row sum NaN/Inf, so finite row sums (matrix-vector products in row
    # blocks, no N×D boolean temporary) prove the check; only non-finite sums, which finite entries
    # can also give by overflow, need the entrywise test
    row_sums = x
    if x.ndim == 2:
        row_sums, ones = np.empty(x.shape[0]), np.ones(x.shape[1], dtype=x.dtype)

        def block(rows):
            with np.errstate(over="ignore", invalid="ignore"):  # errstate is per thread
                np.copyto(row_sums[rows], x[rows] @ ones)

        map_row_blocks(block, x.shape[0], x.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(row_sums.sum()):
            return x
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contains {int(np.count_nonzero(~np.isfinite(x)))} NaN/Inf value(s)")
    return x


def finite_from(result: np.ndarray, x: np.ndarray, name: str) -> np.ndarray:
    """``result``, computed from ``x`` (validated with ``check_finite=False``): a NaN/Inf entry of ``x``
    propagates through the sums and products into ``result``, so ``x`` is searched for one, at the
    cost of another pass over it, only when ``result`` is not finite; finite ``x`` then overflowed."""
    if np.isfinite(result).all():
        return result
    _finite(x, name)
    raise ValueError(f"{name} has finite values too large for the computation (overflow to Inf)")


def as_matrix(x, name: str, min_rows: int = 1, n_cols: int | None = None, check_finite: bool = True) -> np.ndarray:
    """``x`` as a 2-D float array (float32 kept, anything else float64), else ValueError; finite,
    unless ``check_finite=False`` defers that check to the result (:func:`finite_from`).  A row source
    (:class:`~csfbench.csf.blocks.RowSource`, read in row blocks) is checked and returned as it is."""
    x = x if is_row_source(x) else np.asarray(x)
    if not is_row_source(x) and x.dtype != np.float32:
        x = x.astype(np.float64, copy=False)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (samples × columns), got shape {x.shape}")
    if x.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows (samples), got {x.shape[0]}")
    if n_cols is not None and x.shape[1] != n_cols:
        raise ValueError(f"{name} must have {n_cols} columns, got shape {x.shape}")
    return _finite(x, name) if check_finite else x


def as_vector(x, name: str, length: int | None = None) -> np.ndarray:
    """``x`` as a finite 1-D float64 array (of ``length`` when given), else ValueError."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {x.shape}")
    if length is not None and x.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {x.shape[0]}")
    return _finite(x, name)


def as_logits(logits, n_rows: int) -> np.ndarray:
    """``logits`` as a finite N×C float64 array with ``n_rows`` rows, else ValueError."""
    logits = as_matrix(logits, "logits").astype(np.float64, copy=False)
    if logits.shape[0] != n_rows:
        raise ValueError(f"logits must have one row per feature row ({n_rows}), got shape {logits.shape}")
    return logits


def eigh_descending(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and matching eigenvector columns of a symmetric matrix."""
    values, vectors = np.linalg.eigh(matrix)
    return values[::-1], vectors[:, ::-1]


def scatter_about(features: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Σ_i (h_i − o)(h_i − o)ᵀ over the rows h_i of ``features`` (D×D, float64).

    Fixed blocks of :data:`SCATTER_BLOCK_ROWS` rows (on several threads) are each centred on an
    approximate mean m of their own, and their products Σ c cᵀ, c = h − m, and sums Σc run in
    float32 (BLAS), half the time of float64; float64 features are rounded to float32 for them.
    The remainder for the centre, (Σc)(m − o)ᵀ + (m − o)(Σc)ᵀ + n(m − o)(m − o)ᵀ, and the sum
    over the blocks are float64.  Centring takes the mean, the largest term, out of the float32
    rounding (module docstring, "Precision"); a block with tiny or overflowing products is redone
    scaled by a power of two (:data:`SMALLEST_UNSCALED`), so the range is float64's; the fixed
    blocks give the same result on any number of threads.

    On a torch device (:func:`csfbench.csf.device.compute_device`): float64 products of the rows centred on
    ``origin`` (:func:`csfbench.csf.torch_kernels.scatter`), more accurate than these float32 ones, which
    they match within this kernel's float32 error (within 1e-5 of the largest diagonal entry; 1.2e-6 measured
    for 10,000 × 512 features).
    """
    if torch_device() is not None:
        return torch_kernels.scatter(features, np.asarray(origin, dtype=np.float64)[None])
    n_rows, dim = features.shape
    block_rows = min(SCATTER_BLOCK_ROWS, blocks.MAX_BLOCK_ROWS)
    ones = np.ones(min(block_rows, n_rows), dtype=np.float32)
    # per block: the float64 vectors (Σc + n(m − o)/2) and (m − o), whose outer products make the remainder
    sums, shifts = np.empty((2, -(-n_rows // block_rows), dim))

    def centred_products(block):
        n = block.shape[0]
        block = block.astype(np.float32, copy=False)
        centre = ones[:n] @ block / np.float32(n)
        centred = block - centre
        return centre, centred, np.dot(centred.T, centred)  # np.dot of a transposed self-product uses BLAS syrk

    def term(rows):
        with np.errstate(over="ignore", invalid="ignore"):  # the callers check the result (finite_from)
            block = features[rows]
            n, i, scale = block.shape[0], rows.start // block_rows, 1.0
            centre, centred, products = centred_products(block)
            # largest |mean| or RMS spread of a column: at most twice the largest |entry|
            magnitude = max(np.abs(centre).max(), np.sqrt(products.diagonal().max() / n))
            if not SMALLEST_UNSCALED <= magnitude < np.inf:  # tiny, or overflowed (NaN/Inf input stays so)
                peak = float(max(block.max(), -block.min()))
                if 0.0 < peak < np.inf:
                    scale = np.ldexp(1.0, -np.frexp(peak)[1])  # exact: the largest magnitude becomes [0.5, 1)
                    centre, centred, products = centred_products(block * scale)
            shifts[i] = centre.astype(np.float64) / scale - origin
            sums[i] = (ones[:n] @ centred).astype(np.float64) / scale + 0.5 * n * shifts[i]
            products = products.astype(np.float64)
            if scale != 1.0:
                products /= scale
                products /= scale  # not scale², which can leave float64's range when the result does not
            return products

    total = sum_row_blocks(term, n_rows, dim, block_rows=block_rows)
    with np.errstate(over="ignore", invalid="ignore"), single_threaded_blas():
        remainder = sums.T @ shifts
        total += remainder + remainder.T  # exactly symmetric
    return total


def principal_dim(feature_dim: int) -> int:
    """ViM/Residual principal dimension Dp (the rule of the ViM reference code and of the authors' code).

    D ≥ 2048 → 1000; D ≥ 768 → 512; otherwise D // 2 (VGG-13, D = 512 → 256; ViT, D = 768 → 512).
    """
    if int(feature_dim) != feature_dim or feature_dim < 2:
        raise ValueError(f"feature_dim must be an integer >= 2, got {feature_dim!r}")
    if feature_dim >= 2048:
        return 1000
    if feature_dim >= 768:
        return 512
    return int(feature_dim) // 2


def _residual_norm(features: np.ndarray, origin: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """‖Rᵀ(h − u)‖₂ per row (N,) float64, in row blocks on several threads.

    Evaluated as ‖Rᵀh − Rᵀu‖ in float32 (module docstring, "Precision"): the product Rᵀh (the
    dominant cost) takes the features as stored, without a centred copy, and Rᵀu is formed in
    float64 and rounded once.
    """
    norms = np.empty(features.shape[0])
    basis32 = basis.astype(np.float32)
    offset = (origin @ basis).astype(np.float32)

    def block(rows):
        with np.errstate(over="ignore", invalid="ignore"):  # the callers check the result (finite_from)
            projected = features[rows].astype(np.float32, copy=False) @ basis32
            projected -= offset
            np.sqrt(np.einsum("ij,ij->i", projected, projected), out=norms[rows])

    map_row_blocks(block, features.shape[0], features.shape[1])
    return norms


def _check_subspace(features, origin, basis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    origin = as_vector(origin, "origin")
    basis = as_matrix(basis, "basis")
    if basis.shape[0] != origin.shape[0]:
        raise ValueError(f"basis must be D×(D−Dp) with D = len(origin) = {origin.shape[0]}, got {basis.shape}")
    features = as_matrix(features, "features", n_cols=origin.shape[0], check_finite=False)
    return features, origin, basis


def vim_fit(features, logits, weight, bias, principal_dim: int) -> dict[str, np.ndarray]:
    """Fit the ViM/Residual state on the training split (as in the ViM reference code).

    - origin u = −W⁺ b (D,);
    - second moment about u, (H − u)ᵀ(H − u) / (N − 1), *not* re-centred; its eigenvectors sorted by
      eigenvalue descending; basis R = eigenvectors Dp+1..D (D×(D−Dp)), the residual subspace;
    - alpha = mean_train(max_k z_k) / mean_train(‖Rᵀ(h − u)‖) (0-d array).

    ``features`` N×D and ``logits`` N×C are the training ones, ``weight`` C×D, ``bias`` (C,);
    0 <= ``principal_dim`` < D.  Needs N >= 2 and a training residual that is not identically 0.
    """
    features = as_matrix(features, "features", min_rows=2, check_finite=False)
    n, dim = features.shape
    if not is_row_source(logits):
        logits = as_logits(logits, n)
    elif len(logits) != n:
        raise ValueError(f"logits must have one row per feature row ({n}), got shape {logits.shape}")
    weight = as_matrix(weight, "weight", n_cols=dim)
    bias = as_vector(bias, "bias", length=weight.shape[0])
    if not 0 <= principal_dim < dim:
        raise ValueError(f"principal_dim must lie in [0, D) = [0, {dim}), got {principal_dim}")
    with single_threaded_blas():
        origin = -np.linalg.pinv(weight.astype(np.float64)) @ bias
    second_moment = finite_from(scatter_about(features, origin) / (n - 1), features, "features")
    with single_threaded_blas():
        _, vectors = eigh_descending(second_moment)
    basis = np.ascontiguousarray(vectors[:, principal_dim:])
    mean_residual = finite_from(_residual_norm(features, origin, basis), features, "features").mean()
    if mean_residual <= RESIDUAL_RTOL * (np.sqrt(np.trace(second_moment)) + np.linalg.norm(origin)):
        raise ValueError(f"the {n} training features have (numerically) no residual outside the top "
                         f"{principal_dim} principal directions, so ViM's alpha is undefined; it needs more "
                         f"samples than principal_dim spanning more than {principal_dim} dimensions")
    # the mean of the training rows' largest logits, summed in float64 over row blocks
    alpha = sum_row_blocks(lambda rows: np.sum(row_max(logits[rows]), keepdims=True), n, logits.shape[1])[0] / n
    alpha /= mean_residual
    return {"origin": origin, "basis": basis, "alpha": np.asarray(alpha)}


def residual_score(features, origin, basis) -> np.ndarray:
    """Residual confidence −‖Rᵀ(h − u)‖₂ (App. A.3.12); (N,), <= 0, higher = more ID."""
    features, origin, basis = _check_subspace(features, origin, basis)
    return -finite_from(_residual_norm(features, origin, basis), features, "features")


def vim_score(features, logits, origin, basis, alpha) -> np.ndarray:
    """ViM confidence LSE(z) − α‖Rᵀ(h − u)‖₂ (App. A.3.12); (N,), higher = more ID.

    This is −(virtual logit − energy), a monotone transform of the ViM probability of "OOD".
    """
    features, origin, basis = _check_subspace(features, origin, basis)
    logits = as_logits(logits, features.shape[0])
    residual = finite_from(_residual_norm(features, origin, basis), features, "features")
    return energy(logits) - float(alpha) * residual


def neco_fit(features, n_components: int = 100) -> dict[str, np.ndarray]:
    """Fit NeCo's PCA on the training features (App. A.3.13; fitted on the centred features as in the
    authors' code).

    Returns ``mean`` μ (D,) and ``components`` (d×D, orthonormal rows): the top-d principal
    directions of the centred training features, d = min(n_components, N, D).  They come from the
    eigen-decomposition of the D×D scatter matrix, which spans the same directions as the full SVD
    of the centred data (signs may differ; NeCo only uses norms) without an N×D float64 copy.
    """
    features = as_matrix(features, "features", min_rows=2)
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}")
    n, dim = features.shape
    mean = column_mean(features)
    _, vectors = eigh_descending(finite_from(scatter_about(features, mean), features, "features"))
    d = min(n_components, n, dim)
    return {"mean": mean, "components": np.ascontiguousarray(vectors[:, :d].T)}


def neco_score(features, logits, mean, components, centered: bool) -> np.ndarray:
    """NeCo confidence (App. A.3.13, times the max logit as in the authors' code); (N,), higher = more ID.

    - ``centered=True`` (CNN): ‖P_dᵀ(h − μ)‖ / ‖h − μ‖ · max_k z_k.
    - ``centered=False`` (ViT, authors' code): the raw h goes into the PCA ``transform``, which
      subtracts the PCA's own fitted mean.  That PCA was fitted on the *centred* training features,
      so its mean is 0 and the score is ‖P_dᵀ h‖ / ‖h‖ · max_k z_k (μ is not used).

    A zero denominator gives a ratio of 0.
    """
    mean = as_vector(mean, "mean")
    components = as_matrix(components, "components", n_cols=mean.shape[0])
    features = as_matrix(features, "features", n_cols=mean.shape[0])
    logits = as_logits(logits, features.shape[0])
    ratio = np.empty(features.shape[0])
    for rows in row_blocks(features.shape[0], features.shape[1]):
        h = features[rows].astype(np.float64)
        if centered:
            h = h - mean
        full = np.maximum(np.linalg.norm(h, axis=1), np.finfo(np.float64).tiny)
        ratio[rows] = np.linalg.norm(h @ components.T, axis=1) / full
    return ratio * row_max(logits)
