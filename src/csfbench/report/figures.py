"""The paper's figures regenerated from the results (spec 000 §8.1), with matplotlib's headless Agg backend.

- :func:`top_clique_membership` / :func:`plot_top_clique_map`: Figure 1 analogue for one backbone.
  Columns are ``source→regime`` cells ordered by regime (test, near, mid, far, covariate, adversarial),
  then source in config order; rows are CSF variants; a dot marks membership of the cell's layer-1
  clique, members are joined by a vertical line coloured by regime, and a side bar counts the cells
  each variant is in. Skipped cells are empty columns marked "n/a".
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
import pandas as pd  # noqa: E402

from csfbench.aggregate.ranking import REGIMES, ranking_settings  # noqa: E402
from csfbench.atomic import atomic_path  # noqa: E402
from csfbench.csf.projection import GROUP_VARIANTS  # noqa: E402
from csfbench.csf.store import read_scores  # noqa: E402
from csfbench.metrics import build_scheme, rc_curve  # noqa: E402
from csfbench.report.tables import read_results  # noqa: E402

REGIME_COLOURS = {"test": "tab:green", "near": "tab:blue", "mid": "tab:red", "far": "tab:orange",
                  "covariate": "tab:purple", "adversarial": "tab:brown"}
RC_KINDS = ("selective", "generalized")
DEFAULTS = {
    "clique_map_group": "rc",   # the ranking metric group of the Figure 1 analogue
    "table_metric": "augrc",    # metric of the Table 2 / Table 8 / Table 10 analogues
    # CSF variants whose risk-coverage curves are drawn; models: {source: model id}, default the first model
    "rc_curves": {"csfs": ["MSR", "Energy"], "models": {}},
}


def figure_settings(section: dict | None) -> dict[str, Any]:
    """The config's ``figures`` section completed with :data:`DEFAULTS`."""
    settings = {**DEFAULTS, **(section or {})}
    settings["rc_curves"] = {**DEFAULTS["rc_curves"], **settings["rc_curves"]}
    return settings


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path) -> None:
    """Write ``fig`` as PNG (150 dpi) and PDF, atomically, and close it."""
    for path, fmt in ((png, "png"), (pdf, "pdf")):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight")
    plt.close(fig)


def top_clique_membership(results: Iterable[dict[str, Any]], sources: Sequence[str]) -> pd.DataFrame:
    """CSF variant × ``source→regime`` boolean matrix of layer-1 membership (rows sorted by name).

    Only the regimes that have at least one analysis are columns; a skipped cell is an all-False column
    whose name is listed in ``frame.attrs["skipped"]``.
    """
    by_cell = {(r["analysis"]["source"], r["analysis"]["regime"]): r for r in results}
    columns, skipped, members = [], [], {}
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
            else:
                skipped.append(name)
    entities = sorted({e for r in by_cell.values() if r["status"] == "ok" for e in r["mean_ranks"]})
    frame = pd.DataFrame({c: [e in members.get(c, ()) for e in entities] for c in columns}, index=entities,
                         dtype=bool)
    frame.index.name = "csf_variant"
    frame.attrs["skipped"] = skipped
    return frame


def plot_top_clique_map(membership: pd.DataFrame, title: str) -> plt.Figure:
    """Figure 1 analogue of a :func:`top_clique_membership` matrix."""
    n_rows, n_cols = membership.shape
    fig, (ax, bar) = plt.subplots(1, 2, figsize=(2.0 + 0.45 * max(n_cols, 1) + 2.0, 1.5 + 0.22 * max(n_rows, 1)),
                                  gridspec_kw={"width_ratios": [max(n_cols, 1), 3]}, sharey=True)
    y = {name: i for i, name in enumerate(membership.index)}
    for j, column in enumerate(membership.columns):
        colour = REGIME_COLOURS[column.split("→")[1]]
        rows = [y[e] for e in membership.index[membership[column].to_numpy()]]
        if rows:
            ax.plot([j, j], [min(rows), max(rows)], color=colour, lw=2, zorder=1)
            ax.scatter([j] * len(rows), rows, color=colour, s=30, zorder=2)
        elif column in membership.attrs.get("skipped", ()):
            ax.text(j, (n_rows - 1) / 2, "n/a", rotation=90, ha="center", va="center", fontsize=7, color="grey")
    ax.set_xticks(range(n_cols), membership.columns, rotation=90, fontsize=7)
    ax.set_yticks(range(n_rows), membership.index, fontsize=7)
    ax.set_xlim(-0.5, n_cols - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.grid(axis="y", color="0.92", lw=0.5)
    ax.set_title(title, fontsize=9)
    counts = membership.sum(axis=1).to_numpy()
    bar.barh(range(n_rows), counts, color="0.4")
    bar.set_xlabel("cells in top clique", fontsize=7)
    bar.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


def write_top_clique_map(json_paths: Iterable[str | Path], sources: Sequence[str], backbone: str, group: str,
                         csv_path: str | Path, png: str | Path, pdf: str | Path) -> pd.DataFrame:
    """Job: Figure 1 analogue of one backbone from its non-MCD ranking results of metric group ``group``."""
    membership = top_clique_membership(read_results(json_paths), sources)
    with atomic_path(csv_path) as tmp:
        membership.astype(int).to_csv(tmp)
    title = f"{backbone}: top clique per cell (metric group {group}, non-MCD)"
    save_figure(plot_top_clique_map(membership, title), png, pdf)
    return membership


def parse_variant(name: str) -> tuple[str, str]:
    """``"KPCA RecError class_pred"`` → (``"KPCA RecError"``, ``"class_pred"``); no suffix = ``none``."""
    head, _, tail = name.rpartition(" ")
    variants = {v for vs in GROUP_VARIANTS.values() for v in vs}
    return (head, tail) if head and tail in variants else (name, "none")


def group_of(variant: str) -> str:
    """The projection fit group (scores-file folder) that produces a variant."""
    return next(g for g, variants in GROUP_VARIANTS.items() if variant in variants)


def rc_curves(scores_dir: str | Path, schemes: dict[str, str], csfs: Sequence[str]) -> pd.DataFrame:
    """Long table of risk–coverage points (coverage, risk in [0, 1]) of ``csfs`` on one model.

    ``scores_dir`` is ``results/scores/{source}/{model}``; ``schemes`` maps each plotted evaluation set
    to its failure scheme: ``misclf`` evaluates the set alone (the test set: misclassification), any
    other scheme pairs the set with the model's test-set scores (e.g. ``correct_vs_ood``). Correctness
    is the ``correct`` flag the scores file carries (the feature file's, copied by score_and_evaluate).
    Non-MCD scores only.
    """
    rows = []
    for name in csfs:
        csf, variant = parse_variant(name)
        folder = Path(scores_dir) / group_of(variant)
        test = read_scores(folder / "test.h5")[0]["det"]
        if (csf, variant) not in test["scores"]:
            known = sorted(f"{c} {v}" if v != "none" else c for c, v in test["scores"])
            raise ValueError(f"figures.rc_curves.csfs: '{name}' is not in {folder / 'test.h5'}; known: {known}")
        for dataset, scheme in schemes.items():
            own = test if dataset == "test" else read_scores(folder / f"{dataset}.h5")[0]["det"]
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


def write_rc_curves(scores_dir: str | Path, shift_types: dict[str, str], csfs: Sequence[str],
                    ranking: dict | None, title: str, csv_path: str | Path, png: str | Path,
                    pdf: str | Path) -> pd.DataFrame:
    """Job: risk–coverage curves of one model as CSV and figure; ``shift_types`` maps each plotted set
    to its shift type, whose scheme is the ``ranking`` settings' (the ranked rows' scheme)."""
    schemes = ranking_settings(ranking)["schemes"]
    curves = rc_curves(scores_dir, {d: schemes[s] for d, s in shift_types.items()}, csfs)
    with atomic_path(csv_path) as tmp:
        curves.to_csv(tmp, index=False, float_format="%.6g")
    save_figure(plot_rc_curves(curves, title), png, pdf)
    return curves
