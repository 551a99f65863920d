"""The evaluation sets of a source: train / val / test (the DeVries split) and shifted sets.

Validation = the first ``val_size`` images of the official test split; test = the rest; the
training split is the official one (FD-Shifts' ``devries`` split, as in Claros-Olivares & Brockmeier,
§4.1).  Semantic-shift sets lose their labels (−1), covariate and adversarial sets keep them.
"""
from __future__ import annotations

import numpy as np

from csfbench.data.base import ImageSet
from csfbench.data.formats import open_dataset
from csfbench.errors import ConfigError
from csfbench.specs import DatasetSpec


def _open(dataset: DatasetSpec, split: str) -> ImageSet:
    return open_dataset(dataset.format, dataset.path, split, dataset.name, **dataset.options)


def source_split(dataset: DatasetSpec, val_size: int, split: str) -> ImageSet:
    """``split`` ∈ {train, val, test} of the source described by ``dataset`` (a config dataset spec)."""
    if split == "train":
        return _open(dataset, "train")
    official = _open(dataset, "test")
    if val_size >= len(official):
        raise ValueError(f"dataset '{dataset.name}': val_size {val_size} leaves no test images "
                         f"(official test split has {len(official)})")
    if split == "val":
        return official.subset(np.arange(val_size), f"{dataset.name}-val")
    if split == "test":
        return official.subset(np.arange(val_size, len(official)), f"{dataset.name}-test")
    raise ValueError(f"unknown split '{split}' (expected train, val or test)")


def check_n_classes(labels: np.ndarray, n_classes: int, key: str, dataset: str) -> None:
    """The training ``labels`` of dataset ``dataset`` must be the classes 0..n_classes-1, each with an image.

    Raises a :class:`ConfigError` at ``key`` (the config key of ``n_classes``) saying which labels
    the train split holds.
    """
    present = np.unique(labels)
    if np.array_equal(present, np.arange(n_classes)):
        return
    found = f"labels {present.min()}..{present.max()} found in the train split of dataset '{dataset}'"
    if np.array_equal(present, np.arange(len(present))):  # the classes 0..k-1: n_classes must be k
        raise ConfigError(key, f"{len(present)} ({found}: {len(present)} classes)", n_classes)
    problem = f"{found}: {len(present)} distinct"
    missing = np.setdiff1d(np.arange(n_classes), present)
    if len(missing):
        problem += f"; classes without an image: {missing[:10].tolist()}" + (" ..." if len(missing) > 10 else "")
    raise ConfigError(key, f"labels 0..{n_classes - 1}, each class with an image ({problem})", n_classes)


def check_val_size(val_size: int, n_images: int, key: str, dataset: str, split: str) -> None:
    """The ``val_size`` validation images are taken from ``split`` (``n_images`` images) of ``dataset``
    and at least one image must remain; else a :class:`ConfigError` at ``key`` (the config key of ``val_size``)."""
    if val_size >= n_images:
        raise ConfigError(key, f"at most N-1 = {n_images - 1} (the {split} split of dataset '{dataset}' has "
                               f"N = {n_images} images; validation takes val_size of them and leaves the rest)",
                          val_size)


class _Unlabelled(ImageSet):
    def __init__(self, parent: ImageSet):
        self.parent = parent
        self.name = parent.name
        self.labels = np.full(len(parent), -1, dtype=np.int64)
        self.sample_ids = parent.sample_ids

    def image(self, index: int) -> np.ndarray:
        return self.parent.image(index)


def shift_set(dataset: DatasetSpec, shift_type: str) -> ImageSet:
    """A shifted evaluation set; labels dropped (−1) for a semantic shift."""
    images = _open(dataset, dataset.split)
    return _Unlabelled(images) if shift_type == "semantic" else images
