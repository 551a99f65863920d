"""One row per (model, evaluation set) with the actual test error and every predictor's value.

Inputs are the workflow's own files: the feature file of each set (class logits, labels, predictions),
the model's ID validation feature file (ATC threshold) and the ProjNorm result of each set (JSON
written by :func:`csfbench.stages.projnorm.projnorm_shift`, which also carries the AgreeScore disagreement when a
partner model was given).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from csfbench.features.store import feature_expect, read_features, validate_feature_file
from csfbench.projnorm import baselines
from csfbench.specs import ModelSpec
from csfbench.heads import class_outputs

COLUMNS = ["source", "model", "dataset", "shift_type", "n", "test_error", "ConfScore", "Entropy", "ATC",
           "AgreeScore", "ProjNorm"]


def _class_logits(path: str | Path, spec: ModelSpec) -> tuple[np.ndarray, np.ndarray]:
    """The class logits (N×C) and labels of a feature file of ``spec``'s run (checked against the contract)."""
    validate_feature_file(path, feature_expect(spec))
    arrays, _ = read_features(path, keys=("logits", "labels"))
    return class_outputs(arrays["logits"], spec.n_classes), arrays["labels"]


def model_rows(spec: ModelSpec, val_h5: str | Path, sets: list[dict], atc_score: str) -> pd.DataFrame:
    """Rows of one model; ``sets`` items: ``{"eval_set": spec, "features": h5, "projnorm": json}``."""
    c = int(spec.n_classes)
    threshold = baselines.atc_threshold(*_class_logits(val_h5, spec), score=atc_score)
    rows = []
    for item in sets:
        eval_set = item["eval_set"]
        logits, labels = _class_logits(item["features"], spec)
        if (labels < 0).any():
            raise ValueError(f"{item['features']}: error prediction needs labelled sets; "
                             f"{eval_set.name!r} is a {eval_set.shift_type} set without labels")
        result = json.loads(Path(item["projnorm"]).read_text())
        if result["model"] != spec.model or result["dataset"] != eval_set.name:
            raise ValueError(f"{item['projnorm']}: result of {result['model']}/{result['dataset']}, "
                             f"expected {spec.model}/{eval_set.name}")
        rows.append({"source": spec.source, "model": spec.model, "dataset": eval_set.name,
                     "shift_type": eval_set.shift_type, "n": len(labels),
                     "test_error": float(np.mean(logits.argmax(1) != labels)),
                     "ConfScore": baselines.conf_score(logits), "Entropy": baselines.entropy_score(logits),
                     "ATC": baselines.atc_error(logits, threshold, atc_score),
                     "AgreeScore": result.get("agree_score", np.nan), "ProjNorm": result["projnorm"]})
    return pd.DataFrame(rows, columns=COLUMNS)
