import dataclasses
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pandas as pd
import pytest
import torch

from csfbench.features.store import read_features, validate_feature_file
from csfbench.specs import EvalSet
from csfbench.stages.features import extract
from csfbench.stages.train import train
from tests.helpers.training import tiny_spec, with_params, write_blobs

TRAIN_SCRIPT = """
import sys, torch
torch.set_num_threads(1)
from csfbench.specs import ModelSpec
from csfbench.stages.train import train
spec = ModelSpec.from_json(sys.argv[1])
train(spec, sys.argv[2], sys.argv[3])
"""


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    return write_blobs(tmp_path_factory.mktemp("blobs"))


@pytest.mark.parametrize("paradigm", ["dg", "devries", "confidnet"])
def test_paradigms_train_and_log_history(blobs, tmp_path, paradigm):
    spec = tiny_spec(blobs, paradigm, epochs=3)
    train(spec, tmp_path / "checkpoint.pt", tmp_path / "history.csv")
    hist = pd.read_csv(tmp_path / "history.csv")
    stages = {"dg": ["dg"] * 3, "devries": ["devries"] * 3, "confidnet": ["backbone", "confidnet", "finetune"]}
    assert hist["stage"].tolist() == stages[paradigm]
    assert set(hist.columns) >= {"epoch", "lr", "train_loss", "train_acc", "val_loss", "val_acc"}
    assert not (tmp_path / "resume.pt").exists()
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert all(torch.isfinite(v).all() for v in state.values() if v.is_floating_point())
    if paradigm != "confidnet":
        assert hist["val_acc"].iloc[-1] > 0.5  # 4 classes: chance is 0.25


def test_confidnet_classifier_frozen_after_stage_one(blobs, tmp_path):
    spec = with_params(tiny_spec(blobs, "confidnet", epochs=3), epochs_finetune=0, epochs_head=3)
    train(spec, tmp_path / "c.pt", tmp_path / "h.csv")
    full = torch.load(tmp_path / "c.pt", weights_only=True)
    spec1 = with_params(spec, epochs_head=1)
    train(spec1, tmp_path / "c1.pt", tmp_path / "h1.csv")
    short = torch.load(tmp_path / "c1.pt", weights_only=True)
    # the classifier (encoder + head) after stage 1 does not depend on the length of the ConfidNet stage
    for key in full:
        if key.startswith(("encoder.", "head.")):
            assert torch.equal(full[key], short[key]), key
    assert not torch.equal(full["conf_head.mlp.0.weight"], short["conf_head.mlp.0.weight"])


def _run(spec, out, wait_for_resume=False):
    args = [sys.executable, "-c", TRAIN_SCRIPT, spec.to_json(), str(out / "checkpoint.pt"), str(out / "history.csv")]
    if not wait_for_resume:
        subprocess.run(args, check=True, capture_output=True)
        return
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (out / "resume.pt").exists():
        assert proc.poll() is None, "training finished before it could be killed"
        assert time.time() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_resume_after_kill_gives_the_uninterrupted_result(blobs, tmp_path):
    spec = tiny_spec(blobs, "devries", epochs=4)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _run(spec, tmp_path / "a")
    _run(spec, tmp_path / "b", wait_for_resume=True)
    assert not (tmp_path / "b" / "checkpoint.pt").exists()  # nothing that looks complete
    resumed_from = torch.load(tmp_path / "b" / "resume.pt", weights_only=True)["epoch"]
    assert 1 <= resumed_from < 4
    _run(spec, tmp_path / "b")
    a = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=True)
    b = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)
    for key in a:
        assert torch.equal(a[key], b[key]), key
    ha, hb = pd.read_csv(tmp_path / "a" / "history.csv"), pd.read_csv(tmp_path / "b" / "history.csv")
    pd.testing.assert_frame_equal(ha.drop(columns="seconds"), hb.drop(columns="seconds"))


def test_resume_file_of_another_spec_is_ignored(blobs, tmp_path):
    spec = tiny_spec(blobs, "dg", epochs=2)
    _run(spec, tmp_path, wait_for_resume=True)
    other = dataclasses.replace(spec, seed=99)
    train(other, tmp_path / "checkpoint.pt", tmp_path / "history.csv")
    assert len(pd.read_csv(tmp_path / "history.csv")) == 2


def test_feature_extraction_contract_and_bit_identical_rerun(blobs, tmp_path):
    spec = tiny_spec(blobs, "dg", epochs=1, mcd=3)
    train(spec, tmp_path / "checkpoint.pt", tmp_path / "history.csv")
    paths = []
    for name in ("train", "train-again"):
        path = tmp_path / f"{name}.h5"
        extract(spec, EvalSet("train", "id", "train"), tmp_path / "checkpoint.pt", path, batch_size=50,
                compression="gzip")
        paths.append(path)
    attrs = validate_feature_file(paths[0], expect={"model": spec.model, "dataset": "train"})
    assert attrs["n_classes"] == 4 and attrs["mcd_samples"] == 3 and attrs["feature_dim"] == 64
    a, _ = read_features(paths[0])
    b, _ = read_features(paths[1])
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert a["logits"].shape == (256, 5) and a["mcd/logits"].shape == (256, 3, 5)
    assert a["head/weight"].shape == (5, 64)
    np.testing.assert_array_equal(a["pred"], a["logits"][:, :4].argmax(1))
    np.testing.assert_allclose(a["confidence"], 1 - _softmax(a["logits"])[:, -1], rtol=1e-5)
    assert not np.array_equal(a["mcd/logits"][:, 0], a["mcd/logits"][:, 1])  # dropout active in MC passes
    # features.feature_dtype float16: the same extraction, its features rounded to float16, the logits unchanged
    half = tmp_path / "half.h5"
    extract(spec, EvalSet("train", "id", "train"), tmp_path / "checkpoint.pt", half, batch_size=50,
            compression="gzip", feature_dtype="float16")
    with h5py.File(half) as fh:
        assert fh["features"].dtype == np.float16 and fh["mcd/features_mean"].dtype == np.float16
    c, _ = read_features(half)
    for key in ("features", "mcd/features_mean"):
        np.testing.assert_array_equal(c[key], a[key].astype(np.float16).astype(np.float32), err_msg=key)
    np.testing.assert_array_equal(c["logits"], a["logits"])


def test_semantic_shift_set_has_no_labels(blobs, tmp_path):
    spec = tiny_spec(blobs, "devries", dropout=0, epochs=1)
    train(spec, tmp_path / "checkpoint.pt", tmp_path / "history.csv")
    ood = EvalSet("ood", "semantic", "far", dataclasses.replace(spec.dataset, name="ood"))
    extract(spec, ood, tmp_path / "checkpoint.pt", tmp_path / "ood.h5", batch_size=64, compression="gzip")
    data, attrs = read_features(tmp_path / "ood.h5")
    assert (data["labels"] == -1).all() and not data["correct"].any() and attrs["shift_type"] == "semantic"
    assert "mcd/logits" not in data and "head/weight" not in data


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_vgg13_cross_entropy_paradigm_with_inverse_frequency_class_weights():
    """Paradigm ce for VGG-13 (plain cross-entropy) and ICONIC-444's class-weighted variant: the stage's loss is
    torch's weighted cross-entropy with w_c ∝ 1/f_c of the training labels, normalised to mean 1."""
    import torch.nn.functional as F

    from csfbench.workflow.grid import Grid
    from csfbench.models import build_model
    from csfbench.workflow.settings import load_yaml, validate_config
    from csfbench.training.losses import inverse_frequency_weights
    from csfbench.training.stages import build_stages
    from tests.helpers.repo import REPO

    config = load_yaml(REPO / "config/config.yaml")
    config["backbones"]["vgg13"]["paradigms"] = ["ce"]
    config["training"]["vgg13"]["ce"] = {"epochs": 2, "class_weights": "inverse_frequency"}
    del config["shifts"]  # its study names a model of the demo's paradigms
    config = validate_config(config)
    spec = Grid(config).model_spec("demo10", "vgg13_ce_do0_rew0_run1")
    assert spec.csf_backbone == "vit"  # no paradigm confidence head: no Confidence CSF
    labels = np.array([0] * 6 + [1] * 2 + list(range(2, 10)))
    (stage,) = build_stages(spec, 5, labels)
    assert stage.name == "ce" and stage.epochs == 2
    torch.manual_seed(0)
    model = build_model(spec).eval()
    x, y = torch.randn(8, 3, 32, 32), torch.tensor([0, 1, 2, 3, 0, 1, 5, 9])
    loss, logits = stage.loss(model, x, y, 0, stage.state)
    weights = inverse_frequency_weights(labels, 10)
    assert weights.mean().item() == pytest.approx(1.0) and weights[0] < weights[1] < weights[2]
    torch.testing.assert_close(loss, F.cross_entropy(logits.float(), y, weight=weights))
    plain = Grid(validate_config({**config, "training": {**config["training"], "vgg13": {
        **config["training"]["vgg13"], "ce": {"epochs": 2}}}})).model_spec("demo10", "vgg13_ce_do0_rew0_run1")
    (stage,) = build_stages(plain, 5)
    torch.testing.assert_close(stage.loss(model, x, y, 0, stage.state)[0], F.cross_entropy(logits.float(), y))
