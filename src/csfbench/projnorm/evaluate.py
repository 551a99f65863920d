"""Evaluation of the error predictors across shift sets (Yu et al., ICML 2022, §3 and §5, App. E).

* :func:`correlations`: per model and predictor, over the covariate (corruption) sets, R² of the simple
  linear regression of test error on the predictor (= squared Pearson r, ``scipy.stats.linregress``)
  and Spearman ρ, with every predictor oriented so that larger = more error (ConfScore negated).
* :func:`stress_table`: the adversarial stress test (the shape of the paper's Table 10): a linear
  regression of test error on each predictor fitted on the covariate sets, applied to the clean ID test
  set (ε = 0) and the adversarial sets; true vs predicted error per ε, and the MSE per predictor
  (Table 9).  Predictions are not clipped to [0, 1]: negative values come from extrapolation, as in
  the paper.  ``mse`` averages over the clean test set *and* the adversarial sets, the paper's
  convention: Table 9's values are the means over all 15 columns of Table 10, the first being the
  clean set (ConfScore 0.875, Entropy 0.895, ATC 0.823, ProjNorm 0.432; without the clean column
  they would be 0.937, 0.958, 0.881, 0.462).  ``mse_eps_positive``, the mean over ε > 0 alone, is
  kept as an extra column.  Lower MSE = better error prediction.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from csfbench.shifts.names import parse_adversarial_set

PREDICTORS = ("ConfScore", "Entropy", "ATC", "AgreeScore", "ProjNorm")
ORIENTATION = {"ConfScore": -1.0}  # every other predictor grows with the error
MIN_SETS = 3


def _available(frame: pd.DataFrame) -> list[str]:
    return [p for p in PREDICTORS if p in frame and frame[p].notna().any()]


def r2_spearman(predictor: np.ndarray, error: np.ndarray, orientation: float = 1.0) -> tuple[float, float]:
    """(R², ρ) of ``error`` against ``predictor``; NaN for fewer than 3 points or a constant input."""
    x, y = np.asarray(predictor, float), np.asarray(error, float)
    if len(x) < MIN_SETS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    return float(stats.linregress(x, y).rvalue ** 2), float(stats.spearmanr(orientation * x, y).statistic)


def correlations(per_set: pd.DataFrame) -> pd.DataFrame:
    """Rows ``source, model, predictor, n_sets, r2, spearman`` over the covariate sets of each model."""
    rows = []
    covariate = per_set[per_set["shift_type"] == "covariate"]
    for (source, model), group in covariate.groupby(["source", "model"], sort=True):
        for predictor in _available(group):
            usable = group[group[predictor].notna()]
            r2, rho = r2_spearman(usable[predictor], usable["test_error"], ORIENTATION.get(predictor, 1.0))
            rows.append({"source": source, "model": model, "predictor": predictor, "n_sets": len(usable),
                         "r2": r2, "spearman": rho})
    return pd.DataFrame(rows, columns=["source", "model", "predictor", "n_sets", "r2", "spearman"])


def prediction_mse(predicted, true) -> float:
    """The mean squared error of predicted test-error fractions against the true ones (each set weighted
    equally; Yu et al., App. E, Table 9); NaN for no set."""
    predicted, true = np.asarray(predicted, float), np.asarray(true, float)
    return float(np.mean((predicted - true) ** 2)) if len(true) else float("nan")


def stress_table(per_set: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predicted-vs-true rows per model/attack/ε, MSE rows per model/predictor) of the stress test.

    MSE rows (``source, model, predictor, mse, mse_eps_positive``) exist for models with at least one
    adversarial set: ``mse`` is the mean squared error of the predicted error fraction over the clean
    ID test set (ε = 0) and every adversarial set (Yu et al., "Predicting Out-of-Distribution Error
    with the Projection Norm", ICML 2022, App. E, Tables 9 and 10); ``mse_eps_positive`` over the
    sets with ε > 0 only (NaN when there is none).
    """
    rows, mse_rows = [], []
    for (source, model), group in per_set.groupby(["source", "model"], sort=True):
        covariate = group[group["shift_type"] == "covariate"]
        targets = group[(group["shift_type"] == "adversarial") | (group["dataset"] == "test")].copy()
        if targets.empty or len(covariate) < MIN_SETS:
            continue
        parsed = [parse_adversarial_set(d) or ("clean", 0.0) for d in targets["dataset"]]
        targets["attack"], targets["eps"] = [p[0] for p in parsed], [p[1] for p in parsed]
        predicted = []
        for predictor in _available(covariate):
            fit_on = covariate[covariate[predictor].notna()]
            if len(fit_on) < MIN_SETS or np.ptp(fit_on[predictor]) == 0:
                continue
            fit = stats.linregress(fit_on[predictor], fit_on["test_error"])
            targets[predictor] = fit.intercept + fit.slope * targets[predictor]
            predicted.append(predictor)
            if (targets["attack"] != "clean").any():
                positive = targets["eps"].to_numpy(float) > 0
                mse_rows.append({"source": source, "model": model, "predictor": predictor,
                                 "mse": prediction_mse(targets[predictor], targets["test_error"]),
                                 "mse_eps_positive": prediction_mse(targets[predictor][positive],
                                                                    targets["test_error"][positive])})
        keep = ["source", "model", "attack", "eps", "dataset", "test_error", *predicted]
        rows.append(targets[keep])
    table = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    if not table.empty:
        table = table.sort_values(["source", "model", "eps", "attack"], kind="stable", ignore_index=True)
    return table, pd.DataFrame(mse_rows, columns=["source", "model", "predictor", "mse", "mse_eps_positive"])
