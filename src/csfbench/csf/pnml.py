"""pNML regret of the last layer (Bibas et al., 2021, as in their official pNML-OOD code; Claros-Olivares &
Brockmeier, App. A.3.8, print the formula with garbled symbols).

Features are normalised and bias-augmented, ``x̃ = [1, h/||h||]`` (D+1).  Fit:
``P = X̃^T X̃``, ``P_plus = P^+``, ``P_perp = I - P^+ P``.  Score, per sample:
``q = softmax(W h/||h|| + b)`` (no temperature); ``x̃^T g = max(x̃^T P_perp x̃, a / (1 + a))`` with
``a = x̃^T P_plus x̃``; genie ``q̂_k = q_k / (q_k + (1 - q_k) q_k^(x̃^T g))``; regret
``Γ = log(sum_k q̂_k) / log C`` in [0, 1]; confidence = ``-Γ`` (higher = in-distribution).

The fitted state holds both projectors as lower-trapezoidal factors, ``P_plus = L Lᵀ`` and
``P_perp = M Mᵀ``.  A safely invertible Gram matrix (:data:`CONDITION_MARGIN`) has ``P^+ = P⁻¹``, with L
from its Cholesky factor's triangular inverse, and ``P_perp = 0`` (M has no column).  Otherwise
they come from the eigen-decomposition ``P = V Λ Vᵀ``: the pseudo-inverse keeps the eigenvalues above
the cut-off, ``P_plus = V_r Λ_r⁻¹ V_rᵀ``, and ``P_perp = I - P^+ P = V_0 V_0ᵀ`` is the projector onto
the remaining eigenvectors.  Scoring then needs no factorisation, and a triangular factor needs
about 5/8 of the products of a full one (:data:`TRIANGLE_BLOCKS`).

Precision: the fit (the Gram matrix summed over the training set, its factorisation and the
factors) is float64.  The per-row products of scoring, ``W x`` and ``x̃ᵀ L`` (the dominant cost),
run in float32, pytorch-ood's precision (the squares of each column block are summed in float32,
the blocks' sums in float64); the softmax and the regret are float64.  A float32 product of a
unit vector differs from the float64 one by about what rounding the features themselves to
float32 (their storage precision in the feature files) already changes: relative
1e-6 to 1e-5 in ``x̃ᵀP x̃`` on ill-conditioned training features (tested against the float64 rule),
far below a change of ranking of real scores.  Float32 products are cheaper, and numpy's matmul
releases the GIL, so the row blocks run on several threads (docs/benchmarks.md).
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.blocks import map_row_blocks, rows_or_array, single_threaded_blas, sum_row_blocks, unit_rows

#: a triangular factor's product is split into this many column blocks, each multiplied by the rows
#: of x̃ below the block's diagonal only: (B + 1) / 2B of the full product's work
TRIANGLE_BLOCKS = 4


def _trapezoidal(root: np.ndarray) -> np.ndarray:
    """A lower-trapezoidal L ((D+1)×k, ``L[i, j] = 0`` for i < j) with ``L Lᵀ = root rootᵀ``:
    ``Rᵀ`` of the QR decomposition ``rootᵀ = Q R``, since ``root rootᵀ = Rᵀ Qᵀ Q R = Rᵀ R``."""
    if root.shape[1] == 0:
        return root
    return np.linalg.qr(root.T, mode="r").T


def pnml_fit(features: np.ndarray) -> dict[str, np.ndarray]:
    """Factors of the projectors of the training features (N×D): ``{"plus_factor", "perp_factor"}``,
    float64, (D+1)×r and (D+1)×(D+1−r) for a Gram matrix of numerical rank r (module docstring).

    The pseudo-inverse's cut-off is the array-API default ``rtol = (D+1) · eps`` relative to the
    largest eigenvalue (numpy's ``pinv(rtol=None)``), the float64 analogue of the authors'
    ``torch.linalg.pinv`` default.
    """
    features = rows_or_array(features)  # an array or a row source, read in row blocks
    dim = features.shape[1] + 1

    def term(rows):
        augmented = np.empty((rows.stop - rows.start, dim))
        augmented[:, 0] = 1.0
        unit_rows(features[rows], out=augmented[:, 1:])
        return np.dot(augmented.T, augmented)  # np.dot of a transposed self-product uses BLAS syrk

    gram = sum_row_blocks(term, len(features), dim)
    with single_threaded_blas():
        plus_factor = _inverse_factor(gram)
        if plus_factor is not None:
            return {"plus_factor": plus_factor, "perp_factor": np.zeros((dim, 0))}
        values, vectors = np.linalg.eigh(gram)
        kept = values > dim * np.finfo(np.float64).eps * values.max()
        return {"plus_factor": _trapezoidal(vectors[:, kept] / np.sqrt(values[kept])),
                "perp_factor": _trapezoidal(vectors[:, ~kept])}


#: :func:`_inverse_factor` takes a Gram matrix as invertible when the bound ``‖P‖₁ · ‖M‖_F²`` on its
#: condition number (``‖M‖_F² = tr P⁻¹ >= 1/λ_min`` and ``‖P‖₁ >= λ_max``) lies this factor below the
#: pseudo-inverse's cut-off ``1 / ((D+1)·eps)`` (≈ 9e12 for D = 512): every eigenvalue is then kept,
#: P^+ = P^-1 and P_perp = 0.  The bound exceeds the true condition number by at most (D+1)^1.5, so
#: the eigen-decomposition also takes well-conditioned matrices of condition number above ~1e7.
CONDITION_MARGIN = 100.0


def _inverse_factor(gram: np.ndarray) -> np.ndarray | None:
    """A lower-triangular M with ``M Mᵀ = gram⁻¹`` when the Gram matrix is safely invertible
    (:data:`CONDITION_MARGIN`), else None.

    A Cholesky factorisation and a triangular inverse take a fifth of the eigen-decomposition's
    time.  With the reversal permutation J: ``J gram J = K Kᵀ`` (Cholesky) gives ``gram = U Uᵀ`` with
    ``U = J K J`` upper triangular, so ``gram⁻¹ = U⁻ᵀ U⁻¹`` and ``M = U⁻ᵀ = J K⁻ᵀ J`` is lower triangular.
    """
    from scipy.linalg import lapack  # numpy has no triangular inverse

    dim = len(gram)
    factor, info = lapack.dpotrf(np.ascontiguousarray(gram[::-1, ::-1]), lower=True, clean=True)
    if info != 0:
        return None
    inverse, info = lapack.dtrtri(factor, lower=True)
    if info != 0:
        return None
    bound = np.abs(gram).sum(axis=0).max() * np.einsum("ij,ij->", inverse, inverse)
    if not bound < 1.0 / (CONDITION_MARGIN * dim * np.finfo(np.float64).eps):
        return None
    return np.ascontiguousarray(inverse.T[::-1, ::-1])


def _factor_blocks(factor: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The column blocks of a lower-trapezoidal (D+1)×k factor L for :func:`_quadratic_form`, float32:
    ``(s, L[0, J], L[1+s:, J])`` per block J of columns, s = the first feature row not above the diagonal."""
    bounds = np.linspace(0, factor.shape[1], min(TRIANGLE_BLOCKS, factor.shape[1]) + 1).astype(int)
    blocks = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        first = max(start - 1, 0)  # L[1 + i, j] = 0 for 1 + i < j
        blocks.append((first, factor[0, start:stop].astype(np.float32),
                       np.ascontiguousarray(factor[1 + first:, start:stop], dtype=np.float32)))
    return blocks


def _quadratic_form(unit: np.ndarray, blocks: list[tuple[int, np.ndarray, np.ndarray]]) -> np.ndarray:
    """``x̃ᵀ L Lᵀ x̃`` per row for ``x̃ = [1, unit]`` (``unit`` n×D float32), with L's column blocks from
    :func:`_factor_blocks`: ``x̃ᵀ L_J = L[0, J] + unit[:, s:] L[1+s:, J]``; each block's squares summed
    in float32, the blocks added in float64."""
    total = np.zeros(len(unit))
    for first, head, lower in blocks:
        product = unit[:, first:] @ lower
        product += head
        total += np.einsum("ij,ij->i", product, product)
    return total


def pnml_score(features: np.ndarray, weight: np.ndarray, bias: np.ndarray,
               plus_factor: np.ndarray, perp_factor: np.ndarray) -> np.ndarray:
    """pNML confidence ``-Γ``, shape (N,), in [-1, 0].

    ``features`` N×D, ``weight`` C×D, ``bias`` (C,), factors from :func:`pnml_fit`.  Step 5 is
    evaluated as ``q̂_k = 1 / (1 + (1 - q_k) exp((x̃ᵀg - 1) log q_k))`` (numerator and denominator
    divided by ``q_k``), with ``log q_k`` and ``1 - q_k = sum_(j≠k) q_j`` from the shifted logits, so
    underflowing ``q_k`` take their limits (0 for ``x̃ᵀg < 1``, 1 for ``x̃ᵀg > 1``) instead of 0/0.
    Since every ``q̂_k >= q_k``, ``sum_k q̂_k >= 1`` and the sum is formed directly.
    See the module docstring for the factors and the float32 products.
    """
    features = np.asarray(features)
    weight_t = np.asarray(weight, dtype=np.float32).T
    bias = np.asarray(bias, dtype=np.float64)
    n_classes = len(bias)
    scores = np.empty(len(features))
    plus, perp = _factor_blocks(np.asarray(plus_factor)), _factor_blocks(np.asarray(perp_factor))
    log_n_classes = np.log(n_classes)

    def block(rows):
        unit = unit_rows(features[rows], np.float32)
        shifted = np.add(unit @ weight_t, bias, dtype=np.float64)
        parallel = _quadratic_form(unit, plus)
        x_t_g = parallel / (1.0 + parallel)
        if perp:  # rank-deficient training features; P_perp = 0 otherwise
            np.maximum(x_t_g, _quadratic_form(unit, perp), out=x_t_g)
        shifted -= shifted.max(axis=1, keepdims=True)  # s_k = z_k - max z: log q_k = s_k - log sum_j exp s_j
        exp_shifted = np.exp(shifted)
        total = exp_shifted.sum(axis=1, keepdims=True)
        genie = shifted  # from here on the buffer holds the successive terms of q̂_k
        genie -= np.log(total)
        genie *= (x_t_g - 1.0)[:, None]
        with np.errstate(over="ignore"):  # inf is the limit q̂_k = 0 of a vanishing q_k with x̃ᵀg < 1
            np.exp(genie, out=genie)
        # 1 - q_k = (sum_j exp s_j - exp s_k) / sum_j exp s_j, without the rounding of 1 - q_k
        one_minus_q = np.subtract(total, exp_shifted, out=exp_shifted)
        one_minus_q /= total
        genie *= one_minus_q
        genie += 1.0
        np.reciprocal(genie, out=genie)
        scores[rows] = np.log(genie.sum(axis=1))
        scores[rows] /= -log_n_classes

    map_row_blocks(block, len(features), max(features.shape[1] + 1, n_classes))
    return scores
