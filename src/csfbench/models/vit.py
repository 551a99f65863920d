"""Vision Transformer encoder through timm, fine-tuned from a local pretrained checkpoint.

The checkpoint is loaded with timm's own pretrained-file mechanism
(``pretrained_cfg_overlay=dict(file=...)``) — the code path a cluster user takes with real ImageNet-21k
weights (``vit_base_patch16_224_in21k``); timm also resamples the position embedding to ``img_size``.
``num_classes`` of ``pretrained`` is the class count of the *checkpoint's* head, and the file is loaded
**strictly** by :func:`csfbench.models.timm_files.timm_from_file` into a ViT with that head: it must hold
every tensor of the ViT, its head of ``num_classes`` outputs included.  A file holding none of them, a part
(no blocks, no head), a deeper ViT's or another head's, a malformed ``.safetensors`` file and a pickle that
references code all raise :class:`~csfbench.errors.CheckpointError` naming the file (with the number of the
ViT's tensors it holds and a few it lacks) — never a ViT fine-tuned from random initialisation.

When the class counts agree the checkpoint's head is kept; otherwise the new head is the one timm's
constructor draws for a ViT of the new class count from the caller's random stream (the same numbers as
before strict loading), and the checkpoint's ViT is built in a forked stream.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from csfbench.torch_compat import ensure_torchvision

ensure_torchvision()
import timm  # noqa: E402  (needs the torchvision fix above on CPU-only torch)


def create_timm_vit(arch: dict, n_classes: int, image_size: int, dropout: int,
                    pretrained: dict | None) -> nn.Module:
    """A timm ViT with ``n_classes`` outputs; weights from ``pretrained['file']`` when given (see the module)."""
    name = arch["timm_name"]
    kwargs = {k: v for k, v in arch.items() if k not in ("timm_name", "drop_rate")}
    kwargs["drop_rate"] = float(arch["drop_rate"]) * dropout if dropout else 0.0
    kwargs["img_size"] = image_size
    if pretrained is None:
        return timm.create_model(name, pretrained=False, num_classes=n_classes, **kwargs)
    path = Path(pretrained["file"])
    if not path.is_file():
        raise FileNotFoundError(f"pretrained ViT weights not found: {path} (backbones/vit/pretrained/file)")
    from csfbench.models.timm_files import timm_from_file

    file_classes = int(pretrained["num_classes"])
    if file_classes == n_classes:
        return timm_from_file(name, path, n_classes, **kwargs)
    vit = timm.create_model(name, pretrained=False, num_classes=n_classes, **kwargs)  # draws the new head
    with torch.random.fork_rng(devices=[]):
        loaded = timm_from_file(name, path, file_classes, **kwargs)
        loaded.reset_classifier(n_classes)
    loaded.head.load_state_dict(vit.head.state_dict())
    return loaded


class ViTEncoder(nn.Module):
    """The timm ViT without its classifier: N×3×S×S → N×D pre-logit features."""

    def __init__(self, vit: nn.Module):
        super().__init__()
        self.vit = vit
        self.feature_dim = vit.num_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.vit.forward_head(self.vit.forward_features(x), pre_logits=True)

    def block_maps(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The output of every transformer block, channel-first (N×D×T: the D embedding units as channels,
        the T tokens as positions); the last one is the map :meth:`from_last_block` continues from."""
        vit = self.vit
        x = vit.norm_pre(vit.patch_drop(vit._pos_embed(vit.patch_embed(x))))
        maps = []
        for block in vit.blocks:
            x = block(x)
            maps.append(x.transpose(1, 2))
        return maps

    def from_last_block(self, last: torch.Tensor) -> torch.Tensor:
        """The pre-logit features from the last block map (N×D×T; the rest of :meth:`forward`)."""
        return self.vit.forward_head(self.vit.norm(last.transpose(1, 2)), pre_logits=True)


def split_vit(vit: nn.Module) -> tuple[ViTEncoder, nn.Linear]:
    """Detach the classifier of a timm ViT: returns (encoder, head)."""
    head = vit.head
    vit.head = nn.Identity()
    return ViTEncoder(vit), head
