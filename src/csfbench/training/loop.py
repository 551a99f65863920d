"""The training loop: stages, per-epoch checkpoints, exact resume, progress to the log.

After every epoch the full training state (weights, optimiser, scheduler, AMP scaler, the stage's
adaptive state, history) is written atomically to ``resume_path``; a rerun after a kill continues
from the last completed epoch and, on CPU, ends with the same weights as an uninterrupted run
(shuffling, augmentation and dropout are seeded per epoch).  A resume file written for a different
model spec is ignored.  At the end the weights alone go to ``checkpoint_path`` (loadable with
``torch.load(weights_only=True)``) and the per-epoch history to ``history_path`` (CSV).

An epoch is one pass over the training split.  A stage that draws outliers (Outlier Exposure,
:attr:`~csfbench.training.stages.Stage.outlier_batch_size`) takes one outlier batch with every training batch
from :func:`outlier_batches`, which cycles the outlier set (reshuffled each pass) for as long as the epoch lasts
and restarts from the epoch's seed at each epoch, so a resumed run draws the same outliers.
"""
from __future__ import annotations

import contextlib
import csv
import itertools
import logging
import time
from pathlib import Path
from typing import Iterator

import torch
from torch import nn

from csfbench.atomic import atomic_path
from csfbench.seeds import derive_seed, spec_hash
from csfbench.data.base import ImageSet
from csfbench.data.loader import make_loader
from csfbench.data.transforms import augment, normalize
from csfbench.models import build_model
from csfbench.models.network import Classifier
from csfbench.training.stages import Stage, build_stages, warmup_cosine
from csfbench.specs import ModelSpec
from csfbench.torch_compat import load_weights

log = logging.getLogger(__name__)


def resolve_device(preferred: str | None = None) -> torch.device:
    """CUDA when present (or as asked), CPU otherwise."""
    if preferred:
        return torch.device(preferred)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """The mixed-precision dtype on ``device``: bfloat16 on CUDA where supported, else float16; None on CPU."""
    if device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def autocast(device: torch.device):
    """Mixed precision on CUDA (:func:`autocast_dtype`); a no-op context on CPU."""
    dtype = autocast_dtype(device)
    return contextlib.nullcontext() if dtype is None else torch.autocast(device_type="cuda", dtype=dtype)


def atomic_torch_save(obj: object, path: Path) -> None:
    """Write to a temporary name in the same folder, then rename: never a half-written file."""
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def _set_stage_mode(model: Classifier, stage: Stage) -> list[nn.Parameter]:
    model.eval()
    for module in stage.train_modules(model):
        module.train()
    params = stage.params(model)
    wanted = {id(p) for p in params}
    for p in model.parameters():
        p.requires_grad_(id(p) in wanted)
    return params


def _evaluate(model: Classifier, stage: Stage, loader, spec: ModelSpec, device: torch.device, epoch: int) -> dict:
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.no_grad(), autocast(device):
        for images, labels, _ in loader:
            x = normalize(images.to(device), **spec.normalize)
            y = labels.to(device)
            loss, logits = stage.loss(model, x, y, epoch, dict(stage.state))
            total_loss += float(loss) * len(y)
            correct += int((logits.argmax(1) == y).sum())
            count += len(y)
    return {"val_loss": total_loss / count, "val_acc": correct / count}


def outlier_batches(images: ImageSet, spec: ModelSpec, batch_size: int, seed: int,
                    num_workers: int = 0) -> Iterator[torch.Tensor]:
    """Endless uint8 batches (B×3×S×S, S = ``spec.image_size``, at the model's geometry) of the outlier set
    ``images``, labels dropped: pass k over the set is shuffled by ``derive_seed(seed, "outliers", k)``, and the last
    batch of a pass holds the remainder (fewer than ``batch_size`` images when the set size is no multiple of it).
    An empty set raises ``ValueError`` naming it."""
    if len(images) == 0:
        raise ValueError(f"outlier set '{images.name}' has no images")
    for k in itertools.count():
        loader = make_loader(images, spec.image_size, batch_size, shuffle=True, seed=derive_seed(seed, "outliers", k),
                             num_workers=num_workers, **spec.loader_geometry)
        for batch, _, _ in loader:
            yield batch


def _write_history(rows: list[dict], path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _load_resume(path: Path, expected_hash: str) -> dict | None:
    if not path.is_file():
        return None
    state = load_weights(path)
    if state.get("spec_hash") != expected_hash:
        log.warning("ignoring resume file %s: it was written for a different model spec", path)
        return None
    return state


def train_model(spec: ModelSpec, train_set: ImageSet, val_set: ImageSet, checkpoint_path: Path,
                history_path: Path, resume_path: Path, device: torch.device | None = None,
                num_workers: int = 0, outlier_set: ImageSet | None = None) -> Classifier:
    """Train the model of ``spec`` through all stages of its paradigm; see the module docstring.

    ``outlier_set``: the auxiliary outlier images of a stage that draws outliers (paradigm ``oe``; required by it),
    augmented with the training batch they are drawn with."""
    device = device or resolve_device()
    checkpoint_path, history_path, resume_path = Path(checkpoint_path), Path(history_path), Path(resume_path)
    torch.manual_seed(spec.seed)
    model = build_model(spec).to(device)
    optim = spec.optim
    batch_size = int(optim["batch_size"])
    steps_per_epoch = -(-len(train_set) // batch_size)
    stages = build_stages(spec, steps_per_epoch, train_set.labels)
    aug = optim["augment"]
    grad_clip = float(optim["grad_clip"])
    val_loader = make_loader(val_set, spec.image_size, batch_size, num_workers=num_workers, **spec.loader_geometry)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda" and not torch.cuda.is_bf16_supported())

    my_hash = spec_hash(spec.to_dict())
    resume = _load_resume(resume_path, my_hash)
    history: list[dict] = list(resume["history"]) if resume else []
    first_stage = resume["stage"] if resume else 0
    if resume:
        model.load_state_dict(resume["model"])
        log.info("resuming %s from stage %d epoch %d", spec.model, resume["stage"], resume["epoch"])

    for si, stage in enumerate(stages):
        if si < first_stage:
            continue
        if stage.outlier_batch_size and outlier_set is None:
            raise ValueError(f"stage '{stage.name}' of {spec.model} draws outlier batches: give the outlier_set")
        params = _set_stage_mode(model, stage)
        optimizer = stage.optimizer(params)
        total_steps = stage.max_steps or stage.epochs * steps_per_epoch
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(total_steps, stage.warmup_steps))
        start_epoch = 0
        if resume and si == first_stage:
            optimizer.load_state_dict(resume["optimizer"])
            scheduler.load_state_dict(resume["scheduler"])
            scaler.load_state_dict(resume["scaler"])
            stage.state.update(resume["stage_state"])
            start_epoch = resume["epoch"]
        else:
            stage.on_start(model)
        for epoch in range(start_epoch, stage.epochs):
            if scheduler.last_epoch >= total_steps:
                break
            t0 = time.perf_counter()
            _set_stage_mode(model, stage)
            epoch_seed = derive_seed(spec.seed, stage.name, epoch)
            torch.manual_seed(epoch_seed)
            generator = torch.Generator().manual_seed(epoch_seed)
            loader = make_loader(train_set, spec.image_size, batch_size, shuffle=True, seed=epoch_seed,
                                 num_workers=num_workers, **spec.loader_geometry)
            outliers = outlier_batches(outlier_set, spec, stage.outlier_batch_size, epoch_seed, num_workers) \
                if stage.outlier_batch_size else None
            run_loss, run_correct, run_count = 0.0, 0, 0
            for images, labels, _ in loader:
                if scheduler.last_epoch >= total_steps:
                    break
                if outliers is not None:  # the labelled images first, then the outliers (Stage.loss)
                    images = torch.cat([images, next(outliers)])
                x = augment(normalize(images.to(device, non_blocking=True), **spec.normalize), generator, **aug)
                y = labels.to(device, non_blocking=True)
                with autocast(device):
                    loss, logits = stage.loss(model, x, y, epoch, stage.state)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                if grad_clip > 0:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(params, grad_clip)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                run_loss += float(loss.detach()) * len(y)
                run_correct += int((logits.detach().argmax(1) == y).sum())
                run_count += len(y)
            row = {"stage": stage.name, "epoch": epoch + 1, "lr": optimizer.param_groups[0]["lr"],
                   "train_loss": run_loss / max(run_count, 1), "train_acc": run_correct / max(run_count, 1),
                   **_evaluate(model, stage, val_loader, spec, device, epoch),
                   "seconds": round(time.perf_counter() - t0, 3)}
            history.append(row)
            log.info("%s stage %s epoch %d/%d loss %.4f acc %.4f val_loss %.4f val_acc %.4f (%.1fs)",
                     spec.model, stage.name, epoch + 1, stage.epochs, row["train_loss"], row["train_acc"],
                     row["val_loss"], row["val_acc"], row["seconds"])
            atomic_torch_save({"spec_hash": my_hash, "stage": si, "epoch": epoch + 1, "history": history,
                               "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                               "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
                               "stage_state": dict(stage.state)}, resume_path)
        resume = None
    model.eval()
    _write_history(history, history_path)
    atomic_torch_save(model.state_dict(), checkpoint_path)
    resume_path.unlink(missing_ok=True)
    return model
