"""Model-level selection on validation, as in the authors' ``select_best_hyperparameters``
(src/scores_retrieval_utils.py of github.com/cesar-claros/ood_systematic; the selected dropout flags and
rewards are Tables 8–10 of Claros-Olivares & Brockmeier).

For each (source, backbone, paradigm, CSF variant incl. MCD flag, metric) — the single models' and the deep
ensembles' rows apart (an ensemble's validation rows select among the ensembles' configurations) — every
(dropout, reward) configuration is a candidate (MCD variants exist for dropout models only, so they compete among
those); its validation value (the ``misclf`` scheme on the ``val`` split) is averaged over runs; the
best configuration — lowest mean, or highest for metrics where higher is better — is selected, and
the test and shifted-set rows of that configuration are reported for every run.  Selection is per
metric, as in the authors' code (the paper's App. E only says that validation AUGRC is optimised).
Ties are broken by the lower dropout, then the lower reward, so the result is deterministic.

A conformal metric (``auroc@mc_gamma0@0.05``; :func:`csfbench.evaluation.base_metric`) has no validation
rows of its own: its rows are those of the configuration selected for its classical base metric.
"""
from __future__ import annotations

import pandas as pd

from csfbench.evaluation import base_metric, ensemble_rows
from csfbench.metrics import higher_is_better

#: ``ensemble``: whether the rows are a deep ensemble's (:func:`csfbench.evaluation.ensemble_rows`)
CELL = ["source", "backbone", "paradigm", "mcd", "csf", "variant", "metric", "ensemble"]
CONFIG = ["dropout", "reward"]


def select_configurations(table: pd.DataFrame) -> pd.DataFrame:
    """One row per cell with the selected (dropout, reward) and its mean validation value (``ensemble``: the
    cell of the ensembles' rows)."""
    table = table.assign(ensemble=ensemble_rows(table))
    val = table[(table["split"] == "val") & (table["scheme"] == "misclf")]
    if val.empty:
        raise ValueError("model selection needs validation rows (split 'val', scheme 'misclf')")
    means = val.groupby(CELL + CONFIG, as_index=False, observed=True)["value"].mean()
    sign = means["metric"].map(lambda name: -1.0 if higher_is_better(name) else 1.0).astype(float)
    means = means.assign(_key=means["value"] * sign).sort_values(CELL + ["_key"] + CONFIG, kind="stable")
    chosen = means.groupby(CELL, as_index=False, observed=True).head(1)
    return chosen.drop(columns="_key").rename(columns={"value": "val_value"}).reset_index(drop=True)


def selected_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The non-validation rows of the selected configuration of every cell, for every run."""
    chosen = select_configurations(table)[CELL + CONFIG].rename(columns={"metric": "_selected_by"})
    evaluated = table[table["split"] != "val"]
    evaluated = evaluated.assign(_selected_by=evaluated["metric"].map(base_metric), ensemble=ensemble_rows(evaluated))
    on = [c for c in CELL if c != "metric"] + ["_selected_by"] + CONFIG
    return evaluated.merge(chosen, on=on, how="inner").drop(columns=["_selected_by", "ensemble"]).sort_values(
        [c for c in table.columns if c != "value"], kind="stable", ignore_index=True)
