"""Label-free predictors of a shifted set's error (Yu et al., ICML 2022, App. A.1), from class logits
(N×C, C = n_classes).

Orientation of each value (what the evaluation regresses the test error on):

* :func:`conf_score` — mean max-softmax probability (Hendrycks & Gimpel); higher = *less* error.
* :func:`entropy_score` — mean softmax entropy in nats, not normalised by log C; higher = more error.
* :func:`atc_error` — ATC (Garg et al. 2022): fraction of samples whose score lies below the threshold
  fitted on ID validation data (:func:`atc_threshold`); the predicted error, higher = more error.
  Score ``negative_entropy`` (ATC-NE, the default) or ``max_confidence`` (ATC-MC).
* :func:`agree_score` — disagreement rate of two independently trained models of the same
  configuration (the paper's "AgreeScore": its error predictor is the disagreement); higher = more error.

Rotation (Deng et al. 2021) needs a rotation-prediction head trained jointly with the classifier; no
csfbench model has one, so it is not implemented.
"""
from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

ATC_SCORES = ("negative_entropy", "max_confidence")


def _log_probs(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[0] == 0:
        raise ValueError(f"expected N×C logits with N > 0, got shape {logits.shape}")
    return log_softmax(logits, axis=1)


def sample_scores(logits: np.ndarray, score: str) -> np.ndarray:
    """Per-sample confidence: ``negative_entropy`` Σ p log p or ``max_confidence`` max p (higher = surer)."""
    logp = _log_probs(logits)
    if score == "negative_entropy":
        return (np.exp(logp) * logp).sum(1)
    if score == "max_confidence":
        return np.exp(logp.max(1))
    raise ValueError(f"unknown ATC score {score!r}; known: {', '.join(ATC_SCORES)}")


def conf_score(logits: np.ndarray) -> float:
    return float(sample_scores(logits, "max_confidence").mean())


def entropy_score(logits: np.ndarray) -> float:
    return float(-sample_scores(logits, "negative_entropy").mean())


def atc_threshold(val_logits: np.ndarray, val_labels: np.ndarray, score: str = "negative_entropy") -> float:
    """t such that the fraction of ID-val scores strictly below t equals the ID-val error (ties aside).

    The scores are sorted and t is the k-th smallest (0-based), k = round(error · n): exactly k scores lie
    below it when they are distinct.  An error of 1 gives t = +inf.
    """
    scores = np.sort(sample_scores(val_logits, score))
    labels = np.asarray(val_labels)
    if len(labels) != len(scores):
        raise ValueError(f"ATC: {len(scores)} validation logits but {len(labels)} labels")
    error = float(np.mean(np.asarray(val_logits).argmax(1) != labels))
    k = int(round(error * len(scores)))
    return float(np.inf) if k >= len(scores) else float(scores[k])


def atc_error(logits: np.ndarray, threshold: float, score: str = "negative_entropy") -> float:
    return float(np.mean(sample_scores(logits, score) < threshold))


def agree_score(pred_a: np.ndarray, pred_b: np.ndarray) -> float:
    pred_a, pred_b = np.asarray(pred_a), np.asarray(pred_b)
    if pred_a.shape != pred_b.shape or pred_a.size == 0:
        raise ValueError(f"AgreeScore: prediction vectors of shapes {pred_a.shape} and {pred_b.shape}")
    return float(np.mean(pred_a != pred_b))
