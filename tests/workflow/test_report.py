"""`snakemake --report` on a finished micro run: a self-contained HTML report whose items are all captioned,
opened in a real headless Chromium that renders every figure and every table view (csfbench.report.tables'
HTML page of a table) through the report's own JavaScript; the table views' own script sorts their rows on a
header click."""
from __future__ import annotations

import base64
import html as html_lib
import json
import os
import re
import shutil
import subprocess

import pytest

from tests.helpers.micro_run import MICRO, SHARES_MICRO_RUN, finished_micro_run, snakemake


pytestmark = [pytest.mark.workflow, SHARES_MICRO_RUN]
BROWSERS = ("chromium", "chromium-browser")

# Injected before </body> of a copy of the report: after the app has rendered, show every image result the
# way a click on it does (app.setView), wait for the <img> to decode, draw it on a canvas and record its size
# and the number of distinct pixel values; show every HTML result (a table view) the same way, wait for its
# iframe and record the structure of the page it holds (decoded from the data URI and parsed with DOMParser:
# an iframe of a data: URI has an opaque origin, its document is closed to the report); the outcome is written
# into the DOM for --dump-dom.
PROBE = """
<script>
window.addEventListener("load", async () => {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  for (let i = 0; i < 200 && (typeof app === "undefined" || !app); i++) await sleep(50);  // React renders async
  const out = {app: typeof app !== "undefined" && !!app, text: document.body.innerText.slice(0, 2000), images: {}};
  for (const [path, entry] of Object.entries(out.app ? results : {})) {
    if (!entry.mime_type.startsWith("image/")) continue;
    app.setView({content: "img", contentPath: entry.data_uri, resultPath: path});
    let img = null;
    for (let i = 0; i < 100 && !(img && img.complete); i++) {
      await sleep(50);
      img = [...document.querySelectorAll("#app img")].find((el) => el.src === entry.data_uri) || null;
    }
    if (!img || !img.naturalWidth) { out.images[path] = null; continue; }
    const canvas = document.createElement("canvas");
    canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    const ctx = canvas.getContext("2d");
    ctx.drawImage(img, 0, 0);
    const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    const colours = new Set();
    for (let p = 0; p < data.length && colours.size < 50; p += 4 * 97) colours.add(data[p] * 65536 + data[p + 1] * 256 + data[p + 2]);
    out.images[path] = {width: img.naturalWidth, height: img.naturalHeight, colours: colours.size};
  }
  out.views = {};
  for (const [path, entry] of Object.entries(out.app ? results : {})) {
    if (entry.mime_type !== "text/html") continue;
    app.setView({content: "html", contentPath: entry.data_uri, resultPath: path});
    let frame = null;
    for (let i = 0; i < 100 && !frame; i++) {
      await sleep(50);
      frame = [...document.querySelectorAll("#app iframe")].find((el) => el.src === entry.data_uri) || null;
    }
    const bytes = Uint8Array.from(atob(entry.data_uri.slice(entry.data_uri.indexOf(",") + 1)), (c) => c.charCodeAt(0));
    const doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes), "text/html");
    out.views[path] = {
      shown: !!frame, heading: doc.querySelector("h1")?.textContent ?? null,
      table: !!doc.querySelector("table.sortable"), headers: doc.querySelectorAll("table thead th").length,
      rows: doc.querySelectorAll("table tbody tr").length, empty: doc.querySelector("p.empty")?.textContent ?? null,
      downloads: [...doc.querySelectorAll("a[download]")].map((a) => [a.getAttribute("download"), a.href.slice(0, 5)]),
      sorter: [...doc.scripts].some((el) => el.textContent.includes("table.sortable th")),
    };
  }
  const pre = document.createElement("pre");
  pre.id = "csfbench-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


# The table views of the report, each loaded into an iframe of its own (srcdoc: the probe's origin, so that the
# probe reaches its document): per header, one click and then another; record each column's cell texts after
# each click, whether the rows are still the same rows and whether any click changed their order.
SORT_PROBE = """<!DOCTYPE html>
<html><body><script>
const VIEWS = %s;
window.addEventListener("load", async () => {
  const out = {};
  for (const [path, text] of Object.entries(VIEWS)) {
    const frame = document.createElement("iframe");
    const loaded = new Promise((resolve) => frame.addEventListener("load", resolve));
    frame.srcdoc = text;
    document.body.appendChild(frame);
    await loaded;
    const doc = frame.contentDocument, body = doc.querySelector("table tbody");
    if (!body) { out[path] = null; continue; }
    const rows = () => [...body.rows].map((row) => [...row.cells].map((c) => [c.textContent, c.dataset.sort ?? null]));
    const original = JSON.stringify(rows().map((r) => r.map((c) => c[0])).sort());
    const before = JSON.stringify(rows());
    const view = {columns: [], same_rows: true, reordered: false};
    doc.querySelectorAll("thead th").forEach((th, i) => {
      const clicks = [];
      for (const _ of [0, 1]) {
        th.click();
        const now = rows();
        view.same_rows &&= JSON.stringify(now.map((r) => r.map((c) => c[0])).sort()) === original;
        view.reordered ||= JSON.stringify(now) !== before;
        clicks.push({order: th.getAttribute("aria-sort"), cells: now.map((r) => r[i])});
      }
      view.columns.push(clicks);
    });
    out[path] = view;
  }
  const pre = document.createElement("pre");
  pre.id = "csfbench-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body></html>
"""


def _browser() -> str:
    """Chromium from Debian's packages, installed when missing and running as root; skip otherwise."""
    for name in BROWSERS:
        if shutil.which(name):
            return shutil.which(name)
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("Chromium is not installed and cannot be installed here (not root or no apt-get): "
                    "apt-get install chromium")
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run([*apt, "install", "-y", "chromium"], capture_output=True, env=env).returncode != 0:
        subprocess.run([*apt, "update"], capture_output=True, env=env, check=True)
        subprocess.run([*apt, "install", "-y", "chromium"], capture_output=True, env=env, check=True)
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    workdir, _ = finished_micro_run(tmp_path_factory)
    copy = tmp_path_factory.mktemp("report") / "run"
    shutil.copytree(workdir, copy, symlinks=True)
    proc = snakemake("--report", "results/report.html", "--configfile", MICRO, workdir=copy, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return copy / "results/report.html"


def _embedded(html: str, name: str):
    match = re.search(rf'<script id="{name}">\s*var {name} = (.*?);\s*</script>', html, flags=re.S)
    assert match, f"report has no '{name}' data"
    return json.loads(match.group(1))


def _decoded(data_uri: str) -> bytes:
    """The bytes of a base64 ``data:`` URI."""
    header, _, payload = data_uri.partition(",")
    assert header.startswith("data:") and header.endswith(";base64"), header[:80]
    return base64.b64decode(payload, validate=True)


def _probe(browser: str, page) -> dict:
    """``page`` opened in headless Chromium: the JSON its probe script wrote into ``<pre id="csfbench-probe">``."""
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--virtual-time-budget=60000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=300)
    match = re.search(r'<pre id="csfbench-probe">(.*?)</pre>', proc.stdout, flags=re.S)
    assert match, f"the page's scripts did not finish in Chromium:\n{proc.stderr[-3000:]}"
    return json.loads(html_lib.unescape(match.group(1)))


@pytest.fixture(scope="module")
def rendered(report, tmp_path_factory):
    """What :data:`PROBE` saw of the report in headless Chromium."""
    browser = _browser()
    probed = tmp_path_factory.mktemp("probe") / "probed.html"
    head, body_end, tail = report.read_text().rpartition("</body>")  # the document's own (the JS holds others)
    probed.write_text(head + PROBE + body_end + tail)
    return _probe(browser, probed)


@pytest.fixture(scope="module")
def views(report) -> dict[str, str]:
    """The report's table views (its ``text/html`` results) by result path: the HTML pages they embed."""
    results = _embedded(report.read_text(), "results")
    return {path: _decoded(entry["data_uri"]).decode("utf-8") for path, entry in results.items()
            if entry["mime_type"] == "text/html"}


def test_report_is_one_self_contained_html_file_with_every_item_captioned(report):
    html = report.read_text()
    assert html.lstrip().lower().startswith("<!doctype html>")
    # nothing is fetched from elsewhere: no script, stylesheet or image with a remote or relative source
    external = re.findall(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?!data:)[^\"]+\"", html)
    assert external == []
    results = _embedded(html, "results")
    names = {os.path.basename(path) for path in results}
    assert {"nc_demo10.html", "proximity_demo10.html", "table10_selected_reward.html"} <= names
    # every table is in the report as its HTML view, none as a CSV to download
    assert [path for path, entry in results.items() if path.endswith(".csv") or entry["mime_type"] == "text/csv"] == []
    assert {entry["mime_type"] for entry in results.values()} <= {"image/png", "text/html"}
    assert any(entry["mime_type"] == "image/png" for entry in results.values()), "no figure in the report"
    uncaptioned = [path for path, entry in results.items() if not entry.get("caption", "").strip()]
    assert uncaptioned == []
    for path, entry in results.items():
        assert entry["data_uri"].startswith("data:"), path  # embedded, not linked
    nc = next(entry for path, entry in results.items() if path.endswith("nc_demo10.html"))
    assert "Neural-collapse metrics" in nc["caption"] and "demo10" in nc["caption"]
    # the paper's Figure 2 analogue (rule conover_heatmap) with its caption (report/figure_conover_heatmap.rst)
    heatmap = next(entry for path, entry in results.items() if path.endswith("conover_heatmap.png"))
    assert heatmap["mime_type"] == "image/png" and "Conover post-hoc p-values" in heatmap["caption"]
    assert "csfbench: confidence scoring functions" in html  # report/workflow.rst


def test_report_renders_every_figure_in_headless_chromium(rendered):
    out = rendered
    assert out["app"], "the report's React app did not start"
    # the app rendered the workflow description (report/workflow.rst) and the result categories
    assert "csfbench: confidence scoring functions" in out["text"]
    assert "Figures" in out["text"] and "Tables" in out["text"]
    assert out["images"], "no figure was rendered"
    for path, image in out["images"].items():
        assert image is not None, f"{path}: the figure did not load in the report"
        assert image["width"] > 100 and image["height"] > 100, (path, image)
        assert image["colours"] > 2, f"{path}: the rendered figure is blank"


def test_report_shows_every_table_view_with_its_rows_or_why_it_has_none(rendered, views, report):
    assert views and set(rendered["views"]) == set(views)
    run = report.parent.parent  # the report's paths are relative to the run's working directory
    for path, view in rendered["views"].items():
        assert view["shown"], f"{path}: the report did not open the table view in its iframe"
        assert view["heading"] and view["sorter"], (path, view)
        if view["table"]:
            assert view["rows"] >= 1 and view["headers"] >= 1 and view["empty"] is None, (path, view)
        else:
            assert view["rows"] == 0 and view["empty"], f"{path}: neither a table nor the line saying why not"
        csv, tex = (os.path.basename(path).removesuffix(".html") + ext for ext in (".csv", ".tex"))
        assert view["downloads"] == [[csv, "data:"], [tex, "data:"]], (path, view["downloads"])
        # the downloads hold the run's CSV and LaTeX files as written beside the view
        links = dict(re.findall(r'<a download="([^"]+)" href="([^"]+)"', views[path]))
        for name in (csv, tex):
            assert _decoded(links[name]) == (run / os.path.dirname(path) / name).read_bytes(), (path, name)
    filled = {os.path.basename(p) for p, v in rendered["views"].items() if v["table"]}
    # the micro run has Deep Gamblers models, neural-collapse records and a ranked analysis
    assert {"table10_selected_reward.html", "nc_demo10.html", "clique_layers.html", "table2_best.html"} <= filled


#: the decimal numbers JavaScript's Number() reads (the views' cells hold no hexadecimal or binary literals)
JS_NUMBER = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _numeric_key(cell: list) -> float | None:
    """The number the view's script sorts ``cell`` (``[text, data-sort]``) by, or None where it sorts it as text
    (JavaScript's ``Number()``: ``Infinity`` is a number, ``NaN`` and ``""`` are not)."""
    key = cell[1] if cell[1] is not None else cell[0].strip()
    return float(key) if JS_NUMBER.fullmatch(key) else None


def test_table_views_sort_their_rows_on_a_header_click_in_headless_chromium(views, tmp_path):
    page = tmp_path / "sort_probe.html"
    page.write_text(SORT_PROBE % json.dumps(views).replace("</", "<\\/"), encoding="utf-8")
    out = _probe(_browser(), page)
    tables = {path: view for path, view in out.items() if view is not None}
    assert tables and set(out) == set(views)
    sorted_some = False
    for path, view in tables.items():
        assert view["same_rows"], f"{path}: sorting lost or changed rows"
        n_rows = len(view["columns"][0][0]["cells"])
        if n_rows < 2:
            continue
        assert view["reordered"], f"{path}: no header click changed the order of its {n_rows} rows"
        sorted_some = True
        for i, (ascending, descending) in enumerate(view["columns"]):
            assert (ascending["order"], descending["order"]) == ("ascending", "descending"), (path, i)
            assert descending["cells"] == ascending["cells"][::-1], f"{path}: column {i} not reversed by a second click"
            keys = [_numeric_key(cell) for cell in ascending["cells"]]
            numbers = [k for k in keys if k is not None]
            assert keys[:len(numbers)] == numbers == sorted(numbers), f"{path}: column {i} not in numeric order"
    assert sorted_some, "no table view with two rows or more"
