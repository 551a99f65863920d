"""Jobs of ``rules/csf.smk``: fit every CSF of one (model, fit group), then score and evaluate every
evaluation set of the model with that fit."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from csfbench.csf.blocks import block_budget
from csfbench.csf.device import compute_device
from csfbench.csf.engine import fit_mode, score_blocks, tuning_protocols
from csfbench.csf.fit_settings import FitSettings, block_mib
from csfbench.csf.inputs import load_splits
from csfbench.csf.registry import ModelContext
from csfbench.csf.score_files import write_set_scores
from csfbench.csf.store import read_fit, write_fit
from csfbench.evaluation import Bootstrap
from csfbench.features.store import feature_expect, read_features
from csfbench.heads import class_outputs
from csfbench.provenance import git_commit, package_version, utc_now
from csfbench.seeds import spec_hash
from csfbench.specs import EvalSet, ModelSpec

log = logging.getLogger(__name__)


def _context(spec: ModelSpec, head: tuple[np.ndarray, np.ndarray], quirks: str) -> ModelContext:
    c = spec.n_classes
    weight, bias = (np.asarray(a, dtype=np.float64) for a in head)
    return ModelContext(c, spec.csf_backbone, spec.paradigm, class_outputs(weight, c, axis=0),
                        class_outputs(bias, c, axis=0), weight, bias, quirks)


def fit_csf(spec: ModelSpec, settings: FitSettings, fit_group: str, train_h5: str | Path, val_h5: str | Path,
            out_h5: str | Path, ood_val_h5: str | Path | None = None, device: str | None = None) -> None:
    """Fit every CSF variant of one (model, fit group) on train + val into ``fit.h5``.

    ``settings``: the config's ``csf`` section as the workflow cuts it for the model's source and the fit
    group, parsed (:meth:`~csfbench.csf.fit_settings.FitSettings.from_json`); ``ood_val_h5``: the feature
    file of its OOD validation set (``settings.ood_validation``), needed by the grid tuning protocol only.

    Memory: the ``none`` group reads the training features and logits from ``train_h5`` in row blocks of
    ``settings.block_mib`` (:func:`~csfbench.csf.inputs.load_splits` with ``lazy``), so its peak is set by the
    block budget and the fitted states (KNN's bank: the training rows once, in their storage dtype), not by
    the training rows; the validation splits, and the training split of the projected groups, are read whole.

    ``device``: the compute device of the blocked kernels (:func:`csfbench.csf.device.compute_device`; None =
    the numpy kernels), from ``csf.device`` and the rule's GPUs (:func:`csfbench.csf.device.job_device`).
    """
    expect = feature_expect(spec)  # a feature file of another model, or of another run of it, is rejected
    arrays, _ = read_features(train_h5, keys=("head/weight", "head/bias"))
    if "head/weight" not in arrays:
        raise ValueError(f"{train_h5}: the train feature file has no 'head/weight'")
    head = (arrays["head/weight"], arrays["head/bias"])
    quirks, tuning, ood_name = settings.quirks, settings.tuning, settings.ood_validation
    if ood_name is not None and ood_val_h5 is None:
        raise ValueError(f"{spec.model}: the grid tuning protocol needs the features of the OOD validation set "
                         f"{ood_name!r}")
    log.info("%s/%s: CSF kernels on %s", spec.model, fit_group, device or "the CPU (numpy)")
    with block_budget(settings.block_mib), compute_device(device):
        train = load_splits(train_h5, spec.modes, expect, lazy=fit_group == "none")
        val = load_splits(val_h5, spec.modes, expect)
        ood_val = load_splits(ood_val_h5, spec.modes, {**expect, "dataset": ood_name}) if ood_name else {}
        modes = {mode: fit_mode(fit_group, train[mode], val[mode], _context(spec, head, quirks), tuning,
                                settings.methods, ood_val.get(mode))
                 for mode in spec.modes}
    attrs = {"source": spec.source, "model": spec.model, "group": fit_group, "quirks": quirks,
             "csf_config": settings.config_json, "config_hash": spec_hash(spec.to_dict()),
             "tuning_protocols": json.dumps(list(tuning.protocols)), "ood_validation": ood_name or "",
             "package_version": package_version(), "git_commit": git_commit(), "created": utc_now()}
    write_fit(out_h5, modes, head, attrs)
    log.info("%s/%s: wrote %s (%d variants)", spec.model, fit_group, out_h5,
             sum(len(m.csfs) for m in modes.values()))


def score_csf(spec: ModelSpec, eval_sets: list[EvalSet], fit_h5: str | Path, features: dict[str, str | Path],
              out_scores: str | Path, out_metrics: str | Path, metrics: tuple[str, ...],
              bootstrap: Bootstrap = Bootstrap(), device: str | None = None) -> None:
    """Score every evaluation set of a model with one fit and write one scores file and one metrics file.

    ``features``: {evaluation set name: feature file}; ``metrics``: the metric names of the rows; ``bootstrap``:
    their intervals (:class:`csfbench.evaluation.Bootstrap`; default: none).  Each set is read and scored in
    row blocks of the fit's block budget (``csf.block_mib``; :func:`~csfbench.csf.engine.score_blocks`), with
    the blocked kernels on ``device`` (as in :func:`fit_csf`).
    """
    fitted, head, fit_attrs = read_fit(fit_h5)
    if fit_attrs["model"] != spec.model:
        raise ValueError(f"{fit_h5}: fit of model {fit_attrs['model']!r}, expected {spec.model!r}")
    ctx = _context(spec, head, str(fit_attrs["quirks"]))

    def score_set(eval_set: EvalSet):
        expect = {**feature_expect(spec), "dataset": eval_set.name}
        splits = load_splits(features[eval_set.name], tuple(fitted), expect, lazy=True)
        if len(next(iter(splits.values()))) == 0:
            raise ValueError(f"{features[eval_set.name]}: empty evaluation set {eval_set.name!r}")
        scores = {mode: score_blocks(splits[mode], fm, ctx) for mode, fm in fitted.items()}
        return splits, scores, {mode: tuning_protocols(fitted[mode], scores[mode]) for mode in scores}

    attrs = {k: fit_attrs[k] for k in ("source", "model", "group", "quirks", "config_hash")}
    log.info("%s/%s: CSF kernels on %s", spec.model, fit_attrs["group"], device or "the CPU (numpy)")
    with block_budget(block_mib(json.loads(fit_attrs["csf_config"]))), compute_device(device):
        write_set_scores(spec, eval_sets, score_set, out_scores, out_metrics, attrs, metrics, bootstrap)
