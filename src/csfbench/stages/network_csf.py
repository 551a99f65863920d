"""Jobs of ``rules/network_csf.smk``: the CSFs that need the network (ODIN-IP, GRAM, RankFeat).

One job per model fits them on the ID training and validation images; one job per model scores every
evaluation set and writes the scores file and the metric rows in the format and place of every other CSF's
(fit group ``network``): the results table, rankings and report need no special case.  Correctness and
labels are the feature files' (those of every other CSF of the model).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from csfbench.csf.projection import NETWORK_SCORER
from csfbench.data.base import ImageSet
from csfbench.data.eval_sets import eval_images
from csfbench.data.loader import make_loader
from csfbench.data.sources import source_split
from csfbench.data.transforms import normalize
from csfbench.features.store import feature_expect, read_features, run_attrs
from csfbench.models import load_checkpoint
from csfbench.network_csf import detectors as network
from csfbench.network_csf.store import read_network_fit, write_network_fit
from csfbench.provenance import git_commit, package_version, utc_now
from csfbench.specs import EvalSet, ModelSpec
from csfbench.training.loop import resolve_device
from csfbench.workflow.sections import NetworkCsfFit

if TYPE_CHECKING:
    from csfbench.evaluation import Bootstrap

log = logging.getLogger(__name__)


def _batches(spec: ModelSpec, images: ImageSet, batch_size: int, device: torch.device, num_workers: int = 0):
    """A re-iterable source of normalised float32 batches, in file order."""
    def batches():
        for raw, _, _ in make_loader(images, spec.image_size, batch_size, num_workers=num_workers, **spec.loader_geometry):
            yield normalize(raw.to(device, non_blocking=True), **spec.normalize)
    return batches


def _provenance(spec: ModelSpec) -> dict:
    return {**run_attrs(spec), "package_version": package_version(), "git_commit": git_commit(), "created": utc_now()}


def fit_network_csf(spec: ModelSpec, settings: NetworkCsfFit, checkpoint: str | Path, out_h5: str | Path,
                    batch_size: int, num_workers: int = 0) -> None:
    """Fit the network-pass CSFs of one model on its ID training and validation images (``settings``: the
    config's ``network_csf`` section, the part a fit reads).  ODIN's validation correctness is this pass's own
    prediction."""
    chosen = network.NetworkSettings.from_config(settings.to_dict())
    device = resolve_device()
    model = load_checkpoint(spec, checkpoint, device)
    train = source_split(spec.dataset, spec.val_size, "train")
    val = source_split(spec.dataset, spec.val_size, "val")
    t0 = time.perf_counter()
    val_batches = _batches(spec, val, batch_size, device, num_workers)
    with torch.no_grad():
        pred = np.concatenate([model.class_logits(x).argmax(1).cpu().numpy() for x in val_batches()])
    val_correct = pred == val.labels
    fitted = network.fit(model, _batches(spec, train, batch_size, device, num_workers), val_batches, val_correct,
                         chosen, spec.normalize["std"])
    attrs = {**_provenance(spec), "source": spec.source, "model": spec.model}
    write_network_fit(out_h5, fitted, attrs)
    log.info("%s: fitted %s on %d train and %d val images on %s (%.1fs)", spec.model, list(chosen.methods),
             len(train), len(val), device, time.perf_counter() - t0)


def network_csf(spec: ModelSpec, eval_sets: list[EvalSet], checkpoint: str | Path, fit_h5: str | Path,
                features: dict[str, str | Path], out_scores: str | Path, out_metrics: str | Path,
                metrics: tuple[str, ...], batch_size: int, num_workers: int = 0,
                bootstrap: Bootstrap | None = None) -> None:
    """Score every evaluation set of a model with its fitted network-pass CSFs; write one scores file and one
    metrics file through :func:`csfbench.csf.score_files.write_set_scores`, as ``score_csf`` writes them.
    ``features``: {set: feature file}, whose correctness and labels the rows use; ``metrics``: the metric names
    of the rows; the ``tuning_protocol`` column comes from the fit; ``bootstrap``: the rows' intervals
    (:class:`csfbench.evaluation.Bootstrap`; None: none)."""
    # imported here, not at the top: the CSF registry and pandas would cost every fit job ~1 s of start-up
    from csfbench.csf.inputs import load_splits
    from csfbench.csf.score_files import write_set_scores
    from csfbench.evaluation import Bootstrap

    fitted, attrs = read_network_fit(fit_h5)
    expect_run = run_attrs(spec)
    if attrs["model"] != spec.model or attrs["config_hash"] != expect_run["config_hash"]:
        raise ValueError(f"{fit_h5}: network CSF fit of model {attrs['model']!r} (config_hash "
                         f"{attrs['config_hash']}), expected {spec.model!r}")
    protocols = network.tuning_protocols(fitted)
    device = resolve_device()
    model = load_checkpoint(spec, checkpoint, device)

    def score_set(eval_set: EvalSet):
        t0 = time.perf_counter()
        path = features[eval_set.name]
        split = load_splits(path, ("det",), {**feature_expect(spec), "dataset": eval_set.name})["det"]
        images = eval_images(spec, eval_set)
        feature_ids = read_features(path, keys=("sample_id",))[0]["sample_id"].astype(str)
        if not np.array_equal(np.asarray(images.sample_ids).astype(str), feature_ids):
            raise ValueError(f"{eval_set.name}: the images are not those of {path} ({len(images)} vs "
                             f"{len(feature_ids)} samples, or another order): re-extract its features")
        conf = network.score(model, _batches(spec, images, batch_size, device, num_workers), fitted,
                             spec.normalize["std"])
        for name, values in conf.items():
            bad = int((~np.isfinite(values)).sum())
            if bad:
                log.warning("%s/%s: %s has %d non-finite confidences", spec.model, eval_set.name, name, bad)
        log.info("%s/%s: %d images scored with %s on %s (%.1fs)", spec.model, eval_set.name, len(images),
                 list(conf), device, time.perf_counter() - t0)
        scores = {(name, "none"): values for name, values in conf.items()}
        return {"det": split}, {"det": scores}, {"det": {key: protocols[key[0]] for key in scores}}

    write_set_scores(spec, eval_sets, score_set, out_scores, out_metrics, {**expect_run, "group": NETWORK_SCORER},
                     metrics, Bootstrap() if bootstrap is None else bootstrap)


def gram_class_scores(spec: ModelSpec, checkpoint: str | Path, fit_h5: str | Path, images: ImageSet,
                      batch_size: int, num_workers: int = 0) -> np.ndarray:
    """The N×K class-dependent GRAM conformity scores of ``images``: softmax over classes of the negated
    normalised deviation from each class's Gram bounds (:func:`csfbench.network_csf.detectors.gram_class_deviations`;
    a larger deviation conforms less, hence the sign), rows summing to 1 — the input of the conformal
    prediction sets (Novello, Dalmau & Andéol, arXiv 2403.11532, §5)."""
    from csfbench.csf.logit_scores import softmax

    fitted, attrs = read_network_fit(fit_h5)
    if attrs["model"] != spec.model or fitted.gram is None:
        raise ValueError(f"{fit_h5}: no GRAM fit of model {spec.model!r} (network_csf.methods must hold GRAM)")
    device = resolve_device()
    model = load_checkpoint(spec, checkpoint, device)
    rows = []
    with torch.no_grad():
        for x in _batches(spec, images, batch_size, device, num_workers)():
            rows.append(network.gram_class_deviations(model.block_maps(x), fitted.gram).cpu().numpy())
    return softmax(-np.concatenate(rows))
