"""Temperature scaling (Claros-Olivares & Brockmeier, App. E): one scalar T per logit source, fitted on ID validation
only.

T minimises the mean cross-entropy of ``softmax(z / T)`` against the validation labels.  The
authors run LBFGS on T (lr 0.01, up to 2000 iterations); the objective is a convex function of
1/T, so a bounded scalar minimisation over log T finds the same minimiser deterministically
(tested against a dense grid).  T is dimensionless and > 0.
"""
from __future__ import annotations

import logging

import numpy as np
from scipy.special import log_softmax

log = logging.getLogger(__name__)
LOG_T_BOUNDS = (-9.0, 9.0)  # T in [1.2e-4, 8.1e3]; a minimum no lower than at a bound is logged as a warning
FLAT_TOLERANCE = 1e-9  # relative: an NLL within this of a bound's is no lower than it


def temperature_nll(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    """Mean negative log-likelihood of ``labels`` under ``softmax(logits / temperature)`` (nats)."""
    logp = log_softmax(np.asarray(logits, dtype=np.float64) / temperature, axis=1)
    return float(-logp[np.arange(len(labels)), labels].mean())


def fit_temperature(logits: np.ndarray, labels: np.ndarray, source: str = "logits") -> float:
    """The temperature T > 0 minimising the validation NLL of ``softmax(logits / T)``.

    ``logits`` N×C, ``labels`` N integer class indices in [0, C); ``source`` names the logits in the
    warning logged when the validation set does not identify T.
    """
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if len(logits) == 0:
        raise ValueError("temperature scaling: empty validation set")
    if not np.isfinite(logits).all():
        raise ValueError(f"temperature scaling: {int((~np.isfinite(logits)).sum())} non-finite validation logits")
    if labels.min() < 0 or labels.max() >= logits.shape[1]:
        raise ValueError(f"temperature scaling: labels outside [0, {logits.shape[1]}) in the validation set")
    from scipy.optimize import minimize_scalar  # here: the workflow imports the CSF registry to build its DAG

    result = minimize_scalar(lambda log_t: temperature_nll(logits, labels, float(np.exp(log_t))),
                             bounds=LOG_T_BOUNDS, method="bounded", options={"xatol": 1e-10})
    temperature = float(np.exp(result.x))
    for log_t in LOG_T_BOUNDS:
        at_bound = temperature_nll(logits, labels, float(np.exp(log_t)))
        if result.fun >= at_bound - FLAT_TOLERANCE * max(1.0, at_bound):
            cause = ("every validation sample is classified correctly, so the NLL falls to 0 as T → 0"
                     if log_t < 0 else "the validation logits predict the labels no better than chance")
            log.warning("temperature scaling of the %s: the validation NLL is no lower at the fitted T = %.3g "
                        "than at the search bound T = %.3g (%s), so T is not identified by the validation set; "
                        "softmax scores at it are saturated or flat", source, temperature, np.exp(log_t), cause)
    return temperature


def fit_temperatures(parts: dict, labels: np.ndarray, base: float) -> dict[str, float]:
    """One temperature per logit source of a fit group, on validation.

    ``parts`` are :func:`~csfbench.csf.views.variant_logits` of the validation split ({variant: (features,
    logits, columns)}; keys starting with "_" are not variants); ``base`` is the T already fitted on the
    unprojected logits (the base temperature), which are the "none" variant's.
    """
    return {variant: base if variant == "none" else fit_temperature(part[1], labels, f"{variant} variant's logits")
            for variant, part in parts.items() if not variant.startswith("_")}
