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
from csfbench.shifts import names as shift_names

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
    _check_csf_names(config["csf"], source)


def _check_csf_names(csf: dict, source: str) -> None:
    """Every CSF named under ``fixed``, ``search_space`` and ``tuning/budgets`` must exist (or be
    ``projection``), so that a misspelt name is an error, not a silently ignored setting."""
    from csfbench.csf.registry import BY_NAME

    known = sorted(BY_NAME) + ["projection"]
    for key, entries in (("fixed", csf.get("fixed", {})), ("search_space", csf.get("search_space", {})),
                         ("tuning/budgets", csf["tuning"].get("budgets", {}))):
        for name in entries:
            if name not in known:
                raise ConfigError(f"csf/{key}/{name}", f"a CSF name of {known}", name, source)


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


def eval_datasets(config: dict, source: str, model: ModelId | str | None = None) -> list[str]:
    """Evaluation sets of a source: the three ID splits, then its shifted sets in config order.

    With ``model``, a model of the shift study (``shifts`` section) also gets the generated corruption
    sets of its source and its own adversarial sets.
    """
    generated = corruption_sets(config, source) + adversarial_sets(config, source, model) \
        if model is not None and in_shift_study(config, source, model) else []
    return list(SPLITS) + list(config["sources"][source]["ood"]) + generated


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


def eval_set_spec(config: dict, source: str, dataset: str, model: ModelId | str | None = None) -> dict:
    """Name, shift type and regime of an evaluation set of ``source`` (an ID split or a shifted set).

    A generated set's ``dataset`` entry points at the files its rule writes (``npy`` format); an
    adversarial set belongs to one model, which must then be given.
    """
    if dataset in SPLITS:
        return {"name": dataset, "shift_type": "id", "regime": "test" if dataset == "test" else dataset}
    folder = generated_set_folder(source, dataset, model)
    if folder is not None:
        shift_type = "adversarial" if shift_names.parse_adversarial_set(dataset) else "covariate"
        return {"name": dataset, "shift_type": shift_type, "regime": shift_type,
                "dataset": {"name": dataset, "format": "npy", "path": folder, "split": "test", "options": {}}}
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


def csf_fit_config(config: dict, group: str) -> dict:
    """The part of the ``csf`` section a fit of projection ``group`` reads (a Snakemake param).

    The list of groups, and the fixed values, search spaces and search budgets of CSFs without a
    variant in ``group`` (and of the projection, for ``none``), are left out: changing them does not
    rerun this fit.  The budgets are resolved (the defaults written out), so spelling out a default
    does not rerun it either.
    """
    from csfbench.csf.engine import resolved_budgets
    from csfbench.csf.projection import GROUP_VARIANTS
    from csfbench.csf.registry import CSFS

    used = {c.name for c in CSFS if set(c.variants) & set(GROUP_VARIANTS[group])}
    used |= {"projection"} if group != "none" else set()
    csf = config["csf"]
    out = {key: value for key, value in csf.items() if key not in ("groups", "fixed", "search_space")}
    for key in ("fixed", "search_space"):
        if key in csf:
            out[key] = {name: value for name, value in csf[key].items() if name in used}
    budgets = resolved_budgets(csf["tuning"])
    out["tuning"] = {**csf["tuning"], "budgets": {name: {"init_points": b[0], "n_iter": b[1]}
                                                  for name, b in sorted(budgets.items()) if name in used}}
    return out


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


# ---------------------------------------------------------------------------------------------
# shift study: generated corruption and adversarial sets, ProjNorm (spec papers-001-002-004 §3)
# ---------------------------------------------------------------------------------------------

GENERATED_ROOT = "results/data"


def in_shift_study(config: dict, source: str, model: ModelId | str) -> bool:
    """Whether ``model`` of ``source`` gets the generated sets (``shifts.sources`` / ``shifts.models``; default all)."""
    study = config.get("shifts")
    if study is None:
        return False
    return source in study.get("sources", config["sources"]) and str(model) in study.get("models", [str(model)])


def study_models(config: dict) -> list[tuple[str, ModelId]]:
    """(source, model) pairs of the shift study, in grid order."""
    return [(s, m) for s, m in iter_models(config) if in_shift_study(config, s, m)]


def corruption_sets(config: dict, source: str) -> list[str]:
    """``corrupt-{family}-{severity}`` names of the corruption sets generated from ``source``'s test split."""
    corruptions = config.get("shifts", {}).get("corruptions")
    if not corruptions or source not in config["shifts"].get("sources", config["sources"]):
        return []
    return [shift_names.corruption_set(f, s) for f in corruptions["families"] for s in corruptions["severities"]]


def adversarial_sets(config: dict, source: str, model: ModelId | str | None) -> list[str]:
    """``{attack}-eps{ε}`` names of a study model's adversarial sets (ε in 1/255 units)."""
    attacks = config.get("shifts", {}).get("adversarial", {}).get("attacks", {})
    if model is None or not in_shift_study(config, source, model):
        return []
    return [shift_names.adversarial_set(name, eps) for name, attack in attacks.items() for eps in attack["eps"]]


def generated_set_names(config: dict) -> list[str]:
    """Every generated set name of the config (for the ``dataset`` wildcard)."""
    names = {d for source in config["sources"] for d in corruption_sets(config, source)}
    names |= {d for source, model in study_models(config) for d in adversarial_sets(config, source, model)}
    return sorted(names)


def generated_set_folder(source: str, dataset: str, model: ModelId | str | None) -> str | None:
    """Folder of a generated set (``{folder}/test/images.npy``), None for a set that is not generated."""
    if shift_names.parse_corruption_set(dataset):
        return f"{GENERATED_ROOT}/shifts/{source}/{dataset}"
    if shift_names.parse_adversarial_set(dataset):
        if model is None:
            raise ValueError(f"adversarial set {dataset!r} of source {source!r}: the model must be given")
        return f"{GENERATED_ROOT}/adversarial/{source}/{model}/{dataset}"
    return None


def corruption_spec(config: dict, dataset: str) -> dict:
    """Family, severity and seed of a corruption set."""
    family, severity = shift_names.parse_corruption_set(dataset)
    return {"family": family, "severity": severity, "seed": int(config["shifts"]["corruptions"].get("seed", 0))}


def attack_spec(config: dict, dataset: str) -> dict:
    """The attack of an adversarial set: name, ε and (PGD) steps, step size (1/255 units), random start."""
    name, eps = shift_names.parse_adversarial_set(dataset)
    attack = config["shifts"]["adversarial"]["attacks"][name]
    spec = {"name": name, "eps": eps}
    if name == "pgd":
        steps = int(attack.get("steps", 10))
        spec.update(steps=steps, step_size=float(attack.get("step_factor", 2.5)) * eps / steps,
                    random_start=bool(attack.get("random_start", False)))
    return spec


def projnorm_sets(config: dict, source: str, model: ModelId | str) -> list[str]:
    """The labelled sets ProjNorm and the baselines are evaluated on: ID test, covariate and adversarial sets."""
    return ["test"] + [d for d in eval_datasets(config, source, model)[len(SPLITS):]
                       if eval_set_spec(config, source, d, model)["shift_type"] in ("covariate", "adversarial")]


def projnorm_settings(config: dict) -> dict:
    """ProjNorm hyper-parameters with the paper's defaults (spec §3.3): T = 1000, lr 1e-3, batch 128."""
    defaults = {"iterations": 1000, "lr": 1e-3, "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0,
                "seed": 1, "reference": "finetune", "max_samples": 0, "agree_run_offset": 0,
                "atc_score": "negative_entropy"}
    return {**defaults, **config.get("projnorm", {})}


def agree_partner(config: dict, model: ModelId | str) -> str | None:
    """The AgreeScore partner: the same configuration with run + ``projnorm.agree_run_offset`` (None when 0)."""
    offset = int(projnorm_settings(config)["agree_run_offset"])
    if not offset:
        return None
    mid = ModelId.parse(str(model))
    return str(ModelId(mid.backbone, mid.paradigm, mid.dropout, mid.reward, mid.run + offset))
