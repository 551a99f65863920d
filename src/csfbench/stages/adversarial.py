"""Job of ``rules/adversarial.smk``: one white-box adversarial set of a model."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from csfbench.atomic import save_npy
from csfbench.attacks.sets import attack_set
from csfbench.data.sources import source_split
from csfbench.models import load_checkpoint
from csfbench.seeds import derive_seed
from csfbench.specs import ModelSpec
from csfbench.training.loop import resolve_device

log = logging.getLogger(__name__)


def adversarial_set(spec: ModelSpec, attack: dict, checkpoint: str | Path, batch_size: int,
                    out_images: str | Path, out_labels: str | Path) -> dict:
    """Attack the model's ID test split (``attack`` from :func:`csfbench.workflow.grid.attack_spec`) into the npy layout."""
    device = resolve_device()
    log.info("%s/%s: attack %s on %s", spec.source, spec.model, attack, device)
    images = source_split(spec.dataset, spec.val_size, "test")
    model = load_checkpoint(spec, checkpoint, device)
    adv, summary = attack_set(model, spec, images, attack, batch_size, device,
                              derive_seed(spec.seed, "attack", attack["name"], attack["eps"]))
    save_npy(adv, out_images)
    save_npy(images.labels.astype(np.int64), out_labels)
    return summary
