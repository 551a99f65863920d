"""The error-prediction study as metric rows (:data:`csfbench.evaluation.COLUMNS`), scheme ``error_prediction``.

* per (model, set, predictor): metric ``predictor_value`` (csf = the predictor);
* per (model, set): metric ``test_error`` (csf ``actual``);
* per (model, predictor), over the covariate sets: ``r2`` and ``spearman`` (dataset ``covariate_sets``);
* per (model, adversarial or ID test set, predictor): ``predicted_error`` of the stress test.
"""
from __future__ import annotations

import pandas as pd

from csfbench.evaluation import COLUMNS, model_columns
from csfbench.projnorm.evaluate import PREDICTORS
from csfbench.specs import ModelSpec

SCHEME = "error_prediction"


def metric_rows(specs: dict[str, ModelSpec], per_set: pd.DataFrame, corr: pd.DataFrame, stress: pd.DataFrame,
                groups: dict[str, dict] | None = None) -> pd.DataFrame:
    """The rows of one source's study; ``groups``: {set: its group keys (:attr:`csfbench.specs.EvalSet.groups`)},
    written to the group columns (null for a set not in it)."""
    rows = []
    groups = groups or {}

    def add(model, dataset, shift_type, csf, metric, value):
        spec = specs[model]
        regime = "test" if shift_type == "id" else shift_type
        rows.append({**model_columns(spec),
                     "mcd": False, "csf": csf, "variant": "none", "tuning_protocol": "none", "dataset": dataset,
                     "shift_type": shift_type, "regime": regime, "scheme": SCHEME, "split": "test", "metric": metric,
                     "value": float(value), **groups.get(dataset, {})})

    for r in per_set.itertuples(index=False):
        add(r.model, r.dataset, r.shift_type, "actual", "test_error", r.test_error)
        for predictor in PREDICTORS:
            if pd.notna(getattr(r, predictor)):
                add(r.model, r.dataset, r.shift_type, predictor, "predictor_value", getattr(r, predictor))
    for r in corr.itertuples(index=False):
        for metric in ("r2", "spearman"):
            if pd.notna(getattr(r, metric)):
                add(r.model, "covariate_sets", "covariate", r.predictor, metric, getattr(r, metric))
    for r in stress.to_dict("records"):
        shift_type = "id" if r["attack"] == "clean" else "adversarial"
        for predictor in PREDICTORS:
            if predictor in r and pd.notna(r[predictor]):
                add(r["model"], r["dataset"], shift_type, predictor, "predicted_error", r[predictor])
    return pd.DataFrame(rows, columns=COLUMNS)
