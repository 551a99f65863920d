"""The report's view of a table (:func:`csfbench.report.tables.write_table`'s HTML page): every cell escaped,
numbers formatted and sortable at full precision, the CSV and LaTeX offered as ``data:`` downloads holding the
written files' bytes, one line instead of the table when it has no rows, nothing fetched from elsewhere."""
from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from csfbench.report.tables import EMPTY_REASON, write_table
from csfbench.workflow import paths


class Page(HTMLParser):
    """The parts of a view the tests read: heading, header cells, rows of (text, attributes) cells, download
    links, the empty-table line, the scripts and every ``src``/``href``."""

    def __init__(self, text: str):
        super().__init__()
        self.heading, self.headers, self.rows, self.links, self.empty = "", [], [], [], None
        self.scripts, self.references, self._open = [], [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.references += [attrs[a] for a in ("src", "href") if a in attrs]
        if tag == "tr":
            self.rows.append([])
        if tag == "a":
            self.links.append(attrs)
        self._open = (tag, attrs, "")

    def handle_data(self, data):
        if self._open:
            self._open = (*self._open[:2], self._open[2] + data)

    def handle_endtag(self, tag):
        if not self._open or self._open[0] != tag:
            return
        _, attrs, text = self._open
        if tag == "h1":
            self.heading = text
        elif tag == "th":
            self.headers.append(text)
        elif tag == "td":
            self.rows[-1].append((text, attrs))
        elif tag == "p" and attrs.get("class") == "empty":
            self.empty = text
        elif tag == "script":
            self.scripts.append(text)
        self._open = None

    @property
    def body_rows(self) -> list[list[tuple[str, dict]]]:
        return [row for row in self.rows if row]  # the header row holds <th>, no <td>


def _write(tmp_path, frame, caption="A table", **options) -> tuple[Page, str]:
    csv, tex, view = tmp_path / "t.csv", tmp_path / "t.tex", tmp_path / "t.html"
    write_table(frame, csv, tex, view, caption, **options)
    return Page(view.read_text(encoding="utf-8")), view.read_text(encoding="utf-8")


def test_every_cell_header_and_the_caption_are_escaped(tmp_path):
    hostile = '<script>alert("x")</script> & \'q\''
    frame = pd.DataFrame({hostile: [hostile, "plain"], "n": [1, 2]})
    page, text = _write(tmp_path, frame, caption=f"Caption {hostile}")
    assert "alert(" not in "".join(page.scripts)  # only the sort script runs
    assert text.count("<script>") == 1
    assert page.heading == f"Caption {hostile}" and page.headers[0] == hostile
    assert page.body_rows[0][0][0] == hostile  # the text reads back unchanged: it was escaped, not dropped
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27;" in text


def test_numbers_are_formatted_and_keep_their_full_value_for_the_sort(tmp_path):
    frame = pd.DataFrame({"name": ["a", "b", "c", "d"], "x": [0.123456, np.nan, 12.5, np.inf],
                          "k": [3, 10, 2, 1], "flag": [True, False, True, False]})
    page, _ = _write(tmp_path, frame, float_format="%.2f")
    cells = {(i, page.headers[j]): cell for i, row in enumerate(page.body_rows) for j, cell in enumerate(row)}
    assert cells[0, "x"] == ("0.12", {"class": "num", "data-sort": "0.123456"})
    assert cells[1, "x"] == ("-", {})  # missing, as in the LaTeX
    assert cells[3, "x"] == ("inf", {"class": "num", "data-sort": "Infinity"})  # JavaScript's Number() reads it
    assert cells[1, "k"] == ("10", {"class": "num", "data-sort": "10"})
    assert cells[0, "flag"] == ("True", {})  # a bool is text, not a number
    assert cells[2, "name"] == ("c", {})


def test_the_index_is_a_column_where_the_csv_has_it_and_column_levels_are_joined(tmp_path):
    index = pd.MultiIndex.from_tuples([("vgg13", "MSR"), ("vit", "GEN")], names=["backbone", "csf"])
    columns = pd.MultiIndex.from_tuples([("dg", "none"), ("dg", "global")], names=["paradigm", "variant"])
    frame = pd.DataFrame([["1", "-"], ["0", "1"]], index=index, columns=columns)
    page, text = _write(tmp_path, frame)
    assert page.headers == ["backbone", "csf", "dg / none", "dg / global"]
    assert [[c[0] for c in row] for row in page.body_rows] == [["vgg13", "MSR", "1", "-"], ["vit", "GEN", "0", "1"]]
    assert "2 rows × 4 columns" in text
    plain, _ = _write(tmp_path, frame.reset_index(drop=True))  # a range index is written nowhere
    assert plain.headers == ["dg / none", "dg / global"]


def test_the_view_sorts_on_a_header_click_with_its_own_inline_script(tmp_path):
    page, text = _write(tmp_path, pd.DataFrame({"a": [2, 1]}))
    assert '<table class="sortable">' in text and "position: sticky" in text and "overflow: auto" in text
    (script,) = page.scripts
    assert 'querySelectorAll("table.sortable th")' in script and 'addEventListener("click"' in script
    assert "dataset.sort" in script and "localeCompare" in script and "{numeric: true}" in script


def test_the_downloads_are_data_uris_of_the_written_csv_and_latex(tmp_path):
    frame = pd.DataFrame({"csf": ["MSR", "Énergie_1"], "augrc": [12.3456789, 0.5]})
    page, _ = _write(tmp_path, frame, caption="Best AUGRC & co")
    assert [link["download"] for link in page.links] == ["t.csv", "t.tex"]
    for link, name in zip(page.links, ("t.csv", "t.tex")):
        mime, payload = re.fullmatch(r"data:([^;,]+);charset=utf-8;base64,(.*)", link["href"]).groups()
        assert mime == {"t.csv": "text/csv", "t.tex": "application/x-tex"}[name]
        assert base64.b64decode(payload, validate=True) == (tmp_path / name).read_bytes()
    assert "Best AUGRC \\& co" in (tmp_path / "t.tex").read_text()
    assert "12.3457" in (tmp_path / "t.csv").read_text()


def test_nothing_is_fetched_from_elsewhere(tmp_path):
    page, text = _write(tmp_path, pd.DataFrame({"a": [1.0]}))
    assert page.references and all(ref.startswith("data:") for ref in page.references)
    assert "<link" not in text and "@import" not in text and "url(" not in text


@pytest.mark.parametrize("reason", [None, "No Deep Gamblers models in this run."])
def test_an_empty_table_is_one_line_saying_why_with_the_downloads_kept(tmp_path, reason):
    options = {} if reason is None else {"empty_reason": reason}
    page, text = _write(tmp_path, pd.DataFrame(columns=["backbone", "source", "csf"]), **options)
    assert "<table" not in text and page.headers == [] and page.body_rows == []
    assert page.empty == (reason or EMPTY_REASON)
    assert [link["download"] for link in page.links] == ["t.csv", "t.tex"]
    assert (tmp_path / "t.csv").read_text() == "backbone,source,csf\n"


def test_write_table_leaves_no_temporary_file(tmp_path):
    _write(tmp_path, pd.DataFrame({"a": [1]}))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.html", "t.tex"]


def test_a_tables_view_is_the_html_page_beside_its_csv():
    assert paths.table_view("results/tables/nc_{source}.csv") == "results/tables/nc_{source}.html"
    assert paths.table_view(paths.analysis_table("frr", "cifar10.1")) == "results/tables/analyses/frr_cifar10.1.html"
