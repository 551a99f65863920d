"""Scatter plots of each predictor against the actual test error (corruption sets, ID test, adversarial sets)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import pandas as pd  # noqa: E402

from csfbench.atomic import atomic_path  # noqa: E402
from csfbench.projnorm.evaluate import PREDICTORS  # noqa: E402

_STYLE = {"covariate": ("o", "tab:blue", "corruptions"), "id": ("s", "tab:green", "ID test"),
          "adversarial": ("x", "tab:red", "adversarial")}


def scatter_plot(per_set: pd.DataFrame, out_png: str | Path, title: str) -> None:
    """One panel per predictor: test error (y) against the predictor value (x), one marker per set kind."""
    predictors = [p for p in PREDICTORS if p in per_set and per_set[p].notna().any()]
    if not predictors:
        raise ValueError(f"{out_png}: no predictor values to plot")
    fig, axes = plt.subplots(1, len(predictors), figsize=(3.2 * len(predictors), 3.2), squeeze=False)
    for ax, predictor in zip(axes[0], predictors):
        for shift_type, (marker, colour, label) in _STYLE.items():
            part = per_set[per_set["shift_type"] == shift_type]
            if len(part):
                ax.scatter(part[predictor], part["test_error"], marker=marker, c=colour, s=22, label=label)
        ax.set_xlabel(predictor)
        ax.set_ylabel("test error")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
