"""The pretrained weights files a run's models load, with their sha256, in the manifest's provenance and in the
report's run description (report/workflow.rst), both computed by csfbench.provenance.

Probe (before): a config's ``backbones/<name>/weights/file`` and ``backbones/vit/pretrained/file`` appeared
nowhere in the manifest or the report; replacing the weights file between two runs left no trace.
"""
from __future__ import annotations

import copy
import hashlib
import json

import jinja2
import pytest
import torch
import yaml
from docutils.core import publish_parts

from csfbench import cli
from csfbench.errors import CsfbenchError
from csfbench.provenance import report_weights, weights_files, weights_provenance, write_weights_record
from csfbench.workflow import paths
from csfbench.workflow.manifest import write_manifest
from csfbench.workflow.settings import load_config, load_yaml
from tests.helpers.micro_run import snakemake
from tests.helpers.repo import REPO
from tests.helpers.workflow_runs import core_config

TINY_VIT = {"name": "vit_tiny_patch16_224", "patch_size": 8, "depth": 1, "img_size": 32}
DEMO_WEIGHTS = "results/pretrained/vit_demo.safetensors"


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _library(weights: str, paradigms=("pretrained",)) -> dict:
    return {"library": "timm", "arch": dict(TINY_VIT), "paradigms": list(paradigms), "runs": [1],
            "eval": {"geometry": "stretch", "interpolation": "bilinear", "crop_pct": 1.0,
                     "normalize": {"mean": [0.5] * 3, "std": [0.25] * 3}},
            "weights": {"file": weights}}


def test_the_weights_files_are_those_the_models_load():
    demo = load_yaml(REPO / "config/config.yaml")  # the ViT and the timm classifier both load the pretraining's file
    assert weights_files(demo) == {"backbones/vit/pretrained/file": DEMO_WEIGHTS,
                                   "backbones/vittiny/weights/file": DEMO_WEIGHTS}
    demo["backbones"]["vittiny"]["paradigms"] = ["random"]  # a random initialisation loads no file
    del demo["backbones"]["vit"]
    assert weights_files(demo) == {}


@pytest.fixture
def run(tmp_path):
    """A run folder whose config names a weights file relative to it and one by an absolute path."""
    folder = tmp_path / "run"
    (folder / "results/models").mkdir(parents=True)
    (folder / "weights").mkdir()
    torch.save({"w": torch.arange(3.0)}, folder / "weights/tiny.pth")
    absolute = tmp_path / "elsewhere.pth"
    torch.save({"w": torch.ones(2)}, absolute)
    (folder / "results/models/history.csv").write_text("epoch,loss\n1,0.5\n")
    config = tmp_path / "my.yaml"
    config.write_text(yaml.safe_dump({"backbones": {"tiny": _library("weights/tiny.pth"),
                                                    "other": _library(str(absolute), ["pretrained", "random"])}}))
    return folder, config, absolute


def test_the_manifest_records_every_weights_file_and_verify_names_a_changed_one(run, capsys):
    folder, config, absolute = run
    manifest = write_manifest(folder / "results", config, folder / "results/manifest.json")
    assert manifest["provenance"]["weights"] == {
        "backbones/tiny/weights/file": {"file": "weights/tiny.pth", "sha256": _sha256(folder / "weights/tiny.pth")},
        "backbones/other/weights/file": {"file": str(absolute), "sha256": _sha256(absolute)}}
    old = _sha256(folder / "weights/tiny.pth")
    torch.save({"w": torch.arange(4.0)}, folder / "weights/tiny.pth")
    absolute.unlink()
    code = cli.main(["manifest", "verify", "--results", str(folder / "results"), "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 0  # the result files match: provenance differences are reported, not failed on
    assert (f"provenance differs: weights backbones/tiny/weights/file: manifest weights/tiny.pth sha256 {old}, now "
            f"weights/tiny.pth sha256 {_sha256(folder / 'weights/tiny.pth')}") in out.splitlines()
    assert (f"provenance differs: weights backbones/other/weights/file: manifest {absolute} sha256 "
            f"{manifest['provenance']['weights']['backbones/other/weights/file']['sha256']}, now {absolute} "
            "(not found)") in out.splitlines()


def test_the_run_record_refuses_a_missing_weights_file(run, monkeypatch):
    folder, config, absolute = run
    monkeypatch.chdir(folder)  # the workflow's working directory
    absolute.unlink()
    with pytest.raises(CsfbenchError, match=f"^weights file\\(s\\) not found: {absolute} "
                                            r"\(backbones/other/weights/file\); the models were built from them"):
        write_weights_record(load_yaml(config), "results/models/weights.json")
    assert weights_provenance(load_yaml(config), folder)["backbones/other/weights/file"]["sha256"] is None


def _run_description(config: dict) -> str:
    """report/workflow.rst rendered as Snakemake renders it (jinja2 with these options, then docutils); a docutils
    warning (a malformed list, say) is an error here."""
    class Snakemake:
        pass

    Snakemake.config = config
    text = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(
        (REPO / "report/workflow.rst").read_text()).render(snakemake=Snakemake, categories={}, files=[])
    return publish_parts(text, writer="html", settings_overrides={"halt_level": 2, "report_level": 2})["body"]


def test_the_run_description_shows_recorded_unrecorded_and_no_weights(tmp_path):
    config = load_config(REPO / "config/config.yaml")
    record = tmp_path / "weights.json"
    config["weights_provenance"] = report_weights(config, record)  # before the run: nothing recorded yet
    html = _run_description(config)
    assert "Pretrained weights" in html and html.count("not recorded yet") == 2
    record.write_text(json.dumps({"backbones/vit/pretrained/file": {"file": DEMO_WEIGHTS, "sha256": "ab" * 32},
                                  "backbones/vittiny/weights/file": {"file": "another/file", "sha256": "cd" * 32}}))
    config["weights_provenance"] = report_weights(config, record)
    html = _run_description(config)
    assert "ab" * 32 in html and "cd" * 32 not in html  # a record of another file is not this file's
    del config["backbones"]["vit"], config["backbones"]["vittiny"]
    config["weights_provenance"] = report_weights(config, record)
    assert "Pretrained weights" not in _run_description(config)


def test_an_unreadable_record_is_named(tmp_path):
    record = tmp_path / "weights.json"
    record.write_text("{")
    with pytest.raises(CsfbenchError, match=f"^{record}: not a readable weights record"):
        report_weights(load_yaml(REPO / "config/config.yaml"), record)


@pytest.mark.workflow
def test_a_run_records_the_weights_its_model_loaded_and_the_report_shows_them(tmp_path):
    from csfbench.models.pretrained import create_network

    torch.manual_seed(0)
    weights = tmp_path / "tiny.pth"
    net = create_network("timm", TINY_VIT["name"], num_classes=10, **{k: v for k, v in TINY_VIT.items() if k != "name"})
    torch.save(net.state_dict(), weights)
    config = core_config()  # demo10 (10 classes) and its two OOD sets
    for source in config["sources"].values():
        source["image_size"] = {"tiny": 32}
    config["backbones"], config["training"] = {"tiny": _library(str(weights))}, {}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(copy.deepcopy(config)))
    work = tmp_path / "work"
    target = paths.weights_record()
    proc = snakemake(target, "--cores", 2, "--configfile", path, workdir=work)  # demo data, index, the model, record
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((work / target).read_text()) == {
        "backbones/tiny/weights/file": {"file": str(weights), "sha256": _sha256(weights)}}
    proc = snakemake(target, "--report", "results/report.html", "--configfile", path, workdir=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (work / "results/report.html").read_text()
    assert _sha256(weights) in html and str(weights) in html
