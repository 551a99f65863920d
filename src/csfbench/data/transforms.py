"""Image tensors: uint8 → normalised float, and batch augmentation driven by an explicit generator.

Augmentation runs on whole batches (on the training device) with a ``torch.Generator`` seeded per
epoch, so a resumed training run sees exactly the random crops/flips/cutouts of an uninterrupted one.
"""
from __future__ import annotations

import torch


def normalize(batch: torch.Tensor, mean: list[float], std: list[float]) -> torch.Tensor:
    """uint8 N×3×H×W (0..255) → float32, scaled to [0, 1] then standardised per channel."""
    x = batch.float().div_(255.0)
    m = torch.tensor(mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    s = torch.tensor(std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x - m) / s


def augment(batch: torch.Tensor, generator: torch.Generator, crop_padding: int = 0, hflip: bool = False,
            cutout: int = 0) -> torch.Tensor:
    """Random crop after zero padding, horizontal flip and cutout on a normalised N×3×H×W batch.

    Padding uses 0 in normalised space (the channel mean), cutout sets a ``cutout``-pixel square
    (possibly clipped at the border) to 0, as in DeVries & Taylor.  Random numbers are drawn on the
    CPU from ``generator`` so results do not depend on the device.
    """
    n, _, h, w = batch.shape
    out = batch
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
