"""Each deep ensemble ranked beside its own members: the models are the entities (``run 1``, ``run 2``, … for the
members, ``ensemble`` for the ensemble), with the ranking cells' statistics (Friedman / Iman–Davenport → Conover → cliques → layers;
:func:`csfbench.aggregate.ranking.run_analysis`), per metric group and cell regime.

A block is one (evaluation set, metric, MCD flag, CSF variant) of the regime: a member's value is its own CSF's,
the ensemble's is the member mean of that CSF (:func:`csfbench.ensembles.scores.member_average`), judged by the
ensemble's prediction; the ensemble's own CSFs (``Ensemble MSR``, …) have no member counterpart and are not
blocks.  The rows are the members' and the ensemble's own, not the validation-selected ones: the comparison is
within one configuration.  The ranked schemes, metrics and statistical settings are the ``ranking`` section's.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from csfbench.aggregate.cells import Analysis
from csfbench.aggregate.ranking import ranked_rows, ranking_frame, run_analysis
from csfbench.ensembles.scores import ENSEMBLE_CSFS
from csfbench.evaluation import ensemble_rows

#: the block columns of an ensemble's ranking
ENSEMBLE_BLOCKS = ["dataset", "metric", "mcd", "csf", "variant"]
CONFIGURATION = ["source", "backbone", "paradigm", "dropout", "reward"]
COLUMNS = CONFIGURATION + ["members", "group", "regime", "status", "reason", "n_blocks", "entity", "mean_rank",
                           "layer", "top_clique"]
#: the entity of the ensemble's rows (a member's: ``run {run}``)
ENSEMBLE_ENTITY = "ensemble"


def rank_ensembles(table: pd.DataFrame, settings: dict) -> pd.DataFrame:
    """Every ensemble of the results ``table`` ranked beside its members (:data:`COLUMNS`: one row per entity of a
    ranked analysis, one row with ``status`` ``skipped`` and the reason otherwise); ``settings``: the validated
    ``ranking`` section."""
    options = {**settings, "blocks": ENSEMBLE_BLOCKS, "incomplete": "drop_blocks", "stability": {"n_replicates": 0}}
    rows = ranked_rows(table, options)
    is_ensemble = ensemble_rows(rows)
    if not is_ensemble.any():
        return pd.DataFrame(columns=COLUMNS)
    ensembles = rows[is_ensemble & ~rows["csf"].isin(ENSEMBLE_CSFS)]
    frames = []
    for key, own in ensembles.groupby(CONFIGURATION + ["members"], observed=True, sort=True):
        runs = [int(r) for r in str(key[-1]).split("-")]
        same = (rows[CONFIGURATION] == pd.Series(dict(zip(CONFIGURATION, key[:-1])))).all(axis=1)
        members = rows[same & ~is_ensemble & rows["run"].isin(runs)]
        both = pd.concat([members.assign(entity=[f"run {r}" for r in members["run"]]),
                          own.assign(entity=ENSEMBLE_ENTITY)], ignore_index=True)
        for (regime, group), part in _analyses(both, settings):
            result = run_analysis(part, Analysis(group, str(key[1]), False, str(key[0]), regime), options)
            frames.append(_frame(result, dict(zip(CONFIGURATION + ["members"], key)), group, regime))
    return pd.concat(frames, ignore_index=True)[COLUMNS] if frames else pd.DataFrame(columns=COLUMNS)


def _analyses(rows: pd.DataFrame, settings: dict):
    """((regime, metric group), its rows) of every cell regime of ``rows`` and every metric group in which the
    ensemble has rows (none of the conformal metrics: the ensembles are not in the conformal stage), sorted."""
    for regime, part in rows.groupby("cell_regime", observed=True, sort=True):
        for group, metrics in settings["metric_groups"].items():
            chosen = part[part["metric"].isin(list(metrics))]
            if (chosen["entity"] == ENSEMBLE_ENTITY).any():
                yield (str(regime), group), chosen


def _frame(result: dict[str, Any], ensemble: dict[str, Any], group: str, regime: str) -> pd.DataFrame:
    head = {**ensemble, "group": group, "regime": regime, "status": result["status"], "reason": result["reason"],
            "n_blocks": result.get("n_blocks", 0)}
    ranked = ranking_frame(result)
    if ranked.empty:
        return pd.DataFrame([head])
    return ranked[["entity", "mean_rank", "layer", "top_clique"]].assign(**head)
