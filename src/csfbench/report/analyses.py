"""The report's tables and figure of the pair analyses (Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering
Modern Out-of-Distribution Detection Algorithms", ICLR 2024: Table 1's pair grid, §4.3's random-network
check).  AUROCs are fractions in [0, 1], the ID-role set positive."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from csfbench.report.spread import mean_sd_n, spread_pairs, wide_spread  # noqa: E402

RANDOM_CHECK_COLUMNS = ["csf", "shift_set", "auroc", "signed", "deviation", "n_id", "n_shift", "model"]


def pair_label(id_set: str, ood_set: str) -> str:
    """A pair's column name: ``"{ID-role set} / {OOD-role set}"``."""
    return f"{id_set} / {ood_set}"


def pair_grid(cells: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Table 1's shape: one row per CSF, per pair the new-class AUROC (every ID-role sample positive, every
    OOD-role sample negative; a fraction) as the mean over the models of ``cells`` (decomposition rows), and
    ``"{pair} Δ"``: its change against the ``reference`` CSF, the mean over the models of the per-model
    difference (AUROC − the reference's on the same model and pair; the difference of the means when both were
    run on the same models), absent when the reference was not run.  Each mean is followed by its standard
    deviation over the models (``…_sd``, ddof = 1, NaN for a single model); ``n_models`` counts the CSF's
    models (a pair some model lacks averages fewer)."""
    if cells.empty:
        return pd.DataFrame()
    labelled = cells.assign(pair=[pair_label(i, o) for i, o in zip(cells["id_set"], cells["ood_set"])],
                            value=cells["newclass"])
    pairs = list(dict.fromkeys(labelled["pair"]))
    parts = [labelled]
    if reference in set(labelled["csf"]):
        ref = labelled.loc[labelled["csf"] == reference, ["model", "pair", "value"]]
        paired = labelled.merge(ref, on=["model", "pair"], suffixes=("", "_ref"))
        parts.append(paired.assign(pair=paired["pair"] + " Δ", value=paired["value"] - paired["value_ref"]))
    spread = mean_sd_n(pd.concat(parts, ignore_index=True), ["csf", "pair"])
    table = wide_spread(spread, "csf", "pair", "value", [f"{p}{suffix}" for p in pairs for suffix in ("", " Δ")])
    return table.assign(n_models=labelled.groupby("csf")["model"].nunique())


def empty_random_check() -> pd.DataFrame:
    """The random-network table of a source without randomly initialised models."""
    return pd.DataFrame(columns=RANDOM_CHECK_COLUMNS)


def _heatmap(fig: plt.Figure, ax: plt.Axes, frame: pd.DataFrame, label: str, vmin: float = 0.0,
             vmax: float = 1.0) -> None:
    """``frame`` (rows × columns of numbers) as a heatmap on ``ax`` with its labels and a colour bar; NaN cells
    grey; a note instead when ``frame`` is empty."""
    if frame.empty:
        ax.text(0.5, 0.5, "nothing to show", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.85")
    image = ax.imshow(np.ma.masked_invalid(frame.to_numpy(dtype=float)), aspect="auto", cmap=cmap, vmin=vmin,
                      vmax=vmax)
    ax.set_xticks(range(frame.shape[1]), [str(c) for c in frame.columns], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(frame.shape[0]), [str(i) for i in frame.index], fontsize=7)
    fig.colorbar(image, ax=ax, label=label)


def _per_pair(cells: pd.DataFrame, value: str) -> pd.DataFrame:
    """CSF × pair (columns in order of first appearance) of the mean of ``value`` over the models of ``cells``."""
    labelled = cells.assign(pair=[pair_label(i, o) for i, o in zip(cells["id_set"], cells["ood_set"])])
    pairs = list(dict.fromkeys(labelled["pair"]))
    return labelled.pivot_table(index="csf", columns="pair", values=value, aggfunc="mean", dropna=False)[pairs]


def plot_analyses(grid: pd.DataFrame, random_check: pd.DataFrame, source: str, reference: str) -> plt.Figure:
    """Left: the pair grid as a heatmap (CSF × pair, mean new-class AUROC); right: the random-network check,
    |AUROC − 0.5| per CSF (mean over random networks and shifted sets), or a note that there is none."""
    pairs = [c for c in spread_pairs(grid.columns) if not c.endswith(" Δ")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(8.0, 4 + 0.6 * len(pairs)), 0.25 * max(len(grid), 8) + 2),
                                      gridspec_kw={"width_ratios": [max(len(pairs), 1), 2]})
    if pairs:
        _heatmap(fig, left, grid[pairs], "new-class AUROC (ID-role positive)")
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
    """The distance-controlled AUROC of one model (the one with the most query sets, the first by name among
    them) and CSF (``reference`` where it was run): per shifted set the AUROC of each distance bin against the ID
    test split, and the OLS line with ±2·SE of its intercept."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if bins.empty:
        ax.text(0.5, 0.5, "no encoder embeddings of this source (the proximity stage did not run)", ha="center",
                va="center", transform=ax.transAxes, fontsize=9)
        ax.set_axis_off()
        return fig
    n_sets = bins.groupby("model")["query_set"].nunique()
    model = sorted(n_sets.index, key=lambda m: (-n_sets[m], m))[0]
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


#: the conditional AUROCs of the decomposition figure: column, panel title
CONDITIONAL = {"a_co": "A_co: correct ID-role vs OOD-role", "a_io": "A_io: incorrect ID-role vs OOD-role",
               "a_ci": "A_ci: correct vs incorrect ID-role"}


def plot_decomposition(cells: pd.DataFrame, source: str) -> plt.Figure:
    """The decomposition cells as three heatmaps (A_co, A_io, A_ci), each CSF × (ID-role / OOD-role) pair, mean
    over the models of ``cells`` (NaN cells, e.g. A_io of an ID-role set without errors, grey)."""
    n_pairs = cells[["id_set", "ood_set"]].drop_duplicates().shape[0] if len(cells) else 1
    n_csfs = cells["csf"].nunique() if len(cells) else 1
    fig, axes = plt.subplots(1, 3, figsize=(3 * max(3.5, 1.5 + 0.45 * n_pairs), 0.25 * max(n_csfs, 8) + 2.5))
    for ax, (column, title) in zip(axes, CONDITIONAL.items()):
        _heatmap(fig, ax, _per_pair(cells, column) if len(cells) else pd.DataFrame(), "AUROC (first group positive)")
        ax.set_title(title, fontsize=8)
    fig.suptitle(f"{source}: conditional AUROCs per CSF and pair, mean over models", fontsize=9)
    fig.tight_layout()
    return fig


def plot_conditional(table: pd.DataFrame, source: str, reference: str) -> plt.Figure:
    """The conditional-AUROC table (:func:`conditional_table`) per CSF, mean over models and pairs: the change of
    the new-class AUROC against ``reference`` (dot) and its two parts, from correct ID-role samples
    a·ΔA_co and from incorrect ones (1 − a)·ΔA_io (bars; they sum to the dot)."""
    fig, ax = plt.subplots(figsize=(6.4, 0.28 * max(table["csf"].nunique() if len(table) else 1, 8) + 1.5))
    parts = table.groupby("csf", sort=True)[["delta_from_correct", "delta_from_incorrect", "delta_newclass"]].mean() \
        if len(table) else pd.DataFrame()
    if parts.empty:
        ax.text(0.5, 0.5, f"no cell with the reference CSF {reference}", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    y = np.arange(len(parts))
    ax.barh(y - 0.2, parts["delta_from_correct"], height=0.4, label="from correct ID-role: a·ΔA_co")
    ax.barh(y + 0.2, parts["delta_from_incorrect"], height=0.4, label="from incorrect ID-role: (1 − a)·ΔA_io")
    ax.scatter(parts["delta_newclass"], y, color="black", s=14, zorder=3, label="Δ new-class AUROC")
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set_yticks(y, parts.index, fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel=f"change against {reference} (AUROC), mean over models and pairs")
    ax.set_title(f"{source}: where the change of the new-class AUROC comes from", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_frr(frr: pd.DataFrame, source: str) -> plt.Figure:
    """False rejection at the transferred threshold as a heatmap: per CSF and ID-role set the fraction of its
    correct samples rejected, mean over models and semantic sets (lower = better)."""
    mean = frr.pivot_table(index="csf", columns="set", values="frr", aggfunc="mean") if len(frr) else pd.DataFrame()
    if len(mean):
        mean = mean[list(dict.fromkeys(frr["set"]))]
    fig, ax = plt.subplots(figsize=(max(5.0, 3 + 0.6 * mean.shape[1]), 0.25 * max(len(mean), 8) + 2))
    _heatmap(fig, ax, mean, "false rejection rate of correct samples")
    q = ", ".join(f"{v:g}" for v in sorted(set(frr["q"]))) if len(frr) else "-"
    ax.set_title(f"{source}: FRR at the q = {q} quantile of the semantic set's scores", fontsize=9)
    fig.tight_layout()
    return fig


def pair_ranking_table(result: dict) -> pd.DataFrame:
    """The cliques over (model, pair) blocks as a table: per CSF (best mean rank first) its mean rank (1 = best),
    its greedy layer (1 = top; empty when every clique holding it overlaps a higher layer, so that it is in
    none: :func:`csfbench.stats.cliques.greedy_layers`) and the maximal cliques it belongs to (numbered from 1 in
    the order of the result); no rows for a skipped ranking."""
    columns = ["csf", "mean_rank", "layer", "cliques"]
    if result["status"] != "ok":
        return pd.DataFrame(columns=columns)
    layer = {m: i for i, part in enumerate(result["layers"], 1) for m in part["members"]}
    member = {name: [str(i) for i, clique in enumerate(result["cliques"], 1) if name in clique]
              for name in result["mean_ranks"]}
    table = pd.DataFrame([{"csf": name, "mean_rank": rank, "layer": layer.get(name), "cliques": " ".join(member[name])}
                          for name, rank in result["mean_ranks"].items()], columns=columns)
    return table.astype({"layer": "Int64"})


def plot_categories(summary: pd.DataFrame, metric: str = "auroc") -> plt.Figure:
    """ICONIC-444's category tables as a figure: per reading of the categories with several sets (``averaged``,
    ``pooled``; :func:`csfbench.analysis.iconic_summary`), each CSF's mean ``metric`` per category and the
    "Average", with error bars of ± the ddof-1 deviation (over runs for a category, over the category means
    for the Average)."""
    views = list(dict.fromkeys(summary["view"])) if len(summary) else []
    fig, axes = plt.subplots(1, max(len(views), 1), figsize=(6.0 * max(len(views), 1), 4.2), squeeze=False)
    if not views:
        axes[0, 0].text(0.5, 0.5, "no category rows", ha="center", va="center", transform=axes[0, 0].transAxes)
        axes[0, 0].set_axis_off()
        return fig
    for ax, view in zip(axes[0], views):
        part = summary[(summary["view"] == view) & (summary["metric"] == metric)]
        categories = list(dict.fromkeys(part["category"]))
        methods = list(dict.fromkeys(part["method"]))
        width = 0.8 / max(len(methods), 1)
        for i, method in enumerate(methods):
            rows = part[part["method"] == method].set_index("category").reindex(categories)
            x = np.arange(len(categories)) - 0.4 + (i + 0.5) * width
            ax.errorbar(x, rows["mean"], yerr=rows["std"].fillna(0), fmt="o", ms=3, lw=0.8, capsize=1.5,
                        label=method)
        ax.set_xticks(range(len(categories)), categories, rotation=30, ha="right", fontsize=7)
        ax.set(ylabel=f"{metric} (mean ± ddof-1 deviation)", title=f"sub-datasets {view}")
        if metric == "auroc":
            ax.axhline(0.5, color="0.7", lw=0.6)
    axes[0, -1].legend(fontsize=6, ncol=2, loc="best")
    fig.suptitle(f"Per OOD category: {metric} over sources, architectures and runs", fontsize=9)
    fig.tight_layout()
    return fig
