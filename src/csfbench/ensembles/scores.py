"""The CSFs of a deep ensemble (Lakshminarayanan, Pritzel & Blundell, "Simple and Scalable Predictive Uncertainty
Estimation using Deep Ensembles", NeurIPS 2017, arXiv 1612.01474, §2.4) from its M members' outputs.

Inputs per evaluation set: the members' class probabilities ``probs`` (M×N×C; in MC-dropout mode each member's mean
softmax over its passes) and logits ``logits`` (M×N×C; in MC-dropout mode each member's mean over its passes).  The
ensemble predicts the argmax of the mean softmax p̄ = (1/M) Σ_m p_m.  Every confidence is oriented higher = more
in-distribution (more likely correct); entropies are in nats:

- ``Ensemble MSR``: max_c p̄_c;
- ``Predictive Entropy``: −H(p̄);
- ``Expected Entropy``: −(1/M) Σ_m H(p_m);
- ``Mutual Information``: −(H(p̄) − (1/M) Σ_m H(p_m)), the members' disagreement (Depeweg et al., ICML 2018,
  arXiv 1710.07283, §3; H(p̄) − E_m H(p_m) ≥ 0 by the concavity of H);
- ``Variation Ratio``: −(1 − f/M), where f is the number of members whose argmax is the most frequent one
  (Freeman 1965; Gal, "Uncertainty in Deep Learning", 2016, §3.3.1); ties between classes leave f unchanged;
- ``Mean Max-Logit``: (1/M) Σ_m max_c z_mc;
- ``Ensemble Energy``: log Σ_c exp((1/M) Σ_m z_mc), the negative energy (T = 1) of the mean logits.

A registry CSF (each member's own fit and scores) enters the ensemble as the mean of its members' confidences
(:func:`member_average`).
"""
from __future__ import annotations

import numpy as np
from scipy.special import entr, logsumexp

#: the scorer slot of the ensemble's own CSFs (its scores and metric files; the member means take the members' slots)
ENSEMBLE_SCORER = "ensemble"
#: the ensemble's own CSFs, in the order of the module docstring (variant ``none``: no projection)
ENSEMBLE_CSFS = ("Ensemble MSR", "Predictive Entropy", "Expected Entropy", "Mutual Information", "Variation Ratio",
                 "Mean Max-Logit", "Ensemble Energy")


def _stacked(name: str, values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 3 or values.shape[0] < 1:
        raise ValueError(f"{name}: expected members × samples × classes, got shape {values.shape}")
    return values


def ensemble_prediction(probs: np.ndarray) -> np.ndarray:
    """The ensemble's predicted class of each sample: the argmax of the members' mean softmax (N,)."""
    return _stacked("probs", probs).mean(0).argmax(1)


def ensemble_confidences(probs: np.ndarray, logits: np.ndarray) -> dict[str, np.ndarray]:
    """{CSF of :data:`ENSEMBLE_CSFS`: confidence (N,), float64, higher = more in-distribution} of one evaluation
    set from the members' probabilities and logits (both M×N×C)."""
    probs, logits = _stacked("probs", probs), _stacked("logits", logits)
    if probs.shape != logits.shape:
        raise ValueError(f"probs {probs.shape} and logits {logits.shape} differ in shape")
    n_members, n_classes = probs.shape[0], probs.shape[2]
    mean = probs.mean(0)
    predictive = entr(mean).sum(1)
    expected = entr(probs).sum(2).mean(0)
    votes = probs.argmax(2)  # M×N
    counts = np.stack([(votes == c).sum(0) for c in range(n_classes)], axis=1)  # N×C
    return {
        "Ensemble MSR": mean.max(1),
        "Predictive Entropy": -predictive,
        "Expected Entropy": -expected,
        # clipped at 0: the difference of two equal entropies can round below it
        "Mutual Information": -np.maximum(predictive - expected, 0.0),
        "Variation Ratio": -(1.0 - counts.max(1) / n_members),
        "Mean Max-Logit": logits.max(2).mean(0),
        "Ensemble Energy": logsumexp(logits.mean(0), axis=1),
    }


def member_average(member_scores: dict[str, dict[tuple[str, str], np.ndarray]]
                   ) -> tuple[dict[tuple[str, str], np.ndarray], dict[tuple[str, str], list[str]]]:
    """({(CSF, variant): the mean of the members' confidences (N,)}, {(CSF, variant): the members without it}) from
    {member: {(CSF, variant): (N,)}}.

    Only the CSF variants every member has are averaged: a CSF can be undefined for one run (SHE, for instance,
    when a class has no correctly classified training sample), and the second mapping names the variants left out
    and the members that lack them.  ValueError when the members score different numbers of samples."""
    if not member_scores:
        raise ValueError("member_average needs at least one member")
    everyone = set.intersection(*(set(scores) for scores in member_scores.values()))
    left_out = {key: [m for m, scores in member_scores.items() if key not in scores]
                for key in sorted(set().union(*member_scores.values()) - everyone)}
    out = {}
    for key in sorted(everyone):
        stacked = [np.asarray(scores[key], dtype=np.float64) for scores in member_scores.values()]
        lengths = {len(s) for s in stacked}
        if len(lengths) > 1:
            raise ValueError(f"{key}: the members score different numbers of samples {sorted(lengths)}")
        out[key] = np.mean(stacked, axis=0)
    return out, left_out
