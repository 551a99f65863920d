"""The evaluation sets of a source: train / val / test (the DeVries split) and shifted sets.

Validation = the first ``val_size`` images of the official test split; test = the rest; the
training split is the official one (FD-Shifts' ``devries`` split, as in Claros-Olivares & Brockmeier,
§4.1).  Semantic-shift sets lose their labels (−1), covariate and adversarial sets keep them.
"""
from __future__ import annotations

import numpy as np

from csfbench.data.base import ImageSet
from csfbench.data.formats import open_dataset
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
