"""Build the network of a model spec (see :func:`csfbench.workflow.grid.model_spec`) and load checkpoints."""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from csfbench.errors import CheckpointError
from csfbench.models.network import Classifier
from csfbench.models.vgg import VGG13Encoder
from csfbench.specs import ModelSpec
from csfbench.torch_compat import load_weights


def build_model(spec: ModelSpec, pretrained: bool = True) -> Classifier:
    """The untrained classifier of ``spec``; a ViT starts from its pretrained checkpoint; a timm/torchvision
    classifier (``spec.library``) has its weights file (paradigm ``pretrained``) or its default initialisation
    seeded with the run number (paradigm ``random``).

    ``pretrained=False`` skips loading weights and seeding (used when a checkpoint follows anyway).
    """
    if spec.library is not None:  # a timm/torchvision classifier evaluated without training
        from csfbench.models.pretrained import build_classifier

        kwargs = {k: v for k, v in spec.arch.items() if k != "name"}
        weights = spec.weights if pretrained else None
        return build_classifier(spec.library, spec.arch["name"], spec.n_classes,
                                weights=weights["file"] if weights else None,
                                weights_num_classes=weights["num_classes"] if weights else None,
                                seed=spec.run if spec.paradigm == "random" and pretrained else None, **kwargs)
    n_out = spec.n_classes + (1 if spec.paradigm == "dg" else 0)
    params = spec.paradigm_params
    if spec.backbone == "vgg13":
        encoder = VGG13Encoder(spec.image_size, float(spec.arch["width"]), bool(spec.dropout))
        head = nn.Linear(encoder.feature_dim, n_out)
    elif spec.backbone == "vit":
        from csfbench.models.vit import create_timm_vit, split_vit

        vit = create_timm_vit(spec.arch, n_out, spec.image_size, spec.dropout,
                              spec.pretrained if pretrained else None)
        encoder, head = split_vit(vit)
    else:
        raise ValueError(f"unknown backbone '{spec.backbone}' (known: vgg13, vit)")
    confidnet = ({"confidnet_hidden": int(params["head_hidden"]), "confidnet_layers": int(params["head_layers"])}
                 if spec.paradigm == "confidnet" else {})
    return Classifier(encoder, head, spec.paradigm, spec.n_classes, **confidnet)


def load_checkpoint(spec: ModelSpec, path: str | Path, device: str | torch.device = "cpu") -> Classifier:
    """The trained classifier of ``spec`` from a weights-only ``checkpoint.pt``, in eval mode.

    A file that is not a weights-only state dict of this model raises :class:`CheckpointError`."""
    model = build_model(spec, pretrained=False)
    state = load_weights(path, map_location=device)
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError) as err:
        raise CheckpointError(path, f"not a checkpoint of model {spec.model} ({err})") from None
    return model.to(device).eval()
