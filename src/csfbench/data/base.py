"""In-memory and on-disk image sets behind one small interface.

An :class:`ImageSet` is an indexable collection of RGB images (``uint8``, H×W×3, values 0..255)
with integer labels (``-1`` for samples of a semantic shift, i.e. without a label of the source)
and a ``sample_id`` per image (an index or a relative path) so that any sample can be traced back
to its file.  Readers of the real dataset formats return ImageSets; resizing and normalisation to a
model's input happen later, in :mod:`csfbench.data.transforms`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image


class ImageSet:
    """Abstract image set: ``len()``, ``image(i)``, ``labels`` and ``sample_ids``."""

    name: str
    labels: np.ndarray
    sample_ids: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def image(self, index: int) -> np.ndarray:
        """The image at ``index`` as uint8 H×W×3."""
        raise NotImplementedError

    def subset(self, indices: Sequence[int] | np.ndarray, name: str | None = None) -> "ImageSet":
        """A view on the given indices (order kept)."""
        return SubsetImageSet(self, np.asarray(indices, dtype=np.int64), name or self.name)


@dataclass
class ArrayImageSet(ImageSet):
    """Images held in an N×H×W×3 uint8 array (a numpy array or a read-only memmap)."""

    name: str
    images: np.ndarray
    labels: np.ndarray
    sample_ids: np.ndarray

    def __post_init__(self) -> None:
        if self.images.ndim != 4 or self.images.shape[-1] != 3 or self.images.dtype != np.uint8:
            raise ValueError(
                f"{self.name}: images must be N×H×W×3 uint8, got shape {self.images.shape} dtype {self.images.dtype}"
            )
        self.labels = np.asarray(self.labels, dtype=np.int64)
        self.sample_ids = np.asarray(self.sample_ids).astype(str)
        if not (len(self.images) == len(self.labels) == len(self.sample_ids)):
            raise ValueError(
                f"{self.name}: {len(self.images)} images, {len(self.labels)} labels, {len(self.sample_ids)} ids"
            )

    def image(self, index: int) -> np.ndarray:
        return np.asarray(self.images[index])


@dataclass
class FileImageSet(ImageSet):
    """Images stored as individual files (JPEG/PNG/...) under ``root``, decoded lazily with PIL.

    ``sample_ids`` are the paths relative to ``root``; memory stays bounded by what is being read.
    """

    name: str
    root: Path
    labels: np.ndarray
    sample_ids: np.ndarray

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.labels = np.asarray(self.labels, dtype=np.int64)
        self.sample_ids = np.asarray(self.sample_ids).astype(str)
        if len(self.labels) != len(self.sample_ids):
            raise ValueError(f"{self.name}: {len(self.labels)} labels for {len(self.sample_ids)} files")

    def image(self, index: int) -> np.ndarray:
        with Image.open(self.root / self.sample_ids[index]) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8)


class SubsetImageSet(ImageSet):
    """A subset of another image set, selected by indices."""

    def __init__(self, parent: ImageSet, indices: np.ndarray, name: str):
        self.parent = parent
        self.indices = indices
        self.name = name
        self.labels = parent.labels[indices]
        self.sample_ids = parent.sample_ids[indices]

    def image(self, index: int) -> np.ndarray:
        return self.parent.image(int(self.indices[index]))
