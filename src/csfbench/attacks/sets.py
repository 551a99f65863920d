"""Adversarial evaluation sets: attack every image of an ID set against one trained classifier.

Images are attacked at the model's input resolution in [0, 1] pixel space (normalisation happens
inside the differentiable forward) and stored as uint8, like the published adversarial image sets:
the perturbation is rounded to whole 1/255 steps and clipped to ⌊ε⌋ of them, so the stored images
keep to the ε-ball (an ε below 1/255 stores the clean images).
"""
from __future__ import annotations

import logging

import numpy as np
import torch

from csfbench.attacks.pgd import fgsm, pgd_linf
from csfbench.data.base import ImageSet
from csfbench.data.loader import make_loader
from csfbench.heads import class_outputs
from csfbench.models.network import Classifier
from csfbench.specs import ModelSpec

log = logging.getLogger(__name__)

ATTACKS = ("pgd", "fgsm")


def pixel_forward(model: Classifier, spec: ModelSpec):
    """Logits of the ``n_classes`` classes (DG's abstention output dropped) for [0, 1] pixel batches."""
    mean = torch.tensor(spec.normalize["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(spec.normalize["std"]).view(1, 3, 1, 1)
    n_classes = int(spec.n_classes)

    def forward(x: torch.Tensor) -> torch.Tensor:
        return class_outputs(model((x - mean.to(x.device)) / std.to(x.device)).logits, n_classes)

    return forward


def attack_set(model: Classifier, spec: ModelSpec, images: ImageSet, attack: dict, batch_size: int,
               device: torch.device, seed: int) -> tuple[np.ndarray, dict]:
    """Attack ``images``; return the uint8 N×S×S×3 adversarial images and a summary (errors before/after).

    ``attack``: ``{"name": "pgd"|"fgsm", "eps": ε in 1/255 units, "steps", "step_size" (1/255 units),
    "random_start"}`` (steps/step_size/random_start for PGD only).
    """
    if attack["name"] not in ATTACKS:
        raise ValueError(f"unknown attack {attack['name']!r}; known: {', '.join(ATTACKS)}")
    model.eval()
    forward = pixel_forward(model, spec)
    eps = float(attack["eps"]) / 255.0
    generator = torch.Generator().manual_seed(seed)
    out, clean_wrong, adv_wrong = [], 0, 0
    for raw, labels, _ in make_loader(images, spec.image_size, batch_size, **spec.loader_geometry):
        if (labels < 0).any():
            raise ValueError(f"{images.name}: adversarial sets need labelled images (found label -1)")
        x = raw.to(device).float() / 255.0
        y = labels.to(device)
        if attack["name"] == "pgd":
            x_adv = pgd_linf(forward, x, y, eps, int(attack["steps"]), float(attack["step_size"]) / 255.0,
                             bool(attack["random_start"]), generator)
        else:
            x_adv = fgsm(forward, x, y, eps)
        # rounded to whole 1/255 steps, at most floor(ε): the stored images stay in the ε-ball
        whole = float(np.floor(attack["eps"]))
        delta = torch.round((x_adv - x) * 255.0).clamp(-whole, whole)
        stored = (raw.to(device).float() + delta).clamp(0, 255).round().to(torch.uint8)
        with torch.no_grad():
            clean_wrong += int((forward(x).argmax(1) != y).sum())
            adv_wrong += int((forward(stored.float() / 255.0).argmax(1) != y).sum())
        out.append(stored.permute(0, 2, 3, 1).cpu().numpy())
    n = len(images)
    summary = {"n": n, "clean_error": clean_wrong / max(n, 1), "adversarial_error": adv_wrong / max(n, 1)}
    log.info("%s eps=%s/255 on %s: error %.3f -> %.3f", attack["name"], attack["eps"], images.name,
             summary["clean_error"], summary["adversarial_error"])
    return np.concatenate(out) if out else np.zeros((0, spec.image_size, spec.image_size, 3), np.uint8), summary
