"""The report's conformal figure and tables (Novello, Dalmau & Andéol, "Out-of-Distribution Detection Should
Use Conformal Prediction (and Vice-versa?)", 2024, arXiv 2403.11532: Figure 1's classical vs conformal ROC,
Table 1's classical vs conformal AUROC / FPR@TPR95 per detector and OOD set, Table 2's set size and coverage
per conformity score and α).  Rates are fractions in [0, 1]; set sizes are numbers of labels.  Both tables average
over the source's models and show the spread over them (:mod:`csfbench.report.spread`)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from csfbench.aggregate.ranking import variant_name  # noqa: E402
from csfbench.evaluation import CONFORMAL_SCHEME, FPR_METRIC, conformal_metric  # noqa: E402
from csfbench.metrics.conformal import ConformalROC  # noqa: E402
from csfbench.metrics.prediction_sets import RANDOMISED  # noqa: E402
from csfbench.report.spread import mean_sd_n, wide_spread  # noqa: E402

FPR_LEVEL = 0.05  # the classical FPR at which the band-width panel reads each band's correction


#: the columns of a results row that name its model within a source
MODEL_KEYS = ["backbone", "paradigm", "dropout", "reward", "run"]


def conformal_table(results: pd.DataFrame, source: str, method: str, delta: float) -> pd.DataFrame:
    """Table 1's shape for one source: one row per CSF variant (non-MCD), per shifted set the classical and
    the conformal (``method``, ``delta``) AUROC and FPR@TPR95 (OOD = positive; fractions), each the mean over
    the source's models, with the standard deviation over those models (ddof = 1; NaN for a single model)
    beside it; columns ``{set} {metric}``, ``{set} {metric} conformal``, each followed by its ``…_sd``, and
    ``n_models`` (the models of the variant's rows, :data:`MODEL_KEYS`; a cell whose metric some model lacks
    averages fewer)."""
    rows = results[(results["scheme"] == CONFORMAL_SCHEME) & (results["source"] == source) & ~results["mcd"]]
    columns = {}
    for base in ("auroc", FPR_METRIC[0.95]):
        label = "auroc" if base == "auroc" else "fpr95"
        columns[base] = label
        columns[conformal_metric(base, method, delta)] = f"{label} conformal"
    rows = rows[rows["metric"].isin(list(columns))].assign(
        entity=lambda f: [variant_name(c, v) for c, v in zip(f["csf"], f["variant"])],
        column=lambda f: f["dataset"] + " " + f["metric"].map(columns))
    if rows.empty:
        return pd.DataFrame()
    order = [f"{d} {c}" for d in sorted(rows["dataset"].unique()) for c in
             ("auroc", "auroc conformal", "fpr95", "fpr95 conformal")]
    table = wide_spread(mean_sd_n(rows, ["entity", "column"], count="n_models"), "entity", "column", "value", order)
    return table.assign(n_models=rows.drop_duplicates(["entity", *MODEL_KEYS])["entity"].value_counts())


def prediction_set_table(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Table 2's shape: one row per conformity score, per (α, method) the mean set size (labels), for the
    randomised methods (APS, RAPS) its standard deviation over the draws of U (the paper's "mean ± std"), and
    the coverage (fraction).  ``frames``: :func:`csfbench.stages.conformal.prediction_set_table` rows, one frame
    per model; size and coverage are the means over the models, each with its standard deviation over the
    models beside it (``… size_sd``, ``… coverage_sd``; ddof = 1, NaN for a single model), the ``size std`` is
    the root mean square of the models' stds over their draws (the pooled within-model spread, equal repeats),
    ``n_models`` the frames holding the score.  Columns ``alpha={α} {method} size``, ``… size_sd``,
    ``… size std`` (APS and RAPS only: LAC is deterministic), ``… coverage``, ``… coverage_sd``."""
    rows = pd.concat(frames, keys=range(len(frames)), names=["_frame", None]).reset_index("_frame")
    rows = rows.assign(size_var=rows["size_std"] ** 2, cell=[f"alpha={a:g} {m}" for a, m in zip(rows["alpha"],
                                                                                                 rows["method"])])
    long = rows.melt(id_vars=["_frame", "score", "method", "cell"], value_vars=["size", "coverage"],
                     var_name="quantity").assign(column=lambda f: f["cell"] + " " + f["quantity"])
    cells = sorted(rows[["alpha", "method", "cell"]].drop_duplicates().itertuples(index=False))
    table = wide_spread(mean_sd_n(long, ["score", "column"], count="n_models"), "score", "column", "value",
                  [f"{c} {q}" for *_, c in cells for q in ("size", "coverage")])
    randomised = rows[rows["method"].isin(RANDOMISED)]
    pooled = np.sqrt(randomised.pivot_table(index="score", columns="cell", values="size_var", aggfunc="mean"))
    for *_, cell in cells:
        if cell in pooled.columns:
            table.insert(table.columns.get_loc(f"{cell} size_sd") + 1, f"{cell} size std", pooled[cell])
    return table.assign(n_models=rows.drop_duplicates(["score", "_frame"])["score"].value_counts())


def band_widths(bands: dict[tuple[str, int], np.ndarray]) -> pd.DataFrame:
    """The correction b_{k+1} − k/n at the classical FPR k/n = ``FPR_LEVEL`` (k = ⌊FPR_LEVEL·n⌋) of each
    band, ``bands``: {(method, n): band b_1 … b_n} (the workflow's cached band files); columns ``method``,
    ``n``, ``width`` (fractions), sorted by method and n."""
    rows = []
    for (method, n), band in sorted(bands.items()):
        if np.shape(band) != (n,):
            raise ValueError(f"band of {method} for n = {n} has shape {np.shape(band)}")
        k = int(np.floor(FPR_LEVEL * n))
        rows.append({"method": method, "n": n, "width": float(band[k] - k / n)})
    return pd.DataFrame(rows, columns=["method", "n", "width"])


def plot_conformal(roc: ConformalROC, title: str, widths: pd.DataFrame, delta: float) -> plt.Figure:
    """Left: the classical and the conformal ROC of one model, CSF and set; right: band width against n."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    left.plot(roc.fpr, roc.tpr, label="classical")
    left.plot(roc.fpr_conformal, roc.tpr, label="conformal (FPR bound)")
    left.plot([0, 1], [0, 1], color="grey", lw=0.6, ls=":")
    left.set(xlabel="FPR (ID flagged as OOD)", ylabel="TPR (OOD flagged)", title=title, xlim=(0, 1), ylim=(0, 1))
    left.legend(loc="lower right", fontsize=8)
    for method, part in widths.groupby("method"):
        right.plot(part["n"], part["width"], marker="o", label=method)
    right.set(xscale="log", yscale="log", xlabel="calibration size n",
              ylabel=f"FPR correction at FPR = {FPR_LEVEL:g}", title=f"band width (δ = {delta:g})")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig
