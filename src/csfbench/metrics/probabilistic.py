"""Proper scoring rules of the confidence read as the probability of success: Brier score and NLL.

``confidence`` must lie in [0, 1] (it is the predicted probability that the prediction is a
success, e.g. the maximum softmax probability); ``residual`` in [0, 1] with 1 = failure, so the
target is ``1 − residual``; a continuous residual gives a soft target.  Both are means of
per-sample terms, so ties in ``confidence`` need no rule and the order of the samples does not
matter.  Lower is better.
"""
from __future__ import annotations

import numpy as np

from csfbench.metrics._inputs import MetricInputError, check_pair

NLL_EPSILON = 1e-7  # added inside both logarithms, as FD-Shifts' fail-NLL


def _probability_pair(confidence, residual, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated confidence in [0, 1] and the success target ``1 − residual``."""
    conf, res = check_pair(confidence, residual)
    n_out = int(np.count_nonzero((conf < 0) | (conf > 1)))
    if n_out:
        raise MetricInputError(f"{metric} reads confidence as a probability of success and needs it in [0, 1]; "
                               f"{n_out} value(s) fall outside (found range [{conf.min():g}, {conf.max():g}])")
    return conf, 1.0 - res


def brier(confidence, residual) -> float:
    """Binary Brier score ``mean((confidence − (1 − residual))²)``, in [0, 1]; lower is better.

    Brier, "Verification of forecasts expressed in terms of probability", Monthly Weather Review
    1950, for the binary event "the prediction is a success"; equal to scikit-learn's
    ``brier_score_loss(1 − residual, confidence)`` for a binary residual (tested).  0 for a
    confidence of 1 on every success and 0 on every failure; a constant confidence of ½ gives ¼.
    torch-uncertainty's ``BrierScore`` (default ``top_class=False``) is the multiclass score
    ``Σ_k (p_k − 1[k = y])²`` on the whole softmax vector, which is not a function of
    ``(confidence, residual)`` (two samples with the same top probability and correctness can score
    differently), so the two differ; its ``top_class=True`` variant is this score with confidence =
    maximum softmax probability and residual = 1 − correct.
    """
    conf, success = _probability_pair(confidence, residual, "brier")
    return float(np.mean((conf - success) ** 2))


def nll(confidence, residual) -> float:
    """Binary negative log-likelihood of success, FD-Shifts' ``fail-NLL``; lower is better.

    ``−mean(c·log(p + 1e-7) + (1 − c)·log(1 − p + 1e-7))`` with ``c = 1 − residual`` and
    ``p = confidence`` in [0, 1], as ``failnll`` in fd_shifts/analysis/metrics.py (FD-Shifts, Jaeger
    et al., "A Call to Reflect on Evaluation Practices for Failure Detection in Image Classification",
    ICLR 2023, arXiv 2211.15259; commit c4467aec134e99691359da209f811d91283fc1e3).  The ε = 1e-7
    inside the logarithms keeps a confidence of exactly 0 or 1 finite, so the value lies in
    [−log(1 + 1e-7), −log(1e-7)] ≈ [−1e-7, 16.12] (slightly negative for a perfect, fully confident
    set).  A continuous residual gives the cross-entropy with a soft target, whose minimum is the
    target's entropy rather than 0.
    """
    conf, success = _probability_pair(confidence, residual, "nll")
    log_p = np.log(conf + NLL_EPSILON)
    log_q = np.log(1.0 - conf + NLL_EPSILON)
    return float(-np.mean(success * log_p + (1.0 - success) * log_q))
