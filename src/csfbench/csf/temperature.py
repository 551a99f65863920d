"""Temperature scaling (Claros-Olivares & Brockmeier, App. E): one scalar T per logit source, fitted on ID validation
only.

T minimises the mean cross-entropy of ``softmax(z / T)`` against the validation labels.  The
authors run LBFGS on T (lr 0.01, up to 2000 iterations); the objective is a convex function of
1/T, so a bounded scalar minimisation over log T finds the same minimiser deterministically
(tested against a dense grid).  T is dimensionless and > 0.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

LOG_T_BOUNDS = (-9.0, 9.0)  # T in [1.2e-4, 8.1e3]; a minimiser on the bound is reported as such


def temperature_nll(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    """Mean negative log-likelihood of ``labels`` under ``softmax(logits / temperature)`` (nats)."""
    logp = log_softmax(np.asarray(logits, dtype=np.float64) / temperature, axis=1)
    return float(-logp[np.arange(len(labels)), labels].mean())


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature T > 0 minimising the validation NLL of ``softmax(logits / T)``.

    ``logits`` N×C, ``labels`` N integer class indices in [0, C).
    """
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if len(logits) == 0:
        raise ValueError("temperature scaling: empty validation set")
    if not np.isfinite(logits).all():
        raise ValueError(f"temperature scaling: {int((~np.isfinite(logits)).sum())} non-finite validation logits")
    if labels.min() < 0 or labels.max() >= logits.shape[1]:
        raise ValueError(f"temperature scaling: labels outside [0, {logits.shape[1]}) in the validation set")
    result = minimize_scalar(lambda log_t: temperature_nll(logits, labels, float(np.exp(log_t))),
                             bounds=LOG_T_BOUNDS, method="bounded", options={"xatol": 1e-10})
    return float(np.exp(result.x))
