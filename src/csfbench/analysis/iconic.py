"""ICONIC-444's result tables (Krumpl, Avenhaus & Possegger, "ICONIC-444: A 3.1-Million-Image Dataset for OOD
Detection Research", arXiv 2601.10802, 2026, Tables 4 and 10).

Per OOD category (near, far, extreme, synthetic) and method: the mean ± standard deviation of a
metric over every run (seeds × architectures × tasks: 3 × 2 × 4 = 24 in the paper), and an
"Average" column = the **unweighted mean of the category means**, whose ± is the **sample standard
deviation (ddof = 1) of those category means** (not of the runs; e.g. GRAM's FPR95 category means
35.74, 19.75, 0.00, 0.44 give 13.98 ± 17.18).

Metrics (fractions in [0, 1]; the paper prints ×100), computed by :func:`category_metrics` on the
``newclass`` evaluation set (all ID test samples positive, the OOD set negative):

* ``auroc`` — higher is better;
* ``fpr95`` / ``fpr99`` — ID positive: FPR = fraction of OOD accepted when 95 % / 99 % of the ID
  samples are retained (the paper's prose: "rejecting 5 % of good data");
* ``fpr95_failure_positive`` / ``fpr99_failure_positive`` — OOD positive (OpenOOD v1.5's code, on
  which ICONIC-444 builds): FPR = fraction of ID flagged when 95 % / 99 % of the OOD samples are
  caught.  The paper does not say which convention its tables use; both are kept.

Categories with sub-datasets (extreme: ImageNet, iNaturalist, Places365, Textures; synthetic: 25
types).  The paper does not say whether such a category's metric is computed on the pooled
sub-datasets or averaged over them, so both are produced and labelled: ``aggregation`` is
``"pooled"`` (the metric of the union, a row whose ``subset`` is :data:`POOLED`) or ``"averaged"``
(the unweighted mean of the sub-datasets' metrics within each run); a category with a single
subset is ``"single"`` (both readings agree).

Input of the tables: a long DataFrame, one row per value, with the columns

========  =====================================================================================
method    CSF name
task      ICONIC task (almond, wheat, kernels, food_grade) or any run grouping
arch      architecture
run       seed / repetition
category  OOD category
subset    sub-dataset of the category; for a category without sub-datasets any single value
          (e.g. the category name); :data:`POOLED` for the metric of the pooled sub-datasets
metric    metric name
value     metric value
========  =====================================================================================

(``category_metrics(...).assign(method=…, task=…, arch=…, run=…, category=…)`` gives such rows.)
The deviation of a category cell is taken over all its runs at once (task × arch × run; the paper
does not say whether it is flat or nested), with ``ddof`` (default 1; NaN for a single run), and the
tables give the number of runs averaged beside it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from csfbench.metrics import build_scheme, evaluate
from csfbench.metrics._inputs import finite_1d
from csfbench.report.spread import mean_sd_n

#: the ``subset`` value of a row holding the metric of a category's pooled sub-datasets
POOLED = "(pooled)"
#: the category label of the "Average" column
AVERAGE = "Average"
ICONIC_METRICS = ("auroc", "fpr95", "fpr95_failure_positive", "fpr99", "fpr99_failure_positive")
AGGREGATIONS = ("averaged", "pooled")
INPUT_COLUMNS = ("method", "task", "arch", "run", "category", "subset", "metric", "value")
_RUN = ["method", "task", "arch", "run", "category", "metric"]
#: the statistics of a cell of :func:`iconic_table`
STATS = ("mean", "std", "n")


def category_metrics(id_confidence, subsets: Mapping[str, np.ndarray], metrics: Sequence[str] = ICONIC_METRICS,
                     pooled: bool | None = None) -> pd.DataFrame:
    """Metrics of the ID test set (positive) against each OOD sub-dataset of one category, for one run.

    ``id_confidence``: the ID test confidences (higher = more ID); ``subsets[name]``: each
    sub-dataset's confidences.  Returns rows ``subset, metric, value`` (metric names of
    :func:`csfbench.metrics.evaluate`); with ``pooled`` (default: when there are several subsets)
    also the rows of the union of the subsets, with ``subset`` = :data:`POOLED`.
    """
    if not subsets:
        raise ValueError("category_metrics needs at least one OOD sub-dataset")
    if POOLED in subsets:
        raise ValueError(f"{POOLED!r} is reserved for the pooled rows")
    id_conf = finite_1d(id_confidence, "id_confidence")
    ones = np.ones(id_conf.size)
    parts = {name: finite_1d(conf, f"subsets[{name!r}]") for name, conf in subsets.items()}
    if pooled if pooled is not None else len(parts) > 1:
        parts[POOLED] = np.concatenate(list(parts.values()))
    rows = []
    for name, conf in parts.items():
        values = evaluate(build_scheme("newclass", id_conf, ones, conf), tuple(metrics))
        rows.extend({"subset": name, "metric": metric, "value": values.get(metric, np.nan)} for metric in metrics)
    return pd.DataFrame(rows, columns=["subset", "metric", "value"])


def _category_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run, category and metric: the value under each aggregation (``aggregation`` column)."""
    missing = [c for c in INPUT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"ICONIC table input lacks column(s) {missing}; expected {INPUT_COLUMNS}")
    is_pooled = frame["subset"] == POOLED
    parts = frame[~is_pooled]
    n_subsets = parts.groupby(["category"], sort=False)["subset"].nunique()
    multi = set(n_subsets[n_subsets > 1].index)
    pooled_categories = set(frame.loc[is_pooled, "category"])
    lacking = sorted(multi - pooled_categories)
    if lacking:
        raise ValueError(f"categories {lacking} have several sub-datasets but no {POOLED!r} rows")
    averaged = parts.groupby(_RUN, sort=False, as_index=False)["value"].mean()
    averaged["aggregation"] = np.where(averaged["category"].isin(multi), "averaged", "single")
    pooled = frame[is_pooled & frame["category"].isin(multi)][[*_RUN, "value"]].assign(aggregation="pooled")
    return pd.concat([averaged, pooled], ignore_index=True)


def iconic_summary(frame: pd.DataFrame, ddof: int = 1) -> pd.DataFrame:
    """The long form of the tables: one row per (method, aggregation view, category, metric).

    Columns: ``method``, ``view`` (``"averaged"`` or ``"pooled"``: which reading of the categories
    with sub-datasets the row belongs to), ``category`` (the categories in order of first
    appearance, then :data:`AVERAGE`), ``aggregation`` (``"single"``, ``"averaged"`` or
    ``"pooled"`` for a category; ``view`` for the Average), ``metric``, ``mean``, ``std`` and ``n``
    (runs for a category, categories for the Average; a missing value is not counted).  Category cells:
    mean and ``ddof`` std over the runs (:func:`csfbench.report.spread.mean_sd_n`; NaN for a single run
    with ddof 1).  Average: the unweighted mean of the view's category means and their std with ddof 1.
    The ``mean`` / ``std`` names are the paper's "mean ± std"; the report's other tables call the pair
    ``<name>`` / ``<name>_sd``.
    """
    values = _category_values(frame)
    order = list(dict.fromkeys(frame["category"]))
    out = []
    for view in AGGREGATIONS:
        chosen = values[values["aggregation"].isin(("single", view))]
        cells = mean_sd_n(chosen, ["method", "category", "aggregation", "metric"], ddof=ddof, count="n").rename(
            columns={"value": "mean", "value_sd": "std"})
        average = (mean_sd_n(cells, ["method", "metric"], "mean", count="n").rename(columns={"mean_sd": "std"})
                   .assign(category=AVERAGE, aggregation=view))
        both = pd.concat([cells, average], ignore_index=True).assign(view=view)
        both["category"] = pd.Categorical(both["category"], categories=[*order, AVERAGE], ordered=True)
        out.append(both)
    summary = pd.concat(out, ignore_index=True)
    methods = list(dict.fromkeys(frame["method"]))
    metrics = list(dict.fromkeys(frame["metric"]))
    summary["_m"] = summary["method"].map(methods.index)
    summary["_k"] = summary["metric"].map(metrics.index)
    summary["_v"] = summary["view"].map(AGGREGATIONS.index)
    summary = summary.sort_values(["_v", "_m", "category", "_k"], kind="stable").drop(columns=["_m", "_k", "_v"])
    summary["category"] = summary["category"].astype(str)
    return summary[["method", "view", "category", "aggregation", "metric", "mean", "std", "n"]].reset_index(drop=True)


def iconic_table(frame: pd.DataFrame, aggregation: str = "averaged", ddof: int = 1) -> pd.DataFrame:
    """ICONIC-444's Table 4/10 shape for one reading of the sub-dataset categories.

    Index: method (order of first appearance); columns: a MultiIndex ``(category, metric, stat)``
    with stat ``mean`` / ``std`` / ``n`` (the runs averaged; for ``"Average"`` the categories), the
    categories in order of first appearance then ``"Average"``.
    A category with sub-datasets is labelled ``"<category> (averaged)"`` or
    ``"<category> (pooled)"`` after ``aggregation``.  See :func:`iconic_summary`.
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    summary = iconic_summary(frame, ddof)
    summary = summary[summary["view"] == aggregation].copy()
    labelled = np.where(summary["aggregation"].isin(AGGREGATIONS) & (summary["category"] != AVERAGE),
                        summary["category"] + " (" + summary["aggregation"] + ")", summary["category"])
    summary["label"] = labelled
    columns = list(dict.fromkeys(summary["label"]))
    metrics = list(dict.fromkeys(summary["metric"]))
    methods = list(dict.fromkeys(summary["method"]))
    wide = summary.pivot(index="method", columns=["label", "metric"], values=list(STATS))
    wide = wide.reorder_levels([1, 2, 0], axis=1)
    wide.columns = wide.columns.set_names(["category", "metric", "stat"])
    ordered = [(c, m, s) for c in columns for m in metrics for s in STATS if (c, m, s) in wide.columns]
    counts = [c for c in ordered if c[2] == "n"]
    return wide.loc[methods, ordered].astype({c: "Int64" for c in counts})
