"""Job of ``rules/shifts.smk``: one corruption set generated from a source's ID test split."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from csfbench.atomic import save_npy
from csfbench.data.sources import source_split
from csfbench.shifts.corruptions import corrupt_images
from csfbench.specs import DatasetSpec

log = logging.getLogger(__name__)


def corrupt_set(dataset: DatasetSpec, val_size: int, corruption: dict, out_images: str | Path,
                out_labels: str | Path) -> None:
    """Corrupt the ID test split of a source (``corruption``: family, severity, seed) into the npy layout."""
    images = source_split(dataset, val_size, "test")
    clean = np.stack([images.image(i) for i in range(len(images))])
    save_npy(corrupt_images(clean, corruption["family"], corruption["severity"], corruption["seed"]), out_images)
    save_npy(images.labels.astype(np.int64), out_labels)
    log.info("%s: %s severity %d on %d images", dataset.name, corruption["family"], corruption["severity"],
             len(images))
