"""A torch Dataset over an :class:`~csfbench.data.base.ImageSet` at a model's input resolution.

How an image of any shape becomes S×S is the *geometry* (:func:`fit_geometry`):

* ``stretch``: resize both sides to S, the aspect ratio lost.  An image already S×S is
  left untouched.
* ``resize_crop``: resize the shorter side to ``floor(S / crop_pct)`` (the longer side in proportion,
  truncated), then take the centred S×S crop.  This is the ImageNet evaluation of torchvision's weights
  (resize 256 → crop 224, used for all thirteen classifiers by Yang, Zhang & Russakovsky, "ImageNet-OOD:
  Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024) and timm's ``crop_mode='center'``
  (Wightman, "PyTorch Image Models", 2019).
* ``stretch_crop``: resize both sides to ``floor(S / crop_pct)``, then take the centred S×S crop; timm's
  ``crop_mode='squash'`` and the evaluation of Krumpl, Avenhaus & Possegger, "ICONIC-444: ..." (arXiv
  2601.10802, 2026): resize to 256×256, centre-crop 224.
* ``pad``: pad the shorter side symmetrically with ``fill`` to a square (the odd pixel right/bottom), then
  resize to S×S: nothing is cut and the aspect ratio is kept.

All resizing is PIL's (antialiased), with the sizes and crop offsets computed exactly as
``torchvision.transforms.Resize`` / ``CenterCrop`` / ``Pad`` do on PIL images, so the pixels equal theirs.

The geometry's defaults are the configuration schema's (``image_geometry``: the bilinear stretch, crop
fraction 0.875); every function here takes the geometry explicitly except :func:`make_loader`, whose
keyword defaults stand in for the default geometry that a model spec leaves out
(:attr:`csfbench.specs.ModelSpec.loader_geometry` is ``{}`` for it).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from csfbench.data.base import ImageSet

GEOMETRIES = ("stretch", "resize_crop", "stretch_crop", "pad")
INTERPOLATIONS = {
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "nearest": Image.Resampling.NEAREST,
}
#: the schema's ``image_geometry`` default crop fraction, :func:`make_loader`'s default
DEFAULT_CROP_PCT = 0.875


def check_geometry(geometry: str, crop_pct: float, interpolation: str) -> None:
    """Raise ``ValueError`` naming the bad value unless ``geometry``, ``crop_pct`` (0 < p ≤ 1) and
    ``interpolation`` are known."""
    if geometry not in GEOMETRIES:
        raise ValueError(f"unknown image geometry '{geometry}' (known: {', '.join(GEOMETRIES)})")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"unknown interpolation '{interpolation}' (known: {', '.join(INTERPOLATIONS)})")
    if not (isinstance(crop_pct, (int, float)) and 0 < crop_pct <= 1):
        raise ValueError(f"crop_pct must be a number in (0, 1], got {crop_pct!r}")


def resize_size(image_size: int, crop_pct: float) -> int:
    """The side the image is resized to before an S×S centre crop: ``floor(S / crop_pct)``, timm's
    ``scale_size``.  Float noise below 1e-6 is rounded away first, so a crop fraction written as
    ``224 / 232`` (torchvision's IMAGENET1K_V2 resize) gives 232, not 231."""
    return int(math.floor(round(image_size / crop_pct, 6)))


def _resize_shorter(img: Image.Image, size: int, resample) -> Image.Image:
    """torchvision ``Resize(size)``: the shorter side to ``size``, the longer ``int(size · long / short)``."""
    w, h = img.size
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = size, int(size * long / short)
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    if (new_w, new_h) == (w, h):
        return img
    return img.resize((new_w, new_h), resample)


def _center_crop(img: Image.Image, size: int) -> Image.Image:
    """torchvision ``CenterCrop(size)`` on an image at least ``size`` on both sides."""
    w, h = img.size
    top = int(round((h - size) / 2.0))
    left = int(round((w - size) / 2.0))
    return img.crop((left, top, left + size, top + size))


def _pad_square(img: Image.Image, fill: int | Sequence[int]) -> Image.Image:
    w, h = img.size
    side = max(w, h)
    if w == h:
        return img
    colour = (int(fill),) * 3 if isinstance(fill, (int, np.integer)) else tuple(int(v) for v in fill)
    canvas = Image.new("RGB", (side, side), colour)
    canvas.paste(img, ((side - w) // 2, (side - h) // 2))
    return canvas


def fit_geometry(img: np.ndarray, image_size: int, geometry: str, crop_pct: float, interpolation: str,
                 fill: int | Sequence[int] = 0) -> np.ndarray:
    """An H×W×3 uint8 image as an S×S×3 uint8 image by ``geometry`` (see the module docstring).

    ``crop_pct`` is used by ``resize_crop`` and ``stretch_crop``, ``fill`` (0..255, one value or RGB) by
    ``pad``; ``interpolation`` is ``bilinear``, ``bicubic`` or ``nearest``.
    """
    check_geometry(geometry, crop_pct, interpolation)
    s = int(image_size)
    if geometry == "stretch" and img.shape[0] == s and img.shape[1] == s:
        return img
    resample = INTERPOLATIONS[interpolation]
    pil = Image.fromarray(np.ascontiguousarray(img))
    if geometry == "stretch":
        pil = pil.resize((s, s), resample)
    elif geometry == "resize_crop":
        pil = _center_crop(_resize_shorter(pil, resize_size(s, crop_pct), resample), s)
    elif geometry == "stretch_crop":
        side = resize_size(s, crop_pct)
        if pil.size != (side, side):
            pil = pil.resize((side, side), resample)
        pil = _center_crop(pil, s)
    else:  # pad
        pil = _pad_square(pil, fill)
        if pil.size != (s, s):
            pil = pil.resize((s, s), resample)
    return np.asarray(pil)


class TorchImages(Dataset):
    """Items are (uint8 3×S×S tensor, label, index); images are brought to S×S by ``geometry``,
    ``crop_pct``, ``interpolation`` and ``fill`` (:func:`fit_geometry`)."""

    def __init__(self, images: ImageSet, image_size: int, geometry: str, crop_pct: float, interpolation: str,
                 fill: int | Sequence[int] = 0):
        check_geometry(geometry, crop_pct, interpolation)
        self.images = images
        self.image_size = image_size
        self.geometry = geometry
        self.crop_pct = crop_pct
        self.interpolation = interpolation
        self.fill = fill

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        img = fit_geometry(self.images.image(index), self.image_size, self.geometry, self.crop_pct,
                           self.interpolation, self.fill)
        tensor = torch.from_numpy(np.array(img, dtype=np.uint8, copy=True)).permute(2, 0, 1)
        return tensor, int(self.images.labels[index]), index


def make_loader(images: ImageSet, image_size: int, batch_size: int, shuffle: bool = False,
                seed: int = 0, num_workers: int = 0, *, geometry: str = "stretch",
                crop_pct: float = DEFAULT_CROP_PCT, interpolation: str = "bilinear",
                fill: int | Sequence[int] = 0) -> DataLoader:
    """Batches in file order, or shuffled by a generator seeded with ``seed`` (deterministic).

    ``geometry``, ``crop_pct``, ``interpolation`` and ``fill`` choose how images become S×S
    (:func:`fit_geometry`); the defaults are the schema's default geometry, the bilinear stretch, kept for
    the callers that pass a model's :attr:`~csfbench.specs.ModelSpec.loader_geometry` (``{}`` for it) or
    none (:mod:`csfbench.proximity.encoders`)."""
    generator = torch.Generator().manual_seed(seed)
    dataset = TorchImages(images, image_size, geometry=geometry, crop_pct=crop_pct, interpolation=interpolation,
                          fill=fill)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                      generator=generator, num_workers=num_workers,
                      pin_memory=torch.cuda.is_available(), persistent_workers=False)
