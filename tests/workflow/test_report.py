"""`snakemake --report` on a finished micro run: a self-contained HTML report whose items are all captioned,
opened in a real headless Chromium that renders every figure through the report's own JavaScript."""
from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import subprocess

import pytest

from tests.helpers.micro_run import MICRO, finished_micro_run, snakemake


pytestmark = pytest.mark.workflow
BROWSERS = ("chromium", "chromium-browser")

# Injected before </body> of a copy of the report: after the app has rendered, show every image result the
# way a click on it does (app.setView), wait for the <img> to decode, draw it on a canvas and record its size
# and the number of distinct pixel values; the outcome is written into the DOM for --dump-dom.
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
  const pre = document.createElement("pre");
  pre.id = "csfbench-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
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


def test_report_is_one_self_contained_html_file_with_every_item_captioned(report):
    html = report.read_text()
    assert html.lstrip().lower().startswith("<!doctype html>")
    # nothing is fetched from elsewhere: no script, stylesheet or image with a remote or relative source
    external = re.findall(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?!data:)[^\"]+\"", html)
    assert external == []
    results = _embedded(html, "results")
    names = {os.path.basename(path) for path in results}
    assert {"nc_demo10.csv", "proximity_demo10.csv"} <= names
    assert any(entry["mime_type"] == "image/png" for entry in results.values()), "no figure in the report"
    uncaptioned = [path for path, entry in results.items() if not entry.get("caption", "").strip()]
    assert uncaptioned == []
    for path, entry in results.items():
        assert entry["data_uri"].startswith("data:"), path  # embedded, not linked
    nc = next(entry for path, entry in results.items() if path.endswith("nc_demo10.csv"))
    assert "Neural-collapse metrics" in nc["caption"] and "demo10" in nc["caption"]
    # the paper's Figure 2 analogue (rule conover_heatmap) with its caption (report/figure_conover_heatmap.rst)
    heatmap = next(entry for path, entry in results.items() if path.endswith("conover_heatmap.png"))
    assert heatmap["mime_type"] == "image/png" and "Conover post-hoc p-values" in heatmap["caption"]
    assert "csfbench: confidence scoring functions" in html  # report/workflow.rst


def test_report_renders_every_figure_in_headless_chromium(report, tmp_path):
    browser = _browser()
    probed = tmp_path / "probed.html"
    head, body_end, tail = report.read_text().rpartition("</body>")  # the document's own (the JS holds others)
    probed.write_text(head + PROBE + body_end + tail)
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--virtual-time-budget=60000", "--dump-dom", probed.as_uri()],
                          capture_output=True, text=True, timeout=300)
    match = re.search(r'<pre id="csfbench-probe">(.*?)</pre>', proc.stdout, flags=re.S)
    assert match, f"the report's scripts did not finish in Chromium:\n{proc.stderr[-3000:]}"
    out = json.loads(html_lib.unescape(match.group(1)))
    assert out["app"], "the report's React app did not start"
    # the app rendered the workflow description (report/workflow.rst) and the result categories
    assert "csfbench: confidence scoring functions" in out["text"]
    assert "Figures" in out["text"] and "Tables" in out["text"]
    assert out["images"], "no figure was rendered"
    for path, image in out["images"].items():
        assert image is not None, f"{path}: the figure did not load in the report"
        assert image["width"] > 100 and image["height"] > 100, (path, image)
        assert image["colours"] > 2, f"{path}: the rendered figure is blank"
