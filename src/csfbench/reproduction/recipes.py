"""How each reproduction target's value is recomputed (:data:`RECIPES`; the ``recipe`` of a target in
``targets.yaml``).

A recipe takes the target's ``inputs`` and the run's results (:class:`RunResults`, or None for a data-free
check) and returns an :class:`Obtained`: the value (a number, or a sorted list of names for a set) and, where
the run's rows carry one, its bootstrap interval.  Data-free recipes (``worked_example``, ``decomposition``,
``regimes_from_distances``, ``conformal_correction``, ``category_average``, ``stress_mse``,
``network_average``) recompute a published number from the paper's own published inputs, through the same
functions the workflow uses; data recipes (``best_metric``, ``neural_collapse``, ``run_metric``) read the run's
results and raise :class:`NotRun` naming what the run lacks.  Orientation and units are the published ones (the
target's ``quantity`` states them).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


class NotRun(Exception):
    """The run lacks what a target needs; the message names it."""


@dataclass(frozen=True)
class RunResults:
    """A finished run's results table, the ``ranking`` section its ranked rows were chosen with (complete, as
    :func:`csfbench.workflow.settings.validate_config` fills it) and its neural-collapse tables ({source: the
    table of :func:`csfbench.geometry.nc_records.nc_table`}; empty for a run without them)."""

    table: pd.DataFrame
    ranking: dict
    nc_tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Obtained:
    """A recomputed value (a float, or a sorted list of names) and its bootstrap interval (None without one)."""

    value: float | list[str]
    interval: tuple[float, float] | None = None


def _worked_example(inputs: dict, results: RunResults | None) -> Obtained:
    """Claros-Olivares & Brockmeier, App. C.1: the ranking statistics of the worked example's rank matrix
    (``inputs['ranks']``, blocks × ``inputs['csfs']``, lower = better) with :func:`csfbench.stats.rank_table`.
    ``output``: ``friedman_q``, ``friedman_p``, ``mean_normalised_rank`` (of ``csf``, rank / k averaged over the
    blocks), ``layer_members`` or ``layer_mean_rank`` (of greedy layer ``layer``, 1 = best, with ``p_adjust``).
    The matrix is checked against the published rank sums (``rank_sums``) first."""
    from csfbench.stats import rank_table

    csfs, ranks = list(inputs["csfs"]), inputs["ranks"]
    sums = {csf: sum(row[j] for row in ranks) for j, csf in enumerate(csfs)}
    if sums != dict(inputs["rank_sums"]):
        raise ValueError(f"worked example: the rank matrix's rank sums {sums} are not the published {inputs['rank_sums']}")
    table = pd.DataFrame([{"block": b, "csf": csf, "rank": row[j]} for b, row in enumerate(ranks)
                          for j, csf in enumerate(csfs)])
    output = inputs["output"]
    if output == "mean_normalised_rank":
        return Obtained(float(table.loc[table["csf"] == inputs["csf"], "rank"].mean() / len(csfs)))
    result = rank_table(table, ["block"], "csf", "rank", p_adjust=inputs.get("p_adjust", "none"))
    if output == "friedman_q":
        return Obtained(result["friedman"]["statistic"])
    if output == "friedman_p":
        return Obtained(result["friedman"]["pvalue"])
    layer = result["layers"][inputs["layer"] - 1]
    if output == "layer_members":
        return Obtained(sorted(layer["members"]))
    if output == "layer_mean_rank":
        return Obtained(layer["mean_rank"])
    raise ValueError(f"worked example: unknown output {output!r}")


def _decomposition(inputs: dict, results: RunResults | None) -> Obtained:
    """Yang, Zhang & Russakovsky, §4 and App. E: the new-class (``output: newclass``, from ``a_co``, ``a_io``)
    or weighted failure (``failure``, from ``a_co``, ``a_ci``) AUROC of the conditional AUROCs and the ID
    ``accuracy`` (:mod:`csfbench.analysis.decomposition`); AUROCs in %, accuracy a fraction."""
    from csfbench.analysis import decomposition as dec

    a = inputs["accuracy"]
    if inputs["output"] == "newclass":
        return Obtained(100 * dec.newclass_from_parts(inputs["a_co"] / 100, inputs["a_io"] / 100, a))
    if inputs["output"] == "failure":
        return Obtained(100 * dec.failure_weighted_from_parts(inputs["a_co"] / 100, inputs["a_ci"] / 100, a))
    raise ValueError(f"decomposition: unknown output {inputs['output']!r}")


def _conformal_correction(inputs: dict, results: RunResults | None) -> Obtained:
    """Novello, Dalmau & Andéol, §4 and Tables 4–5: the calibration-conditional correction of a printed classical
    FPR (``classical``, in %) measured on ``n_cal`` calibration points at level ``delta`` with band ``method``
    (:func:`csfbench.metrics.conformal.correct_fpr`), in %."""
    from csfbench.metrics.conformal import correct_fpr

    return Obtained(100 * float(correct_fpr(inputs["classical"] / 100, inputs["n_cal"], inputs["delta"],
                                            inputs["method"])))


def _regimes_from_distances(inputs: dict, results: RunResults | None) -> Obtained:
    """Claros-Olivares & Brockmeier, §3.3 and App. B: the OOD sets of one source in regime ``regime`` when its
    distance table (``distances``: {set: [kernel MMD, Fréchet distance, label-text alignment, image-centroid
    distance]}, Table 4) is clustered by :func:`csfbench.proximity.regimes.assign_regimes`."""
    from csfbench.proximity.distances import DISTANCE_COLUMNS
    from csfbench.proximity.regimes import assign_regimes

    table = pd.DataFrame.from_dict(inputs["distances"], orient="index", columns=list(DISTANCE_COLUMNS))
    regimes = assign_regimes(table)
    return Obtained(sorted(regimes.index[regimes == inputs["regime"]]))


def _category_average(inputs: dict, results: RunResults | None) -> Obtained:
    """Krumpl, Avenhaus & Possegger (ICONIC-444), Tables 4 and 10: the Average column of ``method``'s ``metric``
    from its published category means (``table``: {method: {metric: [near, far, extreme, synthetic]}}, in %) with
    :func:`csfbench.analysis.iconic.iconic_summary`: ``output`` ``mean`` (their unweighted mean) or ``std`` (their
    sample standard deviation, ddof 1), in %."""
    from csfbench.analysis.iconic import AVERAGE, iconic_summary

    means = inputs["table"][inputs["method"]][inputs["metric"]]
    frame = pd.DataFrame([{"method": inputs["method"], "task": "all", "arch": "all", "run": 0, "category": category,
                           "subset": category, "metric": inputs["metric"], "value": value}
                          for category, value in zip(("near", "far", "extreme", "synthetic"), means, strict=True)])
    summary = iconic_summary(frame)
    average = summary[(summary["view"] == "averaged") & (summary["category"] == AVERAGE)].iloc[0]
    if inputs["output"] not in ("mean", "std"):
        raise ValueError(f"category average: unknown output {inputs['output']!r}")
    return Obtained(float(average[inputs["output"]]))


def _stress_mse(inputs: dict, results: RunResults | None) -> Obtained:
    """Yu et al., App. E: Table 9's mean squared error of ``predictor``'s predicted error fraction over Table 10's
    columns (``table``: {``true_error``: [...], predictor: [...]}, in %) with
    :func:`csfbench.projnorm.evaluate.prediction_mse`; dimensionless (fractions squared)."""
    from csfbench.projnorm.evaluate import prediction_mse

    table = inputs["table"]
    if len(table[inputs["predictor"]]) != len(table["true_error"]):
        raise ValueError(f"stress MSE: {inputs['predictor']} has {len(table[inputs['predictor']])} columns, the "
                         f"true error {len(table['true_error'])}")
    fraction = [[value / 100 for value in table[name]] for name in (inputs["predictor"], "true_error")]
    return Obtained(prediction_mse(*fraction))


def _neural_collapse(inputs: dict, results: RunResults | None) -> Obtained:
    """Claros-Olivares & Brockmeier, §3.4 and Table 7: neural-collapse ``metric`` (a name of
    :data:`csfbench.geometry.neural_collapse.METRICS`; dimensionless, lower = more collapse) of ``backbone`` on
    ``source`` in ``regime`` from the run's NC table, averaged over its dropout groups with equal weight (the
    table does not say which group it shows; docs/reproducibility.md)."""
    if results is None:
        raise NotRun("needs a run's neural-collapse tables")
    table = results.nc_tables.get(inputs["source"])
    if table is None:
        raise NotRun(f"needs the neural-collapse table of source {inputs['source']!r} (a run with a geometry section)")
    if inputs["metric"] not in table:
        raise NotRun(f"the neural-collapse table of source {inputs['source']!r} has no column {inputs['metric']!r}")
    rows = table[(table["backbone"] == inputs["backbone"]) & (table["regime"] == inputs["regime"])]
    if rows.empty:
        raise NotRun(f"needs neural-collapse rows of backbone {inputs['backbone']!r} on {inputs['source']!r} in "
                     f"regime {inputs['regime']!r}")
    return Obtained(float(rows.groupby("dropout")[inputs["metric"]].mean().mean()))


def _network_average(inputs: dict, results: RunResults | None) -> Obtained:
    """Yu et al., Table 1: an Average row's cell, the unweighted mean over the networks of ``method``'s
    ``statistic`` (``r2`` or ``spearman``) on ``dataset`` (``table``: {dataset: {method: {statistic: [per network]}}}),
    with :func:`csfbench.report.spread.mean_sd_n`, the workflow's mean over runs; dimensionless."""
    from csfbench.report.spread import mean_sd_n

    values = inputs["table"][inputs["dataset"]][inputs["method"]][inputs["statistic"]]
    frame = pd.DataFrame({"cell": 0, "value": values})
    return Obtained(float(mean_sd_n(frame, ["cell"])["value"].iloc[0]))


def _model_rows(inputs: dict, results: RunResults | None) -> pd.DataFrame:
    """The result rows of the target's ``source`` and ``backbone``, of the single models (the papers have no
    deep ensembles); :class:`NotRun` naming the one the run lacks (certify() says which run when there is none)."""
    from csfbench.evaluation import ensemble_rows

    if results is None:
        raise NotRun("needs a run's results table")
    table = results.table[~ensemble_rows(results.table)]
    for column, wanted in (("source", inputs["source"]), ("backbone", inputs["backbone"])):
        if not (table[column] == wanted).any():
            raise NotRun(f"needs {column} {wanted!r}, which the run did not evaluate")
    return table[(table["source"] == inputs["source"]) & (table["backbone"] == inputs["backbone"])]


def _best_metric(inputs: dict, results: RunResults | None) -> Obtained:
    """Claros-Olivares & Brockmeier, Table 2: the best run-mean ``metric`` of one (``source``, ``dataset``,
    ``backbone``) over paradigms and CSF variants of the validation-selected configurations, non-MCD or MCD
    (``mcd``), in the table's display units (×1000 for AURC/AUGRC; :func:`csfbench.report.tables.best_metric_table`),
    with the bootstrap interval where that table gives one (a single run)."""
    from csfbench.report.tables import best_metric_table

    rows = _model_rows(inputs, results)
    if not (rows["dataset"] == inputs["dataset"]).any():
        raise NotRun(f"needs evaluation set {inputs['dataset']!r} of source {inputs['source']!r}")
    if inputs["mcd"] and not rows["mcd"].astype(bool).any():
        raise NotRun(f"needs MC-dropout rows of backbone {inputs['backbone']!r} on {inputs['source']!r}")
    best = best_metric_table(rows, inputs["metric"], results.ranking)
    best = best[(best["dataset"] == inputs["dataset"]) & (best["backbone"] == inputs["backbone"])]
    if best.empty:
        raise NotRun(f"needs selected test rows of {inputs['metric']} on {inputs['source']}/{inputs['dataset']}")
    row = best.iloc[0]
    suffix = "_mcd" if inputs["mcd"] else ""
    value = float(row[f"best{suffix}"])
    if math.isnan(value):
        raise NotRun(f"the run has no {'MCD' if inputs['mcd'] else 'non-MCD'} value for this cell")
    low, high = float(row[f"ci_low{suffix}"]), float(row[f"ci_high{suffix}"])
    return Obtained(value, None if math.isnan(low) or math.isnan(high) else (low, high))


def _run_metric(inputs: dict, results: RunResults | None) -> Obtained:
    """A published metric of one detector on one model from the run's result rows: ``metric`` of CSF ``csf``
    (variant ``variant``, non-MCD) under shift ``scheme`` against the ID test set, for ``source`` and ``backbone``
    (one model configuration; rows of several are refused, never pooled), averaged over the runs of each of
    ``datasets`` and then over the sets (a group mean, as the papers' near groups), times ``scale`` (100 for %).
    The bootstrap interval is the row's where a single row gives the value."""
    rows = _model_rows(inputs, results)
    absent = [d for d in inputs["datasets"] if not (rows["dataset"] == d).any()]
    if absent:
        raise NotRun(f"needs evaluation set(s) {absent} of source {inputs['source']!r}")
    rows = rows[rows["dataset"].isin(inputs["datasets"]) & ~rows["mcd"].astype(bool) & (rows["id_set"] == "test")
                & (rows["scheme"] == inputs["scheme"]) & (rows["csf"] == inputs["csf"])
                & (rows["variant"] == inputs["variant"]) & (rows["metric"] == inputs["metric"])]
    which = f"{inputs['metric']} rows of {inputs['csf']} ({inputs['variant']}, {inputs['scheme']})"
    if rows["dataset"].nunique() < len(inputs["datasets"]):
        raise NotRun(f"needs {which} on {inputs['datasets']}")
    configurations = rows[["paradigm", "dropout", "reward"]].drop_duplicates()
    if len(configurations) > 1:  # a published cell is one model's: never an average over configurations
        raise NotRun(f"the run's {which} of backbone {inputs['backbone']!r} come from {len(configurations)} model "
                     "configurations (paradigm, dropout, reward); the target reads one model's runs")
    scale = inputs["scale"]
    value = scale * float(rows.groupby("dataset")["value"].mean().mean())
    interval = None
    if len(rows) == 1 and "ci_low" in rows and rows[["ci_low", "ci_high"]].notna().all(axis=None):
        interval = (scale * float(rows["ci_low"].iloc[0]), scale * float(rows["ci_high"].iloc[0]))
    return Obtained(value, interval)


#: recipe name → function(inputs, results or None) → :class:`Obtained`
RECIPES: dict[str, Callable[[dict, RunResults | None], Obtained]] = {
    "worked_example": _worked_example,
    "decomposition": _decomposition,
    "regimes_from_distances": _regimes_from_distances,
    "conformal_correction": _conformal_correction,
    "category_average": _category_average,
    "stress_mse": _stress_mse,
    "network_average": _network_average,
    "best_metric": _best_metric,
    "neural_collapse": _neural_collapse,
    "run_metric": _run_metric,
}


def obtain(recipe: str, inputs: dict[str, Any], results: RunResults | None) -> Obtained:
    """The value of a target's ``recipe`` on its ``inputs`` and the run's ``results`` (None: data-free)."""
    return RECIPES[recipe](inputs, results)
