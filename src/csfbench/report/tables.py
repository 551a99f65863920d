"""The paper's tables regenerated from the results (Claros-Olivares & Brockmeier, Tables 2, 6,
8 and 10): CSV plus LaTeX.

- :func:`best_metric_table`: Table 2 analogue, best run-mean value (default AUGRC, ×1000) per backbone,
  source and evaluation set among the validation-selected configurations, non-MCD and MCD separately,
  with the CSF variant and paradigm achieving it;
- :func:`selected_configuration_table`: Table 8 (selected dropout flag) and Table 10 (selected DG
  reward) analogues from the validation-based selection, CSF × (paradigm, projection), ``-`` = no such
  variant;
- :func:`clique_layer_table`: Table 6 analogue, the greedy clique layers of every ranked analysis.

LaTeX is written with pandas' ``to_latex`` (it needs jinja2, a pinned dependency).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from csfbench.atomic import atomic_path

DISPLAY_SCALE = {"aurc": 1000.0, "augrc": 1000.0}  # the papers' tables show AURC/AUGRC ×1000
_BEST_KEYS = ["backbone", "source", "dataset", "cell_regime"]


def best_metric_table(table: pd.DataFrame, metric: str, ranking: dict) -> pd.DataFrame:
    """Table 2 analogue: per (backbone, source, evaluation set), the best run-mean ``metric`` over
    (paradigm, CSF variant) of the selected configurations, without and with MCD (``*_mcd`` columns,
    empty where the backbone has no MCD rows). Values are ×1000 for AURC/AUGRC; best = lowest unless
    the metric is higher-is-better. Ties go to the paradigm, then the variant, that sorts first.
    ``ranking``: the config's complete ``ranking`` section (its ``schemes`` choose the ranked rows)."""
    # imported here, not at the top: the ranking statistics would cost every job that only writes a table
    # (:func:`write_table`) ~1 s of start-up
    from csfbench.aggregate.cells import ranking_settings
    from csfbench.aggregate.ranking import selected_ranked_rows
    from csfbench.metrics import higher_is_better

    settings = ranking_settings(ranking)
    rows = selected_ranked_rows(table, settings, [metric])
    if rows.empty:
        raise ValueError(f"the results table has no selected test rows of metric '{metric}'")
    means = rows.groupby(_BEST_KEYS + ["mcd", "paradigm", "entity"], as_index=False, observed=True)["value"].mean()
    ascending = not higher_is_better(metric)
    means = means.sort_values(_BEST_KEYS + ["mcd", "value", "paradigm", "entity"],
                              ascending=[True] * (len(_BEST_KEYS) + 1) + [ascending, True, True], kind="stable")
    best = means.groupby(_BEST_KEYS + ["mcd"], observed=True).head(1)
    best = best.assign(value=best["value"] * DISPLAY_SCALE.get(metric, 1.0))
    out = None
    for mcd, suffix in ((False, ""), (True, "_mcd")):
        part = best[best["mcd"] == mcd].drop(columns="mcd").rename(
            columns={"value": f"best{suffix}", "entity": f"csf{suffix}", "paradigm": f"paradigm{suffix}"})
        out = part if out is None else out.merge(part, on=_BEST_KEYS, how="left")
    out = out.rename(columns={"cell_regime": "regime"})
    columns = ["backbone", "source", "dataset", "regime", "best", "paradigm", "csf", "best_mcd", "paradigm_mcd",
               "csf_mcd"]
    return out.reindex(columns=columns).reset_index(drop=True)


def selected_configuration_table(selection: pd.DataFrame, field: str = "dropout", metric: str = "augrc",
                                 paradigms: Iterable[str] | None = None) -> pd.DataFrame:
    """Table 8/10 analogue: the selected ``field`` (dropout or reward) of every non-MCD CSF variant.

    ``selection`` is ``selected_configurations.csv``. Rows: (backbone, source, csf); columns:
    (paradigm, projection); ``-`` where the variant does not exist. ``paradigms`` restricts the columns
    (e.g. ``["dg"]`` for the reward table).
    """
    if field not in ("dropout", "reward"):
        raise ValueError(f"field must be 'dropout' or 'reward', got {field!r}")
    rows = selection[(selection["metric"] == metric) & ~selection["mcd"].astype(bool)]
    if paradigms is not None:
        rows = rows[rows["paradigm"].isin(list(paradigms))]
    if rows.empty:
        raise ValueError(f"no non-MCD selected configurations for metric '{metric}'"
                         + (f" and paradigms {list(paradigms)}" if paradigms is not None else ""))
    wide = rows.pivot_table(index=["backbone", "source", "csf"], columns=["paradigm", "variant"],
                            values=field, aggfunc="first")
    wide = wide.sort_index(axis=0).sort_index(axis=1)
    return wide.map(lambda v: "-" if pd.isna(v) else (f"{int(v)}" if float(v).is_integer() else f"{v:g}"))


def clique_layer_table(results: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Table 6 analogue: one row per greedy layer of every ranked (status ok) analysis result."""
    rows = []
    for result in results:
        if result["status"] != "ok":
            continue
        a = result["analysis"]
        for i, layer in enumerate(result["layers"], 1):
            rows.append({**a, "layer": i, "mean_rank": layer["mean_rank"], "members": ", ".join(layer["members"])})
    columns = ["group", "backbone", "mcd", "source", "regime", "layer", "mean_rank", "members"]
    return pd.DataFrame(rows, columns=columns)


def read_results(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The ranking results (JSON files of :func:`csfbench.stages.ranking.write_rankings`)."""
    return [json.loads(Path(p).read_text()) for p in paths]


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (pandas escapes cells, not the caption)."""
    special = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
               "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(special.get(ch, ch) for ch in text)


def write_table(frame: pd.DataFrame, csv_path: str | Path, tex_path: str | Path, caption: str,
                float_format: str = "%.3f") -> None:
    """Write ``frame`` as CSV and as a LaTeX ``table`` (booktabs rules), both atomically."""
    index = not isinstance(frame.index, pd.RangeIndex)
    with atomic_path(csv_path) as tmp:
        frame.to_csv(tmp, index=index, float_format="%.6g")
    latex = frame.to_latex(index=index, na_rep="-", float_format=lambda v: float_format % v, caption=latex_escape(caption),
                           escape=True, multicolumn=True, multicolumn_format="c")
    with atomic_path(tex_path) as tmp:
        tmp.write_text(latex)
