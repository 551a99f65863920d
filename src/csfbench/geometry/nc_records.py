"""Neural-collapse records of trained models and the per-source NC table (Claros-Olivares & Brockmeier, §3.4, Table 7).

One record per trained model: the eight metrics of :mod:`csfbench.geometry.neural_collapse` on the
model's **training** features (non-MCD ``features`` of ``features/{source}/{model}/train.h5``, ground-
truth labels, the head rows of the C classes — the Deep Gamblers abstention row is dropped) in the three
regimes ``none`` (unfiltered h), ``global`` (global projection ĥ) and ``class_pred`` (class-predicted
projection ĥ^pred).  The projections are the CSFs' own: the det-mode projection states stored in the
``fit.h5`` of the ``global`` and ``class`` fit groups (same PCA, same tuned variance v).  A group the
config does not fit is refitted here with the variance ``geometry/nc/variance``.

Record file (CSV, long format): ``source, model, backbone, paradigm, dropout, reward, run, regime,
metric, value``; every metric is dimensionless, ≥ 0 and lower = more collapse.  The weight metrics do
not depend on the regime and repeat in every regime.

NC table (per source, CSV + LaTeX): the records averaged over runs, paradigms and rewards, grouped by
(backbone, dropout, regime) as in the authors' aggregation; ``n_models``, the number of models averaged, and
per metric in :data:`csfbench.geometry.neural_collapse.METRICS` order its mean and ``<metric>_sd``, the
standard deviation over those models (ddof = 1; NaN for a single model).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from csfbench.aggregate.results_table import read_columns
from csfbench.geometry.neural_collapse import METRICS, REGIMES, nc_regimes
from csfbench.report.spread import mean_sd_n, wide_spread
from csfbench.specs import ModelSpec

ID_COLUMNS = ["source", "model", "backbone", "paradigm", "dropout", "reward", "run"]
RECORD_COLUMNS = [*ID_COLUMNS, "regime", "metric", "value"]
TABLE_KEYS = ["backbone", "dropout", "regime"]
#: the CSF fit groups whose projections define the projected regimes
PROJECTION_GROUPS = ("global", "class")


def fitted_projections(fit_files: Mapping[str, str | Path]) -> dict[str, dict]:
    """The det-mode projection state of each ``{group: fit.h5}`` (groups ``global`` and/or ``class``)."""
    from csfbench.csf.store import read_projection

    out = {}
    for group, path in fit_files.items():
        if group not in PROJECTION_GROUPS:
            raise ValueError(f"{path}: fit group {group!r} has no projection for the NC regimes "
                             f"(expected one of {PROJECTION_GROUPS})")
        state = read_projection(path)
        if state["group"] != group:
            raise ValueError(f"{path}: holds the {state['group']!r} projection, expected {group!r}")
        out[group] = state
    return out


def model_nc_records(spec: ModelSpec, train_h5: str | Path, fit_files: Mapping[str, str | Path],
                     normalizer: str = "authors", variance: float | None = None) -> pd.DataFrame:
    """The NC record of one model (columns :data:`RECORD_COLUMNS`, regimes × metrics rows).

    ``fit_files`` maps the fitted projection groups to their ``fit.h5``; a missing group is refitted with
    ``variance`` (ValueError naming ``geometry/nc/variance`` when it is not set).
    """
    from csfbench.features.store import feature_expect, read_features, validate_feature_file

    validate_feature_file(train_h5, feature_expect(spec) | {"dataset": "train"})
    arrays, attrs = read_features(train_h5, keys=("features", "labels", "pred", "head/weight", "head/bias"))
    missing = [k for k in ("features", "labels", "pred", "head/weight") if k not in arrays]
    if missing:
        raise ValueError(f"{train_h5}: the train feature file lacks {missing}")
    absent = [g for g in PROJECTION_GROUPS if g not in fit_files]
    if absent and variance is None:
        raise ValueError(f"the CSF fit groups {absent} are not configured (csf/groups): set geometry/nc/variance "
                         "to refit their projections for the NC regimes")
    try:
        metrics = nc_regimes(arrays["features"], arrays["labels"], arrays["pred"], arrays["head/weight"],
                             arrays.get("head/bias"), variance, normalizer,
                             projections=fitted_projections(fit_files), n_classes=int(spec.n_classes))
    except ValueError as exc:
        raise ValueError(f"{train_h5}: {exc}") from None
    ids = {k: getattr(spec, k) for k in ID_COLUMNS}
    rows = [{**ids, "regime": regime, "metric": name, "value": metrics[regime][name]}
            for regime in REGIMES for name in METRICS]
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)

def read_records(paths: list[str | Path]) -> pd.DataFrame:
    """Concatenate NC record files (ValueError naming a file without the record columns)."""
    if not paths:
        raise ValueError("no NC record files to aggregate")
    return read_columns(paths, RECORD_COLUMNS, "NC record file", pd.read_csv)


def nc_table(records: pd.DataFrame) -> pd.DataFrame:
    """Mean of each metric over runs, paradigms and rewards per (backbone, dropout, regime), with its spread.

    Rows sorted by backbone, dropout and regime (in :data:`REGIMES` order); columns ``TABLE_KEYS``,
    ``n_models`` (the models averaged) and, per metric in :data:`~csfbench.geometry.neural_collapse.METRICS`
    order, its mean and ``<metric>_sd``, the standard deviation over those models (ddof = 1, NaN for a single
    model; dimensionless like the metric).
    """
    unknown = sorted(set(records["regime"]) - set(REGIMES)) + sorted(set(records["metric"]) - set(METRICS))
    if unknown:
        raise ValueError(f"NC records hold unknown regimes/metrics {unknown}")
    wide = wide_spread(mean_sd_n(records, [*TABLE_KEYS, "metric"]), TABLE_KEYS, "metric", "value", METRICS)
    counts = records.groupby(TABLE_KEYS)["model"].nunique().rename("n_models")
    table = pd.concat([counts, wide], axis=1).reset_index()
    table["regime"] = pd.Categorical(table["regime"], categories=REGIMES, ordered=True)
    table = table.sort_values(TABLE_KEYS, ignore_index=True)
    table["regime"] = table["regime"].astype(str)
    table.columns.name = None
    return table
