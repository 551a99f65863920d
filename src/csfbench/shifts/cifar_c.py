"""Write corrupted sets in the official CIFAR-10-C / CIFAR-100-C layout.

``{folder}/{corruption}.npy`` holds the 5 severities stacked (severity ``s`` = rows
``(s-1)·N … s·N``, uint8 N·5×H×W×3) and ``{folder}/labels.npy`` the labels tiled 5 times, exactly as
in the Zenodo archives, so the generated archive is read by the same reader as the real one
(:func:`csfbench.data.readers.read_cifar_c`, dataset format ``cifar_c``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from csfbench.atomic import save_npy
from csfbench.shifts.corruptions import SEVERITIES, corrupt_images


def write_cifar_c_archive(folder: str | Path, images: np.ndarray, labels: np.ndarray, families: list[str],
                          seed: int) -> list[Path]:
    """Corrupt ``images`` (N×H×W×3 uint8) at the 5 severities of every family into ``folder``; return the files."""
    folder = Path(folder)
    labels = np.asarray(labels)
    if len(labels) != len(images):
        raise ValueError(f"write_cifar_c_archive: {len(images)} images but {len(labels)} labels")
    written = []
    for family in families:
        stacked = np.concatenate([corrupt_images(images, family, s, seed) for s in SEVERITIES])
        save_npy(stacked, folder / f"{family}.npy")
        written.append(folder / f"{family}.npy")
    save_npy(np.tile(labels.astype(np.uint8 if labels.max(initial=0) < 256 else np.int64), len(SEVERITIES)),
          folder / "labels.npy")
    return [*written, folder / "labels.npy"]
