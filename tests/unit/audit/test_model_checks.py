"""The checks of the models: MC-dropout passes, accuracy near chance, prediction sets of every label."""
from __future__ import annotations

import pandas as pd

from csfbench.audit import AccuracyRecord, AuditInputs
from csfbench.audit.model_checks import few_mcd_passes, full_prediction_sets, near_chance_accuracy

from tests.unit.audit.builders import MODEL, key, thresholds


def test_mc_dropout_with_few_passes_is_reported_per_backbone():
    inputs = AuditInputs(mcd_passes={"vgg13": 2, "resnet": 10, "vit": 0})
    (finding,) = few_mcd_passes(inputs, thresholds())
    assert key([finding]) == [("few_mcd_passes", "warning", "vgg13", 2.0, 10.0)]
    assert "Gal & Ghahramani" in finding.cause and "backbones.vgg13.mcd_samples" in finding.remedy
    assert few_mcd_passes(AuditInputs(mcd_passes={"vgg13": 12}), thresholds()) == []


def accuracy(dataset="test", value=0.12, paradigm="dg", shift_type="id") -> AccuracyRecord:
    return AccuracyRecord("s1", MODEL, paradigm, dataset, shift_type, 200, value)


def test_accuracy_near_chance_is_a_warning_on_the_id_splits_and_information_elsewhere():
    inputs = AuditInputs(n_classes={"s1": 10}, accuracies=[
        accuracy(), accuracy("val", 0.16), accuracy("contrast_5", 0.11, shift_type="covariate"),
        accuracy("test", 0.1, paradigm="random")])
    findings = near_chance_accuracy(inputs, thresholds())
    assert key(findings) == [("near_chance_accuracy", "warning", f"s1/{MODEL} · test", 0.12, 0.15),
                             ("near_chance_accuracy", "info", f"s1/{MODEL} · contrast_5", 0.11, 0.15),
                             ("near_chance_accuracy", "info", f"s1/{MODEL} · test", 0.1, 0.15)]
    assert "1/10 = 0.100" in findings[0].cause and "covariate shift" in findings[1].cause
    assert "random initialisation" in findings[2].cause
    assert near_chance_accuracy(inputs, thresholds(chance_factor=1.0)) == []


def sets(score="lac_softmax", sizes=(9.95, 9.99, 10.0), n_cal=500, model=MODEL) -> list[dict]:
    return [{"source": "s1", "model": model, "score": score, "method": "lac", "alpha": a, "size": s, "n_cal": n_cal}
            for a, s in zip((0.005, 0.01, 0.05), sizes)]


def test_full_prediction_sets_say_whether_the_score_or_a_defect_is_the_cause():
    frame = pd.DataFrame(sets("gram") + sets("knn") + sets("softmax", n_cal=10) + sets("maha", sizes=(9.5, 3, 1)))
    findings = full_prediction_sets(AuditInputs(prediction_sets=frame, n_classes={"s1": 10}), thresholds())
    assert key(findings) == [("full_prediction_sets", "info", f"s1/{MODEL} · gram · lac", 9.95, 9.9),
                             ("full_prediction_sets", "warning", f"s1/{MODEL} · knn · lac", 9.95, 9.9),
                             ("full_prediction_sets", "warning", f"s1/{MODEL} · softmax · lac", 9.95, 9.9)]
    gram, knn, small = findings
    assert "a property of the score" in gram.cause and "Novello" in gram.cause
    assert "likely a defect" in knn.cause
    assert "with 10 calibration samples the conformal quantile is infinite at every alpha" in small.cause


def test_informative_prediction_sets_and_no_sets_are_silent():
    frame = pd.DataFrame(sets("gram", sizes=(9.6, 8.3, 1.9)))  # Novello et al., Table 2: GRAM on CIFAR-10
    assert full_prediction_sets(AuditInputs(prediction_sets=frame, n_classes={"s1": 10}), thresholds()) == []
    assert full_prediction_sets(AuditInputs(), thresholds()) == []
