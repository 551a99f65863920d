"""pNML regret of the last layer (spec 000 §2 row 16, §2.1 code-exact; §9 item 12).

Features are normalised and bias-augmented, ``x̃ = [1, h/||h||]`` (D+1).  Fit:
``P = X̃^T X̃``, ``P_plus = P^+``, ``P_perp = I - P^+ P``.  Score, per sample:
``q = softmax(W h/||h|| + b)`` (no temperature); ``x̃^T g = max(x̃^T P_perp x̃, a / (1 + a))`` with
``a = x̃^T P_plus x̃``; genie ``q̂_k = q_k / (q_k + (1 - q_k) q_k^(x̃^T g))``; regret
``Γ = log(sum_k q̂_k) / log C`` in [0, 1]; confidence = ``-Γ`` (higher = in-distribution, spec §2.3).
"""
from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, logsumexp

from csfbench.csf.blocks import row_blocks, unit_rows


def _augment(features: np.ndarray) -> np.ndarray:
    """``[1, h/||h||]`` per row: N×D → N×(D+1) float64."""
    unit = unit_rows(features)
    return np.hstack([np.ones((len(unit), 1)), unit])


def pnml_fit(features: np.ndarray) -> dict[str, np.ndarray]:
    """The projectors of the training features (N×D): ``{"p_plus", "p_perp"}``, each (D+1)×(D+1).

    The pseudo-inverse uses the array-API default cut-off ``rtol = (D+1) · eps`` (numpy's
    ``rtol=None``), the float64 analogue of the authors' ``torch.linalg.pinv`` default.
    """
    features = np.asarray(features)
    dim = features.shape[1] + 1
    gram = np.zeros((dim, dim))
    for block in row_blocks(len(features), dim):
        augmented = _augment(features[block])
        gram += augmented.T @ augmented
    p_plus = np.linalg.pinv(gram, hermitian=True, rtol=None)
    return {"p_plus": p_plus, "p_perp": np.eye(dim) - p_plus @ gram}


def pnml_score(features: np.ndarray, weight: np.ndarray, bias: np.ndarray,
               p_plus: np.ndarray, p_perp: np.ndarray) -> np.ndarray:
    """pNML confidence ``-Γ``, shape (N,), in [-1, 0].

    ``features`` N×D, ``weight`` C×D, ``bias`` (C,), projectors from :func:`pnml_fit`.  Step 5 is
    evaluated as ``log q̂_k = -log(1 + exp(log(1 - q_k) + (x̃^T g - 1) log q_k))``, the same quantity
    without the 0/0 that underflowing ``q_k`` would give.
    """
    features = np.asarray(features)
    weight = np.asarray(weight, dtype=np.float64)
    bias = np.asarray(bias, dtype=np.float64)
    n_classes = len(weight)
    scores = np.empty(len(features))
    # x̃ᵀP_perp x̃ <= ||P_perp||_2 ||x̃||² <= ||P_perp||_F · 2 (||x̃||² = 1 + ||h/||h||||² <= 2), so
    # where that bound lies below every a/(1+a) of a block the max rule picks a/(1+a) for each row
    # and the second quadratic form is skipped; exact, and the usual case for full-rank training
    # features (P_perp ≈ 0), where it halves the work
    perp_bound = 2.0 * np.linalg.norm(p_perp) * (1.0 + 1e-6)
    for block in row_blocks(len(features), max(features.shape[1] + 1, n_classes)):
        augmented = _augment(features[block])
        log_q = log_softmax(augmented[:, 1:] @ weight.T + bias, axis=1)
        parallel = np.einsum("ij,ij->i", augmented @ p_plus, augmented)
        x_t_g = parallel / (1.0 + parallel)
        if not perp_bound < x_t_g.min(initial=np.inf):
            np.maximum(x_t_g, np.einsum("ij,ij->i", augmented @ p_perp, augmented), out=x_t_g)
        with np.errstate(divide="ignore"):  # q_k = 1 gives log(1 - q_k) = -inf, i.e. q̂_k = 1
            log_one_minus_q = np.log1p(-np.exp(log_q))
        log_genie = -np.logaddexp(0.0, log_one_minus_q + (x_t_g[:, None] - 1.0) * log_q)
        scores[block] = -logsumexp(log_genie, axis=1) / np.log(n_classes)
    return scores
