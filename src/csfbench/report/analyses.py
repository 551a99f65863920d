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


def plot_distance(bins: pd.DataFrame, fits: pd.DataFrame, source: str, reference: str) -> plt.Figure:
    """The distance-controlled AUROC of one model (the first) and CSF (``reference`` where it was run): per shifted
    set the AUROC of each distance bin against the ID test split, and the OLS line with ±2·SE of its intercept."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if bins.empty:
        ax.text(0.5, 0.5, "no encoder embeddings of this source (the proximity stage did not run)", ha="center",
                va="center", transform=ax.transAxes, fontsize=9)
        ax.set_axis_off()
        return fig
    model = sorted(bins["model"].unique())[0]
    csf = reference if reference in set(bins["csf"]) else sorted(bins["csf"].unique())[0]
    mine = bins[(bins["model"] == model) & (bins["csf"] == csf)]
    for name, part in mine.groupby("query_set"):
        color = ax.scatter(part["distance_mean"], part["auroc"], s=10, label=name).get_facecolor()[0]
        fit = fits[(fits["model"] == model) & (fits["csf"] == csf) & (fits["query_set"] == name)].iloc[0]
        x = np.linspace(part["distance_mean"].min(), part["distance_mean"].max(), 50)
        ax.plot(x, fit["intercept"] + fit["slope"] * x, lw=1, color=color)
        ax.fill_between(x, fit["intercept"] - 2 * fit["intercept_se"] + fit["slope"] * x,
                        fit["intercept"] + 2 * fit["intercept_se"] + fit["slope"] * x, alpha=0.15, color=color)
    ax.set(xlabel="distance to the nearest ID test sample (encoder space)", ylabel="AUROC of the bin (ID positive)",
           title=f"{source}: {model}, {csf}", ylim=(0, 1))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_score_views(ranks: pd.DataFrame, curves: pd.DataFrame, title: str) -> plt.Figure:
    """Left: score densities by sample group (correct / incorrect ID, OOD) of one model and CSF; right: the mean
    percentile rank of each group under MSP and Max-Logit, mean over models and semantic sets (ImageNet-OOD,
    Fig. 5: Max-Logit lifts incorrect ID samples, MSP correct ones)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for group, part in curves.groupby("group", sort=False) if len(curves) else ():
        left.plot(part["x"], part["density"], label=group)
    left.set(title=title, xlabel="confidence (higher = more ID)", ylabel="density")
    left.locator_params(axis="x", nbins=5)
    if len(curves):
        left.legend(fontsize=8)
    left.title.set_fontsize(8)
    if len(ranks):
        means = ranks.groupby(["group", "csf"])["mean_rank"].mean().unstack("csf")
        groups = [g for g in ("correct_id", "incorrect_id", "ood") if g in means.index]
        x = np.arange(len(groups))
        for i, csf in enumerate(means.columns):
            right.bar(x + (i - 0.5) * 0.4, means.loc[groups, csf], width=0.4, label=csf)
        right.set_xticks(x, groups)
        right.set(ylabel="mean percentile rank in ID test ∪ OOD", ylim=(0, 100))
        right.legend(fontsize=8)
    else:
        right.text(0.5, 0.5, "MSR and MLS not both run", ha="center", va="center", transform=right.transAxes)
    right.set_title("rank comparison (MSP vs Max-Logit)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_gallery(rows: pd.DataFrame, thumbnails: list, source: str) -> plt.Figure:
    """The rank-gap gallery: one row of thumbnails per set, each captioned with its sample id and its
    percentile ranks under MSP (MSR) and Max-Logit (MLS)."""
    if rows.empty:
        fig, ax = plt.subplots(figsize=(6, 1.5))
        ax.text(0.5, 0.5, "no gallery (MSR and MLS not both run)", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    sets = list(dict.fromkeys(rows["set"]))
    k = int(rows["position"].max())
    fig, axes = plt.subplots(len(sets), k, figsize=(1.6 * k, 1.9 * len(sets)), squeeze=False)
    for ax in axes.ravel():
        ax.set_axis_off()
    for (_, row), image in zip(rows.iterrows(), thumbnails):
        ax = axes[sets.index(row["set"]), int(row["position"]) - 1]
        ax.imshow(image)
        ax.set_title(f"{row['set']}\n{str(row['sample_id'])[-18:]}\nMSR {row['rank_a']:.0f} / MLS {row['rank_b']:.0f}",
                     fontsize=6)
    fig.suptitle(f"{source}, {rows['model'].iloc[0]}: ranked higher by MSR than by MLS", fontsize=9)
    fig.tight_layout()
    return fig


def conditional_table(cells: pd.DataFrame, reference: str) -> pd.DataFrame:
    """ImageNet-OOD's Table 4 (App. E) from the decomposition cells: per (model, pair, CSF) A_co, A_io, A_ci, the
    new-class AUROC and its change against ``reference`` split by ID outcome, ``delta_from_correct`` =
    a·(A_co − A_co,ref) and ``delta_from_incorrect`` = (1 − a)·(A_io − A_io,ref) (they sum to the change; a = the
    ID-role accuracy, shared within a model and pair).  Cells whose reference was not run are left out."""
    key = ["model", "id_set", "ood_set"]
    ref = cells.loc[cells["csf"] == reference, [*key, "a_co", "a_io", "newclass"]]
    merged = cells.merge(ref, on=key, how="inner", suffixes=("", "_ref"))
    a = merged["accuracy"]
    return pd.DataFrame({**{k: merged[k] for k in [*key, "csf", "a_co", "a_io", "a_ci", "accuracy", "newclass"]},
                         "delta_newclass": merged["newclass"] - merged["newclass_ref"],
                         "delta_from_correct": a * (merged["a_co"] - merged["a_co_ref"]),
                         "delta_from_incorrect": (1 - a) * (merged["a_io"] - merged["a_io_ref"])}).reset_index(drop=True)
