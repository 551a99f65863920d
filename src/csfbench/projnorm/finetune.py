"""ProjNorm (Yu et al., ICML 2022, §2.1, Algorithm 1): fine-tunes from θ₀ and the parameter distance.

* θ₀ (:func:`initial_model`): the model's architecture built right after ``torch.manual_seed(seed)``:
  a ViT starts from its pretrained checkpoint with a seeded new head (the paper's setting); a VGG has no
  pretrained weights here, so θ₀ is the seeded random initialisation (the paper assumes a pretrained θ₀;
  this is csfbench's choice).  Both fine-tunes of one study use the same seed, hence the same θ₀.
* :func:`finetune`: SGD (momentum, weight decay, cosine decay over the ``iterations`` steps), batches
  of ``batch_size`` drawn by a seeded shuffle (reshuffled every pass), train mode, no augmentation,
  cross-entropy of the given labels on the ``n_classes`` class logits.  Only the classification path
  (``encoder`` and ``head``) is trained; the paradigm's confidence branch is not part of θ.
* :func:`parameter_distance`: ‖θ_a − θ_b‖₂ over the trainable parameters of the classification path
  (BatchNorm running statistics are buffers, not parameters, and are excluded as in the authors' code).
"""
from __future__ import annotations

import logging
import math
import time

import numpy as np
import torch
from torch.nn import functional as F

from csfbench.data.base import ImageSet
from csfbench.data.loader import make_loader
from csfbench.data.transforms import normalize
from csfbench.models import build_model
from csfbench.models.network import Classifier
from csfbench.specs import ModelSpec
from csfbench.heads import class_outputs

log = logging.getLogger(__name__)

TRAINED_PARTS = ("encoder", "head")


def trained_parameters(model: Classifier) -> dict[str, torch.Tensor]:
    """The parameters ProjNorm fine-tunes and measures, by name (``encoder.*``, ``head.*``)."""
    return {name: p for name, p in model.named_parameters() if name.split(".")[0] in TRAINED_PARTS}


def initial_model(spec: ModelSpec, seed: int, device: torch.device) -> Classifier:
    """θ₀: a fresh model of ``spec`` (pretrained backbone where the spec has one), seeded head."""
    torch.manual_seed(seed)
    return build_model(spec, pretrained=True).to(device)


@torch.no_grad()
def predict(model: Classifier, spec: ModelSpec, images: ImageSet, batch_size: int, device: torch.device) -> np.ndarray:
    """Predicted classes (argmax over the ``n_classes`` class logits, eval mode) of every image."""
    model.eval()
    preds = []
    for raw, _, _ in make_loader(images, spec.image_size, batch_size, **spec.loader_geometry):
        x = normalize(raw.to(device), **spec.normalize)
        preds.append(class_outputs(model(x).logits, spec.n_classes).argmax(1).cpu().numpy())
    return np.concatenate(preds) if preds else np.zeros(0, np.int64)


def finetune(model: Classifier, spec: ModelSpec, images: ImageSet, labels: np.ndarray, settings: dict,
             device: torch.device) -> Classifier:
    """Fine-tune ``model`` in place on (``images``, ``labels``) for ``settings['iterations']`` SGD steps.

    ``settings``: iterations, lr, batch_size, momentum, weight_decay, seed (shuffling).
    """
    labels = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    if len(labels) != len(images) or len(labels) == 0:
        raise ValueError(f"{images.name}: fine-tuning needs one label per image, got {len(labels)} for {len(images)}")
    if labels.min() < 0 or labels.max() >= spec.n_classes:
        raise ValueError(f"{images.name}: labels must lie in 0..{spec.n_classes - 1}")
    iterations = int(settings["iterations"])
    params = list(trained_parameters(model).values())
    optimizer = torch.optim.SGD(params, lr=float(settings["lr"]), momentum=float(settings["momentum"]),
                                weight_decay=float(settings["weight_decay"]))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=iterations)
    model.train()
    step, epoch, t0 = 0, 0, time.perf_counter()
    while step < iterations:
        loader = make_loader(images, spec.image_size, int(settings["batch_size"]), shuffle=True,
                             seed=int(settings["seed"]) + epoch, **spec.loader_geometry)
        for raw, _, index in loader:
            x = normalize(raw.to(device), **spec.normalize)
            loss = F.cross_entropy(class_outputs(model(x).logits, spec.n_classes).float(), labels[index].to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if step == iterations:
                break
        epoch += 1
    log.info("fine-tuned %s on %s: %d steps, last loss %.4f, %.1fs", spec.model, images.name, iterations,
             float(loss.detach()), time.perf_counter() - t0)
    return model.eval()


def parameter_distance(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """‖a − b‖₂ over all named tensors (the same names and shapes in both; float64 accumulation)."""
    if a.keys() != b.keys():
        raise ValueError(f"parameter sets differ: {sorted(set(a) ^ set(b))[:5]}")
    total = 0.0
    for name, value in a.items():
        if value.shape != b[name].shape:
            raise ValueError(f"parameter {name!r}: shape {tuple(value.shape)} vs {tuple(b[name].shape)}")
        total += float(((value.detach().double().cpu() - b[name].detach().double().cpu()) ** 2).sum())
    return math.sqrt(total)
