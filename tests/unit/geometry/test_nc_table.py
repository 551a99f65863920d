"""The per-source NC table (:func:`csfbench.geometry.nc_records.nc_table`): per (backbone, dropout, regime) each
metric's mean over the models, its ddof-1 deviation beside it (NaN for a single model) and ``n_models``."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from csfbench.geometry.nc_records import RECORD_COLUMNS, TABLE_KEYS, nc_table
from csfbench.geometry.neural_collapse import METRICS, REGIMES


def _records(models: dict[str, tuple[int, float]]) -> pd.DataFrame:
    """{model: (dropout, value)}: every regime and metric of the model holds ``value`` × (metric position + 1)."""
    rows = [{"source": "s", "model": model, "backbone": "b", "paradigm": "dg", "dropout": dropout, "reward": 2.2,
             "run": i, "regime": regime, "metric": metric, "value": value * (1 + k)}
            for i, (model, (dropout, value)) in enumerate(models.items()) for regime in REGIMES
            for k, metric in enumerate(METRICS)]
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


def test_nc_table_shows_mean_sd_and_n_models_beside_each_metric():
    table = nc_table(_records({"m1": (0, 1.0), "m2": (0, 2.0), "m3": (0, 6.0), "m4": (1, 4.0)}))
    assert list(table.columns) == [*TABLE_KEYS, "n_models", *(c for m in METRICS for c in (m, f"{m}_sd"))]
    cell = table[(table["dropout"] == 0) & (table["regime"] == REGIMES[0])].iloc[0]
    # 1, 2, 6: mean 3, deviations -2, -1, 3 -> (4 + 1 + 9) / 2 = 7
    assert cell["n_models"] == 3 and cell[METRICS[0]] == pytest.approx(3.0)
    assert cell[f"{METRICS[0]}_sd"] == pytest.approx(math.sqrt(7.0))
    assert cell[f"{METRICS[1]}_sd"] == pytest.approx(2 * math.sqrt(7.0))
    single = table[table["dropout"] == 1]
    assert (single["n_models"] == 1).all() and single[[f"{m}_sd" for m in METRICS]].isna().all().all()
    assert single[METRICS[0]].tolist() == [4.0] * len(REGIMES)
