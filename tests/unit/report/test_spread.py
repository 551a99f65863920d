"""The spread over runs or models of the report's averaged tables (:mod:`csfbench.report.spread`): mean, ddof-1
deviation and count against hand computations, NaN (not 0) for a single value, the LaTeX's "mean ± sd" cells,
and the conformal tables' spread over models."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from csfbench.evaluation import CONFORMAL_SCHEME, conformal_metric
from csfbench.report.conformal import conformal_table, prediction_set_table
from csfbench.report.spread import fold_spread, mean_sd_n, spread_pairs, wide_spread
from csfbench.report.tables import write_table


def _runs() -> pd.DataFrame:
    """Cell a: three runs 0.2, 0.4, 0.9 (and one missing value); cell b: one run 0.5."""
    return pd.DataFrame({"cell": ["a", "a", "a", "a", "b"], "run": [1, 2, 3, 4, 1],
                         "value": [0.2, 0.4, 0.9, np.nan, 0.5]})


def test_mean_sd_n_by_hand_and_nan_for_a_single_value():
    spread = mean_sd_n(_runs(), ["cell"]).set_index("cell")
    assert list(spread.columns) == ["value", "value_sd", "n_runs"]
    # mean 0.5; deviations -0.3, -0.1, 0.4 -> (0.09 + 0.01 + 0.16) / (3 - 1) = 0.13; the missing run not counted
    assert spread.loc["a", "value"] == pytest.approx(0.5)
    assert spread.loc["a", "value_sd"] == pytest.approx(math.sqrt(0.13)) and spread.loc["a", "n_runs"] == 3
    assert spread.loc["b", "n_runs"] == 1 and math.isnan(spread.loc["b", "value_sd"])  # one run: no spread
    population = mean_sd_n(_runs(), ["cell"], ddof=0, count="n_models").set_index("cell")
    assert population.loc["a", "value_sd"] == pytest.approx(math.sqrt(0.26 / 3)) and "n_models" in population


def test_wide_spread_puts_each_deviation_beside_its_mean_in_the_given_order():
    long = pd.concat([_runs().assign(metric="x"), _runs().assign(metric="y", value=lambda f: 2 * f["value"])])
    wide = wide_spread(mean_sd_n(long, ["cell", "metric"]), "cell", "metric", "value", ["y", "missing", "x"])
    assert list(wide.columns) == ["y", "y_sd", "x", "x_sd"] and spread_pairs(wide.columns) == ["y", "x"]
    assert wide.loc["a", "y_sd"] == pytest.approx(2 * math.sqrt(0.13))


def test_latex_prints_mean_plus_minus_sd_and_the_csv_and_view_keep_both_columns(tmp_path):
    frame = mean_sd_n(_runs(), ["cell"])
    folded = fold_spread(frame, "%.2f")
    assert list(folded.columns) == ["cell", "value", "n_runs"]
    assert folded["value"].tolist() == ["0.50 ± 0.36", "0.50"]  # the single run: the mean alone, n_runs says 1
    write_table(frame, tmp_path / "t.csv", tmp_path / "t.tex", tmp_path / "t.html", "Spread ± runs")
    tex = (tmp_path / "t.tex").read_text()
    assert r"0.500 $\pm$ 0.361" in tex and "±" not in tex and r"Spread $\pm$ runs" in tex
    assert list(pd.read_csv(tmp_path / "t.csv").columns) == ["cell", "value", "value_sd", "n_runs"]
    assert "<th>value_sd</th>" in (tmp_path / "t.html").read_text()
    assert fold_spread(frame.drop(columns="value_sd"), "%.2f").equals(frame.drop(columns="value_sd"))


def _conformal_rows() -> pd.DataFrame:
    """Source s, CSF MSR on set near: AUROC 0.7, 0.8, 0.9 over runs 1-3 (conformal 0.1 lower); CSF GEN run 1 only."""
    rows = []
    for csf, runs in (("MSR", (1, 2, 3)), ("GEN", (1,))):
        for run in runs:
            base = {"source": "s", "backbone": "b", "paradigm": "p", "dropout": 0, "reward": 0.0, "run": run,
                    "mcd": False, "csf": csf, "variant": "none", "dataset": "near", "scheme": CONFORMAL_SCHEME}
            auroc = 0.6 + 0.1 * run
            rows += [{**base, "metric": "auroc", "value": auroc},
                     {**base, "metric": conformal_metric("auroc", "dkwm", 0.05), "value": auroc - 0.1}]
    return pd.DataFrame(rows)


def test_conformal_table_shows_the_spread_over_the_models():
    table = conformal_table(_conformal_rows(), "s", "dkwm", 0.05)
    assert list(table.columns) == ["near auroc", "near auroc_sd", "near auroc conformal", "near auroc conformal_sd",
                                   "n_models"]
    assert table.loc["MSR", "near auroc"] == pytest.approx(0.8)
    assert table.loc["MSR", "near auroc_sd"] == pytest.approx(0.1)  # sqrt((0.01 + 0 + 0.01) / 2)
    assert table.loc["MSR", "near auroc conformal"] == pytest.approx(0.7) and table.loc["MSR", "n_models"] == 3
    assert table.loc["GEN", "n_models"] == 1 and math.isnan(table.loc["GEN", "near auroc_sd"])


def test_prediction_set_table_shows_the_spread_over_the_models_beside_the_draws_std():
    sets = pd.DataFrame({"score": ["knn", "knn", "softmax"], "alpha": [0.05, 0.05, 0.05],
                         "method": ["lac", "aps", "aps"], "size": [2.0, 3.0, 1.5],
                         "size_std": [0.0, 0.3, 0.1], "coverage": [0.95, 0.97, 0.98]})
    other = sets[sets["score"] == "knn"].assign(size=[4.0, 4.0], size_std=[0.0, 0.4], coverage=[0.91, 0.93])
    table = prediction_set_table([sets, other])
    assert list(table.columns) == ["alpha=0.05 aps size", "alpha=0.05 aps size_sd", "alpha=0.05 aps size std",
                                   "alpha=0.05 aps coverage", "alpha=0.05 aps coverage_sd", "alpha=0.05 lac size",
                                   "alpha=0.05 lac size_sd", "alpha=0.05 lac coverage", "alpha=0.05 lac coverage_sd",
                                   "n_models"]
    knn = table.loc["knn"]
    assert knn["alpha=0.05 lac size"] == pytest.approx(3.0) and knn["alpha=0.05 lac size_sd"] == pytest.approx(
        math.sqrt(2.0))  # sizes 2 and 4
    assert knn["alpha=0.05 aps size std"] == pytest.approx(math.sqrt((0.3 ** 2 + 0.4 ** 2) / 2))  # within-model
    assert knn["alpha=0.05 aps coverage_sd"] == pytest.approx(math.sqrt(2 * 0.02 ** 2)) and knn["n_models"] == 2
    softmax = table.loc["softmax"]
    assert softmax["n_models"] == 1 and math.isnan(softmax["alpha=0.05 aps size_sd"])
    assert math.isnan(softmax["alpha=0.05 lac size"])  # softmax has no LAC row
