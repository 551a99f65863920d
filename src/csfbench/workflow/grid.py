"""The experiment grid of a validated config: models, evaluation sets and their resolved specs.

The grid is static (no checkpoints are read): sources × backbones × paradigms × dropout × rewards ×
runs.  Every function takes the config as validated by :func:`csfbench.workflow.settings.validate_config`
(defaults filled in), so it reads keys directly and never supplies a default of its own.
"""
from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Iterator

from csfbench.workflow import paths
from csfbench.csf.engine import resolved_budgets
from csfbench.csf.projection import GROUP_VARIANTS
from csfbench.csf.registry import CSFS
from csfbench.errors import ConfigError
from csfbench.evaluation import FPR_METRIC, conformal_metric
from csfbench.workflow.ids import ModelId
from csfbench.metrics import DEFAULT_METRICS as METRICS
from csfbench.seeds import derive_seed
from csfbench.workflow.settings import SPLITS, deep_merge
from csfbench.shifts import names as shift_names
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec


def _rewards(config: dict, source: str, paradigm: str) -> list[float]:
    return [float(r) for r in config["sources"][source]["dg_rewards"]] if paradigm == "dg" else [0.0]


def model_ids(config: dict, source: str) -> list[ModelId]:
    """Every model of ``source`` (a backbone's ``sources``, when given, name the sources it serves), in a
    deterministic order."""
    return [ModelId(backbone, paradigm, int(dropout), reward, int(run))
            for backbone, bcfg in config["backbones"].items()
            if bcfg.get("sources") is None or source in bcfg["sources"]
            for paradigm in bcfg["paradigms"]
            for dropout in bcfg["dropout"]
            for reward in _rewards(config, source, paradigm)
            for run in bcfg["runs"]]


def iter_models(config: dict) -> Iterator[tuple[str, ModelId]]:
    for source in config["sources"]:
        for mid in model_ids(config, source):
            yield source, mid


def eval_datasets(config: dict, source: str, model: ModelId | str | None = None) -> list[str]:
    """Evaluation sets of a source: the three ID splits, then its shifted sets in config order.

    With ``model``, a model of the shift study (``shifts`` section) also gets the generated corruption
    sets of its source and its own adversarial sets.
    """
    generated = corruption_sets(config, source) + adversarial_sets(config, source, model) \
        if model is not None and in_shift_study(config, source, model) else []
    return list(SPLITS) + list(config["sources"][source]["ood"]) + generated


def scored_datasets(config: dict, source: str, model: ModelId | str | None = None) -> list[str]:
    """The evaluation sets that are scored: all but the training split."""
    return [d for d in eval_datasets(config, source, model) if d != "train"]


# ---------------------------------------------------------------------------------------------
# resolved specs
# ---------------------------------------------------------------------------------------------

def dataset_spec(config: dict, name: str) -> DatasetSpec:
    """The catalogue dataset ``name`` with its path under ``data_root``."""
    entry = config["datasets"][name]
    return DatasetSpec(name, entry["format"], str(Path(config["data_root"]) / entry["path"]), entry["split"],
                       dict(entry["options"]))


def model_spec(config: dict, source: str, model: ModelId | str) -> ModelSpec:
    """Everything needed to build, train and evaluate one model."""
    mid = ModelId.parse(model) if isinstance(model, str) else model
    src = config["sources"][source]
    bcfg = config["backbones"][mid.backbone]
    if "library" in bcfg:
        return _library_model_spec(config, source, mid)
    training = config["training"][mid.backbone]
    overrides = src["training"].get(mid.backbone, {})
    common = deep_merge(training["common"], overrides.get("common", {}))
    paradigm = deep_merge(training[mid.paradigm], overrides.get(mid.paradigm, {}))
    optim = deep_merge(common, {k: v for k, v in paradigm.items() if k in common})
    lr = optim["lr"]
    optim["lr"] = float(lr[f"do{mid.dropout}"] if isinstance(lr, dict) else lr)
    return ModelSpec(
        source=source, model=str(mid), backbone=mid.backbone, paradigm=mid.paradigm, dropout=mid.dropout,
        reward=mid.reward, run=mid.run, seed=derive_seed(config["seed"], source, str(mid)),
        n_classes=int(src["n_classes"]), image_size=int(src["image_size"][mid.backbone]),
        normalize=dict(src["normalize"]), arch=dict(bcfg["arch"]),
        mcd_samples=int(bcfg["mcd_samples"]) if mid.dropout else 0, optim=optim,
        paradigm_params={k: v for k, v in paradigm.items() if k not in common},
        dataset=dataset_spec(config, src["dataset"]), val_size=int(src["val_size"]),
        pretrained=dict(bcfg["pretrained"]) if mid.backbone == "vit" else None,
        geometry=_geometry(src["image_geometry"]))


def _geometry(geometry: dict) -> dict | None:
    """A source's ``image_geometry``; None for the default bilinear stretch (:attr:`ModelSpec.geometry`)."""
    return None if (geometry["mode"], geometry["interpolation"]) == ("stretch", "bilinear") else dict(geometry)


def _library_model_spec(config: dict, source: str, mid: ModelId) -> ModelSpec:
    """A timm/torchvision classifier evaluated without training (paradigm ``pretrained``: the weights file;
    ``random``: the architecture's default initialisation seeded with the run number).  Normalisation and
    geometry: the backbone's ``eval`` settings, their nulls read from the weights' own preprocessing
    (:func:`csfbench.models.pretrained.eval_preprocessing`)."""
    src, bcfg = config["sources"][source], config["backbones"][mid.backbone]
    key = f"backbones/{mid.backbone}"
    n_classes = int(src["n_classes"])
    weights = None
    if mid.paradigm == "pretrained":
        if "weights" not in bcfg:
            raise ConfigError(f"{key}/weights", "the weights file of paradigm 'pretrained'", None)
        weights = dict(bcfg["weights"])
        if weights["num_classes"] not in (None, n_classes):
            raise ConfigError(f"{key}/weights/num_classes", f"null or {n_classes} (sources/{source}/n_classes): a "
                              "pretrained classifier is evaluated with its own head", weights["num_classes"])
        weights["num_classes"] = n_classes
    if mid.backbone not in src["image_size"]:
        raise ConfigError(f"sources/{source}/image_size/{mid.backbone}", "the input side S of the backbone", None)
    image_size = int(src["image_size"][mid.backbone])
    arch = dict(bcfg["arch"])
    prep = _weights_preprocessing(bcfg["library"], arch["name"], bcfg["eval"])
    normalize = bcfg["eval"]["normalize"] or {"mean": list(prep["mean"]), "std": list(prep["std"])}
    geometry = {"mode": bcfg["eval"]["geometry"] or prep["geometry"],
                "crop_pct": bcfg["eval"]["crop_pct"] or prep["crop_pct"],
                "interpolation": bcfg["eval"]["interpolation"] or prep["interpolation"]}
    return ModelSpec(
        source=source, model=str(mid), backbone=mid.backbone, paradigm=mid.paradigm, dropout=0, reward=0.0,
        run=mid.run, seed=derive_seed(config["seed"], source, str(mid)), n_classes=n_classes,
        image_size=image_size, normalize=dict(normalize), arch=arch, mcd_samples=0, optim={}, paradigm_params={},
        dataset=dataset_spec(config, src["dataset"]), val_size=int(src["val_size"]), library=bcfg["library"],
        weights=weights, geometry=geometry)


def _weights_preprocessing(library: str, arch: str, overrides: dict) -> dict:
    """The preprocessing the weights were made for, looked up only when ``overrides`` leave a value null."""
    if all(overrides[k] is not None for k in ("geometry", "crop_pct", "interpolation", "normalize")):
        return {}
    return _cached_preprocessing(library, arch)


@functools.cache
def _cached_preprocessing(library: str, arch: str) -> dict:
    from csfbench.models.pretrained import eval_preprocessing

    try:
        return eval_preprocessing(library, arch)._asdict()
    except (ValueError, KeyError) as err:
        raise ConfigError(f"backbones: {library} architecture {arch!r}", "an architecture with a pretrained "
                          "preprocessing config, or every value of its `eval` section set", str(err)) from None


def pretrain_spec(config: dict) -> ModelSpec:
    """The model spec of the demo's ViT pretraining: plain cross-entropy from scratch."""
    pre = config["pretrain"]
    vit = config["backbones"]["vit"]
    return ModelSpec(
        source="pretrain", model="vit_ce_do0_rew0_run0", backbone="vit", paradigm="ce", dropout=0, reward=0.0,
        run=0, seed=derive_seed(config["seed"], "pretrain"), n_classes=int(vit["pretrained"]["num_classes"]),
        image_size=int(pre["image_size"]), normalize=dict(pre["normalize"]), arch=dict(vit["arch"]),
        mcd_samples=0,
        optim={"batch_size": int(pre["batch_size"]), "lr": float(pre["lr"]), "momentum": 0.9,
               "weight_decay": float(pre["weight_decay"]), "nesterov": False, "grad_clip": 0.0,
               "augment": {"crop_padding": 4, "hflip": True, "cutout": 0}},
        paradigm_params={"epochs": int(pre["epochs"]), "warmup_steps": 0},
        dataset=dataset_spec(config, pre["dataset"]), val_size=int(pre["val_size"]))


def eval_set_spec(config: dict, source: str, dataset: str, model: ModelId | str | None = None) -> EvalSet:
    """Name, shift type and regime of an evaluation set of ``source`` (an ID split or a shifted set), or of
    its OOD validation set (:func:`ood_validation_set`: semantic, never evaluated).

    A generated set's dataset points at the files its rule writes (``npy`` format); an adversarial set
    belongs to one model, which must then be given.
    """
    if dataset in SPLITS:
        return EvalSet(dataset, "id", dataset)
    if dataset == ood_validation_set(config, source):
        return EvalSet(dataset, "semantic", "semantic", dataset_spec(config, dataset))
    folder = generated_set_folder(source, dataset, model)
    if folder is not None:
        shift_type = "adversarial" if shift_names.parse_adversarial_set(dataset) else "covariate"
        return EvalSet(dataset, shift_type, shift_type, DatasetSpec(dataset, "npy", folder, "test", {}))
    entry = config["sources"][source]["ood"][dataset]
    label_space = entry.get("label_space")
    return EvalSet(dataset, entry["shift_type"], entry.get("regime", entry["shift_type"]),
                   dataset_spec(config, dataset), None if label_space is None else tuple(label_space),
                   entry["logit_mask"])


def csf_fit_config(config: dict, fit_group: str, source: str | None = None) -> dict:
    """The part of the ``csf`` section a fit of ``fit_group`` of a model of ``source`` reads (a Snakemake
    param).

    The list of groups, and the fixed values, search spaces, search budgets and grids of CSFs without a
    variant in ``fit_group`` (and of the projection, for ``none``), are left out: changing them does
    not rerun this fit.  ``tuning.ood_validation`` becomes the source's OOD validation set
    (:func:`ood_validation_set`; None without the grid protocol or without ``source``).
    """
    used = {c.name for c in CSFS if set(c.variants) & set(GROUP_VARIANTS[fit_group])}
    if config["csf"]["methods"] is not None:
        used &= set(config["csf"]["methods"])
    used |= {"projection"} if fit_group != "none" else set()
    csf = config["csf"]
    out = {key: value for key, value in csf.items() if key not in ("groups", "fixed", "search_space", "methods")}
    out["methods"] = None if csf["methods"] is None else sorted(used - {"projection"})
    for key in ("fixed", "search_space"):
        out[key] = {name: value for name, value in csf[key].items() if name in used}
    budgets = resolved_budgets(csf["tuning"])
    out["tuning"] = {**csf["tuning"], "budgets": {name: {"init_points": b[0], "n_iter": b[1]}
                                                  for name, b in sorted(budgets.items()) if name in used},
                     "grids": {name: grid for name, grid in csf["tuning"]["grids"].items() if name in used},
                     "ood_validation": ood_validation_set(config, source) if source is not None else None}
    return out


def ood_validation_set(config: dict, source: str) -> str | None:
    """The OOD validation set of ``source`` that the grid tuning protocol reads (``csf.tuning.ood_validation``;
    None when the protocols do not include ``grid``).  It is not an evaluation set of the source."""
    if "grid" not in config["csf"]["tuning"]["protocols"]:
        return None
    return config["csf"]["tuning"]["ood_validation"].get(source)


def used_splits(config: dict, name: str) -> list[str]:
    """The official splits of catalogue dataset ``name`` that the workflow reads (sorted)."""
    splits = set()
    for source, src in config["sources"].items():
        if src["dataset"] == name:
            splits |= {"train", "test"}
        if name in src["ood"] or name == ood_validation_set(config, source):
            splits.add(config["datasets"][name]["split"])
    if config.get("pretrain", {}).get("dataset") == name:
        splits.add("train")
    return sorted(splits)


# ---------------------------------------------------------------------------------------------
# shift study: generated corruption and adversarial sets, ProjNorm
# ---------------------------------------------------------------------------------------------

def in_shift_study(config: dict, source: str, model: ModelId | str) -> bool:
    """Whether ``model`` of ``source`` gets the generated sets (``shifts.sources`` / ``shifts.models``;
    absent: every source / every model of the study sources)."""
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
    """Folder of a generated set, None for a set that is not generated."""
    if shift_names.parse_corruption_set(dataset):
        return paths.corruption_set_folder(source, dataset)
    if shift_names.parse_adversarial_set(dataset):
        if model is None:
            raise ValueError(f"adversarial set {dataset!r} of source {source!r}: the model must be given")
        return paths.adversarial_set_folder(source, str(model), dataset)
    return None


def corruption_spec(config: dict, dataset: str) -> dict:
    """Family, severity and seed of a corruption set."""
    family, severity = shift_names.parse_corruption_set(dataset)
    return {"family": family, "severity": severity, "seed": int(config["shifts"]["corruptions"]["seed"])}


def attack_spec(config: dict, dataset: str) -> dict:
    """The attack of an adversarial set: name, ε and (PGD) steps, step size (1/255 units), random start."""
    name, eps = shift_names.parse_adversarial_set(dataset)
    attack = config["shifts"]["adversarial"]["attacks"][name]
    spec = {"name": name, "eps": eps}
    if name == "pgd":
        steps = int(attack["steps"])
        spec.update(steps=steps, step_size=float(attack["step_factor"]) * eps / steps,
                    random_start=bool(attack["random_start"]))
    return spec


def projnorm_sets(config: dict, source: str, model: ModelId | str) -> list[str]:
    """The labelled sets ProjNorm and the baselines are evaluated on: ID test, covariate and adversarial sets."""
    return ["test"] + [d for d in eval_datasets(config, source, model)[len(SPLITS):]
                       if eval_set_spec(config, source, d, model).shift_type in ("covariate", "adversarial")]


def agree_partner(config: dict, model: ModelId | str) -> str | None:
    """The AgreeScore partner: the same configuration with run + ``projnorm.agree_run_offset`` (None when 0)."""
    offset = int(config["projnorm"]["agree_run_offset"])
    if not offset:
        return None
    mid = ModelId.parse(str(model))
    return str(ModelId(mid.backbone, mid.paradigm, mid.dropout, mid.reward, mid.run + offset))


def check_selections(config: dict, origin: str) -> None:
    """Names that select parts of the grid must exist, or a typo would silently shrink the study:
    ``shifts.sources``/``shifts.models``, ``figures.rc_curves.models``, and the metrics of
    ``ranking.metric_groups`` (a conformal metric of a configured band and δ included) and ``figures.table_metric``.  Raises ConfigError naming the key, the valid
    names and, where there is one, the closest match."""
    sources = list(config["sources"])
    models = {str(m) for _, m in iter_models(config)}
    study = config.get("shifts", {})
    for source in study.get("sources", []):
        _require(source, sources, "shifts/sources", origin)
    for model in study.get("models", []):
        _require(model, models, "shifts/models", origin)
    for source, model in config["figures"]["rc_curves"]["models"].items():
        _require(source, sources, f"figures/rc_curves/models/{source}", origin)
        _require(model, [str(m) for m in model_ids(config, source)], f"figures/rc_curves/models/{source}", origin)
    conformal = config["conformal"]
    corrected = [conformal_metric(base, method, delta) for base in ("auroc", *FPR_METRIC.values())
                 for method in conformal["methods"] for delta in conformal["delta"]] if conformal["enabled"] else []
    for group, metrics in config["ranking"]["metric_groups"].items():
        for metric in metrics:
            _require(metric, [*METRICS, *corrected], f"ranking/metric_groups/{group}", origin)
    _require(config["figures"]["table_metric"], METRICS, "figures/table_metric", origin)


def _require(name: str, valid, key: str, origin: str) -> None:
    if name not in valid:
        lower = {str(v).lower(): v for v in valid}
        close = difflib.get_close_matches(str(name).lower(), list(lower), n=1)
        hint = f" (did you mean {lower[close[0]]!r}?)" if close else ""
        raise ConfigError(key, f"one of {sorted(valid)}{hint}", name, origin)
