"""Checks of the models: MC dropout with few passes (:func:`few_mcd_passes`), accuracy near chance
(:func:`near_chance_accuracy`) and conformal prediction sets that hold every label (:func:`full_prediction_sets`)."""
from __future__ import annotations

import math

import numpy as np

from csfbench.audit.findings import Finding, Thresholds
from csfbench.audit.records import AuditInputs
from csfbench.metrics.prediction_sets import conformal_quantile

#: the evaluation sets whose accuracy is the model's own (the ID splits); a shifted set may be near chance by design
ID_SPLITS = ("val", "test")
#: the paradigm of a classifier evaluated at its random initialisation, at chance by construction
RANDOM_PARADIGM = "random"
#: the conformity score whose class-conditional form can give every class the same score (Novello et al., §5)
GRAM_SCORE = "gram"


def few_mcd_passes(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """Backbones whose MC-dropout variants average fewer than ``min_mcd_passes`` stochastic passes.  Value: the
    passes; threshold: the minimum."""
    least = thresholds.min_mcd_passes
    return [Finding(
        "few_mcd_passes", "warning", backbone, float(passes), float(least),
        f"the MC-dropout variants of {backbone} average {passes} stochastic forward passes, fewer than {least}: the "
        "MC mean prediction, the expected scores and the mutual information are noisy estimates with so few "
        "passes (Gal & Ghahramani, ICML 2016, use 10 or more).",
        f"Raise backbones.{backbone}.mcd_samples to {least} or more (feature extraction and every later stage of "
        "these models rerun), or read the MCD cells as indicative only.")
        for backbone, passes in sorted(inputs.mcd_passes.items()) if 0 < passes < least]


def near_chance_accuracy(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """Models whose accuracy on a labelled set is below ``chance_factor`` / n_classes: a warning on the ID splits
    (val, test: the model's own accuracy, as ``csfbench summary`` reports test_acc), information on a shifted set
    or for a randomly initialised model, where it can be expected.  Value: the accuracy; threshold: the bound
    (fractions)."""
    findings = []
    for record in inputs.accuracies:
        n_classes = inputs.n_classes[record.source]
        bound = thresholds.chance_factor / n_classes
        if record.accuracy >= bound:
            continue
        measured = (f"accuracy {record.accuracy:.3f} on {record.n_labelled} labelled samples of {record.dataset} is "
                    f"below {thresholds.chance_factor:g} × chance (1/{n_classes} = {1 / n_classes:.3f}, bound "
                    f"{bound:.3f})")
        if record.paradigm == RANDOM_PARADIGM:
            severity, cause = "info", f"{measured}: expected, the network is at its random initialisation."
            remedy = "Nothing to change: this model is the random-network reference of the sanity checks."
        elif record.dataset in ID_SPLITS:
            severity = "warning"
            cause = (f"{measured}: the classifier has barely learned its task, so its failure-detection metrics "
                     "measure noise.")
            remedy = ("Train longer or check the training (the training section's epochs and learning rate), the "
                      "labels and the normalisation of the source; leave this model out of conclusions until then.")
        else:
            severity = "info"
            cause = (f"{measured}: the {record.shift_type} shift destroys the classifier on this set; expected for "
                     "a severe corruption or an adversarial attack.")
            remedy = ("Nothing to change if the shift is meant to be severe; on this set nearly every prediction "
                      "fails, so its misclassification metrics rank CSFs on very few correct samples.")
        findings.append(Finding("near_chance_accuracy", severity, record.subject, record.accuracy, bound, cause,
                                remedy))
    return findings


def _calibration_too_small(n_cal: int, alphas) -> bool:
    """Whether the conformal quantile is +inf at every α for ``n_cal`` calibration samples (its rank
    ⌈(n_cal + 1)(1 − α)⌉ exceeds n_cal; :func:`csfbench.metrics.prediction_sets.conformal_quantile`)."""
    return all(math.isinf(conformal_quantile(np.zeros(int(n_cal)), float(a))) for a in alphas)


def full_prediction_sets(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """(model, score, method) whose prediction sets hold at least ``full_set_fraction`` of the labels at every α,
    with the cause: a calibration set too small for every α, GRAM's class-conditional score (a property of the
    score), or a defect of the score.  Value: the smallest mean set size over α (labels); threshold: the
    fraction × n_classes."""
    frame = inputs.prediction_sets
    if frame.empty:
        return []
    findings = []
    for (source, model, score, method), rows in frame.groupby(["source", "model", "score", "method"], sort=True):
        n_classes = inputs.n_classes[source]
        bound = thresholds.full_set_fraction * n_classes
        smallest = float(rows["size"].min())
        if smallest < bound:
            continue
        alphas = sorted(float(a) for a in rows["alpha"])
        n_cal = int(rows["n_cal"].iloc[0])
        measured = (f"the {method} sets of score {score} hold {smallest:.2f} or more of the {n_classes} labels on "
                    f"average at every alpha ({', '.join(f'{a:g}' for a in alphas)})")
        if _calibration_too_small(n_cal, alphas):
            severity = "warning"
            cause = (f"{measured}: a defect of the settings, not of the score; with {n_cal} calibration samples the "
                     "conformal quantile is infinite at every alpha (its rank (n + 1)(1 − alpha) exceeds n).")
            remedy = ("Calibrate on more samples (conformal.prediction_sets.cal_fraction) or use larger alphas "
                      "(n must reach (1 − alpha) / alpha).")
        elif score == GRAM_SCORE:
            severity = "info"
            cause = (f"{measured}: a property of the score, not a defect; GRAM's class-conditional score gives every "
                     "class the same deviation when the input's Gram statistics lie outside every class's training "
                     "range, the softmax over classes is then uniform and every label conforms equally (Novello, "
                     "Dalmau & Andéol 2024, §5 and Table 2: GRAM's sets are the least efficient).")
            remedy = ("Nothing to change; to confirm, compare with the softmax score's sets of the same model, which "
                      "should be small.")
        else:
            severity = "warning"
            cause = (f"{measured}: likely a defect; this score should separate the classes, so a score matrix that is "
                     "constant across classes, or a conformity oriented the wrong way, is the probable cause.")
            remedy = ("Inspect the score's N×C matrix on a few test points (rows should differ across classes, higher "
                      "= more conforming) and compare with the softmax score's sets of the same model.")
        findings.append(Finding("full_prediction_sets", severity, f"{source}/{model} · {score} · {method}", smallest,
                                bound, cause, remedy))
    return findings
