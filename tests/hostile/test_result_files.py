"""Tampered, truncated and malicious result files: a csfbench error naming the file and the problem,
never a traceback (manifest verify lists every such file; the summary names the unreadable ones)."""
from __future__ import annotations

import dataclasses
import os
import pickle
import re

import numpy as np
import pandas as pd
import pytest
import torch

from csfbench import cli
from csfbench.csf.inputs import load_splits
from csfbench.errors import CheckpointError, FeatureFileError
from csfbench.features.extract import feature_attrs
from csfbench.features.store import FeatureWriter, run_attrs, validate_feature_file
from csfbench.workflow.manifest import write_manifest
from csfbench.models import load_checkpoint

from tests.helpers.training import tiny_spec

N = 12
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
RANDOM_BYTES = np.random.default_rng(0).bytes(4096)
TORCH_ADVICE = "weights_only=False"


class _Payload:
    """An arbitrary Python object: not a tensor, not a plain container."""


class _Exploit:
    """Unpickling it runs a shell command that creates ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return tiny_spec(tmp_path_factory.mktemp("blobs"))  # 4 classes, Deep Gamblers (5 outputs), 2 MC passes


def _rows(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    rows = {"logits": rng.normal(size=(N, 5)).astype("f4"), "features": rng.normal(size=(N, 4)).astype("f4"),
            "labels": rng.integers(0, 4, N), "sample_id": np.array([f"img/{i}.png" for i in range(N)], object),
            "confidence": rng.random(N).astype("f4"), "mcd/logits": rng.normal(size=(N, 2, 5)).astype("f4"),
            "mcd/features_mean": rng.normal(size=(N, 4)).astype("f4"),
            "mcd/confidence": rng.random((N, 2)).astype("f4")}
    rows["pred"] = rows["logits"][:, :4].argmax(1)
    rows["correct"] = rows["pred"] == rows["labels"]
    return rows


def write_features(path, spec, rows=None):
    """A feature file of ``spec`` (the test set) as the extraction stage writes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    attrs = feature_attrs(spec, "test", "test", "id", feature_dim=4)
    with FeatureWriter(path, N, n_outputs=5, feature_dim=4, mcd_samples=2, has_confidence=True, attrs=attrs) as w:
        w.write_batch(_rows() if rows is None else rows)
    return path


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# ---------------------------------------------------------------------------------------------
# manifest verify / write
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def results(tmp_path, spec):
    """A results folder with one file of each hashed kind and its manifest (results/manifest.json)."""
    root = tmp_path / "results"
    model = root / "models" / spec.source / spec.model
    model.mkdir(parents=True)
    torch.save({"weight": torch.arange(6.0).reshape(2, 3), "bias": torch.zeros(2)}, model / "checkpoint.pt")
    pd.DataFrame({"epoch": [1, 2], "val_acc": [0.5, 0.75], "seconds": [1.0, 2.0]}).to_csv(model / "history.csv",
                                                                                          index=False)
    write_features(root / "features" / spec.source / spec.model / "test.h5", spec)
    metrics = root / "metrics" / spec.source / spec.model / "none.parquet"
    metrics.parent.mkdir(parents=True)
    pd.DataFrame({"csf": ["MSR", "MLS"], "value": [0.1, 0.2]}).to_parquet(metrics, index=False)
    config = tmp_path / "config.yaml"
    config.write_text("seed: 0\n")
    write_manifest(root, config, root / "manifest.json")
    return root, config


def _files(root, spec):
    model = f"{spec.source}/{spec.model}"
    return {"pt": root / f"models/{model}/checkpoint.pt", "csv": root / f"models/{model}/history.csv",
            "h5": root / f"features/{model}/test.h5", "parquet": root / f"metrics/{model}/none.parquet"}


def test_verify_lists_every_tampered_file_and_checks_the_rest(results, spec, capsys):
    root, _ = results
    files = _files(root, spec)
    files["pt"].write_bytes(b"junk" * 100)
    truncate(files["h5"])
    files["parquet"].write_bytes(b"not a parquet file")
    files["csv"].write_text(files["csv"].read_text().replace("0.75", "0.76"))
    code, out, _ = run_cli(capsys, "manifest", "verify", "--results", root)
    assert code == 1
    assert f"unreadable: {files['pt']} (not a readable checkpoint" in out
    assert f"unreadable: {files['h5']} (cannot read it as hdf5-content: OSError: " in out
    assert "truncated file" in out
    assert f"unreadable: {files['parquet']} (cannot read it as table: " in out
    assert f"modified: {files['csv']}" in out
    assert out.splitlines()[-1] == "4 files checked: 4 differ"


@pytest.mark.parametrize("tamper, problem", [
    pytest.param(lambda p: p.write_bytes(RANDOM_BYTES), "not a (readable|weights-only) checkpoint", id="random-bytes"),
    pytest.param(lambda p: p.write_bytes(pickle.dumps({1, 2})), "not a weights-only checkpoint", id="pickled-set",
                 marks=pytest.mark.filterwarnings("ignore:Detected pickle protocol")),
    pytest.param(lambda p: torch.save({"weight": torch.ones(2), "extra": _Payload()}, p),
                 r"not a weights-only checkpoint \(refused: .*_Payload was not an allowed global by default[.]\)\)$",
                 id="custom-object"),
    pytest.param(lambda p: torch.save({"weight": torch.ones(2), "extra": {1, 2}}, p),
                 "entry 'extra' is a set, expected a tensor", id="non-tensor-entry"),
])
def test_verify_names_a_checkpoint_that_is_not_a_weights_only_state_dict(results, spec, capsys, tamper, problem):
    root, _ = results
    checkpoint = _files(root, spec)["pt"]
    tamper(checkpoint)
    code, out, _ = run_cli(capsys, "manifest", "verify", "--results", root)
    assert code == 1
    line, = (line for line in out.splitlines() if line.startswith("unreadable:"))
    assert line.startswith(f"unreadable: {checkpoint} (")
    assert re.search(problem, line), line
    assert TORCH_ADVICE not in out
    assert out.splitlines()[-1] == "4 files checked: 1 differ"


def test_write_manifest_of_an_unreadable_file_is_an_error_naming_it(results, spec, capsys):
    root, config = results
    h5 = _files(root, spec)["h5"]
    truncate(h5)
    code, _, err = run_cli(capsys, "manifest", "write", "--results", root, "--config", config)
    assert code == 2
    assert err.startswith(f"csfbench: error: {h5}: cannot read it as hdf5-content: OSError: ")


# ---------------------------------------------------------------------------------------------
# inspect, summary and scoring of unreadable feature files
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", [
    lambda p: p.write_text("logits,labels\n1,2\n"),
    truncate,
    lambda p: p.write_bytes(HDF5_SIGNATURE + RANDOM_BYTES),
], ids=["not-hdf5", "truncated", "corrupt"])
def test_inspect_names_an_unreadable_feature_file(tmp_path, spec, capsys, damage):
    path = write_features(tmp_path / "test.h5", spec)
    assert run_cli(capsys, "inspect", path)[0] == 0
    damage(path)
    code, _, err = run_cli(capsys, "inspect", path)
    assert code == 2
    assert err.startswith(f"csfbench: error: {path}: not a readable HDF5 feature file (")


def test_summary_names_unreadable_files_and_summarises_the_rest(tmp_path, spec, capsys):
    root = tmp_path / "results"
    first, second = "vgg13_dg_do1_rew2.2_run1", "vgg13_dg_do1_rew2.2_run2"
    for model in (first, second):
        (root / "models" / "blobs" / model).mkdir(parents=True)
        write_features(root / "features" / "blobs" / model / "test.h5", spec)
    no_val_acc = root / "models" / "blobs" / first / "history.csv"
    no_val_acc.write_text("epoch,loss\n1,0.9\n")
    (root / "models" / "blobs" / second / "history.csv").write_text("epoch,val_acc\n1,0.5\n2,0.625\n")
    truncated = root / "features" / "blobs" / second / "test.h5"
    truncate(truncated)
    code, out, _ = run_cli(capsys, "summary", "--results", root)
    assert code == 1
    assert "2 models, 2 feature files" in out and "0.625" in out
    assert f"unreadable: {no_val_acc}: expected a 'val_acc' column and at least one epoch, found columns " \
           "['epoch', 'loss']" in out
    assert f"unreadable: {truncated}: not a readable HDF5 feature file (OSError: " in out


def test_scoring_a_truncated_feature_file_names_it(tmp_path, spec):
    path = write_features(tmp_path / "test.h5", spec)
    truncate(path)
    with pytest.raises(FeatureFileError, match=f"^{re.escape(str(path))}: not a readable HDF5 .*truncated file"):
        load_splits(path, ("det", "mcd"), run_attrs(spec))


# ---------------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------------

def test_a_malicious_checkpoint_is_refused_and_never_runs(tmp_path, spec):
    marker = tmp_path / "MARKER"
    path = tmp_path / "checkpoint.pt"
    torch.save(_Exploit(marker), path)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(spec, path)
    message = str(caught.value)
    assert message.startswith(f"{path}: not a weights-only checkpoint (refused: ") and "system" in message
    assert TORCH_ADVICE not in message
    assert not marker.exists()
    torch.load(path, weights_only=False)  # the payload is live: an unsafe load runs it
    assert marker.exists()


@pytest.mark.parametrize("write, problem", [
    (lambda p: p.write_bytes(b"junk" * 100), "not a readable checkpoint"),
    (lambda p: torch.save({"weight": torch.ones(2)}, p), "not a checkpoint of model vgg13_dg_do1_rew2.2_run1"),
], ids=["junk", "another-model"])
def test_a_checkpoint_that_does_not_load_names_the_file(tmp_path, spec, write, problem):
    path = tmp_path / "checkpoint.pt"
    write(path)
    with pytest.raises(CheckpointError, match=f"^{re.escape(str(path))}: {problem}"):
        load_checkpoint(spec, path)


# ---------------------------------------------------------------------------------------------
# the feature-file contract: confidences, label range, the run that wrote it
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, index", [("confidence", 3), ("mcd/confidence", (3, 1))])
def test_nan_in_a_confidence_is_rejected(tmp_path, spec, capsys, name, index):
    rows = _rows()
    rows[name][index] = np.nan
    path = write_features(tmp_path / "test.h5", spec, rows)
    message = f"{path}: dataset '{name}': expected finite values, found 1 NaN/Inf"
    with pytest.raises(FeatureFileError, match=f"^{re.escape(message)}$"):
        validate_feature_file(path)
    assert run_cli(capsys, "inspect", path) == (2, "", f"csfbench: error: {message}\n")


def test_a_label_outside_the_classes_is_rejected_and_named(tmp_path, spec, capsys):
    rows = _rows()
    rows["labels"][5] = 7
    path = write_features(tmp_path / "test.h5", spec, rows)
    code, _, err = run_cli(capsys, "inspect", path)
    assert code == 2
    assert f"{path}: dataset 'labels': expected values in [-1, 4) (-1: unlabelled), found 1 outside that range: [7]" \
        in err


def test_unlabelled_samples_are_valid(tmp_path, spec):
    rows = _rows()
    rows["labels"][:4] = -1
    rows["correct"][:4] = False
    validate_feature_file(write_features(tmp_path / "test.h5", spec, rows), run_attrs(spec))


@pytest.mark.parametrize("attr, change", [("config_hash", {"val_size": 63}), ("seed", {"seed": 99})])
def test_a_feature_file_of_another_run_is_rejected(tmp_path, spec, attr, change):
    other = dataclasses.replace(spec, **change)
    path = write_features(tmp_path / "test.h5", other)
    expected, found = run_attrs(spec)[attr], run_attrs(other)[attr]
    assert expected != found
    message = f"{path}: attribute '{attr}': expected '{expected}', found '{found}'"
    with pytest.raises(FeatureFileError, match=f"^{re.escape(message)}$"):
        load_splits(path, ("det",), run_attrs(spec))
