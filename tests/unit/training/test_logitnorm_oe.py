"""LogitNorm (Wei et al., ICML 2022, arXiv 2205.09310) and Outlier Exposure (Hendrycks, Mazeika & Dietterich,
ICLR 2019, arXiv 1812.04606): the losses against their formulas computed by hand, the outlier stream, the
validation of the outlier set, the workflow's inputs and a tiny CPU training of each paradigm."""
import copy
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch

from csfbench.data.base import ArrayImageSet
from csfbench.errors import ConfigError
from csfbench.training.losses import logit_norm_loss, outlier_exposure_loss, uniform_cross_entropy
from csfbench.workflow.jobs import Jobs
from csfbench.workflow.settings import load_yaml, validate_config
from tests.helpers.repo import REPO
from tests.helpers.training import write_blobs


def _log_softmax(row):
    """log softmax of a list of floats, in plain Python."""
    top = max(row)
    log_sum = top + math.log(sum(math.exp(v - top) for v in row))
    return [v - log_sum for v in row]


# ---------------------------------------------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------------------------------------------

def test_logit_norm_loss_by_hand():
    logits = [[3.0, 4.0, 0.0], [1.0, -2.0, 2.0]]
    target = [1, 0]
    tau = 0.5
    expected = 0.0
    for row, y in zip(logits, target):
        norm = math.sqrt(sum(v * v for v in row)) + 1e-7        # ||z||_2 + eps: 5, 3
        scaled = [v / (tau * norm) for v in row]                # [1.2, 1.6, 0], [2/3, -4/3, 4/3]
        expected -= _log_softmax(scaled)[y] / len(logits)
    loss = logit_norm_loss(torch.tensor(logits), torch.tensor(target), tau)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    # the first row by hand: -log(e^1.6 / (e^1.2 + e^1.6 + 1))
    first = logit_norm_loss(torch.tensor(logits[:1]), torch.tensor(target[:1]), tau)
    assert first.item() == pytest.approx(-math.log(math.exp(1.6) / (math.exp(1.2) + math.exp(1.6) + 1)), rel=1e-6)


def test_logit_norm_loss_ignores_the_logit_scale_and_keeps_zero_logits_finite():
    z = torch.tensor([[0.3, -1.2, 2.0, 0.1]])
    y = torch.tensor([2])
    assert logit_norm_loss(100 * z, y, 0.04).item() == pytest.approx(logit_norm_loss(z, y, 0.04).item(), rel=1e-5)
    # a zero logit vector: z / (tau * eps) = 0, a uniform softmax
    assert logit_norm_loss(torch.zeros(1, 4), y, 0.04).item() == pytest.approx(math.log(4), rel=1e-6)
    with pytest.raises(ValueError, match="tau"):
        logit_norm_loss(z, y, 0.0)


def test_outlier_exposure_loss_by_hand():
    logits = [[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]]
    target = [0, 2]
    outliers = [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, 4.0, 0.5]]
    lam = 0.7
    ce = -sum(_log_softmax(row)[y] for row, y in zip(logits, target)) / len(logits)
    uniform = sum(-sum(_log_softmax(row)) / 3 for row in outliers) / len(outliers)  # -(1/C) sum_c log p_c
    total, term = outlier_exposure_loss(torch.tensor(logits), torch.tensor(target), torch.tensor(outliers), lam)
    assert term.item() == pytest.approx(uniform, rel=1e-6)
    assert total.item() == pytest.approx(ce + lam * uniform, rel=1e-6)
    # the authors' expression, 0.5 * -(x.mean(1) - logsumexp(x, 1)).mean(), at lambda = 0.5
    x = np.array(outliers)
    authors = 0.5 * -(x.mean(1) - np.log(np.exp(x).sum(1))).mean()
    half, _ = outlier_exposure_loss(torch.tensor(logits), torch.tensor(target), torch.tensor(outliers), 0.5)
    assert half.item() == pytest.approx(ce + authors, rel=1e-6)
    with pytest.raises(ValueError, match="lambda"):
        outlier_exposure_loss(torch.tensor(logits), torch.tensor(target), torch.tensor(outliers), -1.0)


@pytest.mark.parametrize("n_classes", [2, 10, 100])
def test_uniform_term_is_log_c_for_constant_logits_and_larger_otherwise(n_classes):
    constant = torch.full((3, n_classes), 2.5)
    assert uniform_cross_entropy(constant).item() == pytest.approx(math.log(n_classes), rel=1e-6)
    varied = torch.randn(50, n_classes, generator=torch.Generator().manual_seed(n_classes))
    per_row = [uniform_cross_entropy(row[None]).item() for row in varied]
    assert min(per_row) > math.log(n_classes)
    # an empty outlier batch (the validation pass) adds nothing
    assert uniform_cross_entropy(torch.zeros(0, n_classes)).item() == 0.0


# ---------------------------------------------------------------------------------------------------------------
# config validation and workflow inputs (the demo config with the two paradigms)
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_oe():
    """config/config.yaml (unvalidated) training VGG-13 with LogitNorm and Outlier Exposure, outliers from the
    pretraining set (not evaluated by source demo10)."""
    config = load_yaml(REPO / "config/config.yaml")
    config["backbones"]["vgg13"]["paradigms"] = ["logitnorm", "oe"]
    config["training"]["vgg13"]["logitnorm"] = {"epochs": 2}
    config["training"]["vgg13"]["oe"] = {"epochs": 2, "outlier_dataset": "pretrain"}
    del config["shifts"]  # its study names a model of the demo's paradigms
    return config


def test_demo_with_logitnorm_and_oe_validates_and_resolves(demo_oe):
    config = validate_config(copy.deepcopy(demo_oe))
    assert config["training"]["vgg13"]["logitnorm"]["tau"] == 0.04
    oe = config["training"]["vgg13"]["oe"]
    assert (oe["lambda"], oe["batch_size"], oe["outlier_batch_size"]) == (0.5, 128, 256)
    grid = Jobs(config)
    ln = grid.model_spec("demo10", "vgg13_logitnorm_do1_rew0_run1")
    spec = grid.model_spec("demo10", "vgg13_oe_do1_rew0_run1")
    assert ln.paradigm_params == {"epochs": 2, "tau": 0.04} and ln.outliers is None
    assert "outliers" not in ln.to_dict()  # the JSON of a spec without outliers is unchanged
    assert spec.outliers == grid.dataset_spec("pretrain") and "outlier_dataset" not in spec.paradigm_params
    assert spec.optim["batch_size"] == 128 and spec.paradigm_params["outlier_batch_size"] == 256
    assert type(spec).from_json(spec.to_json()) == spec
    assert ln.csf_backbone == spec.csf_backbone == "vit"  # no confidence head: no Confidence CSF
    assert grid.train_inputs("demo10", str(ln.model)) == {"index": "results/data/index/demo10.json"}
    assert grid.train_inputs("demo10", spec.model) == {"index": "results/data/index/demo10.json",
                                                       "outliers": "results/data/index/pretrain.json"}
    assert grid.outlier_datasets("demo10") == ("pretrain",)


def test_the_outlier_sets_split_is_indexed(demo_oe):
    config = copy.deepcopy(demo_oe)
    config["datasets"]["extra"] = {"format": "npy", "path": "pretrain", "split": "train"}
    config["training"]["vgg13"]["oe"]["outlier_dataset"] = "extra"
    grid = Jobs(validate_config(config))
    assert grid.used_splits("extra") == ["train"]
    assert grid.model_spec("demo10", "vgg13_oe_do1_rew0_run1").outliers.split == "train"


@pytest.mark.parametrize("outliers, role", [("near", "its evaluation set sources/demo10/ood/near"),
                                            ("demo10", "its own dataset")])
def test_an_outlier_set_the_source_evaluates_is_refused_naming_both(demo_oe, outliers, role):
    config = copy.deepcopy(demo_oe)
    config["training"]["vgg13"]["oe"]["outlier_dataset"] = outliers
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert err.value.key_path == "training/vgg13/oe/outlier_dataset"
    assert f"outlier set '{outliers}'" in str(err.value) and "source 'demo10'" in str(err.value)
    assert role in str(err.value)


def test_an_outlier_set_the_source_tunes_on_is_refused_naming_both(demo_oe):
    config = copy.deepcopy(demo_oe)  # outliers: pretrain, also the grid protocol's OOD validation set
    config["csf"]["tuning"]["ood_validation"] = {"demo10": "pretrain"}
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert err.value.key_path == "training/vgg13/oe/outlier_dataset"
    assert "outlier set 'pretrain': its OOD validation set csf/tuning/ood_validation/demo10 (source 'demo10')" \
        in str(err.value)


def test_a_source_override_of_the_outlier_set_is_checked_at_its_key(demo_oe):
    config = copy.deepcopy(demo_oe)
    config["sources"]["demo10"]["training"] = {"vgg13": {"oe": {"outlier_dataset": "digits"}}}
    with pytest.raises(ConfigError, match="outlier set 'digits'.*source 'demo10'") as err:
        validate_config(config)
    assert err.value.key_path == "sources/demo10/training/vgg13/oe/outlier_dataset"


def test_an_unknown_outlier_set_is_refused_naming_it(demo_oe):
    config = copy.deepcopy(demo_oe)
    config["training"]["vgg13"]["oe"]["outlier_dataset"] = "tinyimages"
    with pytest.raises(ConfigError, match="tinyimages") as err:
        validate_config(config)
    assert err.value.key_path == "training/vgg13/oe/outlier_dataset"
    assert "a dataset of ['demo10', 'digits'" in str(err.value)


def test_oe_needs_its_outlier_set(demo_oe):
    config = copy.deepcopy(demo_oe)
    del config["training"]["vgg13"]["oe"]["outlier_dataset"]
    with pytest.raises(ConfigError, match="outlier_dataset"):
        validate_config(config)


# ---------------------------------------------------------------------------------------------------------------
# the outlier stream and a tiny CPU training
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("oe")
    write_blobs(root / "blobs")
    write_blobs(root / "other", n_train=8, n_test=40, seed=7)
    return root


def _tiny_spec(data_root, paradigm, epochs=1, **params):
    config = {
        "seed": 0, "data_root": str(data_root),
        "datasets": {"blobs": {"format": "npy", "path": "blobs"}, "other": {"format": "npy", "path": "other"}},
        "sources": {"blobs": {"dataset": "blobs", "n_classes": 4, "val_size": 64, "image_size": {"vgg13": 32},
                              "normalize": {"mean": [0.3] * 3, "std": [0.3] * 3}, "ood": {}}},
        "backbones": {"vgg13": {"paradigms": [paradigm], "dropout": [1], "runs": [1], "arch": {"width": 0.125},
                                "mcd_samples": 0}},
        "training": {"vgg13": {"common": {"batch_size": 32, "lr": 0.05, "weight_decay": 5e-4,
                                          "augment": {"crop_padding": 2, "hflip": True}},
                               paradigm: {"epochs": epochs, **params}}},
        "features": {"batch_size": 64},
        "csf": {"groups": ["none"], "tuning": {"init_points": 2, "n_iter": 1}},
    }
    grid = Jobs(validate_config(config, origin="test_logitnorm_oe"))
    return grid.model_spec("blobs", f"vgg13_{paradigm}_do1_rew0_run1")


def test_outlier_batches_cycle_reshuffled_passes():
    from csfbench.training.loop import outlier_batches

    n = 10
    images = np.zeros((n, 4, 4, 3), dtype=np.uint8)
    images[:, 0, 0, 0] = np.arange(n)  # image i carries i in a corner pixel
    outliers = ArrayImageSet("ten", images, np.full(n, -1), np.arange(n))
    spec = type("Spec", (), {"image_size": 4, "loader_geometry": {}})()
    stream = outlier_batches(outliers, spec, 4, seed=3)
    batches = [next(stream) for _ in range(6)]
    assert [len(b) for b in batches] == [4, 4, 2, 4, 4, 2]  # an epoch longer than a pass cycles the set
    ids = [b[:, 0, 0, 0].tolist() for b in batches]
    first, second = sum(ids[:3], []), sum(ids[3:], [])
    assert sorted(first) == sorted(second) == list(range(n)) and first != second  # each pass a new permutation
    again = outlier_batches(outliers, spec, 4, seed=3)
    assert all(torch.equal(next(again), b) for b in batches)  # the same seed, the same stream (exact resume)
    with pytest.raises(ValueError, match="'none' has no images"):
        next(outlier_batches(ArrayImageSet("none", images[:0], np.zeros(0), np.zeros(0)), spec, 4, seed=3))


def test_oe_stage_loss_is_the_formula_on_the_id_images_then_the_outliers(data_root):
    from csfbench.models import build_model
    from csfbench.training.stages import build_stages

    spec = _tiny_spec(data_root, "oe", outlier_dataset="other", outlier_batch_size=8, **{"lambda": 0.3})
    (stage,) = build_stages(spec, 4)
    assert stage.name == "oe" and stage.outlier_batch_size == 8 and spec.optim["batch_size"] == 128
    torch.manual_seed(0)
    model = build_model(spec).eval()  # BatchNorm in eval: the rows do not depend on the batch
    x, y = torch.randn(5, 3, 32, 32), torch.tensor([0, 1, 2, 3, 0])
    outliers = torch.randn(8, 3, 32, 32)
    loss, logits = stage.loss(model, torch.cat([x, outliers]), y, 0, stage.state)
    with torch.no_grad():
        z_in, z_out = model.class_logits(x).double(), model.class_logits(outliers).double()
    ce = -torch.log_softmax(z_in, 1)[torch.arange(5), y].mean()
    uniform = -torch.log_softmax(z_out, 1).mean(1).mean()
    assert logits.shape == (5, 4)
    assert loss.item() == pytest.approx(float(ce + 0.3 * uniform), rel=1e-5)
    val_loss, _ = stage.loss(model, x, y, 0, stage.state)  # no outliers at validation: the ID cross-entropy
    assert val_loss.item() == pytest.approx(float(ce), rel=1e-5)


@pytest.mark.parametrize("paradigm", ["logitnorm", "oe"])
def test_tiny_training_and_features_without_confidence(data_root, tmp_path, paradigm):
    from csfbench.features.store import read_features
    from csfbench.specs import EvalSet
    from csfbench.stages.features import extract
    from csfbench.stages.train import train

    params = {"outlier_dataset": "other", "batch_size": 32, "outlier_batch_size": 16} if paradigm == "oe" else {}
    spec = dataclasses.replace(_tiny_spec(data_root, paradigm, epochs=1, **params), seed=1234)
    train(spec, tmp_path / "checkpoint.pt", tmp_path / "history.csv")
    hist = pd.read_csv(tmp_path / "history.csv")
    assert hist["stage"].tolist() == [paradigm] and np.isfinite(hist[["train_loss", "val_loss"]].values).all()
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert all(torch.isfinite(v).all() for v in state.values() if v.is_floating_point())
    extract(spec, EvalSet("val", "id", "val"), tmp_path / "checkpoint.pt", tmp_path / "val.h5", batch_size=64,
            compression="gzip")
    data, attrs = read_features(tmp_path / "val.h5")
    assert data["logits"].shape == (64, 4) and "confidence" not in data and attrs["paradigm"] == paradigm
    if paradigm == "oe":
        assert hist["train_loss"].iloc[0] >= 0.5 * math.log(4)  # the outlier term (>= lambda log C) was trained on
        # the same spec trains to the same weights (the outlier stream is seeded per epoch)
        train(spec, tmp_path / "again.pt", tmp_path / "again.csv")
        again = torch.load(tmp_path / "again.pt", weights_only=True)
        assert all(torch.equal(state[k], again[k]) for k in state)


def test_oe_training_without_its_outlier_set_is_refused(data_root, tmp_path):
    from csfbench.data.sources import source_split
    from csfbench.training.loop import train_model

    spec = _tiny_spec(data_root, "oe", outlier_dataset="other")
    train_set = source_split(spec.dataset, spec.val_size, "train")
    with pytest.raises(ValueError, match="draws outlier batches"):
        train_model(spec, train_set, train_set, tmp_path / "c.pt", tmp_path / "h.csv", tmp_path / "r.pt")
