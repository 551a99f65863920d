"""Stream a dataset through a trained model into its HDF5 feature file (memory bounded by the batch)."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch

from csfbench.seeds import derive_seed
from csfbench.data.base import ImageSet
from csfbench.data.loader import make_loader
from csfbench.data.transforms import normalize
from csfbench.features.identity import identity_attrs
from csfbench.features.store import FeatureWriter, run_attrs
from csfbench.heads import class_outputs
from csfbench.models.network import Classifier
from csfbench.provenance import git_commit, package_version, utc_now
from csfbench.training.loop import autocast
from csfbench.specs import CONFIDENCE_PARADIGMS, ModelSpec

log = logging.getLogger(__name__)


def feature_attrs(spec: ModelSpec, dataset: str, split: str, shift_type: str, feature_dim: int) -> dict:
    """The provenance attributes of a feature file (:data:`csfbench.features.store.REQUIRED_ATTRS`)."""
    return {
        **run_attrs(spec), "dataset": dataset, "split": split,
        "shift_type": shift_type, "n_classes": spec.n_classes, "feature_dim": feature_dim,
        "backbone": spec.backbone, "paradigm": spec.paradigm, "dropout": spec.dropout,
        "reward": spec.reward, "run": spec.run, "image_size": spec.image_size,
        "mcd_samples": spec.mcd_samples, "package_version": package_version(), "git_commit": git_commit(),
        "created": utc_now(),
    }


def _forward(model: Classifier, x: torch.Tensor, device: torch.device) -> tuple:
    with autocast(device):
        out = model(x)
    conf = None if out.confidence is None else out.confidence.float()
    return out.logits.float(), out.features.float(), conf


def predict(logits: torch.Tensor, classes: tuple[int, ...] | None = None) -> torch.Tensor:
    """The predicted class of each row: the argmax over every column, or over ``classes`` only (a label
    space's logit mask; the result is always one of ``classes``)."""
    if classes is None:
        return logits.argmax(1)
    index = torch.as_tensor(classes, dtype=torch.long, device=logits.device)
    return index[logits.index_select(1, index).argmax(1)]


@torch.no_grad()
def extract_features(model: Classifier, spec: ModelSpec, images: ImageSet, out_path: str | Path, dataset: str,
                     split: str, shift_type: str, batch_size: int, device: torch.device,
                     compression: str = "gzip", num_workers: int = 0, with_head: bool = False,
                     prediction_classes: tuple[int, ...] | None = None, feature_dtype: str = "float32",
                     identity: dict | None = None) -> Path:
    """Write ``out_path`` for ``images``; with ``spec.mcd_samples`` > 0 also the MC-dropout passes.
    ``feature_dtype``: the storage precision of the features (:data:`csfbench.features.store.FEATURE_DTYPES`).
    ``identity``: the extraction identity of a file shared between studies
    (:func:`csfbench.features.identity.extraction_identity`), recorded in its attributes; None for the others.

    ``prediction_classes``: the classes the prediction (``pred``, hence ``correct``) is the argmax over
    (:func:`predict`; None = every class).

    MC-dropout switches only the Dropout layers on (BatchNorm stays in eval) and is seeded from the
    model seed and the dataset name, so a CPU rerun writes bit-identical arrays.
    """
    model.eval()
    n_passes = int(spec.mcd_samples)
    n_classes = int(spec.n_classes)
    n_outputs = model.head.out_features
    has_conf = model.paradigm in CONFIDENCE_PARADIGMS
    torch.manual_seed(derive_seed(spec.seed, "extract", dataset))
    loader = make_loader(images, spec.image_size, batch_size, num_workers=num_workers, **spec.loader_geometry)
    attrs = feature_attrs(spec, dataset, split, shift_type, model.feature_dim)
    if identity is not None:
        attrs.update(identity_attrs(identity))
    t0, done = time.perf_counter(), 0
    with FeatureWriter(out_path, len(images), n_outputs, model.feature_dim, n_passes, has_conf, attrs,
                       compression, feature_dtype) as writer:
        for batch_idx, (raw, labels, index) in enumerate(loader):
            x = normalize(raw.to(device, non_blocking=True), **spec.normalize)
            logits, features, conf = _forward(model, x, device)
            pred = predict(class_outputs(logits, n_classes), prediction_classes).cpu().numpy()
            labels_np = labels.numpy().astype(np.int64)
            rows = {"logits": logits.cpu().numpy(), "features": features.cpu().numpy(), "labels": labels_np,
                    "pred": pred, "correct": (pred == labels_np) & (labels_np >= 0),
                    "sample_id": images.sample_ids[index.numpy()].astype(object)}
            if has_conf:
                rows["confidence"] = conf.cpu().numpy()
            if n_passes:
                model.set_mc_dropout(True)
                passes = [_forward(model, x, device) for _ in range(n_passes)]
                model.set_mc_dropout(False)
                rows["mcd/logits"] = torch.stack([p[0] for p in passes], 1).cpu().numpy()
                rows["mcd/features_mean"] = torch.stack([p[1] for p in passes]).mean(0).cpu().numpy()
                if has_conf:
                    rows["mcd/confidence"] = torch.stack([p[2] for p in passes], 1).cpu().numpy()
            writer.write_batch(rows)
            done += len(labels_np)
            if batch_idx % 20 == 0:
                log.info("%s/%s: %d/%d samples (%.1f img/s)", spec.model, dataset, done, len(images),
                         done / max(time.perf_counter() - t0, 1e-9))
        if with_head:
            writer.write_head(model.head.weight.detach().float().cpu().numpy(),
                              model.head.bias.detach().float().cpu().numpy())
    log.info("%s/%s: wrote %s (%d samples, %.1fs)", spec.model, dataset, out_path, len(images),
             time.perf_counter() - t0)
    return Path(out_path)
