"""Jobs of ``rules/train.smk``: the demo's ViT pretraining and the training of one model."""
from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np

from csfbench.atomic import atomic_path
from csfbench.data.sources import check_n_classes, check_val_size, shift_set, source_split
from csfbench.models import build_model
from csfbench.specs import ModelSpec
from csfbench.training.loop import atomic_torch_save, autocast_dtype, resolve_device, train_model

log = logging.getLogger(__name__)


#: paradigms of timm/torchvision classifiers evaluated without training
UNTRAINED = ("pretrained", "random")


def train(spec: ModelSpec, checkpoint: str | Path, history: str | Path, num_workers: int = 0) -> None:
    """Train one model (all paradigm stages) with resume support next to the checkpoint; a model of an
    :data:`UNTRAINED` paradigm is only built (:func:`materialise`).  A spec with ``outliers`` (paradigm ``oe``) also
    reads its auxiliary outlier set: the catalogue dataset's ``split``, through the same reader as an evaluation set,
    labels dropped."""
    if spec.paradigm in UNTRAINED:
        materialise(spec, checkpoint, history)
        return
    train_set = source_split(spec.dataset, spec.val_size, "train")
    check_n_classes(train_set.labels, spec.n_classes, f"sources/{spec.source}/n_classes", spec.dataset.name)
    check_val_size(spec.val_size, len(source_split(spec.dataset, 0, "test")), f"sources/{spec.source}/val_size",
                   spec.dataset.name, "test")
    val_set = source_split(spec.dataset, spec.val_size, "val")
    outlier_set = shift_set(spec.outliers, "semantic") if spec.outliers is not None else None
    checkpoint = Path(checkpoint)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    device = resolve_device()
    log.info("training %s/%s on %s (autocast %s): %d train, %d val images%s", spec.source, spec.model, device,
             autocast_dtype(device), len(train_set), len(val_set),
             "" if outlier_set is None else f", {len(outlier_set)} outlier images of '{spec.outliers.name}'")
    train_model(spec, train_set, val_set, checkpoint, Path(history), checkpoint.with_name("resume.pt"),
                device=device, num_workers=num_workers, outlier_set=outlier_set)


def materialise(spec: ModelSpec, checkpoint: str | Path, history: str | Path) -> None:
    """The checkpoint of a classifier evaluated without training: its weights file loaded through timm's or
    torchvision's own loader (paradigm ``pretrained``; a file that does not fit the architecture raises
    CheckpointError naming it) or its default initialisation seeded with the run number (``random``), written
    as csfbench's weights-only checkpoint (encoder + head).  The history records that nothing was trained."""
    model = build_model(spec)
    n_params = sum(p.numel() for p in model.parameters())
    atomic_torch_save(model.state_dict(), Path(checkpoint))
    source = spec.weights["file"] if spec.paradigm == "pretrained" else f"default initialisation, seed {spec.run}"
    with atomic_path(history) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["stage", "epoch", "parameters", "weights"])
        writer.writerow([spec.paradigm, 0, n_params, source])
    log.info("%s/%s: %s classifier %s (%d parameters) from %s, not trained", spec.source, spec.model, spec.library,
             spec.arch["name"], n_params, source)


def pretrain(spec: ModelSpec, out_file: str | Path, history: str | Path) -> None:
    """Pretrain a timm ViT from scratch (the demo's stand-in for ImageNet-21k weights).

    The result is saved as a timm state dict in safetensors format, loadable through timm's
    pretrained-file mechanism exactly like downloaded weights.
    """
    from safetensors.torch import save_file

    out_file = Path(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    # the pretraining set has a single (train) split: its last val_size images monitor the training
    images = source_split(spec.dataset, spec.val_size, "train")
    check_n_classes(images.labels, spec.n_classes, "backbones/vit/pretrained/num_classes", spec.dataset.name)
    check_val_size(spec.val_size, len(images), "pretrain/val_size", spec.dataset.name, "train")
    cut = len(images) - spec.val_size
    train_set, val_set = images.subset(np.arange(cut)), images.subset(np.arange(cut, len(images)))
    work = out_file.with_name(out_file.stem + ".work")
    work.mkdir(exist_ok=True)
    model = train_model(spec, train_set, val_set, work / "checkpoint.pt", Path(history), work / "resume.pt",
                        device=resolve_device())
    state = {k.removeprefix("encoder.vit."): v.detach().cpu().contiguous()
             for k, v in model.state_dict().items() if k.startswith("encoder.vit.")}
    state.update({f"head.{k}": v.detach().cpu().contiguous() for k, v in model.head.state_dict().items()})
    with atomic_path(out_file) as tmp:
        save_file(state, str(tmp))
    (work / "checkpoint.pt").unlink(missing_ok=True)
    work.rmdir()
