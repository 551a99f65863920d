"""Jobs of ``rules/features.smk``: the feature file of one (model, evaluation set)."""
from __future__ import annotations

import json
from pathlib import Path

from csfbench.data.eval_sets import eval_images
from csfbench.features.extract import extract_features
from csfbench.features.identity import extraction_identity
from csfbench.models import build_model, load_checkpoint
from csfbench.specs import EvalSet, ModelSpec
from csfbench.training.loop import resolve_device


def extract(spec: ModelSpec, eval_set: EvalSet, checkpoint: str | Path, out_h5: str | Path, batch_size: int,
            compression: str, num_workers: int = 0, feature_dtype: str = "float32") -> None:
    """Write the feature file of one (model, evaluation set), its features stored as ``feature_dtype``; the
    training set's also holds the head."""
    device = resolve_device()
    _write(load_checkpoint(spec, checkpoint, device), spec, eval_set, out_h5, batch_size, compression, num_workers,
           feature_dtype, device)


def extract_shared(spec: ModelSpec, eval_set: EvalSet, identity: str, out_h5: str | Path, batch_size: int,
                   compression: str, num_workers: int = 0, feature_dtype: str = "float32") -> None:
    """Write the feature file of one (model, evaluation set) of a classifier whose features are shared between
    studies (rule ``extract_pretrained_features``; :mod:`csfbench.features.identity`), built from its weights
    file (not from the study's checkpoint, which is no input of the cached job; a missing file is a
    :class:`~csfbench.errors.CheckpointError` naming it), with ``identity`` (the rule's
    param, JSON) among its attributes.  An ``identity`` that is not the one of ``spec``, ``eval_set`` and the
    storage settings is a ValueError: the cache key would not describe the file."""
    expected = extraction_identity(spec, eval_set, feature_dtype, compression)
    if json.loads(identity) != expected:
        raise ValueError(f"{out_h5}: the rule's extraction identity {identity} is not that of the job's model, "
                         f"evaluation set and storage settings {json.dumps(expected, sort_keys=True)}")
    device = resolve_device()
    _write(build_model(spec).to(device).eval(), spec, eval_set, out_h5, batch_size, compression, num_workers,
           feature_dtype, device, expected)


def extract_shared_job(config: dict, source: str, model: str, dataset: str, identity: str, out_h5: str | Path,
                       threads: int) -> None:
    """:func:`extract_shared` for the job of rule ``extract_pretrained_features`` with these wildcards: the spec,
    the evaluation set and the settings outside the cache key (batch size, data-loader workers of the
    ``extract_features`` resources, for ``threads``) read from the workflow's validated ``config``."""
    from csfbench.workflow.grid import Grid
    from csfbench.workflow.resources import loader_workers

    grid, features = Grid(config), config["features"]
    extract_shared(grid.model_spec(source, model), grid.eval_set_spec(source, dataset, model), identity, out_h5,
                   features["batch_size"], features["compression"],
                   loader_workers(config["resources"]["extract_features"]["num_workers"], threads),
                   feature_dtype=features["feature_dtype"])


def _write(model, spec: ModelSpec, eval_set: EvalSet, out_h5: str | Path, batch_size: int, compression: str,
           num_workers: int, feature_dtype: str, device, identity: dict | None = None) -> None:
    extract_features(model, spec, eval_images(spec, eval_set), out_h5, eval_set.name, eval_set.split,
                     eval_set.shift_type, batch_size, device, compression=compression, num_workers=num_workers,
                     feature_dtype=feature_dtype,
                     with_head=(eval_set.name == "train"),
                     prediction_classes=eval_set.label_space if eval_set.logit_mask == "restrict" else None,
                     identity=identity)
