"""The extraction identity of a feature file that can be shared between studies (docs/reproducibility.md).

A classifier evaluated with its pretrained weights (paradigm ``pretrained``) computes the same arrays in every
study that gives it the same weights, preprocessing and images, whatever the study calls its source or model,
whatever its seed or run number.  :func:`extraction_identity` is what determines those arrays apart from the
weights file's bytes (those enter Snakemake's cache key as the rule's input): it is the param of rule
``extract_pretrained_features`` (its between-workflow cache key, with the script and the inputs), and its
hashes are attributes of the file it writes (:func:`identity_attrs`).  A consumer of such a file checks
``extraction_model`` (:func:`model_hash`, from the model spec alone) where it checks the run's
``source``/``model``/``seed``/``config_hash`` for a trained model (:func:`csfbench.features.store.feature_expect`).

Left out on purpose: the batch size and the data-loader workers (the same arrays, up to floating-point
rounding), the source and model names, the seed and run number (no random draw of a ``pretrained`` model's
extraction depends on them: it has no Monte-Carlo dropout passes), the regime of an OOD set (a label of the
analysis, not of the file) and the device (CPU or GPU autocast rounding).  Trained models (their checkpoints are
outputs of the study's own training) and paradigm ``random`` (its weights are a seeded draw, not a file whose
bytes could key the cache) are not shared.
"""
from __future__ import annotations

import json
from pathlib import Path

from csfbench.seeds import spec_hash
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec

#: the paradigms whose feature files are shared between studies (rule ``extract_pretrained_features``)
SHARED_PARADIGMS = ("pretrained",)
#: the version of the extraction code's output: raise it when a change of csfbench gives other arrays for the
#: same identity (a cache filled by an earlier version is then no longer read)
EXTRACTION_VERSION = 1


def shares_features(spec: ModelSpec) -> bool:
    """Whether the feature files of ``spec`` are shared between studies: a timm/torchvision classifier evaluated
    with its weights file (:data:`SHARED_PARADIGMS`), without Monte-Carlo dropout passes."""
    return spec.library is not None and spec.paradigm in SHARED_PARADIGMS and spec.mcd_samples == 0


def model_identity(spec: ModelSpec) -> dict:
    """What determines the network of a shared spec and its input: library, architecture, the weights settings
    other than the file's name (its bytes are the cache key's input), classes, input side S, normalisation and
    geometry.  A spec whose features are not shared (:func:`shares_features`) is a ValueError naming it."""
    if not shares_features(spec):
        raise ValueError(f"{spec.source}/{spec.model}: paradigm {spec.paradigm!r} of a "
                         f"{spec.library or 'built-in'} backbone: its feature files are not shared between studies "
                         f"(only {', '.join(SHARED_PARADIGMS)} classifiers of timm/torchvision are)")
    return {"version": EXTRACTION_VERSION, "library": spec.library, "arch": spec.arch, "paradigm": spec.paradigm,
            "weights": {k: v for k, v in (spec.weights or {}).items() if k != "file"}, "n_classes": spec.n_classes,
            "image_size": spec.image_size, "normalize": spec.normalize, "geometry": spec.geometry,
            "mcd_samples": spec.mcd_samples}


def model_hash(spec: ModelSpec) -> str:
    """The ``extraction_model`` attribute of a shared spec's feature files: the hash of :func:`model_identity`."""
    return spec_hash(model_identity(spec))


def _located(dataset: DatasetSpec) -> dict:
    """A dataset spec with its path made absolute (symbolic links resolved, relative to the working directory:
    the run folder): two run folders that name different data by the same relative path never share a file."""
    return {**dataset.to_dict(), "path": str(Path(dataset.path).resolve())}


def data_identity(spec: ModelSpec, eval_set: EvalSet) -> dict:
    """What determines the images and labels of ``eval_set`` and how they are predicted: an ID split of the
    source's dataset (the validation size for the validation and test splits it divides), or a shifted set's
    dataset, shift type (a semantic set's labels are -1) and label space."""
    if eval_set.dataset is None:
        return {"name": eval_set.name, "dataset": _located(spec.dataset),
                "val_size": spec.val_size if eval_set.name in ("val", "test") else None}
    return {"name": eval_set.name, "dataset": _located(eval_set.dataset), "shift_type": eval_set.shift_type,
            "label_space": None if eval_set.label_space is None else list(eval_set.label_space),
            "logit_mask": eval_set.logit_mask}


def extraction_identity(spec: ModelSpec, eval_set: EvalSet, feature_dtype: str, compression: str) -> dict:
    """The extraction identity of one feature file of a shared spec: ``model`` (:func:`model_identity`),
    ``data`` (:func:`data_identity`) and ``storage`` (the features' dtype and the file's compression)."""
    return {"model": model_identity(spec), "data": data_identity(spec, eval_set),
            "storage": {"feature_dtype": feature_dtype, "compression": compression}}


def identity_json(identity: dict) -> str:
    """An extraction identity as canonical JSON (the rule's param)."""
    return json.dumps(identity, sort_keys=True)


def identity_attrs(identity: dict) -> dict:
    """The attributes a shared feature file records: ``extraction_model`` (what consumers check, see
    :func:`model_hash`), ``extraction_hash`` (the hash of the whole identity) and ``extraction`` (its JSON)."""
    return {"extraction_model": spec_hash(identity["model"]), "extraction_hash": spec_hash(identity),
            "extraction": identity_json(identity)}


__all__ = ["EXTRACTION_VERSION", "SHARED_PARADIGMS", "data_identity", "extraction_identity", "identity_attrs",
           "identity_json", "model_hash", "model_identity", "shares_features"]
