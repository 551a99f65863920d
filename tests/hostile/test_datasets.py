"""Hostile datasets.  The index job (``rules/data.smk``: :func:`csfbench.stages.data.index_dataset`)
refuses an empty dataset or split and a file that is no image under an image extension before any
training or extraction starts; a training job refuses, before its first epoch, a class count the train
split does not have and a validation size that leaves no image.  Each test reproduces one probe."""
from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pytest

from csfbench.data.formats import FORMATS, open_dataset
from csfbench.errors import ConfigError, DatasetError
from csfbench.specs import DatasetSpec, ModelSpec
from csfbench.stages.data import index_dataset
from csfbench.stages.train import pretrain, train

from tests.helpers.format_fixtures import write_cifar10, write_image_folder, write_tinyimagenet


def _index(fmt: str, root: Path, splits: list[str], name: str = "myset") -> dict:
    return index_dataset(DatasetSpec(name, fmt, str(root), "test", {}), splits, root.parent / "index.json")


def _dataset_error(fmt: str, path: Path, fragment: str, call) -> DatasetError:
    """Run ``call``: a DatasetError naming the dataset, ``path``, the problem and the format's layout."""
    with pytest.raises(DatasetError) as info:
        call()
    message = str(info.value)
    assert info.value.dataset == "myset" and str(path) in message and fragment in message, message
    assert FORMATS[fmt].expected_layout.strip().splitlines()[0] in message
    return info.value


def _write_npy(folder: Path, train_labels: list[int], n_test: int) -> Path:
    """A labelled ``npy`` dataset of 4×4 images: the given train labels, ``n_test`` test images of class 0."""
    root = folder / "labelled"
    for split, labels in (("train", np.asarray(train_labels)), ("test", np.zeros(n_test))):
        (root / split).mkdir(parents=True)
        np.save(root / split / "images.npy", np.zeros((len(labels), 4, 4, 3), np.uint8))
        np.save(root / split / "labels.npy", labels.astype(np.int64))
    return root


def _config_error(call) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        call()
    return info.value


# ---------------------------------------------------------------------------------------------
# code in a data file


class _RunsCode:
    """Unpickles to ``os.system(command)``: what a crafted dataset file would run under plain pickle.load."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        import os
        return os.system, (self.command,)


@pytest.mark.parametrize("protocol", [2, 5])
def test_a_crafted_cifar_batch_runs_no_code_and_names_the_refused_global(tmp_path, protocol):
    written = write_cifar10(tmp_path)
    marker = tmp_path / "pwned"
    path = written.root / "test_batch"
    with path.open("wb") as f:
        pickle.dump({b"data": _RunsCode(f"touch {marker}"), b"labels": [0] * 4}, f, protocol=protocol)
    _dataset_error("cifar10", path, "refused global posix.system",
                   lambda: open_dataset("cifar10", str(written.root), "test", "myset"))
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# empty datasets and splits


@pytest.mark.parametrize("class_folders", [("cat", "dog"), ()], ids=["empty-class-folders", "no-class-folders"])
def test_an_image_folder_without_images_fails_the_index(tmp_path, class_folders):
    root = tmp_path / "images"
    root.mkdir()
    for folder in class_folders:
        (root / folder).mkdir()
    _dataset_error("image_folder", root, "no image files", lambda: _index("image_folder", root, ["test"]))


@pytest.mark.parametrize("empty", ["train", "test"])
def test_an_empty_split_fails_the_index(tmp_path, empty):
    root = _write_npy(tmp_path, [0, 1, 2], n_test=3)
    np.save(root / empty / "images.npy", np.zeros((0, 4, 4, 3), np.uint8))
    np.save(root / empty / "labels.npy", np.zeros(0, np.int64))
    _dataset_error("npy", root, f"split '{empty}' holds no images", lambda: _index("npy", root, ["train", "test"]))


# ---------------------------------------------------------------------------------------------
# files that are no images


@pytest.mark.parametrize("content", [b"hello, I am text", b""], ids=["text", "empty-file"])
def test_a_non_image_named_png_in_an_image_folder_fails_the_index(tmp_path, content):
    written = write_image_folder(tmp_path)
    bad = written.root / "b" / "nested" / "fake.png"
    bad.write_bytes(content)
    error = _dataset_error("image_folder", bad, "not a readable image",
                           lambda: _index("image_folder", written.root, ["test"]))
    assert error.path == str(bad)


def test_a_non_image_in_a_tinyimagenet_class_fails_the_index(tmp_path):
    written = write_tinyimagenet(tmp_path)
    bad = next((written.root / "train").glob("*/images/*.JPEG"))
    bad.write_text("not a jpeg")
    _dataset_error("tinyimagenet", bad, "not a readable image",
                   lambda: _index("tinyimagenet", written.root, ["train", "test"]))


def test_real_images_pass_the_index(tmp_path):
    written = write_image_folder(tmp_path)
    assert _index("image_folder", written.root, ["test"])["splits"]["test"]["n"] == 6
    written = write_tinyimagenet(tmp_path / "tiny")
    assert _index("tinyimagenet", written.root, ["train", "test"])["splits"]["train"]["n"] == 6


# ---------------------------------------------------------------------------------------------
# a source (or the pretraining) that does not fit its dataset: its training job refuses it before the
# first epoch (the index is shared by every source of a dataset, see index_dataset's docstring)


def _spec(root: Path, n_classes: int, val_size: int) -> ModelSpec:
    """A VGG source spec (source 'src') on the npy dataset at ``root``."""
    return ModelSpec(source="src", model="vgg13_ce_do0_rew0_run1", backbone="vgg13", paradigm="ce", dropout=0,
                     reward=0.0, run=1, seed=1, n_classes=n_classes, image_size=4, normalize={}, arch={},
                     mcd_samples=0, optim={}, paradigm_params={},
                     dataset=DatasetSpec("myset", "npy", str(root), "test", {}), val_size=val_size)


def _train_error(tmp_path, spec: ModelSpec) -> ConfigError:
    error = _config_error(lambda: train(spec, tmp_path / "c.pt", tmp_path / "h.csv"))
    assert not (tmp_path / "c.pt").exists() and not (tmp_path / "h.csv").exists()  # refused before training
    return error


def test_n_classes_larger_than_the_classes_of_the_train_split_fails_training_at_once(tmp_path):
    root = _write_npy(tmp_path, list(range(10)) * 2, n_test=5)
    error = _train_error(tmp_path, _spec(root, 20, 2))
    assert error.key_path == "sources/src/n_classes" and error.found == 20
    assert "expected 10 (labels 0..9 found in the train split of dataset 'myset': 10 classes)" in str(error)


@pytest.mark.parametrize("labels, n_classes, fragment", [
    ([0, 1, 3], 4, "classes without an image: [2]"),  # a class in the middle without a sample
    ([0, 1, 2, 3], 3, "labels 0..3 found"),  # more classes than configured
    ([-1, 0, 1], 2, "labels -1..1 found"),  # unlabelled samples in a training set
], ids=["gap", "too-few", "unlabelled"])
def test_labels_other_than_0_to_n_classes_fail_training_at_once(tmp_path, labels, n_classes, fragment):
    root = _write_npy(tmp_path, labels, n_test=5)
    error = _train_error(tmp_path, _spec(root, n_classes, 2))
    assert error.key_path == "sources/src/n_classes" and fragment in str(error)


@pytest.mark.parametrize("val_size", [5, 6])
def test_a_val_size_that_leaves_no_test_image_fails_training_at_once(tmp_path, val_size):
    root = _write_npy(tmp_path, [0, 1, 2], n_test=5)
    error = _train_error(tmp_path, _spec(root, 3, val_size))
    assert error.key_path == "sources/src/val_size" and error.found == val_size
    assert "at most N-1 = 4 (the test split of dataset 'myset' has N = 5 images" in str(error)


def test_a_pretrain_val_size_that_leaves_no_train_image_fails_pretraining_at_once(tmp_path):
    root = _write_npy(tmp_path, [0, 1, 2, 0], n_test=1)
    spec = dataclasses.replace(_spec(root, 3, 4), source="pretrain", backbone="vit")
    error = _config_error(lambda: pretrain(spec, tmp_path / "vit.safetensors", tmp_path / "h.csv"))
    assert error.key_path == "pretrain/val_size" and "the train split of dataset 'myset' has N = 4" in str(error)
    assert not (tmp_path / "vit.safetensors").exists()
