"""The report's tables and figure of the pair analyses (Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering
Modern Out-of-Distribution Detection Algorithms", ICLR 2024: Table 1's pair grid, §4.3's random-network
check).  AUROCs are fractions in [0, 1], the ID-role set positive."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

RANDOM_CHECK_COLUMNS = ["csf", "shift_set", "auroc", "signed", "deviation", "n_id", "n_shift", "model"]


def pair_label(id_set: str, ood_set: str) -> str:
    """A pair's column name: ``"{ID-role set} / {OOD-role set}"``."""
    return f"{id_set} / {ood_set}"


def pair_grid(cells: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Table 1's shape: one row per CSF, per pair the new-class AUROC (every ID-role sample positive, every
    OOD-role sample negative) as the mean over the models of ``cells`` (decomposition rows), and
    ``"{pair} Δ"``: its difference to the ``reference`` CSF's mean (absent when the reference was not run)."""
    if cells.empty:
        return pd.DataFrame()
    means = cells.assign(pair=[pair_label(i, o) for i, o in zip(cells["id_set"], cells["ood_set"])]).pivot_table(
        index="csf", columns="pair", values="newclass", aggfunc="mean")
    pairs = list(dict.fromkeys(pair_label(i, o) for i, o in zip(cells["id_set"], cells["ood_set"])))
    table = pd.DataFrame(index=means.index)
    for pair in pairs:
        table[pair] = means[pair]
        if reference in means.index:
            table[f"{pair} Δ"] = means[pair] - means.loc[reference, pair]
    return table


def empty_random_check() -> pd.DataFrame:
    """The random-network table of a source without randomly initialised models."""
    return pd.DataFrame(columns=RANDOM_CHECK_COLUMNS)


def plot_analyses(grid: pd.DataFrame, random_check: pd.DataFrame, source: str, reference: str) -> plt.Figure:
    """Left: the pair grid as a heatmap (CSF × pair, mean new-class AUROC); right: the random-network check,
    |AUROC − 0.5| per CSF (mean over random networks and shifted sets), or a note that there is none."""
    pairs = [c for c in grid.columns if not c.endswith(" Δ")] if len(grid) else []
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(8.0, 4 + 0.6 * len(pairs)), 0.25 * max(len(grid), 8) + 2),
                                      gridspec_kw={"width_ratios": [max(len(pairs), 1), 2]})
    if pairs:
        image = left.imshow(grid[pairs].to_numpy(dtype=float), aspect="auto", cmap="viridis", vmin=0, vmax=1)
        left.set_xticks(range(len(pairs)), pairs, rotation=60, ha="right", fontsize=7)
        left.set_yticks(range(len(grid)), grid.index, fontsize=7)
        fig.colorbar(image, ax=left, label="new-class AUROC (ID-role positive)")
    left.set_title(f"{source}: pairs, mean over models (reference {reference})", fontsize=9)
    if len(random_check):
        deviation = random_check.groupby("csf")["deviation"].mean().sort_values()
        right.barh(np.arange(len(deviation)), deviation.to_numpy())
        right.set_yticks(range(len(deviation)), deviation.index, fontsize=7)
        right.set_xlabel("|AUROC − 0.5|, random networks")
    else:
        right.text(0.5, 0.5, "no randomly initialised model", ha="center", va="center", transform=right.transAxes)
        right.set_axis_off()
    right.set_title("random-network check (0 = sane)", fontsize=9)
    fig.tight_layout()
    return fig
