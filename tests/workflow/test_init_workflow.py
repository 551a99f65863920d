"""A new user's first run: data in the official layouts -> `csfbench init` -> Snakemake in its own folder -> report.

The data folder holds CIFAR-10 batches, SVHN .mat files, an image folder, an OpenOOD imglist tree and a
Fashion-MNIST test split in IDX files, written by the fixture writers in the official formats.  The config
`csfbench init` writes is cut to a micro scale (one epoch, a tiny tuning budget, the unprojected fit group only,
search ranges for training splits of 60-200 rows), a torchvision ResNet-18 (a saved ``.pth``) is added with the default network-pass
detectors, and the run goes end to end with `--directory`; every OOD set must land in a ranking cell.  Then the
report is built with the same config and folder.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
from html.parser import HTMLParser

import pandas as pd
import pytest
import yaml

from csfbench.workflow.settings import load_config

from tests.helpers import format_fixtures as ff
from tests.helpers.micro_run import snakemake
from tests.helpers.repo import REPO, venv_bin

NAME = r"[a-z0-9][a-z0-9.-]*"
# what the introduction may name only when it ran: paradigm names, the ViT, and each optional stage's wording
PARADIGMS = ("confidnet", "devries", "dg", "ce", "random", "pretrained")
STAGE_WORDS = {"geometry": "neural-collapse", "proximity": "encoder-space distances", "shifts": "shift study",
               "projnorm": "ProjNorm", "conformal": "conformal evaluation", "analyses": "pair analyses",
               "network_csf": "run the network on images", "adversarial": "adversarial"}


class _Blocks(HTMLParser):
    """The text of the paragraphs and list items of an HTML fragment, each list item under the paragraph that
    opens its list (``{"Sources": [...], "Models": [...], "Stages": [...]}``, keyed by that paragraph's first
    word)."""

    def __init__(self):
        super().__init__()
        self.lists: dict[str, list[str]] = {}
        self.heading, self.text, self.depth = "", [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "li":
            self.depth += 1
            self.text = []
        elif tag == "p" and not self.depth:
            self.text = []

    def handle_endtag(self, tag):
        joined = " ".join("".join(self.text).split())
        if tag == "li":
            self.depth -= 1
            self.lists.setdefault(self.heading, []).append(joined)
        elif tag == "p" and not self.depth and joined:
            self.heading = re.match(r"\w+", joined).group()

    def handle_data(self, data):
        self.text.append(data)


def _intro(report_html: str) -> tuple[str, dict[str, list[str]]]:
    """The report's introduction (Snakemake stores the rendered HTML as a JSON string) as text and as its
    bullet lists by heading."""
    raw = re.search(r'var workflow_desc = ("(?:[^"\\]|\\.)*");', report_html).group(1)
    html = json.loads(raw)
    assert "mailto:" not in html  # docutils makes "FPR@95" an e-mail link unless the @ is escaped
    blocks = _Blocks()
    blocks.feed(html)
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    return text, blocks.lists


def _render_intro(config: dict) -> tuple[str, dict[str, list[str]]]:
    """report/workflow.rst rendered as ``snakemake --report`` renders it (snakemake.report: a jinja2 Environment
    with trim_blocks and lstrip_blocks, then docutils' HTML writer), for a config that is not run."""
    from docutils.core import publish_parts
    from jinja2 import Environment

    snakemake_ = type("Snakemake", (), {"config": config})
    rst = Environment(trim_blocks=True, lstrip_blocks=True).from_string(
        (REPO / "report/workflow.rst").read_text()).render(snakemake=snakemake_)
    html = publish_parts(rst, writer="html")["html_body"]
    return _intro(f"var workflow_desc = {json.dumps(html)};")


def _sources(items: list[str]) -> dict[str, dict]:
    """Source bullets -> {source: {dataset, n_classes, val_size, ood: {set: shift type}}}."""
    out = {}
    for item in items:
        head = re.fullmatch(rf"({NAME}) \(dataset ({NAME}), (\d+) classes, (\d+) validation images\):(.*)", item)
        assert head, item
        name, dataset, n_classes, val_size, rest = head.groups()
        pattern = rf"({NAME}) \((semantic|covariate|adversarial)(?:, (?:near|mid|far))?\)"
        sets = re.findall(pattern, rest)
        assert not re.sub(pattern, "", rest).replace(",", "").strip(), rest  # nothing else in the bullet
        out[name] = {"dataset": dataset, "n_classes": int(n_classes), "val_size": int(val_size), "ood": dict(sets)}
    return out


def _save_resnet18(path) -> None:
    """A torchvision ResNet-18 state dict for 10 classes (random weights) saved as a user saves theirs
    (docs/pretrained.md, "Saving weights here")."""
    from csfbench.torch_compat import ensure_torchvision

    ensure_torchvision()
    import torch
    import torchvision

    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=10).state_dict(), path)


def _with_resnet18(config: dict, weights) -> dict:
    """``config`` with a torchvision ResNet-18 evaluated (paradigm ``pretrained``) on the CIFAR-10 source at
    32 pixels, under the default network-pass detectors (ODIN-IP pinned at one point of its grid, GRAM's powers
    cut to 1..2)."""
    config["backbones"]["resnet18"] = {"library": "torchvision", "arch": {"name": "resnet18"},
                                       "paradigms": ["pretrained"], "runs": [1], "sources": ["cifar10"],
                                       "weights": {"file": str(weights)}}
    config["sources"]["cifar10"]["image_size"]["resnet18"] = 32
    network = config.setdefault("network_csf", {})
    network["odin"] = {"temperatures": [1000], "noise": [0.0014]}
    network["gram"] = {"powers": [1, 2]}  # GRAM's cost grows with its powers (the schema's default: 1..10)
    return config


def _micro(config: dict) -> dict:
    """The starter config at a micro scale: only sizes, epochs, search budgets and the fit groups change."""
    config["training"]["vgg13"]["common"]["batch_size"] = 64
    config["training"]["vgg13"]["devries"]["epochs"] = 1
    config["features"]["batch_size"] = 128
    config["csf"]["tuning"] = {"init_points": 2, "n_iter": 1, "budgets": {}}
    config["csf"]["groups"] = ["none"]  # the projections are run by the micro workflow tests: a third of the jobs
    # the micro training splits hold 60-200 rows: smaller KNN and Nyström search ranges
    config["csf"]["search_space"] = {"KPCA RecError": {"n_landmarks": [50, 100]}, "KNN": {"k": [1, 20]}}
    return config


def _check_intro_names_the_run(report_html: str, ran: dict, table: pd.DataFrame) -> None:
    """The report's introduction names exactly the sources, evaluation sets (with shift types), models and stages
    of the run whose config is ``ran`` (a starter config, one VGG-13 and an added torchvision ResNet-18, no
    optional stage) and whose metric rows are ``table``, and nothing else."""
    text, lists = _intro(report_html)
    assert set(lists) == {"Sources", "Models", "Pretrained", "Stages"}, lists
    assert _sources(lists["Sources"]) == {
        name: {"dataset": src["dataset"], "n_classes": src["n_classes"], "val_size": src["val_size"],
               "ood": {n: e["shift_type"] for n, e in src["ood"].items()}} for name, src in ran["sources"].items()}
    # the sets named are those with metric rows, under the same shift types
    shift = table.drop_duplicates(["source", "dataset"]).set_index(["source", "dataset"])["shift_type"]
    assert {(s, d, t) for (s, d), t in shift.items() if d not in ("val", "test")} == \
        {(s, d, t) for s, src in _sources(lists["Sources"]).items() for d, t in src["ood"].items()}
    vgg_model, resnet_model = lists["Models"]
    vgg = ran["backbones"]["vgg13"]
    assert vgg_model == (f"vgg13: VGG-13 trained from scratch under {', '.join(vgg['paradigms'])}, dropout "
                         f"{'/'.join(map(str, vgg['dropout']))}, runs {', '.join(map(str, vgg['runs']))}")
    assert resnet_model.startswith("resnet18 (sources cifar10): the torchvision classifier resnet18 evaluated "
                                   "without training (pretrained; runs 1)")
    # the weights file the ResNet-18 loaded, with the sha256 the run recorded
    (weights,) = lists["Pretrained"]
    file = ran["backbones"]["resnet18"]["weights"]["file"]
    digest = hashlib.sha256(open(file, "rb").read()).hexdigest()
    assert weights == f"backbones/resnet18/weights/file: {file}, sha256 {digest}", weights
    models = table[["backbone", "paradigm", "dropout", "run"]].drop_duplicates().itertuples(index=False)
    assert {(b, p, int(d), int(r)) for b, p, d, r in models} == \
        {("vgg13", p, d, r) for p in vgg["paradigms"] for d in vgg["dropout"] for r in vgg["runs"]} | \
        {("resnet18", "pretrained", 0, 1)}
    stages = lists["Stages"]
    assert len(stages) == 3 and stages[0].startswith("logits and penultimate features") and \
        f"fit groups {', '.join(ran['csf']['groups'])}," in stages[0]
    assert stages[1] == ("the detectors that run the network on images: "
                         f"{', '.join(ran['network_csf']['methods'])};")
    assert set(ran["network_csf"]["methods"]) <= set(table["csf"].unique())
    assert stages[2].startswith("metrics (AURC, AUGRC")
    # nothing that did not run: no other paradigm, no ViT, no optional stage (the source bullets hold only their sets)
    for paradigm in set(PARADIGMS) - set(vgg["paradigms"]) - {"pretrained"}:
        assert not re.search(rf"\b{paradigm}\b", text), paradigm
    for stage in ("geometry", "proximity", "shifts", "projnorm", "conformal", "analyses", "adversarial"):
        assert STAGE_WORDS[stage] not in text, stage
    assert "ViT" not in text and "demo" not in text


@pytest.mark.workflow
def test_init_config_runs_end_to_end_in_its_own_folder(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    ff.write_cifar10(data, n_per_file=40)
    ff.write_svhn(data, n=60)
    ff.write_image_folder(data / "my_photos")
    ff.write_openood(data)
    ff.write_idx(data, name="fashion-mnist")  # its test split only: init proposes it as an evaluation set
    for train_file in (data / "fashion-mnist").glob("train-*"):
        train_file.unlink()
    starter, run = tmp_path / "my.yaml", tmp_path / "run"
    proc = subprocess.run([venv_bin("csfbench"), "init", str(data), "--output", str(starter), "--results", str(run)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {starter}: valid (2 sources, 2 models" in proc.stdout

    weights = tmp_path / "weights" / "resnet18.pth"
    weights.parent.mkdir()
    _save_resnet18(weights)
    config = _with_resnet18(_micro(yaml.safe_load(starter.read_text())), weights)
    micro = tmp_path / "micro.yaml"
    micro.write_text(yaml.safe_dump(config, sort_keys=False))
    expected = {source: {"val", "test", *cfg["ood"]} for source, cfg in load_config(micro)["sources"].items()}
    assert expected == {"cifar10": {"val", "test", "svhn", "my-photos", "tin", "imagenetood", "fashion-mnist"},
                        "svhn": {"val", "test", "cifar10", "my-photos", "fashion-mnist"}}

    # the starter's default threads (4 for training, extraction and the network passes, 2 for the fits) would take
    # both cores for each of these tiny jobs: one thread each lets two run at once
    one_thread = [f"{rule}=1" for rule in ("train", "extract_features", "extract_pretrained_features", "fit_csf",
                                           "fit_network_csf", "network_csf")]
    proc = snakemake("--cores", 2, "--set-threads", *one_thread, "--configfile", micro, workdir=run, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    table = pd.read_parquet(run / "results/results.parquet")
    assert {s: set(d) for s, d in table.groupby("source")["dataset"].unique().items()} == expected
    shift = table.drop_duplicates(["source", "dataset"]).set_index(["source", "dataset"])["shift_type"]
    assert shift[("cifar10", "tin")] == "semantic" and shift[("svhn", "cifar10")] == "semantic"
    # the ResNet-18 ran the default network-pass detectors on every set of its source
    network = table[(table["backbone"] == "resnet18") & table["csf"].isin(["ODIN-IP", "GRAM", "RankFeat"])]
    assert set(network["csf"]) == {"ODIN-IP", "GRAM", "RankFeat"}
    assert set(network["dataset"]) == expected["cifar10"] and network["value"].notna().all()
    # every OOD set is ranked (init writes no regime: the `semantic` cells) and the coverage table says so
    coverage = pd.read_csv(run / "results/tables/rankings/ranked_sets.csv")
    ood = coverage[coverage["dataset"].isin(set().union(*expected.values()) - {"val", "test"})]
    assert {(s, d) for s, d in ood[["source", "dataset"]].itertuples(index=False)} == \
        {(s, d) for s, sets in expected.items() for d in sets - {"val", "test"}}
    ranked = ood.groupby(["source", "dataset"])["ranked"].any()
    assert ranked.all(), coverage[~coverage["ranked"]].to_string()
    assert set(ood.loc[ood["shift_type"] == "semantic", "regime"]) == {"semantic"}
    rankings = pd.read_csv(run / "results/tables/rankings/summary.csv")
    semantic = rankings[rankings["regime"] == "semantic"]
    assert (semantic["status"] == "ok").any() and set(semantic["backbone"]) == {"vgg13", "resnet18"}

    # the report of this run: the same config and folder (its path is relative to --directory)
    proc = snakemake("--configfile", micro, "--report", "results/report.html", workdir=run, timeout=300)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert (run / "results/report.html").stat().st_size > 10_000
    assert "ranked_sets.html" in (run / "results/report.html").read_text()  # the report lists what was ranked
    # its introduction names exactly what ran (built from the config), and nothing of the demo's
    _check_intro_names_the_run((run / "results/report.html").read_text(), load_config(micro), table)
    # nothing of this run lands in the checkout's results/ or in the data folder
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == ["results"]
    assert not (REPO / "results" / "models" / "cifar10").exists()
    assert not any(p.suffix in (".h5", ".json", ".parquet") for p in data.rglob("*"))


def test_the_introduction_names_the_optional_stages_a_config_runs():
    """The stage list of the introduction follows the config: the pair analyses (with the distance-controlled
    AUROC where the proximity stage embeds the sets, the random-network check where random networks exist) and
    every other optional stage appear exactly when configured (rendered without running: fast)."""
    demo = load_config(REPO / "config/config.yaml")
    text, lists = _render_intro(demo)
    (pairs,) = [item for item in lists["Stages"] if item.startswith("pair analyses")]
    assert f"({len(demo['analyses']['csfs'])} CSFs)" in pairs
    assert "random-network check" in pairs and "distance-controlled AUROC" in pairs
    for stage in ("geometry", "proximity", "shifts", "projnorm", "conformal", "network_csf", "adversarial"):
        assert STAGE_WORDS[stage] in text, stage
    assert _sources(lists["Sources"]).keys() == demo["sources"].keys()

    for stage in ("proximity", "geometry", "shifts", "projnorm"):
        del demo[stage]
    for backbone in demo["backbones"].values():
        if "random" in backbone["paradigms"]:
            backbone["paradigms"].remove("random")
    text, lists = _render_intro(demo)
    (pairs,) = [item for item in lists["Stages"] if item.startswith("pair analyses")]
    assert "random-network check" not in pairs and "distance-controlled AUROC" not in pairs
    for stage in ("geometry", "proximity", "shifts", "projnorm", "adversarial"):
        assert STAGE_WORDS[stage] not in text, stage

    for switched_off in ({"enabled": False}, None):
        config = load_config(REPO / "config/config.yaml")
        if switched_off is None:
            config["csf"]["groups"] = ["global"]  # the analyses read fit group none: no jobs without it
        else:
            config["analyses"].update(switched_off)
        text, lists = _render_intro(config)
        assert STAGE_WORDS["analyses"] not in text
