"""Artifact manifest: two clean runs on CPU give identical manifests; `csfbench manifest verify` names
every modified or missing file; volatile provenance (creation time) does not change a content hash."""
import json
import shutil
import subprocess

import h5py
import numpy as np
import pandas as pd
import pytest
import torch

from csfbench.workflow import paths
from csfbench.workflow.manifest import build_manifest, file_digest

from tests.helpers.repo import venv_bin
from tests.helpers.workflow_runs import MODEL, SHARES_REFERENCE_RUN, SOURCE, snakemake

pytestmark = [pytest.mark.workflow, SHARES_REFERENCE_RUN]


def _csfbench(*args):
    return subprocess.run([venv_bin("csfbench"), "manifest", *map(str, args)], capture_output=True, text=True)


def test_two_clean_runs_give_identical_manifests(reference, tmp_path):
    ref, config = reference
    proc = snakemake("--cores", 2, "--configfile", config, workdir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-5000:]
    first, second = (build_manifest(root / "results", config) for root in (ref, tmp_path))
    assert first == second
    kinds = pd.Series({path: entry["hash"] for path, entry in first["files"].items()})
    folders = pd.Series([path.split("/")[0] for path in kinds.index]).value_counts().to_dict()
    # checkpoint + history, 5 feature files, 3 fits, 3 score and 3 metric files (one per fit group, covering
    # every scored set), results table, tables
    assert {k: folders[k] for k in ("models", "features", "csf", "scores", "metrics")} == {
        "models": 2, "features": 5, "csf": 3, "scores": 3, "metrics": 3}
    assert "results.parquet" in kinds and "tables/selected_configurations.csv" in kinds
    assert kinds[kinds.index.str.endswith(".h5")].eq("hdf5-content").all()
    assert kinds[f"models/{SOURCE}/{MODEL}/checkpoint.pt"] == "torch-tensors"
    prov = first["provenance"]
    assert len(prov["config_hash"]) == 64 and prov["git_commit"]
    assert all(prov["packages"][name] for name in ("torch", "numpy", "h5py", "pandas", "scipy", "csfbench"))
    assert prov["torch_cuda"] == torch.version.cuda


def test_verify_names_a_tampered_or_missing_file(reference, tmp_path):
    ref, config = reference
    results = tmp_path / "results"
    shutil.copytree(ref / "results", results)
    manifest = tmp_path / "manifest.json"
    written = _csfbench("write", "--results", results, "--config", config, "--output", manifest)
    assert written.returncode == 0, written.stderr
    assert _csfbench("verify", "--results", results, "--manifest", manifest).stdout.splitlines()[-1] \
        == f"{len(json.loads(manifest.read_text())['files'])} files checked: all match"

    features = results / f"features/{SOURCE}/{MODEL}/test.h5"
    with h5py.File(features, "r+") as fh:
        fh["logits"][3, 1] = np.nextafter(fh["logits"][3, 1], np.float32(np.inf))  # one ulp of one logit
    metrics = tmp_path / paths.metrics(SOURCE, MODEL, "none")  # the `none` group's metric rows of every set
    metrics.unlink()
    proc = _csfbench("verify", "--results", results, "--manifest", manifest)
    assert proc.returncode == 1
    assert f"modified: {features}" in proc.stdout and f"missing: {metrics}" in proc.stdout
    assert proc.stdout.count("modified:") == 1 and proc.stdout.count("missing:") == 1


def test_content_hash_ignores_creation_time_and_storage_layout(reference, tmp_path):
    ref, _ = reference
    original = ref / f"results/features/{SOURCE}/{MODEL}/val.h5"
    copy = tmp_path / "val.h5"
    with h5py.File(original, "r") as src, h5py.File(copy, "w") as dst:
        for key, value in src.attrs.items():
            dst.attrs[key] = value
        dst.attrs["created"] = "1999-01-01T00:00:00+00:00"

        def clone(name, obj):
            if isinstance(obj, h5py.Dataset):  # same values, no compression, no chunking
                dst.create_dataset(name, data=obj[()], dtype=obj.dtype)
        src.visititems(clone)
    assert copy.read_bytes() != original.read_bytes()
    assert file_digest(copy) == file_digest(original)
    with h5py.File(copy, "r+") as fh:
        fh.attrs["model"] = "another_model"  # provenance that identifies the content does count
    assert file_digest(copy) != file_digest(original)


def test_verify_reports_a_missing_manifest_clearly(tmp_path):
    (tmp_path / "results").mkdir()
    proc = _csfbench("verify", "--results", tmp_path / "results")
    assert proc.returncode == 2
    assert f"manifest not found: {tmp_path / 'results' / 'manifest.json'}" in proc.stderr
