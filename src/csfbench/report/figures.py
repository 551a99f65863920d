"""The paper's figures regenerated from the results (Claros-Olivares & Brockmeier, Figures 1 and 2),
with matplotlib's headless Agg backend.

- :func:`top_clique_membership` / :func:`plot_top_clique_map`: Figure 1 analogue for one backbone.
  Columns are ``source→regime`` cells ordered by regime (test, near, mid, far, covariate, adversarial),
  then source in config order; rows are CSF variants; a dot marks membership of the cell's layer-1
  clique, members are joined by a vertical line coloured by regime, and a side bar counts the cells
  each variant is in. Skipped cells are empty columns marked "n/a". Where a cell has a clique stability
  (:mod:`csfbench.aggregate.stability`), a dot's area is proportional to the member's share of bootstrap
  replicates in the top clique (a full-size dot: every replicate) and a hollow ring marks a non-member that is
  in the top clique on at least half of them.
- :func:`conover_matrix` / :func:`plot_conover_heatmap`: Figure 2 analogue, the pairwise Conover
  p-values of one ranking analysis (:func:`csfbench.workflow.targets.heatmap_analysis`, setting ``figures.heatmap``; default the
  first column of the top-clique map: clique map group, first backbone, non-MCD, first source, ID test
  set; the paper's cell is that one for group ``augrc``) as a heatmap, entities ordered by mean rank,
  annotated to 3 d.p. as in the paper.
- :func:`rc_curves` / :func:`plot_rc_curves`: risk–coverage curves (selective risk: the AURC curve;
  generalized risk: the AUGRC curve; both fractions, coverage 1 → 0) of chosen CSF variants of one
  model on its test set (misclassification) and each shifted set (the ranking's scheme of its shift
  type, by default correct ID vs OOD for semantic sets), from the per-sample scores files.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")  # headless: no display on cluster nodes or CI
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from csfbench.aggregate.cells import REGIMES, Analysis  # noqa: E402
from csfbench.atomic import atomic_path  # noqa: E402
from csfbench.csf.projection import GROUP_VARIANTS, NETWORK_SCORER, group_of, parse_variant  # noqa: E402
from csfbench.csf.store import read_scores  # noqa: E402
from csfbench.metrics import build_scheme, rc_curve  # noqa: E402

REGIME_COLOURS = {"test": "tab:green", "near": "tab:blue", "mid": "tab:red", "far": "tab:orange",
                  "semantic": "tab:olive", "covariate": "tab:purple", "adversarial": "tab:brown"}
RC_KINDS = ("selective", "generalized")
SETTINGS = ("clique_map_group", "table_metric", "rc_curves", "heatmap")
HEATMAP_KEYS = ("group", "backbone", "mcd", "source", "regime")
DOT_AREA = 30  # points² of a top-clique dot; with a clique stability, scaled by the member's top-clique share
ANNOTATE_MAX = 20  # the heatmap writes each p-value in its cell (3 d.p., as the paper's Figure 2) up to this k


def figure_settings(section: dict) -> dict[str, Any]:
    """The config's complete ``figures`` section (defaults filled in by
    :func:`csfbench.workflow.settings.validate_config` from ``config/schema.yaml``), checked for completeness."""
    missing = [key for key in SETTINGS if key not in (section or {})]
    missing += [f"heatmap.{key}" for key in HEATMAP_KEYS if "heatmap" in (section or {})
                and key not in section["heatmap"]]
    if missing:
        raise ValueError(f"figures: missing setting(s) {missing}; pass the figures section of a config "
                         "validated by csfbench.workflow.settings.validate_config (it fills in the schema's defaults)")
    return dict(section)


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path) -> None:
    """Write ``fig`` as PNG (150 dpi) and PDF, atomically, and close it."""
    for path, fmt in ((png, "png"), (pdf, "pdf")):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight")
    plt.close(fig)


def top_clique_membership(results: Iterable[dict[str, Any]], sources: Sequence[str]) -> pd.DataFrame:
    """CSF variant × ``source→regime`` boolean matrix of layer-1 membership (rows sorted by name).

    Only the regimes that have at least one analysis are columns; a skipped cell is an all-False column
    whose name is listed in ``frame.attrs["skipped"]``.  ``frame.attrs["share"]``: the same shape of
    top-clique shares (:mod:`csfbench.aggregate.stability`, in [0, 1]; NaN where a cell has no stability).
    """
    by_cell = {(r["analysis"]["source"], r["analysis"]["regime"]): r for r in results}
    columns, skipped, members, shares = [], [], {}, {}
    for regime in REGIMES:
        cells = [(s, regime) for s in sources if (s, regime) in by_cell]
        if all(by_cell[c]["status"] != "ok" for c in cells):
            continue  # a regime no source has (e.g. no adversarial sets): no columns
        for source, _ in cells:
            name = f"{source}→{regime}"
            columns.append(name)
            result = by_cell[(source, regime)]
            if result["status"] == "ok":
                members[name] = set(result["layers"][0]["members"])
                stability = result.get("stability") or {}
                if stability.get("status") == "ok":
                    shares[name] = stability["top_clique_share"]
            else:
                skipped.append(name)
    entities = sorted({e for r in by_cell.values() if r["status"] == "ok" for e in r["mean_ranks"]})
    frame = pd.DataFrame({c: [e in members.get(c, ()) for e in entities] for c in columns}, index=entities,
                         dtype=bool)
    frame.index.name = "csf_variant"
    frame.attrs["skipped"] = skipped
    frame.attrs["share"] = pd.DataFrame({c: [shares.get(c, {}).get(e, np.nan) for e in entities] for c in columns},
                                        index=entities, dtype=float)
    return frame


def plot_top_clique_map(membership: pd.DataFrame, title: str) -> plt.Figure:
    """Figure 1 analogue of a :func:`top_clique_membership` matrix."""
    n_rows, n_cols = membership.shape
    fig, (ax, bar) = plt.subplots(1, 2, figsize=(2.0 + 0.45 * max(n_cols, 1) + 2.0, 1.5 + 0.22 * max(n_rows, 1)),
                                  gridspec_kw={"width_ratios": [max(n_cols, 1), 3]}, sharey=True)
    y = {name: i for i, name in enumerate(membership.index)}
    share = membership.attrs.get("share", pd.DataFrame(np.nan, index=membership.index, columns=membership.columns))
    for j, column in enumerate(membership.columns):
        colour = REGIME_COLOURS[column.split("→")[1]]
        member = membership[column].to_numpy()
        rows = [y[e] for e in membership.index[member]]
        known = share[column].to_numpy()
        if rows:
            ax.plot([j, j], [min(rows), max(rows)], color=colour, lw=2, zorder=1)
            sizes = np.where(np.isnan(known[member]), DOT_AREA, np.maximum(known[member], 0.05) * DOT_AREA)
            ax.scatter([j] * len(rows), rows, color=colour, s=sizes, zorder=2)
        near = ~member & (np.nan_to_num(known) >= 0.5)
        if near.any():
            ax.scatter([j] * int(near.sum()), [y[e] for e in membership.index[near]], facecolors="none",
                       edgecolors=colour, s=known[near] * DOT_AREA, lw=0.8, zorder=2)
        if not rows and column in membership.attrs.get("skipped", ()):
            ax.text(j, (n_rows - 1) / 2, "n/a", rotation=90, ha="center", va="center", fontsize=7, color="grey")
    ax.set_xticks(range(n_cols), membership.columns, rotation=90, fontsize=7)
    ax.set_yticks(range(n_rows), membership.index, fontsize=7)
    ax.set_xlim(-0.5, n_cols - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.grid(axis="y", color="0.92", lw=0.5)
    if share.notna().to_numpy().any():
        title += "\ndot area: share of bootstrap replicates in the top clique; ring: non-member in it on ≥ half"
    ax.set_title(title, fontsize=9)
    counts = membership.sum(axis=1).to_numpy()
    bar.barh(range(n_rows), counts, color="0.4")
    bar.set_xlabel("cells in top clique", fontsize=7)
    bar.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


def conover_matrix(result: dict[str, Any]) -> pd.DataFrame:
    """The symmetric entity × entity matrix of Conover p-values of a ranking result (diagonal 1; the
    ``p_adjust`` of the ranking), entities ordered by mean rank, best first; empty for a skipped result."""
    if result["status"] != "ok":
        return pd.DataFrame(index=pd.Index([], name="entity"), dtype=float)
    names = list(result["mean_ranks"])
    frame = pd.DataFrame([[result["pvalues"][a][b] for b in names] for a in names], index=names, columns=names,
                         dtype=float)
    frame.index.name = "entity"
    return frame


def plot_conover_heatmap(pvalues: pd.DataFrame, result: dict[str, Any]) -> plt.Figure:
    """Heatmap of a :func:`conover_matrix` (the paper's Figure 2 analogue): rows and columns ordered by
    mean rank (labelled with it), colour = p-value on [0, 1], diagonal blank; up to :data:`ANNOTATE_MAX`
    entities each cell shows its p-value to 3 d.p., in bold where p < alpha (the pair differs)."""
    name = Analysis(**result["analysis"]).name
    if result["status"] != "ok":
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, f"{name}: skipped\n{result['reason']}", ha="center", va="center", fontsize=8, wrap=True)
        return fig
    k = len(pvalues)
    cell = max(0.12, min(0.6, 14.0 / k))  # inches per cell: the figure stays under ~16 inches
    fig, ax = plt.subplots(figsize=(2.5 + cell * k, 1.8 + cell * k))
    shown = pvalues.to_numpy(dtype=float, copy=True)
    np.fill_diagonal(shown, np.nan)
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.9")  # the blank diagonal
    image = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, vmin=0.0, vmax=1.0)
    labels = [f"{e} ({result['mean_ranks'][e]:.2f})" for e in pvalues.index]
    fontsize = 8 if k <= ANNOTATE_MAX else max(3, int(160 / k))
    ax.set_xticks(range(k), labels, rotation=90, fontsize=fontsize)
    ax.set_yticks(range(k), labels, fontsize=fontsize)
    alpha = result["alpha"]
    if k <= ANNOTATE_MAX:
        for i in range(k):
            for j in range(k):
                if i != j and np.isfinite(shown[i, j]):
                    ax.text(j, i, f"{shown[i, j]:.3f}", ha="center", va="center", fontsize=7,
                            color="black" if shown[i, j] > 0.6 else "white",
                            fontweight="bold" if shown[i, j] < alpha else "normal")
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bold = f"; p < {alpha:g} bold" if k <= ANNOTATE_MAX else ""
    bar.set_label(f"Conover p-value (p_adjust {result['p_adjust']}{bold})", fontsize=7)
    bar.ax.tick_params(labelsize=7)
    omnibus = result["omnibus"]
    verdict = "rejects" if omnibus["rejected"] else "does not reject"
    note = "" if omnibus["posthoc_applied"] else "; gated: every entity indifferent"
    ax.set_title(f"{name}: {k} CSF variants (mean rank) over {result['n_blocks']} blocks\n"
                 f"Iman-Davenport p = {_p(result['iman_davenport']['pvalue'])} ({verdict} at {alpha:g}{note})",
                 fontsize=8)
    fig.tight_layout()
    return fig


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def rc_curves(score_files: Sequence[str | Path], schemes: dict[str, str], csfs: Sequence[str]) -> pd.DataFrame:
    """Long table of risk–coverage points (coverage, risk in [0, 1]) of ``csfs`` on one model.

    ``score_files`` are the model's scores files (``{fit_group}.h5``) of the fit groups the variants
    need; ``schemes`` maps each plotted evaluation set
    to its failure scheme: ``misclf`` evaluates the set alone (the test set: misclassification), any
    other scheme pairs the set with the model's test-set scores (e.g. ``correct_vs_ood``). Correctness
    is the ``correct`` flag the scores file carries (the feature file's, copied by the scoring job).
    Non-MCD scores only.
    """
    by_group = {Path(path).stem: path for path in score_files}
    rows = []
    for name in csfs:
        csf, variant = parse_variant(name)
        # a network-pass CSF (variant none) is in the scores file of fit group `network`, when one is given
        candidates = [by_group[g] for g in (group_of(variant), NETWORK_SCORER) if g in by_group]
        tests = [(path, read_scores(path, "test", modes=("det",))[0]["det"]) for path in candidates]
        found = [(path, test) for path, test in tests if (csf, variant) in test["scores"]]
        if not found:
            known = sorted(f"{c} {v}" if v != "none" else c for _, test in tests for c, v in test["scores"])
            raise ValueError(f"figures.rc_curves.csfs: '{name}' is not in {candidates}; known: {known}")
        path, test = found[0]
        for dataset, scheme in schemes.items():
            own = test if dataset == "test" else read_scores(path, dataset, modes=("det",))[0]["det"]
            if scheme == "misclf":
                data = build_scheme("misclf", own["scores"][(csf, variant)], own["correct"])
            else:
                data = build_scheme(scheme, test["scores"][(csf, variant)], test["correct"],
                                    own["scores"][(csf, variant)])
            for kind in RC_KINDS:
                coverage, risk = rc_curve(data.confidence, data.residual, kind)
                rows.append(pd.DataFrame({"dataset": dataset, "scheme": scheme, "csf": name, "kind": kind,
                                          "coverage": coverage, "risk": risk}))
    return pd.concat(rows, ignore_index=True)


def plot_rc_curves(curves: pd.DataFrame, title: str) -> plt.Figure:
    """One row per evaluation set, columns selective / generalized risk, one line per CSF variant."""
    datasets = list(dict.fromkeys(curves["dataset"]))
    fig, axes = plt.subplots(len(datasets), 2, figsize=(8, 2.6 * len(datasets)), squeeze=False)
    for i, dataset in enumerate(datasets):
        for j, kind in enumerate(RC_KINDS):
            ax = axes[i, j]
            part = curves[(curves["dataset"] == dataset) & (curves["kind"] == kind)]
            for csf, line in part.groupby("csf", sort=False):
                ax.plot(line["coverage"], line["risk"], label=csf, lw=1.2)
            scheme = part["scheme"].iloc[0]
            ax.set_title(f"{dataset} ({scheme}): {kind} risk", fontsize=8)
            ax.set_xlabel("coverage", fontsize=7)
            ax.set_ylabel("risk", fontsize=7)
            ax.set_xlim(0, 1)
            ax.tick_params(labelsize=7)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
