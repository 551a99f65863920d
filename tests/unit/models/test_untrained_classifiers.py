"""Classifiers evaluated without training (paradigms `pretrained`, `random`), per-source image geometry, the
label-space logit mask, and the two-split image lists and ImageNet train subsets they are read from."""
import copy

import numpy as np
import pytest
import torch

from csfbench.workflow.grid import Grid
from csfbench.data.formats import open_dataset
from csfbench.errors import CheckpointError, ConfigError, DatasetError
from csfbench.features.extract import predict
from csfbench.models import build_model, load_checkpoint
from csfbench.models.pretrained import create_network
from csfbench.workflow.settings import load_yaml, validate_config
from csfbench.specs import EvalSet, ModelSpec
from csfbench.stages.train import materialise

from tests.helpers.format_fixtures import write_imagenet, write_openood
from tests.helpers.repo import REPO

TINY_VIT = {"name": "vit_tiny_patch16_224", "patch_size": 8, "depth": 1, "img_size": 32}


def _config(weights=None, paradigms=("pretrained", "random"), **backbone):
    config = load_yaml(REPO / "config/config.yaml")
    config["sources"]["pretrain20"]["image_size"] = {"tiny": 32}
    config["backbones"].pop("vittiny")
    config["backbones"]["tiny"] = {"library": "timm", "arch": dict(TINY_VIT), "paradigms": list(paradigms),
                                   "runs": [1, 2], "sources": ["pretrain20"],
                                   "eval": {"geometry": "stretch", "interpolation": "bilinear", "crop_pct": 1.0,
                                            "normalize": {"mean": [0.5] * 3, "std": [0.25] * 3}},
                                   **({"weights": {"file": str(weights)}} if weights else {}), **backbone}
    return validate_config(config)


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A timm state dict of the tiny ViT with a 20-class head, saved where timm's pretrained-file loader reads it."""
    torch.manual_seed(0)
    net = create_network("timm", TINY_VIT["name"], num_classes=20,
                         **{k: v for k, v in TINY_VIT.items() if k != "name"})
    path = tmp_path_factory.mktemp("weights") / "tiny.pth"
    torch.save(net.state_dict(), path)
    return path, net.eval()


def test_backbone_sources_select_the_models_of_a_source(weights):
    config = _config(weights[0])
    assert [str(m) for m in Grid(config).model_ids("pretrain20")] == [
        "tiny_pretrained_do0_rew0_run1", "tiny_pretrained_do0_rew0_run2", "tiny_random_do0_rew0_run1",
        "tiny_random_do0_rew0_run2"]
    assert all(m.backbone in ("vgg13", "vit") for m in Grid(config).model_ids("demo10"))


def test_library_model_spec_and_its_json(weights):
    config = _config(weights[0])
    spec = Grid(config).model_spec("pretrain20", "tiny_pretrained_do0_rew0_run1")
    assert spec.library == "timm" and spec.weights == {"file": str(weights[0]), "num_classes": 20}
    assert spec.geometry == {"mode": "stretch", "crop_pct": 1.0, "interpolation": "bilinear"}
    assert spec.csf_backbone == "vit" and spec.modes == ("det",) and spec.optim == {}
    assert ModelSpec.from_json(spec.to_json()) == spec
    random = Grid(config).model_spec("pretrain20", "tiny_random_do0_rew0_run2")
    assert random.weights is None and random.run == 2
    # a built-in model's JSON has none of the new fields (existing results are not rerun)
    vgg = Grid(config).model_spec("demo10", Grid(config).model_ids("demo10")[0])
    assert vgg.library is None and vgg.geometry is None and vgg.loader_geometry == {}
    assert not {"library", "weights", "geometry"} & set(vgg.to_dict())


def test_preprocessing_is_read_from_the_weights_own_config_where_the_config_leaves_it_null():
    config = _config(None, paradigms=("random",),
                     eval={"geometry": None, "crop_pct": None, "interpolation": None, "normalize": None})
    spec = Grid(config).model_spec("pretrain20", "tiny_random_do0_rew0_run1")
    # timm's pretrained config of vit_tiny_patch16_224 (augreg): mean = std = 0.5, bicubic, crop 0.9
    assert spec.normalize == {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}
    assert spec.geometry == {"mode": "resize_crop", "crop_pct": 0.9, "interpolation": "bicubic"}


def test_config_errors_name_the_key(weights):
    with pytest.raises(ConfigError, match="backbones/tiny/weights"):
        _config(None)  # paradigm pretrained without a weights file
    config = _config(weights[0])
    config["backbones"]["tiny"]["weights"]["num_classes"] = 1000
    with pytest.raises(ConfigError, match="backbones/tiny/weights/num_classes.*its own head"):
        Grid(config).model_spec("pretrain20", "tiny_pretrained_do0_rew0_run1")
    raw = load_yaml(REPO / "config/config.yaml")
    raw["backbones"]["vgg13"]["sources"] = ["demo99"]
    with pytest.raises(ConfigError, match="backbones/vgg13/sources"):
        validate_config(raw)


def test_pretrained_checkpoint_holds_the_weights_and_random_is_seeded_by_the_run(weights, tmp_path):
    path, reference = weights
    config = _config(path)
    x = torch.randn(3, 3, 32, 32)
    spec = Grid(config).model_spec("pretrain20", "tiny_pretrained_do0_rew0_run1")
    materialise(spec, tmp_path / "p.pt", tmp_path / "p.csv")
    model = load_checkpoint(spec, tmp_path / "p.pt")
    torch.testing.assert_close(model.head(model.encoder(x)), reference(x), rtol=1e-5, atol=1e-5)
    assert (tmp_path / "p.csv").read_text().splitlines()[1].startswith("pretrained,0,")
    outputs = []
    for run in (1, 1, 2):
        random = Grid(config).model_spec("pretrain20", f"tiny_random_do0_rew0_run{run}")
        materialise(random, tmp_path / f"r{run}.pt", tmp_path / f"r{run}.csv")
        m = load_checkpoint(random, tmp_path / f"r{run}.pt")
        outputs.append(m.head(m.encoder(x)))
    torch.testing.assert_close(outputs[0], outputs[1])
    assert not torch.allclose(outputs[0], outputs[2])


def test_a_weights_file_of_another_network_is_named(weights, tmp_path):
    bad = tmp_path / "bad.pth"
    torch.save({"conv.weight": torch.zeros(2)}, bad)
    spec = Grid(_config(bad)).model_spec("pretrain20", "tiny_pretrained_do0_rew0_run1")
    with pytest.raises(CheckpointError, match="bad.pth"):
        build_model(spec)


def test_restricted_prediction_never_leaves_the_label_space():
    logits = torch.randn(500, 10)
    space = (1, 4, 7)
    pred = predict(logits, space)
    assert set(pred.tolist()) <= set(space)
    np.testing.assert_array_equal(pred, torch.tensor(space)[logits[:, list(space)].argmax(1)])
    assert torch.equal(predict(logits), logits.argmax(1))


def test_label_space_settings_and_eval_set_json():
    raw = load_yaml(REPO / "config/config.yaml")
    raw["sources"]["demo10"]["ood"]["near"].update(label_space=[0, 3], logit_mask="restrict")
    config = validate_config(copy.deepcopy(raw))
    spec = Grid(config).eval_set_spec("demo10", "near")
    assert spec.label_space == (0, 3) and spec.logit_mask == "restrict"
    assert EvalSet.from_json(spec.to_json()) == spec
    assert "label_space" not in Grid(config).eval_set_spec("demo10", "noise").to_dict()
    raw["sources"]["demo10"]["ood"]["near"]["label_space"] = [0, 10]
    with pytest.raises(ConfigError, match="sources/demo10/ood/near/label_space"):
        validate_config(copy.deepcopy(raw))
    del raw["sources"]["demo10"]["ood"]["near"]["label_space"]
    with pytest.raises(ConfigError, match="restrict"):
        validate_config(raw)


def test_an_image_list_can_hold_a_sources_two_splits(tmp_path):
    written = write_openood(tmp_path)
    lists = {"train": "benchmark_imglist/cifar10/test_tin.txt", "test": "benchmark_imglist/cifar10/test_cifar10.txt"}
    for split, key in (("train", "tin"), ("test", "test")):
        images = open_dataset("imglist", written.root, split, "c10", imglist=lists, images="images_classic")
        assert list(images.sample_ids) == written.sample_ids[key]
    with pytest.raises(DatasetError, match="maps the splits \\['test', 'train'\\], not split 'val'"):
        open_dataset("imglist", written.root, "val", "c10", imglist=lists, images="images_classic")


def test_imagenet_train_subset_option(tmp_path):
    written = write_imagenet(tmp_path, n_train=4)
    subset = open_dataset("imagenet", written.root, "train", "in", train_subset={"seed": 3, "per_class": 2})
    assert len(subset) == 10 and np.bincount(subset.labels).tolist() == [2] * 5
    again = open_dataset("imagenet", written.root, "train", "in", train_subset={"seed": 3, "per_class": 2})
    assert list(again.sample_ids) == list(subset.sample_ids)
    assert len(open_dataset("imagenet", written.root, "test", "in", train_subset={"seed": 3, "n": 2})) == 5
    with pytest.raises(DatasetError, match="train_subset"):
        open_dataset("imagenet", written.root, "train", "in", train_subset={"seed": 3, "n": 99})


def test_feature_stage_with_a_restricted_set_stores_predictions_in_its_label_space(weights, tmp_path):
    """The extraction stage (``stages.features.extract``) on a labelled tiny set whose labels lie in 3 of the 20
    classes: with ``logit_mask: restrict`` every stored ``pred`` is one of them (the argmax of the stored logits
    over them), with ``none`` the argmax over all 20."""
    from csfbench.features.store import read_features
    from csfbench.specs import DatasetSpec
    from csfbench.stages.features import extract

    spec = Grid(_config(weights[0])).model_spec("pretrain20", "tiny_pretrained_do0_rew0_run1")
    materialise(spec, tmp_path / "model.pt", tmp_path / "model.csv")
    space = (2, 5, 11)
    rng = np.random.default_rng(0)
    (tmp_path / "rset" / "test").mkdir(parents=True)
    np.save(tmp_path / "rset" / "test" / "images.npy", rng.integers(0, 256, (40, 32, 32, 3), dtype=np.uint8))
    np.save(tmp_path / "rset" / "test" / "labels.npy", rng.choice(space, 40).astype(np.int64))
    dataset = DatasetSpec("rset", "npy", str(tmp_path / "rset"), "test", {})
    stored = {}
    for mask in ("restrict", "none"):
        eval_set = EvalSet("rset", "covariate", "covariate", dataset, space, mask)
        extract(spec, eval_set, tmp_path / "model.pt", tmp_path / f"{mask}.h5", batch_size=16, compression="gzip")
        stored[mask], _ = read_features(tmp_path / f"{mask}.h5")
    restricted, unrestricted = stored["restrict"], stored["none"]
    np.testing.assert_array_equal(restricted["logits"], unrestricted["logits"])
    assert set(restricted["pred"].tolist()) <= set(space)
    np.testing.assert_array_equal(restricted["pred"], np.array(space)[restricted["logits"][:, list(space)].argmax(1)])
    np.testing.assert_array_equal(restricted["correct"], restricted["pred"] == restricted["labels"])
    np.testing.assert_array_equal(unrestricted["pred"], unrestricted["logits"].argmax(1))
    assert not set(unrestricted["pred"].tolist()) <= set(space)  # the mask, not the model, keeps the label space
