"""A torch Dataset over an :class:`~csfbench.data.base.ImageSet` at a model's input resolution."""
from __future__ import annotations

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from csfbench.data.base import ImageSet


class TorchImages(Dataset):
    """Items are (uint8 3×S×S tensor, label, index); images not S×S are resized bilinearly (PIL)."""

    def __init__(self, images: ImageSet, image_size: int):
        self.images = images
        self.image_size = image_size

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        img = self.images.image(index)
        if img.shape[0] != self.image_size or img.shape[1] != self.image_size:
            img = np.asarray(Image.fromarray(img).resize((self.image_size, self.image_size), Image.BILINEAR))
        tensor = torch.from_numpy(np.array(img, dtype=np.uint8, copy=True)).permute(2, 0, 1)
        return tensor, int(self.images.labels[index]), index


def make_loader(images: ImageSet, image_size: int, batch_size: int, shuffle: bool = False,
                seed: int = 0, num_workers: int = 0) -> DataLoader:
    """Batches in file order, or shuffled by a generator seeded with ``seed`` (deterministic)."""
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(TorchImages(images, image_size), batch_size=batch_size, shuffle=shuffle,
                      generator=generator, num_workers=num_workers,
                      pin_memory=torch.cuda.is_available(), persistent_workers=False)
