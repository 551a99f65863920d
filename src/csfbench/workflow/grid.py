"""The experiment grid of a validated config: its models, their evaluation sets and the resolved specs.

The grid is static (no checkpoint or dataset is read): sources × backbones × paradigms × dropout ×
rewards × runs, then per model its evaluation sets (the shift study's generated sets included);
:mod:`csfbench.workflow.jobs` builds each rule's jobs on it.  :class:`Grid` takes the config
as validated by :func:`csfbench.workflow.settings.validate_config` (defaults filled in), so it reads keys
directly and never supplies a default of its own.  Every method is a pure function of the config and of
its arguments, named like the rule files' wildcards (``source``, ``model``, ``dataset``, ``fit_group``,
``name``), so that ``rules/common.smk`` hands it a job's wildcards unchanged; results are cached, because
the paper grid asks for the same spec from thousands of jobs while the DAG is built.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Iterator

from csfbench.csf.engine import resolved_budgets
from csfbench.csf.projection import GROUP_VARIANTS
from csfbench.csf.registry import CSFS
from csfbench.errors import ConfigError
from csfbench.metrics.bootstrap import SUPPORTED as BOOTSTRAP_METRICS
from csfbench.metrics.registry import metric_names
from csfbench.seeds import derive_seed
from csfbench.shifts import names as shift_names
from csfbench.specs import SPLITS, DatasetSpec, EnsembleSpec, EvalSet, ModelSpec
from csfbench.workflow import paths
from csfbench.workflow.configurations import rewards, serves
from csfbench.workflow.ensembles import source_ensembles
from csfbench.workflow.ids import EnsembleId, ModelId
from csfbench.workflow.merge import deep_merge

#: the stages switched on by their section's ``enabled`` (a stage whose section is absent has no jobs)
OPTIONAL_STAGES = ("demo", "pretrain", "geometry", "proximity", "shifts", "projnorm", "conformal", "analyses")


def canonical_json(value) -> str:
    """``value`` as JSON with sorted keys: a rule param that does not change when a config file's keys are
    reordered (Snakemake reruns a job whose params change)."""
    return json.dumps(value, sort_keys=True)


def stage_enabled(config: dict, stage: str) -> bool:
    """Whether an optional stage (:data:`OPTIONAL_STAGES`) has jobs: its section is present and ``enabled``."""
    return stage in config and config[stage]["enabled"]


def generated_set_folder(source: str, dataset: str, model: ModelId | str | None) -> str | None:
    """Folder of a generated (corruption or adversarial) set, None for a set that is not generated."""
    if shift_names.parse_corruption_set(dataset):
        return paths.corruption_set_folder(source, dataset)
    if shift_names.parse_adversarial_set(dataset):
        if model is None:
            raise ValueError(f"adversarial set {dataset!r} of source {source!r}: the model must be given")
        return paths.adversarial_set_folder(source, str(model), dataset)
    return None


class Grid:
    """The jobs of one validated config (see the module docstring)."""

    def __init__(self, config: dict):
        self.config = config

    def enabled(self, stage: str) -> bool:
        return stage_enabled(self.config, stage)

    def setting(self, key_path: str):
        """The validated value of a setting by its key path, e.g. ``"features/batch_size"`` (a rule param)."""
        node = self.config
        for key in key_path.split("/"):
            node = node[key]
        return node

    def setting_json(self, key_path: str) -> str:
        """:meth:`setting` as canonical JSON."""
        return canonical_json(self.setting(key_path))

    @property
    def metric_names(self) -> list[str]:
        """The metric rows of every scores file: the ``evaluation`` section's presets and further names
        (:func:`csfbench.metrics.metric_names`), in order."""
        evaluation = self.config["evaluation"]
        return list(metric_names(evaluation["conventions"], evaluation["metrics"]))

    @property
    def bootstrap_json(self) -> str:
        """The score jobs' bootstrap settings (the keys of :class:`csfbench.evaluation.Bootstrap`) as canonical JSON:
        ``evaluation.bootstrap`` with ``metrics`` resolved (null = every metric row of the run with a bootstrap
        replicate, :data:`csfbench.metrics.bootstrap.SUPPORTED`, in row order); only ``{"n_boot": 0}`` when off,
        so that editing an unused setting reruns no job.  The clique stability's replicates
        (``ranking.stability.n_replicates``, at most ``n_boot``) are kept for the ranked metrics that get intervals
        (``replicates``, ``replicate_metrics``; left out when none is kept)."""
        settings = dict(self.config["evaluation"]["bootstrap"])
        if not settings["n_boot"]:
            return canonical_json({"n_boot": 0})
        if settings["metrics"] is None:
            settings["metrics"] = [name for name in self.metric_names if name in BOOTSTRAP_METRICS]
        ranking = self.config["ranking"]
        ranked = {name for group in ranking["metric_groups"].values() for name in group}
        kept = [name for name in settings["metrics"] if name in ranked]
        replicates = min(ranking["stability"]["n_replicates"], settings["n_boot"])
        if kept and replicates:
            settings.update(replicates=replicates, replicate_metrics=kept)
        return canonical_json(settings)


    # -----------------------------------------------------------------------------------------
    # models and evaluation sets
    # -----------------------------------------------------------------------------------------

    @property
    def sources(self) -> list[str]:
        return list(self.config["sources"])

    def source_dataset(self, source: str) -> str:
        return self.config["sources"][source]["dataset"]

    def source_index(self, source: str) -> str:
        """The index file of the source's own dataset (its ID splits)."""
        return paths.dataset_index(self.source_dataset(source))

    def source_dataset_json(self, source: str) -> str:
        return self.dataset_spec(self.source_dataset(source)).to_json()

    def val_size(self, source: str) -> int:
        """The source's ID validation split: the last ``val_size`` images of its official train split."""
        return self.config["sources"][source]["val_size"]

    @functools.cache
    def model_ids(self, source: str) -> tuple[ModelId, ...]:
        """Every model of ``source`` (a backbone's ``sources``, when given, name the sources it serves), in a
        deterministic order."""
        return tuple(ModelId(backbone, paradigm, int(dropout), reward, int(run))
                     for backbone, bcfg in self.config["backbones"].items()
                     if serves(bcfg, source)
                     for paradigm in bcfg["paradigms"]
                     for dropout in bcfg["dropout"]
                     for reward in rewards(self.config, source, paradigm)
                     for run in bcfg["runs"])

    def iter_models(self) -> Iterator[tuple[str, ModelId]]:
        for source in self.config["sources"]:
            for mid in self.model_ids(source):
                yield source, mid

    def models(self, source: str) -> list[str]:
        """The model ids of ``source`` as strings (the ``model`` wildcard)."""
        return [str(m) for m in self.model_ids(source)]

    @functools.cache
    def ensemble_ids(self, source: str) -> tuple[EnsembleId, ...]:
        """The deep ensembles of ``source`` (the ``ensembles`` section; :mod:`csfbench.workflow.ensembles`)."""
        return source_ensembles(self.config, source)

    def iter_ensembles(self) -> Iterator[tuple[str, EnsembleId]]:
        for source in self.config["sources"]:
            for eid in self.ensemble_ids(source):
                yield source, eid

    @functools.cache
    def ensemble_spec(self, source: str, ensemble: EnsembleId | str) -> EnsembleSpec:
        eid = EnsembleId.parse(ensemble) if isinstance(ensemble, str) else ensemble
        return EnsembleSpec(source, str(eid), eid.backbone, eid.paradigm, eid.dropout, eid.reward,
                            tuple(self.model_spec(source, member) for member in eid.members))

    def ensemble_datasets(self, source: str, ensemble: EnsembleId | str) -> list[str]:
        """The sets an ensemble is scored on: those its members are all scored on, but their adversarial sets (each
        member's own images), in the first member's order."""
        eid = EnsembleId.parse(ensemble) if isinstance(ensemble, str) else ensemble
        common = set.intersection(*(set(self.scored_datasets(source, m)) for m in eid.members))
        return [d for d in self.scored_datasets(source, eid.members[0])
                if d in common and not shift_names.parse_adversarial_set(d)]

    def eval_datasets(self, source: str, model: ModelId | str | None = None) -> list[str]:
        """Evaluation sets of a source: the three ID splits, then its shifted sets in config order.

        With ``model``, a model of the shift study (``shifts`` section) also gets the generated corruption
        sets of its source and its own adversarial sets.
        """
        generated = self.corruption_sets(source) + self.adversarial_sets(source, model) \
            if model is not None and self.in_shift_study(source, model) else []
        return list(SPLITS) + list(self.config["sources"][source]["ood"]) + generated

    def scored_datasets(self, source: str, model: ModelId | str | None = None) -> list[str]:
        """The evaluation sets that are scored: all but the training split."""
        return [d for d in self.eval_datasets(source, model) if d != "train"]

    def semantic_sets(self, source: str) -> list[str]:
        return [n for n, e in self.config["sources"][source]["ood"].items() if e["shift_type"] == "semantic"]

    def covariate_sets(self, source: str) -> list[str]:
        """The covariate sets a source's models are scored on: its catalogue sets of shift type covariate and,
        when one of its models is in the shift study, the generated corruption sets."""
        generated = self.corruption_sets(source) if any(s == source for s, _ in self.study_models()) else []
        return [n for n, e in self.config["sources"][source]["ood"].items()
                if e["shift_type"] == "covariate"] + generated

    def dataset_names(self) -> list[str]:
        """Every value of the ``dataset`` wildcard: catalogue datasets, ID splits and generated sets."""
        return sorted(set(self.config["datasets"]) | set(SPLITS) | set(self.generated_set_names()))

    # -----------------------------------------------------------------------------------------
    # resolved specs
    # -----------------------------------------------------------------------------------------

    @functools.cache
    def dataset_spec(self, name: str) -> DatasetSpec:
        """The catalogue dataset ``name`` with its path under ``data_root``."""
        entry = self.config["datasets"][name]
        return DatasetSpec(name, entry["format"], str(Path(self.config["data_root"]) / entry["path"]),
                           entry["split"], dict(entry["options"]))

    @functools.cache
    def model_spec(self, source: str, model: ModelId | str) -> ModelSpec:
        """Everything needed to build, train and evaluate one model.  A paradigm's ``outlier_dataset`` (Outlier
        Exposure) names a catalogue dataset: it becomes the spec's ``outliers``, out of ``paradigm_params``."""
        config = self.config
        mid = ModelId.parse(model) if isinstance(model, str) else model
        src = config["sources"][source]
        bcfg = config["backbones"][mid.backbone]
        if "library" in bcfg:
            return self._library_model_spec(source, mid)
        training = config["training"][mid.backbone]
        overrides = src["training"].get(mid.backbone, {})
        common = deep_merge(training["common"], overrides.get("common", {}))
        paradigm = deep_merge(training[mid.paradigm], overrides.get(mid.paradigm, {}))
        optim = deep_merge(common, {k: v for k, v in paradigm.items() if k in common})
        outliers = paradigm.pop("outlier_dataset", None)
        lr = optim["lr"]
        optim["lr"] = float(lr[f"do{mid.dropout}"] if isinstance(lr, dict) else lr)
        return ModelSpec(
            source=source, model=str(mid), backbone=mid.backbone, paradigm=mid.paradigm, dropout=mid.dropout,
            reward=mid.reward, run=mid.run, seed=derive_seed(config["seed"], source, str(mid)),
            n_classes=int(src["n_classes"]), image_size=int(src["image_size"][mid.backbone]),
            normalize=dict(src["normalize"]), arch=dict(bcfg["arch"]),
            mcd_samples=int(bcfg["mcd_samples"]) if mid.dropout else 0, optim=optim,
            paradigm_params={k: v for k, v in paradigm.items() if k not in common},
            dataset=self.dataset_spec(src["dataset"]), val_size=int(src["val_size"]),
            pretrained=dict(bcfg["pretrained"]) if mid.backbone == "vit" else None,
            geometry=_geometry(src["image_geometry"]),
            outliers=None if outliers is None else self.dataset_spec(outliers))

    def _library_model_spec(self, source: str, mid: ModelId) -> ModelSpec:
        """A timm/torchvision classifier evaluated without training (paradigm ``pretrained``: the weights file;
        ``random``: the architecture's default initialisation seeded with the run number).  Normalisation and
        geometry: the backbone's ``eval`` settings, their nulls read from the weights' own preprocessing
        (:func:`csfbench.models.pretrained.eval_preprocessing`)."""
        src, bcfg = self.config["sources"][source], self.config["backbones"][mid.backbone]
        n_classes = int(src["n_classes"])
        weights = None
        if mid.paradigm == "pretrained":
            weights = dict(bcfg["weights"])
            if weights["num_classes"] not in (None, n_classes):
                raise ConfigError(f"backbones/{mid.backbone}/weights/num_classes", f"null or {n_classes} "
                                  f"(sources/{source}/n_classes): a pretrained classifier is evaluated with its own "
                                  "head", weights["num_classes"])
            weights["num_classes"] = n_classes
        if mid.backbone not in src["image_size"]:
            raise ConfigError(f"sources/{source}/image_size/{mid.backbone}", "the input side S of the backbone", None)
        arch = dict(bcfg["arch"])
        prep = _weights_preprocessing(bcfg["library"], arch["name"], bcfg["eval"])
        normalize = bcfg["eval"]["normalize"] or {"mean": list(prep["mean"]), "std": list(prep["std"])}
        geometry = {"mode": bcfg["eval"]["geometry"] or prep["geometry"],
                    "crop_pct": bcfg["eval"]["crop_pct"] or prep["crop_pct"],
                    "interpolation": bcfg["eval"]["interpolation"] or prep["interpolation"]}
        return ModelSpec(
            source=source, model=str(mid), backbone=mid.backbone, paradigm=mid.paradigm, dropout=0, reward=0.0,
            run=mid.run, seed=derive_seed(self.config["seed"], source, str(mid)), n_classes=n_classes,
            image_size=int(src["image_size"][mid.backbone]), normalize=dict(normalize), arch=arch, mcd_samples=0,
            optim={}, paradigm_params={}, dataset=self.dataset_spec(src["dataset"]), val_size=int(src["val_size"]),
            library=bcfg["library"], weights=weights, geometry=geometry)

    def pretrain_spec(self) -> ModelSpec:
        """The model spec of the demo's ViT pretraining: plain cross-entropy from scratch, with the
        ``pretrain`` section's optimiser and augmentation settings."""
        pre = self.config["pretrain"]
        vit = self.config["backbones"]["vit"]
        return ModelSpec(
            source="pretrain", model="vit_ce_do0_rew0_run0", backbone="vit", paradigm="ce", dropout=0, reward=0.0,
            run=0, seed=derive_seed(self.config["seed"], "pretrain"),
            n_classes=int(vit["pretrained"]["num_classes"]), image_size=int(pre["image_size"]),
            normalize=dict(pre["normalize"]), arch=dict(vit["arch"]), mcd_samples=0,
            optim={"batch_size": int(pre["batch_size"]), "lr": float(pre["lr"]), "momentum": float(pre["momentum"]),
                   "weight_decay": float(pre["weight_decay"]), "nesterov": bool(pre["nesterov"]),
                   "grad_clip": float(pre["grad_clip"]), "augment": dict(pre["augment"])},
            paradigm_params={"epochs": int(pre["epochs"]), "warmup_steps": int(pre["warmup_steps"])},
            dataset=self.dataset_spec(pre["dataset"]), val_size=int(pre["val_size"]))

    @functools.cache
    def eval_set_spec(self, source: str, dataset: str, model: ModelId | str | None = None) -> EvalSet:
        """Name, shift type and regime of an evaluation set of ``source`` (an ID split or a shifted set), or of
        its OOD validation set (:meth:`ood_validation_set`: semantic, never evaluated).

        A generated set's dataset points at the files its rule writes (``npy`` format); an adversarial set
        belongs to one model, which must then be given.
        """
        if dataset in SPLITS:
            return EvalSet(dataset, "id", dataset)
        if dataset == self.ood_validation_set(source):
            return EvalSet(dataset, "semantic", "semantic", self.dataset_spec(dataset))
        folder = generated_set_folder(source, dataset, model)
        if folder is not None:
            shift_type = "adversarial" if shift_names.parse_adversarial_set(dataset) else "covariate"
            return EvalSet(dataset, shift_type, shift_type, DatasetSpec(dataset, "npy", folder, "test", {}))
        entry = self.config["sources"][source]["ood"][dataset]
        label_space = entry.get("label_space")
        return EvalSet(dataset, entry["shift_type"], entry.get("regime", entry["shift_type"]),
                       self.dataset_spec(dataset), None if label_space is None else tuple(label_space),
                       entry["logit_mask"])

    @functools.cache
    def csf_fit_config(self, fit_group: str, source: str | None = None) -> dict:
        """The part of the ``csf`` section a fit of ``fit_group`` of a model of ``source`` reads (a Snakemake
        param).

        The list of groups, the compute device (``device``: a job resource, it changes no result beyond
        rounding), and the fixed values, search spaces, search budgets and grids of CSFs without a
        variant in ``fit_group`` (and of the projection, for ``none``), are left out: changing them does
        not rerun this fit.  ``tuning.ood_validation`` becomes the source's OOD validation set
        (:meth:`ood_validation_set`; None without the grid protocol or without ``source``).
        """
        csf = self.config["csf"]
        used = {c.name for c in CSFS if set(c.variants) & set(GROUP_VARIANTS[fit_group])}
        if csf["methods"] is not None:
            used &= set(csf["methods"])
        used |= {"projection"} if fit_group != "none" else set()
        out = {key: value for key, value in csf.items()
               if key not in ("groups", "device", "fixed", "search_space", "methods")}
        out["methods"] = None if csf["methods"] is None else sorted(used - {"projection"})
        for key in ("fixed", "search_space"):
            out[key] = {name: value for name, value in csf[key].items() if name in used}
        budgets = resolved_budgets(csf["tuning"])
        out["tuning"] = {**csf["tuning"], "budgets": {name: {"init_points": b[0], "n_iter": b[1]}
                                                      for name, b in sorted(budgets.items()) if name in used},
                         "grids": {name: grid for name, grid in csf["tuning"]["grids"].items() if name in used},
                         "ood_validation": self.ood_validation_set(source) if source is not None else None}
        return out

    def ood_validation_set(self, source: str) -> str | None:
        """The OOD validation set of ``source`` that the grid tuning protocol reads (``csf.tuning.ood_validation``;
        None when the protocols do not include ``grid``).  It is not an evaluation set of the source."""
        if "grid" not in self.config["csf"]["tuning"]["protocols"]:
            return None
        return self.config["csf"]["tuning"]["ood_validation"].get(source)

    def used_splits(self, name: str) -> list[str]:
        """The official splits of catalogue dataset ``name`` that the workflow reads (sorted)."""
        splits = set()
        for source, src in self.config["sources"].items():
            if src["dataset"] == name:
                splits |= {"train", "test"}
            if name in src["ood"] or name == self.ood_validation_set(source):
                splits.add(self.config["datasets"][name]["split"])
            if name in self.outlier_datasets(source):
                splits.add(self.config["datasets"][name]["split"])
        if self.enabled("pretrain") and self.config["pretrain"]["dataset"] == name:
            splits.add("train")
        return sorted(splits)

    @functools.cache
    def outlier_datasets(self, source: str) -> tuple[str, ...]:
        """The catalogue datasets that models of ``source`` train on as auxiliary outliers (paradigm ``oe``; the
        ``outliers`` of their specs), sorted."""
        return tuple(sorted({spec.outliers.name for mid in self.model_ids(source)
                             if (spec := self.model_spec(source, mid)).outliers is not None}))

    # -----------------------------------------------------------------------------------------
    # shift study: generated corruption and adversarial sets, ProjNorm
    # -----------------------------------------------------------------------------------------

    def in_shift_study(self, source: str, model: ModelId | str) -> bool:
        """Whether ``model`` of ``source`` gets the generated sets (``shifts.sources`` / ``shifts.models``;
        absent: every source / every model of the study sources)."""
        if not self.enabled("shifts"):
            return False
        study = self.config["shifts"]
        return source in study.get("sources", self.config["sources"]) and str(model) in study.get("models", [str(model)])

    @functools.cache
    def study_models(self) -> tuple[tuple[str, ModelId], ...]:
        """(source, model) pairs of the shift study, in grid order."""
        return tuple((s, m) for s, m in self.iter_models() if self.in_shift_study(s, m))

    def corruption_sets(self, source: str) -> list[str]:
        """``corrupt-{family}-{severity}`` names of the corruption sets generated from ``source``'s test split."""
        if not self.enabled("shifts"):
            return []
        study = self.config["shifts"]
        corruptions = study.get("corruptions")
        if not corruptions or source not in study.get("sources", self.config["sources"]):
            return []
        return [shift_names.corruption_set(f, s) for f in corruptions["families"] for s in corruptions["severities"]]

    def adversarial_sets(self, source: str, model: ModelId | str | None) -> list[str]:
        """``{attack}-eps{ε}`` names of a study model's adversarial sets (ε in 1/255 units)."""
        if model is None or not self.in_shift_study(source, model):
            return []
        attacks = self.config["shifts"].get("adversarial", {}).get("attacks", {})
        return [shift_names.adversarial_set(name, eps) for name, attack in attacks.items() for eps in attack["eps"]]

    def generated_set_names(self) -> list[str]:
        """Every generated set name of the config (for the ``dataset`` wildcard)."""
        names = {d for source in self.config["sources"] for d in self.corruption_sets(source)}
        names |= {d for source, model in self.study_models() for d in self.adversarial_sets(source, model)}
        return sorted(names)

    def corruption_json(self, dataset: str) -> str:
        return canonical_json(self.corruption_spec(dataset))

    def attack_json(self, dataset: str) -> str:
        return canonical_json(self.attack_spec(dataset))

    def corruption_spec(self, dataset: str) -> dict:
        """Family, severity and seed of a corruption set."""
        family, severity = shift_names.parse_corruption_set(dataset)
        return {"family": family, "severity": severity, "seed": int(self.config["shifts"]["corruptions"]["seed"])}

    def attack_spec(self, dataset: str) -> dict:
        """The attack of an adversarial set: name, ε and (PGD) steps, step size (1/255 units), random start."""
        name, eps = shift_names.parse_adversarial_set(dataset)
        attack = self.config["shifts"]["adversarial"]["attacks"][name]
        spec = {"name": name, "eps": eps}
        if name == "pgd":
            steps = int(attack["steps"])
            spec.update(steps=steps, step_size=float(attack["step_factor"]) * eps / steps,
                        random_start=bool(attack["random_start"]))
        return spec

    def projnorm_sets(self, source: str, model: ModelId | str) -> list[str]:
        """The labelled sets ProjNorm and the baselines are evaluated on: ID test, covariate and adversarial sets."""
        return ["test"] + [d for d in self.eval_datasets(source, model)[len(SPLITS):]
                           if self.eval_set_spec(source, d, model).shift_type in ("covariate", "adversarial")]

    def agree_partner(self, model: ModelId | str) -> str | None:
        """The AgreeScore partner: the same configuration with run + ``projnorm.agree_run_offset`` (None when 0)."""
        offset = int(self.config["projnorm"]["agree_run_offset"])
        if not offset:
            return None
        mid = ModelId.parse(str(model))
        return str(ModelId(mid.backbone, mid.paradigm, mid.dropout, mid.reward, mid.run + offset))


def _geometry(geometry: dict) -> dict | None:
    """A source's ``image_geometry``; None for the default bilinear stretch (:attr:`ModelSpec.geometry`)."""
    return None if (geometry["mode"], geometry["interpolation"]) == ("stretch", "bilinear") else dict(geometry)


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


__all__ = ["Grid", "OPTIONAL_STAGES", "canonical_json", "generated_set_folder", "stage_enabled"]
