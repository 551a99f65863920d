"""The paper's tables regenerated from the results (Claros-Olivares & Brockmeier, Tables 2, 6,
8 and 10): CSV plus LaTeX.

- :func:`best_metric_table`: Table 2 analogue, best run-mean value (default AUGRC, ×1000) per backbone,
  source and evaluation set among the validation-selected configurations, non-MCD and MCD separately,
  with its spread over runs (ddof-1 deviation, number of runs), its bootstrap interval where it is a single
  run, and the CSF variant and paradigm achieving it;
- :func:`selected_configuration_table`: Table 8 (selected dropout flag) and Table 10 (selected DG
  reward) analogues from the validation-based selection, CSF × (paradigm, projection), ``-`` = no such
  variant;
- :func:`clique_layer_table`: Table 6 analogue, the greedy clique layers of every ranked analysis.

:func:`write_table` writes every table of the workflow: CSV, LaTeX (pandas' ``to_latex``; it needs jinja2,
a pinned dependency) and the report's view of it, a self-contained HTML page (:func:`html_view`).
"""
from __future__ import annotations

import base64
import html
import json
import numbers
from pathlib import Path
from typing import Any, Iterable, NamedTuple

import pandas as pd

from csfbench.atomic import atomic_path
from csfbench.report.spread import SD_SUFFIX, fold_spread, mean_sd_n

DISPLAY_SCALE = {"aurc": 1000.0, "augrc": 1000.0}  # the papers' tables show AURC/AUGRC ×1000
_BEST_KEYS = ["backbone", "source", "dataset", "cell_regime"]
#: the columns of one mode (suffix ``_mcd`` for MC dropout) of :func:`best_metric_table`
_BEST_COLUMNS = ["best", "best_sd", "n_runs", "ci_low", "ci_high", "ci_level", "n_boot", "paradigm", "csf"]


def best_metric_table(table: pd.DataFrame, metric: str, ranking: dict) -> pd.DataFrame:
    """Table 2 analogue: per (backbone, source, evaluation set), the best run-mean ``metric`` over
    (paradigm, CSF variant) of the selected configurations of the single models (the paper's table; the deep
    ensembles are ranked beside them in the cells), without and with MCD (``*_mcd`` columns,
    empty where the backbone has no MCD rows).  Best = lowest unless the metric is higher-is-better; ties go
    to the paradigm, then the variant, that sorts first.  ``ranking``: the config's complete ``ranking``
    section (its ``schemes`` choose the ranked rows).

    Columns per mode (suffix ``""`` or ``"_mcd"``: ``best_mcd``, ``best_mcd_sd``, ``n_runs_mcd``, …):
    ``best`` (the mean over the runs of the winning paradigm and variant), ``best_sd`` (the standard
    deviation of those runs' values, ddof = 1, NaN for a single run), ``n_runs`` (the runs averaged: training
    seeds of the selected configuration), ``ci_low`` / ``ci_high`` (the bootstrap interval of the results
    rows, :data:`csfbench.evaluation.BOOTSTRAP_COLUMNS`, at level ``ci_level`` with ``n_boot`` replicates:
    given only where ``n_runs`` is 1, NaN otherwise), ``paradigm`` and ``csf``.
    ``best``, ``best_sd``, ``ci_low`` and ``ci_high`` are in the metric's units, ×1000 for AURC/AUGRC
    (:data:`DISPLAY_SCALE`).  Each run's interval is one model's test-set sampling interval; the mean of the
    runs' bounds is no interval of the run mean (it ignores that averaging shrinks the sampling error and
    leaves out the seed-to-seed spread), so several runs are described by ``best_sd`` instead.  Results
    without the interval columns (older runs) give NaN intervals."""
    # imported here, not at the top: the ranking statistics would cost every job that only writes a table
    # (:func:`write_table`) ~1 s of start-up
    from csfbench.aggregate.cells import ranking_settings
    from csfbench.aggregate.ranking import selected_ranked_rows
    from csfbench.evaluation import BOOTSTRAP_COLUMNS, ensemble_rows, with_interval_columns
    from csfbench.metrics import higher_is_better

    settings = ranking_settings(ranking)
    rows = selected_ranked_rows(table[~ensemble_rows(table)], settings, [metric])
    if rows.empty:
        raise ValueError(f"the results table has no selected test rows of metric '{metric}'")
    rows = with_interval_columns(rows)
    rows = rows.assign(**{c: pd.to_numeric(rows[c]) for c in BOOTSTRAP_COLUMNS})
    keys = _BEST_KEYS + ["mcd", "paradigm", "entity"]
    means = mean_sd_n(rows, keys).merge(
        rows.groupby(keys, as_index=False, observed=True)[BOOTSTRAP_COLUMNS].first(), on=keys)
    means = means.assign(**{c: means[c].where(means["n_runs"] == 1) for c in BOOTSTRAP_COLUMNS})
    ascending = not higher_is_better(metric)
    means = means.sort_values(_BEST_KEYS + ["mcd", "value", "paradigm", "entity"],
                              ascending=[True] * (len(_BEST_KEYS) + 1) + [ascending, True, True], kind="stable")
    best = means.groupby(_BEST_KEYS + ["mcd"], observed=True).head(1)
    scaled = ["value", "value_sd", "ci_low", "ci_high"]
    best = best.assign(**{c: best[c] * DISPLAY_SCALE.get(metric, 1.0) for c in scaled})
    out = None
    for mcd, suffix in ((False, ""), (True, "_mcd")):
        part = best[best["mcd"] == mcd].drop(columns="mcd").rename(
            columns={"value": "best", "value_sd": "best_sd", "entity": "csf"})
        part = part.rename(columns={c: _mode_column(c, suffix) for c in _BEST_COLUMNS})
        out = part if out is None else out.merge(part, on=_BEST_KEYS, how="left")
    out = out.rename(columns={"cell_regime": "regime"})
    columns = ["backbone", "source", "dataset", "regime",
               *(_mode_column(c, suffix) for suffix in ("", "_mcd") for c in _BEST_COLUMNS)]
    out = out.reindex(columns=columns).reset_index(drop=True)
    return out.astype({c + suffix: "Int64" for c in ("n_runs", "n_boot") for suffix in ("", "_mcd")})


def _mode_column(column: str, suffix: str) -> str:
    """The name of a :func:`best_metric_table` column of the mode ``suffix``: ``best_mcd``, its deviation
    ``best_mcd_sd`` (the deviation suffix stays last, :mod:`csfbench.report.spread`), ``n_runs_mcd``, …"""
    if column.endswith(SD_SUFFIX):
        return column.removesuffix(SD_SUFFIX) + suffix + SD_SUFFIX
    return column + suffix


def selected_configuration_table(selection: pd.DataFrame, field: str = "dropout", metric: str = "augrc",
                                 paradigms: Iterable[str] | None = None) -> pd.DataFrame:
    """Table 8/10 analogue: the selected ``field`` (dropout or reward) of every non-MCD CSF variant of the single
    models (the deep ensembles' selections are left out).

    ``selection`` is ``selected_configurations.csv``. Rows: (backbone, source, csf); columns:
    (paradigm, projection); ``-`` where the variant does not exist. ``paradigms`` restricts the columns
    (e.g. ``["dg"]`` for the reward table).
    """
    if field not in ("dropout", "reward"):
        raise ValueError(f"field must be 'dropout' or 'reward', got {field!r}")
    rows = selection[(selection["metric"] == metric) & ~selection["mcd"].astype(bool)
                     & ~selection["ensemble"].astype(bool)]
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


#: the line a table's view shows instead of the table when the table has no rows and its writer gives no reason
EMPTY_REASON = "Nothing in this run fills this table."

# the view's style: compact font, a scrolling box with the header row kept in sight, numbers right-aligned
_STYLE = """
body { font: 13px/1.35 system-ui, sans-serif; margin: 0.6em; color: #222; }
h1 { font-size: 15px; font-weight: 600; margin: 0 0 0.3em; }
p { margin: 0.3em 0; }
.box { overflow: auto; max-height: calc(100vh - 7em); border: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 2px 6px; border-bottom: 1px solid #e4e4e4; white-space: nowrap; text-align: left; }
th { position: sticky; top: 0; background: #f0f0f0; cursor: pointer; user-select: none; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:hover { background: #f6f8ff; }
"""

# a click on a header sorts the rows by that column, a second click reverses; a cell's key is its data-sort
# value (a number at full precision) or its text, compared as numbers where both are numeric
_SORT_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach((th, column) => th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0];
  const direction = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
  th.parentNode.querySelectorAll("th").forEach((other) => other.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", direction > 0 ? "ascending" : "descending");
  const key = (row) => {
    const cell = row.cells[column], text = cell.dataset.sort ?? cell.textContent.trim();
    return text !== "" && !isNaN(Number(text)) ? Number(text) : text;
  };
  const compare = (a, b) => typeof a !== typeof b ? (typeof a === "number" ? -1 : 1)
    : typeof a === "number" ? (a > b) - (a < b) : a.localeCompare(b, undefined, {numeric: true});
  const rows = [...body.rows].map((row) => [key(row), row]);
  rows.sort((a, b) => direction * compare(a[0], b[0]));
  body.append(...rows.map((pair) => pair[1]));
}));
"""


class Download(NamedTuple):
    """A file offered by a table's view as a ``data:`` link: its link text, file name, MIME type and bytes."""
    label: str
    name: str
    mime: str
    data: bytes

    def link(self) -> str:
        """The ``<a download>`` element whose ``data:`` URI holds the file's bytes (base64)."""
        uri = f"data:{self.mime};charset=utf-8;base64,{base64.b64encode(self.data).decode('ascii')}"
        return f'<a download="{html.escape(self.name)}" href="{uri}">{html.escape(self.label)}</a>'


def _label(column: Any) -> str:
    """A header's text: a MultiIndex column's non-empty levels joined by `` / ``."""
    parts = column if isinstance(column, tuple) else (column,)
    return " / ".join(str(p) for p in parts if p is not None and str(p) != "")


def _cell(value: Any, float_format: str) -> str:
    """One ``<td>``, escaped: missing values as ``-`` (as in the LaTeX), floats with ``float_format``; a number
    (not a bool) is right-aligned and carries its full-precision value in ``data-sort`` for the sort."""
    if pd.api.types.is_scalar(value) and pd.isna(value):
        return "<td>-</td>"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if isinstance(value, numbers.Integral):
            text = key = str(int(value))
        else:
            text, key = float_format % float(value), json.dumps(float(value))  # JSON spells ±inf as JS does
        return f'<td class="num" data-sort="{key}">{html.escape(text)}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _html_table(frame: pd.DataFrame, index: bool, float_format: str) -> str:
    """``frame`` as a sortable ``<table>``: one header row (the index levels first where ``index``), every
    cell escaped."""
    names = [_label(n) for n in frame.index.names] if index else []
    header = "".join(f"<th>{html.escape(name)}</th>" for name in names + [_label(c) for c in frame.columns])
    rows = []
    for row in frame.itertuples(index=index, name=None):
        cells = (*row[0], *row[1:]) if index and isinstance(row[0], tuple) else row
        rows.append("<tr>" + "".join(_cell(v, float_format) for v in cells) + "</tr>\n")
    return (f'<div class="box"><table class="sortable"><thead><tr>{header}</tr></thead>\n'
            f'<tbody>\n{"".join(rows)}</tbody></table></div>')


def html_view(frame: pd.DataFrame, caption: str, downloads: Iterable[Download], index: bool = False,
              float_format: str = "%.3f", empty_reason: str = EMPTY_REASON) -> str:
    """The report's page of a table: ``caption`` as the heading, the size and the ``downloads`` links, then
    ``frame`` as a table sortable by a click on a column header (:func:`_html_table`), or, when ``frame``
    has no rows, the one line ``empty_reason`` instead.  Self-contained: inline style and script, nothing
    fetched."""
    links = " ".join(d.link() for d in downloads)
    if len(frame):
        size = f"{len(frame)} rows × {frame.shape[1] + (frame.index.nlevels if index else 0)} columns"
        body = f"<p>{size}; click a column header to sort. Download: {links}</p>\n" + \
            _html_table(frame, index, float_format)
    else:
        body = f'<p class="empty">{html.escape(empty_reason)}</p>\n<p>Download: {links}</p>'
    title = html.escape(caption)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{_STYLE}</style></head>\n<body>\n<h1>{title}</h1>\n{body}\n"
            f"<script>{_SORT_SCRIPT}</script>\n</body>\n</html>\n")


def _write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_table(frame: pd.DataFrame, csv_path: str | Path, tex_path: str | Path, html_path: str | Path,
                caption: str, float_format: str = "%.3f", empty_reason: str = EMPTY_REASON) -> None:
    """Write ``frame`` as CSV, as a LaTeX ``table`` (booktabs rules) and as the report's view of it
    (:func:`html_view`, offering both files for download), each atomically.  The index is written unless it
    is a plain range.  The CSV and the view keep a mean and its deviation (``<name>``, ``<name>_sd``:
    :mod:`csfbench.report.spread`) as two numeric, sortable columns; the LaTeX, the printed form, shows them
    as one ``<name>`` cell "mean ± sd", ``±`` typeset as ``$\\pm$`` (the mean alone where the deviation is
    NaN: a single value).  ``empty_reason``: the line the view shows when ``frame`` has no rows, saying why (the
    caller knows, e.g. no such models in the run)."""
    index = not isinstance(frame.index, pd.RangeIndex)
    csv = frame.to_csv(index=index, float_format="%.6g")
    latex = fold_spread(frame, float_format).to_latex(
        index=index, na_rep="-", float_format=lambda v: float_format % v, caption=latex_escape(caption), escape=True,
        multicolumn=True, multicolumn_format="c").replace("±", r"$\pm$")
    downloads = [Download("CSV", Path(csv_path).name, "text/csv", csv.encode("utf-8")),
                 Download("LaTeX", Path(tex_path).name, "application/x-tex", latex.encode("utf-8"))]
    _write_text(csv_path, csv)
    _write_text(tex_path, latex)
    _write_text(html_path, html_view(frame, caption, downloads, index, float_format, empty_reason))
