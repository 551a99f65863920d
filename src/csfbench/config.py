"""Configuration: validation against ``config/schema.yaml``, the experiment grid and per-model specs.

The grid is static and derived from the config (no checkpoints): sources × backbones × paradigms ×
dropout × rewards × runs.  :func:`model_spec` resolves everything one training job needs into a plain
JSON-able dict; the Snakemake rules pass it as a ``param`` so that a config change reruns exactly the
models it affects.
"""
from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import yaml

from csfbench.errors import ConfigError
from csfbench.ids import ModelId

SCHEMA_PATH = Path(__file__).with_name("schema.yaml")  # symlink to config/schema.yaml
SPLITS = ("train", "val", "test")


def load_yaml(path: str | Path) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh)


def _key_path(error: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "<top level>"


def _describe_expected(error: jsonschema.ValidationError) -> str:
    validator, value = error.validator, error.validator_value
    if validator == "required":
        return f"the keys {value}"
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return "only the keys " + (", ".join(allowed) if allowed else "described in the schema")
    if validator == "enum":
        return "one of " + ", ".join(repr(v) for v in value)
    if validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"a number with {validator} {value}"
    if validator == "type":
        return f"a value of type {value}"
    if validator == "oneOf":
        return "a value matching one of: " + "; ".join(s.get("description", json.dumps(s)) for s in value)
    return f"{validator} {value!r}"


def _found(error: jsonschema.ValidationError) -> Any:
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"unexpected key(s) {extra}"
    if error.validator == "required":
        return f"keys {sorted(error.instance)}"
    return error.instance


def validate_config(config: dict, source: str = "config") -> dict:
    """Validate ``config`` against the schema and cross-references; return it unchanged.

    Raises :class:`ConfigError` naming the key path, what was expected and what was found.
    """
    if not isinstance(config, dict):
        raise ConfigError("<top level>", "a mapping", type(config).__name__, source)
    schema = load_yaml(SCHEMA_PATH)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), _key_path(e)))
    if errors:
        err = jsonschema.exceptions.best_match(errors, key=jsonschema.exceptions.relevance)
        raise ConfigError(_key_path(err), _describe_expected(err), _found(err), source)
    _check_references(config, source)
    return config


def _check_references(config: dict, source: str) -> None:
    datasets = config["datasets"]
    for name, src in config["sources"].items():
        if src["dataset"] not in datasets:
            raise ConfigError(f"sources/{name}/dataset", f"a dataset of {sorted(datasets)}", src["dataset"], source)
        for ood in src["ood"]:
            if ood not in datasets:
                raise ConfigError(f"sources/{name}/ood/{ood}", f"a dataset of {sorted(datasets)}", ood, source)
            if ood in SPLITS:
                raise ConfigError(f"sources/{name}/ood/{ood}", f"a name other than {SPLITS}", ood, source)
        for backbone in config["backbones"]:
            if backbone not in src["image_size"]:
                raise ConfigError(f"sources/{name}/image_size", f"an entry for backbone '{backbone}'",
                                  src["image_size"], source)
        if "dg" in config["backbones"].get("vgg13", {}).get("paradigms", []) and not src.get("dg_rewards"):
            raise ConfigError(f"sources/{name}/dg_rewards", "a list of rewards (the dg paradigm is enabled)",
                              None, source)
    for backbone, bcfg in config["backbones"].items():
        training = config["training"].get(backbone)
        if training is None:
            raise ConfigError(f"training/{backbone}", "training settings for an enabled backbone", None, source)
        for paradigm in bcfg["paradigms"]:
            if paradigm not in training:
                raise ConfigError(f"training/{backbone}/{paradigm}", "settings for an enabled paradigm", None, source)
    if "pretrain" in config and config["pretrain"]["dataset"] not in datasets:
        raise ConfigError("pretrain/dataset", f"a dataset of {sorted(datasets)}", config["pretrain"]["dataset"], source)


def load_config(path: str | Path) -> dict:
    """Read and validate a YAML config file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("<file>", "an existing YAML file", str(path), str(path))
    return validate_config(load_yaml(path), str(path))


# ---------------------------------------------------------------------------------------------
# grid
# ---------------------------------------------------------------------------------------------

def _rewards(config: dict, source: str, paradigm: str) -> list[float]:
    return [float(r) for r in config["sources"][source]["dg_rewards"]] if paradigm == "dg" else [0.0]


def model_ids(config: dict, source: str) -> list[ModelId]:
    """Every model trained on ``source``, in a deterministic order."""
    ids = []
    for backbone, bcfg in config["backbones"].items():
        for paradigm in bcfg["paradigms"]:
            for dropout in bcfg["dropout"]:
                for reward in _rewards(config, source, paradigm):
                    for run in bcfg["runs"]:
                        ids.append(ModelId(backbone, paradigm, int(dropout), reward, int(run)))
    return ids


def eval_datasets(config: dict, source: str) -> list[str]:
    """Evaluation sets of a source: the three ID splits, then its shifted sets in config order."""
    return list(SPLITS) + list(config["sources"][source]["ood"])


def iter_models(config: dict) -> Iterator[tuple[str, ModelId]]:
    for source in config["sources"]:
        for mid in model_ids(config, source):
            yield source, mid


# ---------------------------------------------------------------------------------------------
# per-model resolved specification
# ---------------------------------------------------------------------------------------------

def deep_merge(base: dict, override: dict) -> dict:
    """A copy of ``base`` with ``override`` merged in recursively (override wins)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def derive_seed(base_seed: int, *parts: object) -> int:
    """A 31-bit seed derived deterministically from ``base_seed`` and identifying parts."""
    digest = hashlib.sha256(json.dumps([base_seed, *map(str, parts)]).encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def dataset_spec(config: dict, name: str) -> dict:
    """Format, absolute-or-relative path, split and reader options of a catalogue dataset."""
    entry = config["datasets"][name]
    return {
        "name": name,
        "format": entry["format"],
        "path": str(Path(config["data_root"]) / entry["path"]),
        "split": entry.get("split", "test"),
        "options": dict(entry.get("options", {})),
    }


def model_spec(config: dict, source: str, model: ModelId | str) -> dict:
    """Everything needed to build, train and evaluate one model, as a JSON-able dict."""
    mid = ModelId.parse(model) if isinstance(model, str) else model
    src = config["sources"][source]
    bcfg = config["backbones"][mid.backbone]
    training = config["training"][mid.backbone]
    overrides = src.get("training", {}).get(mid.backbone, {})
    common = deep_merge(training["common"], overrides.get("common", {}))
    paradigm = deep_merge(training[mid.paradigm], overrides.get(mid.paradigm, {}))
    optim = deep_merge(common, {k: v for k, v in paradigm.items() if k in common})
    lr = optim["lr"]
    optim["lr"] = float(lr[f"do{mid.dropout}"] if isinstance(lr, dict) else lr)
    spec = {
        "source": source,
        "model": str(mid),
        "backbone": mid.backbone,
        "paradigm": mid.paradigm,
        "dropout": mid.dropout,
        "reward": mid.reward,
        "run": mid.run,
        "seed": derive_seed(config["seed"], source, str(mid)),
        "n_classes": int(src["n_classes"]),
        "image_size": int(src["image_size"][mid.backbone]),
        "normalize": src["normalize"],
        "arch": dict(bcfg["arch"]),
        "mcd_samples": int(bcfg["mcd_samples"]) if mid.dropout else 0,
        "optim": optim,
        "paradigm_params": {k: v for k, v in paradigm.items() if k not in common},
        "dataset": dataset_spec(config, src["dataset"]),
        "val_size": int(src["val_size"]),
    }
    if mid.backbone == "vit":
        spec["pretrained"] = dict(bcfg["pretrained"])
    return spec


def spec_hash(spec: dict) -> str:
    """Short sha256 of a canonical JSON rendering (the ``config_hash`` provenance attribute)."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def eval_set_spec(config: dict, source: str, dataset: str) -> dict:
    """Name, shift type and regime of an evaluation set of ``source`` (an ID split or a shifted set)."""
    if dataset in SPLITS:
        return {"name": dataset, "shift_type": "id", "regime": "test" if dataset == "test" else dataset}
    entry = config["sources"][source]["ood"][dataset]
    return {"name": dataset, "shift_type": entry["shift_type"], "regime": entry.get("regime", entry["shift_type"]),
            "dataset": dataset_spec(config, dataset)}


def pretrain_spec(config: dict) -> dict:
    """The model spec of the demo's ViT pretraining: plain cross-entropy from scratch."""
    pre = config["pretrain"]
    vit = config["backbones"]["vit"]
    return {
        "source": "pretrain", "model": "vit_ce_do0_rew0_run0", "backbone": "vit", "paradigm": "ce",
        "dropout": 0, "reward": 0.0, "run": 0, "seed": derive_seed(config["seed"], "pretrain"),
        "n_classes": int(vit["pretrained"]["num_classes"]), "image_size": int(pre["image_size"]),
        "normalize": pre["normalize"], "arch": dict(vit["arch"]), "mcd_samples": 0,
        "optim": {"batch_size": int(pre["batch_size"]), "lr": float(pre["lr"]), "momentum": 0.9,
                  "weight_decay": float(pre.get("weight_decay", 0.0)), "augment": {"crop_padding": 4, "hflip": True}},
        "paradigm_params": {"epochs": int(pre["epochs"]), "warmup_steps": 0},
        "dataset": dataset_spec(config, pre["dataset"]), "val_size": int(pre.get("val_size", 500)),
    }


def used_splits(config: dict, name: str) -> list[str]:
    """The official splits of catalogue dataset ``name`` that the workflow reads (sorted)."""
    splits = set()
    for src in config["sources"].values():
        if src["dataset"] == name:
            splits |= {"train", "test"}
        if name in src["ood"]:
            splits.add(config["datasets"][name].get("split", "test"))
    if config.get("pretrain", {}).get("dataset") == name:
        splits.add("train")
    return sorted(splits)
