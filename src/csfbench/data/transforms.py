"""Image tensors: uint8 → normalised float, and batch augmentation driven by an explicit generator.

Augmentation runs on whole batches (on the training device) with a ``torch.Generator`` seeded per
epoch, so a resumed training run sees exactly the random crops/flips/cutouts of an uninterrupted one.
"""
from __future__ import annotations

import math

import torch

#: torchvision's and timm's ``RandomResizedCrop`` defaults: the crop's area as a fraction of the image's, and
#: its aspect ratio width / height (drawn log-uniformly)
RRC_SCALE = (0.08, 1.0)
RRC_RATIO = (3 / 4, 4 / 3)


def normalize(batch: torch.Tensor, mean: list[float], std: list[float]) -> torch.Tensor:
    """uint8 N×3×H×W (0..255) → float32, scaled to [0, 1] then standardised per channel."""
    x = batch.float().div_(255.0)
    m = torch.tensor(mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    s = torch.tensor(std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x - m) / s


def resized_crop_box(height: int, width: int, generator: torch.Generator, scale: tuple[float, float] = RRC_SCALE,
                     ratio: tuple[float, float] = RRC_RATIO) -> tuple[int, int, int, int]:
    """``(top, left, h, w)`` in pixels of a random-resized crop of a ``height`` × ``width`` image.

    The algorithm and the order of its random draws are those of torchvision's
    ``RandomResizedCrop.get_params`` (Szegedy et al., *Going deeper with convolutions*, CVPR 2015, the
    "Inception" crop): up to 10 tries of an area fraction uniform in ``scale`` and an aspect ratio w/h
    log-uniform in ``ratio``, kept when the box fits, at a uniform position; else the central crop of the
    largest box whose aspect ratio is clamped to ``ratio``.  Draws come from ``generator``, so a generator
    seeded like torch's global one gives torchvision's box.
    """
    for name, (low, high) in (("scale", scale), ("ratio", ratio)):
        if not 0 < low <= high:
            raise ValueError(f"training augment random_resized_crop.{name}: expected 0 < min <= max, got {[low, high]}")
    area = height * width
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1], generator=generator).item()
        aspect = math.exp(torch.empty(1).uniform_(float(log_ratio[0]), float(log_ratio[1]), generator=generator).item())
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, size=(1,), generator=generator).item())
            left = int(torch.randint(0, width - w + 1, size=(1,), generator=generator).item())
            return top, left, h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def resized_crops(batch: torch.Tensor, generator: torch.Generator, scale: tuple[float, float] = RRC_SCALE,
                        ratio: tuple[float, float] = RRC_RATIO) -> torch.Tensor:
    """Every image of an N×C×H×W float batch cropped to its own :func:`resized_crop_box` (drawn image by image,
    in batch order) and resized back to H×W bilinearly with antialiasing (torchvision's tensor
    ``resized_crop``)."""
    n, _, h, w = batch.shape
    boxes = [resized_crop_box(h, w, generator, scale, ratio) for _ in range(n)]
    return torch.cat([torch.nn.functional.interpolate(batch[i:i + 1, :, t:t + bh, l:l + bw], size=(h, w),
                                                      mode="bilinear", align_corners=False, antialias=True)
                      for i, (t, l, bh, bw) in enumerate(boxes)])


def augment(batch: torch.Tensor, generator: torch.Generator, crop_padding: int = 0, hflip: bool = False,
            cutout: int = 0, random_resized_crop: dict | None = None) -> torch.Tensor:
    """Random crop (after zero padding, or random-resized), horizontal flip and cutout on a normalised
    N×3×H×W batch, in that order.

    Padding uses 0 in normalised space (the channel mean), cutout sets a ``cutout``-pixel square
    (possibly clipped at the border) to 0, as in DeVries & Taylor.  ``random_resized_crop``
    (``{"scale": [min, max], "ratio": [min, max]}``, the config's ``augment.random_resized_crop``; None = off)
    replaces the padded crop by :func:`resized_crops` of the loaded S×S image; the two crops exclude
    each other.  Random numbers are drawn on the CPU from ``generator`` so results do not depend on the device.
    """
    n, _, h, w = batch.shape
    out = batch
    if random_resized_crop is not None:
        if crop_padding > 0:
            raise ValueError("training augment: crop_padding and random_resized_crop are two random crops; set one")
        out = resized_crops(batch, generator, tuple(random_resized_crop.get("scale", RRC_SCALE)),
                            tuple(random_resized_crop.get("ratio", RRC_RATIO)))
    if crop_padding > 0:
        p = crop_padding
        padded = torch.nn.functional.pad(batch, (p, p, p, p))
        offsets = torch.randint(0, 2 * p + 1, (n, 2), generator=generator).tolist()
        out = torch.stack([padded[i, :, dy:dy + h, dx:dx + w] for i, (dy, dx) in enumerate(offsets)])
    if hflip:
        flip = (torch.rand(n, generator=generator) < 0.5).to(out.device)
        out = torch.where(flip.view(n, 1, 1, 1), out.flip(-1), out)
    if cutout > 0:
        centres = torch.stack([torch.randint(0, h, (n,), generator=generator),
                               torch.randint(0, w, (n,), generator=generator)], dim=1).to(out.device)
        ys = torch.arange(h, device=out.device).view(1, h, 1)
        xs = torch.arange(w, device=out.device).view(1, 1, w)
        top = centres[:, 0].view(n, 1, 1) - cutout // 2
        left = centres[:, 1].view(n, 1, 1) - cutout // 2
        inside = (ys >= top) & (ys < top + cutout) & (xs >= left) & (xs < left + cutout)
        out = out.masked_fill(inside.unsqueeze(1), 0.0)
    return out

