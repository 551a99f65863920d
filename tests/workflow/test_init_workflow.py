"""A new user's first run: data in the official layouts -> `csfbench init` -> Snakemake in its own folder -> report.

The data folder holds CIFAR-10 batches, SVHN .mat files, an image folder and an OpenOOD imglist tree, written
by the fixture writers in the official formats.  The config `csfbench init` writes is cut to a micro scale
(one epoch, a tiny tuning budget, search ranges for training splits of 60-200 rows) and run end to end with
`--directory`, then the report is built with the same config and folder.  About 80 s on 2 cores.
"""
from __future__ import annotations

import re
import subprocess

import pandas as pd
import pytest
import yaml

from csfbench.settings import load_config

from tests.helpers import format_fixtures as ff
from tests.helpers.micro_run import snakemake
from tests.helpers.repo import REPO, venv_bin

pytestmark = pytest.mark.workflow


def _micro(config: dict) -> dict:
    """The starter config at a micro scale: only sizes, epochs and search budgets change."""
    config["training"]["vgg13"]["common"]["batch_size"] = 64
    config["training"]["vgg13"]["devries"]["epochs"] = 1
    config["features"]["batch_size"] = 128
    config["csf"]["tuning"] = {"init_points": 2, "n_iter": 1, "budgets": {}}
    # the micro training splits hold 60-200 rows: smaller KNN and Nyström search ranges
    config["csf"]["search_space"] = {"KPCA RecError": {"n_landmarks": [50, 100]}, "KNN": {"k": [1, 20]}}
    return config


def test_init_config_runs_end_to_end_in_its_own_folder(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    ff.write_cifar10(data, n_per_file=40)
    ff.write_svhn(data, n=60)
    ff.write_image_folder(data / "my_photos")
    ff.write_openood(data)
    starter, run = tmp_path / "my.yaml", tmp_path / "run"
    proc = subprocess.run([venv_bin("csfbench"), "init", str(data), "--output", str(starter), "--results", str(run)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {starter}: valid (2 sources, 2 models" in proc.stdout

    config = _micro(yaml.safe_load(starter.read_text()))
    micro = tmp_path / "micro.yaml"
    micro.write_text(yaml.safe_dump(config, sort_keys=False))
    expected = {source: {"val", "test", *cfg["ood"]} for source, cfg in load_config(micro)["sources"].items()}
    assert expected == {"cifar10": {"val", "test", "svhn", "my-photos", "tin", "imagenetood"},
                        "svhn": {"val", "test", "cifar10", "my-photos"}}

    proc = snakemake("--cores", 2, "--configfile", micro, workdir=run, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    table = pd.read_parquet(run / "results/results.parquet")
    assert {s: set(d) for s, d in table.groupby("source")["dataset"].unique().items()} == expected
    shift = table.drop_duplicates(["source", "dataset"]).set_index(["source", "dataset"])["shift_type"]
    assert shift[("cifar10", "tin")] == "semantic" and shift[("svhn", "cifar10")] == "semantic"

    # the report of this run: the same config and folder (its path is relative to --directory)
    proc = snakemake("--configfile", micro, "--report", "results/report.html", workdir=run, timeout=300)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert (run / "results/report.html").stat().st_size > 10_000
    # its introduction describes this run (built from the config), not the demo's
    intro = re.search(r'var workflow_desc = "(.*?)";', (run / "results/report.html").read_text(), re.S).group(1)
    assert "cifar10" in intro and "svhn" in intro and "my-photos (semantic" in intro
    assert "VGG-13 trained from scratch under devries" in intro
    for absent in ("ViT", "conformal", "ProjNorm", "confidnet", "neural-collapse"):
        assert absent not in intro, absent
    # nothing of this run lands in the checkout's results/ or in the data folder
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == ["results"]
    assert not (REPO / "results" / "models" / "cifar10").exists()
    assert not any(p.suffix in (".h5", ".json", ".parquet") for p in data.rglob("*"))
