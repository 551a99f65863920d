"""pNML regret of the last layer (spec 000 §2 row 16, §2.1 code-exact; §9 item 12).

Features are normalised and bias-augmented, ``x̃ = [1, h/||h||]`` (D+1).  Fit:
``P = X̃^T X̃``, ``P_plus = P^+``, ``P_perp = I - P^+ P``.  Score, per sample:
``q = softmax(W h/||h|| + b)`` (no temperature); ``x̃^T g = max(x̃^T P_perp x̃, a / (1 + a))`` with
``a = x̃^T P_plus x̃``; genie ``q̂_k = q_k / (q_k + (1 - q_k) q_k^(x̃^T g))``; regret
``Γ = log(sum_k q̂_k) / log C`` in [0, 1]; confidence = ``-Γ`` (higher = in-distribution, spec §2.3).

Precision: the fit (the Gram matrix summed over the training set, its pseudo-inverse and the
triangular factors) is float64.  The per-row products of scoring, ``W x`` and ``x̃ᵀ L`` with a
(D+1)×(D+1) factor (the dominant cost), run in float32, pytorch-ood's precision; the quadratic
forms, the softmax and the regret are float64.  A float32 product of a unit vector differs from the
float64 one by about what rounding the features themselves to float32 (their storage precision,
DESIGN.md) already changes: relative 1e-6 to 1e-5 in ``x̃ᵀP x̃`` on ill-conditioned training
features (tested against the float64 rule), far below a change of ranking of real scores.  Float32
halves the products, and numpy's float32 matmul, unlike a BLAS ``trmm`` from scipy, releases the GIL,
so the row blocks run on several threads (measured in ``benchmarks/csf_engine.py``).
"""
from __future__ import annotations

from functools import cache, partial

import numpy as np

from csfbench.csf.blocks import map_row_blocks, single_threaded_blas, sum_row_blocks, unit_rows


def pnml_fit(features: np.ndarray) -> dict[str, np.ndarray]:
    """The projectors of the training features (N×D): ``{"p_plus", "p_perp"}``, each (D+1)×(D+1).

    The pseudo-inverse uses the array-API default cut-off ``rtol = (D+1) · eps`` (numpy's
    ``rtol=None``), the float64 analogue of the authors' ``torch.linalg.pinv`` default.
    """
    features = np.asarray(features)
    dim = features.shape[1] + 1

    def term(rows):
        augmented = np.empty((rows.stop - rows.start, dim))
        augmented[:, 0] = 1.0
        augmented[:, 1:] = unit_rows(features[rows])
        return np.dot(augmented.T, augmented)  # np.dot of a transposed self-product uses BLAS syrk

    gram = sum_row_blocks(term, len(features), dim)
    with single_threaded_blas():
        p_plus = np.linalg.pinv(gram, hermitian=True, rtol=None)
        return {"p_plus": p_plus, "p_perp": np.eye(dim) - p_plus @ gram}


def _lower_factor(psd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A lower-triangular L with ``L Lᵀ = psd`` (a symmetric positive semi-definite (D+1)×(D+1)
    matrix), as its first column (D+1,) and its trailing block ``L_(1:,1:)`` (D×D), both float32.

    The Cholesky factor; where that fails (a singular matrix, e.g. the pseudo-inverse of
    rank-deficient training features), ``Rᵀ`` of the QR decomposition ``(V √Λ)ᵀ = Q R`` of a square
    root from the eigen-decomposition ``psd = V Λ Vᵀ`` (negative rounding noise in Λ clipped to 0),
    since ``psd = (V √Λ)(V √Λ)ᵀ = Rᵀ Qᵀ Q R = Rᵀ R``.
    """
    try:
        lower = np.linalg.cholesky(psd)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(psd)
        lower = np.linalg.qr((vectors * np.sqrt(np.clip(values, 0.0, None))).T, mode="r").T
    return lower[:, 0].astype(np.float32), lower[1:, 1:].astype(np.float32)


def _quadratic_forms(unit: np.ndarray, factor: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``x̃ᵀ L Lᵀ x̃`` per row (float64) for ``x̃ = [1, unit]`` (``unit`` n×D float32) and L from
    :func:`_lower_factor`: ``x̃ᵀ L = [L_00 + unit · L_(1:,0),  unit L_(1:,1:)]`` (``L_(0,1:)`` is 0)."""
    first, lower = factor
    head = first[0] + unit @ first[1:]
    product = unit @ lower
    return np.square(head, dtype=np.float64) + np.einsum("ij,ij->i", product, product).astype(np.float64)


def pnml_score(features: np.ndarray, weight: np.ndarray, bias: np.ndarray,
               p_plus: np.ndarray, p_perp: np.ndarray) -> np.ndarray:
    """pNML confidence ``-Γ``, shape (N,), in [-1, 0].

    ``features`` N×D, ``weight`` C×D, ``bias`` (C,), projectors from :func:`pnml_fit`.  Step 5 is
    evaluated as ``q̂_k = 1 / (1 + (1 - q_k) exp((x̃ᵀg - 1) log q_k))`` (numerator and denominator
    divided by ``q_k``), with ``log q_k`` and ``1 - q_k = sum_(j≠k) q_j`` from the shifted logits, so
    underflowing ``q_k`` take their limits (0 for ``x̃ᵀg < 1``, 1 for ``x̃ᵀg > 1``) instead of 0/0.
    Since every ``q̂_k >= q_k``, ``sum_k q̂_k >= 1`` and the sum is formed directly.
    Quadratic forms use triangular factors of the projectors (:func:`_quadratic_forms`); see the
    module docstring for the float32 products.
    """
    features = np.asarray(features)
    weight_t = np.asarray(weight, dtype=np.float32).T
    bias = np.asarray(bias, dtype=np.float64)
    n_classes = len(bias)
    scores = np.empty(len(features))
    # x̃ᵀP_perp x̃ <= ||P_perp||_2 ||x̃||² <= ||P_perp||_F · 2 (||x̃||² = 1 + ||h/||h||||² <= 2), so
    # where that bound lies below every a/(1+a) of a block the max rule picks a/(1+a) for each row
    # and the second quadratic form is skipped; exact, and the usual case for full-rank training
    # features (P_perp ≈ 0), where it halves the work.  The norm is a BLAS dot: single-threaded like
    # the factorisation, since BLAS threads left spinning after a threaded call slow the row blocks ~2x
    with single_threaded_blas():
        plus = _lower_factor(p_plus)
        perp_bound = 2.0 * np.linalg.norm(p_perp) * (1.0 + 1e-6)
    # factorised on first need (two threads needing it at once may both compute the same factor)
    perp_factor = cache(partial(_lower_factor, p_perp))
    log_n_classes = np.log(n_classes)

    def block(rows):
        unit = unit_rows(features[rows], np.float32)
        shifted = np.add(unit @ weight_t, bias, dtype=np.float64)
        parallel = _quadratic_forms(unit, plus)
        x_t_g = parallel / (1.0 + parallel)
        if not perp_bound < x_t_g.min(initial=np.inf):
            np.maximum(x_t_g, _quadratic_forms(unit, perp_factor()), out=x_t_g)
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
