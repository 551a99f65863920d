"""The grid of jobs of a validated config: which models, evaluation sets and files exist, and what each
job reads.

The grid is static (no checkpoint or dataset is read): sources × backbones × paradigms × dropout ×
rewards × runs, then per model its evaluation sets and per stage its jobs.  :class:`Grid` takes the config
as validated by :func:`csfbench.workflow.settings.validate_config` (defaults filled in), so it reads keys
directly and never supplies a default of its own.  Every method is a pure function of the config and of
its arguments, named like the rule files' wildcards (``source``, ``model``, ``dataset``, ``fit_group``,
``name``), so that ``rules/common.smk`` hands it a job's wildcards unchanged; results are cached, because
the paper grid asks for the same spec from thousands of jobs while the DAG is built.
"""
from __future__ import annotations

import functools
from dataclasses import asdict
import json
from pathlib import Path
from typing import Iterator

from csfbench.aggregate.cells import REGIMES, Analysis, analyses, output_paths
from csfbench.csf.engine import resolved_budgets
from csfbench.csf.projection import GROUP_VARIANTS, NETWORK_SCORER, group_of, parse_variant
from csfbench.csf.registry import CSFS
from csfbench.data import demo as demo_generator
from csfbench.errors import ConfigError
from csfbench.seeds import derive_seed
from csfbench.shifts import names as shift_names
from csfbench.specs import SPLITS, DatasetSpec, EvalSet, ModelSpec
from csfbench.workflow import paths
from csfbench.workflow.ids import ModelId
from csfbench.workflow.merge import deep_merge

#: the tables the figure rules write (CSV; the LaTeX twins are written beside them)
TABLES = ("clique_layers.csv", "table2_best.csv", "table8_selected_dropout.csv", "table10_selected_reward.csv")
#: the files of the ``conover_heatmap`` rule (figure as PNG and PDF, p-value matrix as CSV)
HEATMAP_FILES = {"png": paths.figure("conover_heatmap.png"), "pdf": paths.figure("conover_heatmap.pdf"),
                 "csv": paths.table("conover_heatmap.csv")}
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


def same_file(a: str, b: str) -> bool:
    """Whether two paths (relative to the working directory, or absolute) name the same file."""
    return Path(a).resolve() == Path(b).resolve()


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

    def _rewards(self, source: str, paradigm: str) -> list[float]:
        return [float(r) for r in self.config["sources"][source]["dg_rewards"]] if paradigm == "dg" else [0.0]

    @functools.cache
    def model_ids(self, source: str) -> tuple[ModelId, ...]:
        """Every model of ``source`` (a backbone's ``sources``, when given, name the sources it serves), in a
        deterministic order."""
        return tuple(ModelId(backbone, paradigm, int(dropout), reward, int(run))
                     for backbone, bcfg in self.config["backbones"].items()
                     if bcfg.get("sources") is None or source in bcfg["sources"]
                     for paradigm in bcfg["paradigms"]
                     for dropout in bcfg["dropout"]
                     for reward in self._rewards(source, paradigm)
                     for run in bcfg["runs"])

    def iter_models(self) -> Iterator[tuple[str, ModelId]]:
        for source in self.config["sources"]:
            for mid in self.model_ids(source):
                yield source, mid

    def models(self, source: str) -> list[str]:
        """The model ids of ``source`` as strings (the ``model`` wildcard)."""
        return [str(m) for m in self.model_ids(source)]

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
        """Everything needed to build, train and evaluate one model."""
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
            geometry=_geometry(src["image_geometry"]))

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

        The list of groups, and the fixed values, search spaces, search budgets and grids of CSFs without a
        variant in ``fit_group`` (and of the projection, for ``none``), are left out: changing them does
        not rerun this fit.  ``tuning.ood_validation`` becomes the source's OOD validation set
        (:meth:`ood_validation_set`; None without the grid protocol or without ``source``).
        """
        csf = self.config["csf"]
        used = {c.name for c in CSFS if set(c.variants) & set(GROUP_VARIANTS[fit_group])}
        if csf["methods"] is not None:
            used &= set(csf["methods"])
        used |= {"projection"} if fit_group != "none" else set()
        out = {key: value for key, value in csf.items() if key not in ("groups", "fixed", "search_space", "methods")}
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
        if self.enabled("pretrain") and self.config["pretrain"]["dataset"] == name:
            splits.add("train")
        return sorted(splits)

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

    # -----------------------------------------------------------------------------------------
    # jobs of the data, training and feature rules
    # -----------------------------------------------------------------------------------------

    def demo_files(self) -> list[str]:
        """The files the demo generator writes (none when the demo stage is off)."""
        if not self.enabled("demo"):
            return []
        root = self.config["data_root"]
        return [f"{root}/{name}/{split}/{array}.npy"
                for name, split in demo_generator.demo_splits(self.config["demo"]["spec"])
                for array in ("images", "labels")]

    def dataset_index_inputs(self, name: str) -> list[str]:
        """The generated files behind a dataset, when the demo generator produces it."""
        root = f"{self.config['data_root']}/{self.config['datasets'][name]['path']}/"
        return [f for f in self.demo_files() if f.startswith(root)]

    def pretrained_vit_file(self) -> str | None:
        """The ViT weights the demo's pretraining writes (None when the pretrain stage is off)."""
        return self.config["backbones"]["vit"]["pretrained"]["file"] if self.enabled("pretrain") else None

    def _workflow_weights(self, file: str | None) -> dict[str, str]:
        """{"weights": file} when ``file`` is the ViT weights the workflow's pretraining writes (a DAG input);
        a user's file is checked by the job when it starts (so that a dry run works without it)."""
        produced = self.pretrained_vit_file()
        return {"weights": file} if file and produced and same_file(file, produced) else {}

    def train_inputs(self, source: str, model: str) -> dict:
        spec = self.model_spec(source, model)
        inputs = {"index": paths.dataset_index(spec.dataset.name)}
        if spec.backbone == "vit" and self.enabled("pretrain"):
            inputs["pretrained"] = spec.pretrained["file"]
        return {**inputs, **self._workflow_weights(spec.weights and spec.weights["file"])}

    def eval_set_images(self, source: str, model: str | None, dataset: str) -> dict[str, str]:
        """What the images of an evaluation set are read through: its dataset index or its generated images."""
        generated = generated_set_folder(source, dataset, model)
        if generated is not None:  # a corruption or adversarial set written by the shift study's rules
            return {"images": paths.npy_file(generated, "images")}
        if dataset in SPLITS:
            return {"index": paths.dataset_index(self.source_dataset(source))}
        return {"index": paths.dataset_index(dataset)}

    def dataset_spec_json(self, name: str) -> str:
        return self.dataset_spec(name).to_json()

    def extract_inputs(self, source: str, model: str, dataset: str) -> dict:
        return {"checkpoint": paths.checkpoint(source, model), **self.eval_set_images(source, model, dataset)}

    def eval_set_json(self, source: str, dataset: str, model: str) -> str:
        # the model matters only for its own adversarial sets: other sets share one cache entry
        return self._eval_set_json(source, dataset, model if shift_names.parse_adversarial_set(dataset) else None)

    @functools.cache
    def _eval_set_json(self, source: str, dataset: str, model: str | None) -> str:
        return self.eval_set_spec(source, dataset, model).to_json()

    @functools.cache
    def model_spec_json(self, source: str, model: str) -> str:
        return self.model_spec(source, model).to_json()

    def feature_files(self) -> list[str]:
        return [paths.features(source, str(model), dataset) for source, model in self.iter_models()
                for dataset in self.eval_datasets(source, model)]

    # -----------------------------------------------------------------------------------------
    # CSF scoring: one job per (model, fit group) over every scored evaluation set
    # -----------------------------------------------------------------------------------------

    @property
    def fit_groups(self) -> list[str]:
        return list(self.config["csf"]["groups"])

    @functools.cache
    def csf_fit_json(self, fit_group: str, source: str) -> str:
        """:meth:`csf_fit_config` as canonical JSON (one per group and source, not per job)."""
        return canonical_json(self.csf_fit_config(fit_group, source))

    def csf_ood_validation(self, source: str, model: str) -> list[str]:
        """The features of the source's OOD validation set, which the grid tuning protocol reads (else none)."""
        name = self.ood_validation_set(source)
        return [paths.features(source, model, name)] if name else []

    @functools.cache
    def scored_sets(self, source: str, model: str) -> tuple[EvalSet, ...]:
        return tuple(self.eval_set_spec(source, d, model) for d in self.scored_datasets(source, model))

    def score_inputs(self, source: str, model: str, fit_group: str) -> dict:
        return {"fit": paths.csf_fit(source, model, fit_group),
                "features": [paths.features(source, model, s.name) for s in self.scored_sets(source, model)]}

    @functools.cache
    def score_eval_sets_json(self, source: str, model: str) -> str:
        return canonical_json([s.to_dict() for s in self.scored_sets(source, model)])

    def metric_files(self) -> list[str]:
        """The metric rows of every CSF job (stored-output, network-pass, ProjNorm) the results table merges."""
        return [paths.metrics(source, str(model), fit_group) for source, model in self.iter_models()
                for fit_group in self.fit_groups] + self.network_metric_files() + self.projnorm_metric_files()

    # -----------------------------------------------------------------------------------------
    # CSFs that need the network: their scores and metric rows in the scorer slot NETWORK_SCORER
    # -----------------------------------------------------------------------------------------

    @property
    def network_methods(self) -> list[str]:
        return list(self.config["network_csf"]["methods"])

    def network_fit_json(self) -> str:
        """What a network-pass fit reads (the batch size is its own param: a change of it reruns nothing)."""
        return canonical_json({k: v for k, v in self.config["network_csf"].items() if k != "batch_size"})

    def network_metric_files(self) -> list[str]:
        if not self.network_methods:
            return []
        return [paths.metrics(source, str(model), NETWORK_SCORER) for source, model in self.iter_models()]

    def network_fit_inputs(self, source: str, model: str) -> dict:
        return {"checkpoint": paths.checkpoint(source, model), "index": self.source_index(source)}

    def network_score_inputs(self, source: str, model: str) -> dict:
        """The checkpoint, the fit, the images of every scored set (as extract_features reads them) and their
        feature files (whose correctness the metric rows use), in the order of :meth:`score_eval_sets_json`."""
        sets = self.scored_sets(source, model)
        images = {path for s in sets for path in self.eval_set_images(source, model, s.name).values()}
        return {"checkpoint": paths.checkpoint(source, model), "fit": paths.network_fit(source, model),
                "images": sorted(images), "features": [paths.features(source, model, s.name) for s in sets]}

    # -----------------------------------------------------------------------------------------
    # ProjNorm
    # -----------------------------------------------------------------------------------------

    def projnorm_partner(self, source: str, model: str) -> dict:
        """Checkpoint of the AgreeScore partner model (empty when projnorm.agree_run_offset is 0)."""
        partner = self.agree_partner(model)
        return {"partner": paths.checkpoint(source, partner)} if partner else {}

    def projnorm_shift_inputs(self, source: str, model: str, dataset: str) -> dict:
        return {**self.extract_inputs(source, model, dataset), **self.projnorm_partner(source, model),
                "reference": paths.projnorm_reference(source, model)}

    def projnorm_partner_spec(self, source: str, model: str) -> str:
        partner = self.agree_partner(model)
        return self.model_spec_json(source, partner) if partner else "null"

    @functools.cache
    def projnorm_study(self, source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """[(model, [evaluation set])] of a source's study, in grid order."""
        return tuple((str(model), tuple(self.projnorm_sets(source, model)))
                     for s, model in self.study_models() if s == source)

    def projnorm_eval_inputs(self, source: str) -> dict:
        study = self.projnorm_study(source)
        return {"val": [paths.features(source, m, "val") for m, _ in study],
                "features": [paths.features(source, m, d) for m, sets in study for d in sets],
                "projnorm": [paths.projnorm_result(source, m, d) for m, sets in study for d in sets]}

    def projnorm_study_json(self, source: str) -> str:
        """The study's model specs and evaluation sets, in the order of :meth:`projnorm_eval_inputs`."""
        return canonical_json([{"spec": self.model_spec(source, m).to_dict(),
                                "eval_sets": [self.eval_set_spec(source, d, m).to_dict() for d in sets]}
                               for m, sets in self.projnorm_study(source)])

    def projnorm_sources(self) -> list[str]:
        return sorted({source for source, _ in self.study_models()}) if self.enabled("projnorm") else []

    def projnorm_outputs(self) -> list[str]:
        return [out for source in self.projnorm_sources()
                for out in (paths.projnorm_table(source, "correlations.csv"),
                            paths.projnorm_table(source, "stress.csv"), paths.projnorm_scatter(source))]

    def projnorm_metric_files(self) -> list[str]:
        return [paths.projnorm_table(source, "rows.parquet") for source in self.projnorm_sources()]

    # -----------------------------------------------------------------------------------------
    # neural collapse
    # -----------------------------------------------------------------------------------------

    def nc_fit_groups(self) -> list[str]:
        """The CSF fit groups whose projections the NC regimes reuse (a group not fitted is refitted with
        ``geometry.nc.variance``)."""
        return [g for g in ("global", "class") if g in self.fit_groups]

    def nc_fits(self, source: str, model: str) -> list[str]:
        return [paths.csf_fit(source, model, g) for g in self.nc_fit_groups()]

    def nc_record_files(self, source: str) -> list[str]:
        return [paths.nc_records(source, m) for m in self.models(source)]

    def nc_tables(self) -> list[str]:
        if not self.enabled("geometry"):
            return []
        return [paths.nc_table(source, ext) for source in self.sources for ext in ("csv", "tex")]

    # -----------------------------------------------------------------------------------------
    # near/mid/far stratification and the covariate embeddings
    # -----------------------------------------------------------------------------------------

    def proximity_sources(self) -> list[str]:
        return [s for s in self.sources if self.semantic_sets(s)] if self.enabled("proximity") else []

    def proximity_outputs(self) -> list[str]:
        return [paths.proximity_table(source, ext) for source in self.proximity_sources() for ext in ("csv", "tex")]

    def proximity_regime_files(self) -> list[str]:
        return [paths.proximity_regimes(source) for source in self.proximity_sources()]

    def encoder_weights_input(self) -> dict[str, str]:
        """{"weights": file} when the proximity encoder's weights are the ones the workflow produces (the demo's
        pretrained ViT: a DAG input); user-provided weights are checked when the job starts."""
        return self._workflow_weights(self.config["proximity"]["encoder"].get("file"))

    def proximity_embed_inputs(self, source: str) -> dict:
        names = [self.source_dataset(source), *self.semantic_sets(source)]
        return {"index": [paths.dataset_index(name) for name in names], **self.encoder_weights_input()}

    def proximity_embed_params(self, source: str) -> str:
        return canonical_json({"source_dataset": self.dataset_spec(self.source_dataset(source)).to_dict(),
                               "val_size": self.config["sources"][source]["val_size"],
                               "ood": {n: self.dataset_spec(n).to_dict() for n in self.semantic_sets(source)}})

    def static_regimes(self, source: str) -> str:
        ood = self.config["sources"][source]["ood"]
        return json.dumps({n: ood[n].get("regime") for n in self.semantic_sets(source)})

    def covariate_embed_inputs(self, source: str) -> dict:
        """What the covariate sets' images are read through (generated images or dataset indexes), the weights."""
        sets = [next(iter(self.eval_set_images(source, None, name).values())) for name in self.covariate_sets(source)]
        return {"sets": sets, **self.encoder_weights_input()}

    def covariate_embed_sets(self, source: str) -> str:
        return canonical_json({n: self.eval_set_spec(source, n).dataset.to_dict() for n in self.covariate_sets(source)})

    # -----------------------------------------------------------------------------------------
    # conformal evaluation
    # -----------------------------------------------------------------------------------------

    @property
    def _conformal(self) -> dict:
        return self.config["conformal"]

    def conformal_fit_json(self) -> str:
        """What the conformal metric rows read (the figure's and the prediction sets' settings left out)."""
        return canonical_json({k: v for k, v in self._conformal.items() if k not in ("figure", "prediction_sets")})

    def _band_file(self, method: str, n: int, delta: float) -> str:
        c = self._conformal
        return paths.conformal_band(n, delta, method, c["n_mc"], c["seed"])

    def conformal_metric_bands(self) -> list[tuple[str, float, str]]:
        """(method, δ, band file) of the metric rows: every method × δ at the calibration size ``n_cal``."""
        c = self._conformal
        return [(m, d, self._band_file(m, c["calibration"]["n_cal"], d)) for m in c["methods"] for d in c["delta"]]

    def conformal_metric_bands_json(self) -> str:
        return json.dumps(self.conformal_metric_bands())

    def conformal_report_bands_json(self) -> str:
        return json.dumps(self.conformal_report_bands())

    def conformal_report_band_files(self) -> list[str]:
        return sorted({path for _, _, path in self.conformal_report_bands()})

    def conformal_report_bands(self) -> list[tuple[str, int, str]]:
        """(method, n, band file) the report reads, all at the first δ: the figure's ROC band (first method,
        n_cal; the same file as the metric rows') and the band-width panel's (every method × figure.band_sizes)."""
        c = self._conformal
        sizes = [c["calibration"]["n_cal"]] + list(c["figure"]["band_sizes"])
        return [(m, n, self._band_file(m, n, c["delta"][0])) for m in c["methods"] for n in sizes]

    def conformal_band_json(self, n: str, delta: str, method: str, n_mc: str, seed: str) -> str:
        """The settings of the band a ``conformal_band`` job writes (method, n, δ, Monte-Carlo size, seed), looked
        up by its file among the bands the conformal jobs read, so that δ is the config's number and is never
        parsed back from the file name."""
        wanted = paths.conformal_band(n, delta, method, n_mc, seed)
        c = self._conformal
        bands = [(m, c["calibration"]["n_cal"], d, path) for m, d, path in self.conformal_metric_bands()]
        bands += [(m, size, c["delta"][0], path) for m, size, path in self.conformal_report_bands()]
        for m, size, d, path in bands:
            if path == wanted:
                return canonical_json({"method": m, "n": int(size), "delta": float(d), "n_mc": int(c["n_mc"]),
                                       "seed": int(c["seed"])})
        raise ValueError(f"{wanted}: not a band file of the config's conformal section")

    def conformal_groups(self) -> list[str]:
        return self.fit_groups + ([NETWORK_SCORER] if self.network_methods else [])

    def conformal_inputs(self, source: str, model: str) -> dict:
        groups = self.conformal_groups()
        return {"scores": [paths.scores(source, model, g) for g in groups],
                "metrics": [paths.metrics(source, model, g) for g in groups],
                "bands": [path for _, _, path in self.conformal_metric_bands()]}

    def prediction_set_inputs(self, source: str, model: str) -> dict:
        """The feature files of the train and test splits; for the GRAM score also the checkpoint, the GRAM fit
        and the images of the test split (the network runs on them)."""
        inputs = {"train": paths.features(source, model, "train"), "test": paths.features(source, model, "test")}
        if "gram" in self._conformal["prediction_sets"]["scores"]:
            inputs.update(checkpoint=paths.checkpoint(source, model), network_fit=paths.network_fit(source, model),
                          index=paths.dataset_index(self.source_dataset(source)))
        return inputs

    def prediction_set_files(self, source: str) -> list[str]:
        return [paths.prediction_sets(source, m) for m in self.models(source)]

    def conformal_metric_files(self) -> list[str]:
        if not self.enabled("conformal"):
            return []
        return [paths.conformal_metrics(source, str(model)) for source, model in self.iter_models()]

    def conformal_outputs(self) -> list[str]:
        if not self.enabled("conformal"):
            return []
        return ([paths.prediction_sets(source, str(model)) for source, model in self.iter_models()]
                + [paths.figure(f"conformal_{source}.png") for source in self.sources]
                + [paths.table(f"conformal_{name}_{source}.csv") for source in self.sources
                   for name in ("table1", "table2")])

    def conformal_figure_scores(self, source: str) -> str:
        """The scores file of the conformal ROC figure: the source's first model, the fit group of
        ``conformal.figure.csf`` (fit group ``network`` for a network-pass CSF)."""
        return paths.scores(source, self.models(source)[0], self._scores_group(self._conformal["figure"]["csf"]))

    def _scores_group(self, csf: str) -> str:
        """The fit-group slot of the scores file that holds CSF variant ``csf``."""
        return NETWORK_SCORER if csf in self.network_methods else group_of(parse_variant(csf)[1])

    # -----------------------------------------------------------------------------------------
    # pair analyses
    # -----------------------------------------------------------------------------------------

    def gallery_sets_json(self, source: str) -> str:
        """The evaluation sets of a source's rank-gap gallery (the ID test split and its semantic sets)."""
        names = ["test"] + self.semantic_sets(source)
        return canonical_json({"source": self.dataset_spec(self.source_dataset(source)).to_dict(),
                               "val_size": self.config["sources"][source]["val_size"],
                               "sets": [self.eval_set_spec(source, n).to_dict() for n in names]})

    def analysis_inputs(self, source: str) -> dict:
        """The scores and metric rows (fit group none) of a source's models, the indexes of the gallery's datasets
        and, where the proximity stage runs, its embeddings and those of the source's covariate sets."""
        names = [self.source_dataset(source)] + self.semantic_sets(source)
        models = self.models(source)
        inputs = {"scores": [paths.scores(source, m, "none") for m in models],
                  "metrics": [paths.metrics(source, m, "none") for m in models],
                  "indexes": [paths.dataset_index(n) for n in names]}
        if source in self.proximity_sources():
            inputs["embeddings"] = paths.proximity_embeddings(source)
            if self.covariate_sets(source):
                inputs["covariate_embeddings"] = paths.covariate_embeddings(source)
        return inputs

    def analysis_sources(self) -> list[str]:
        if not self.enabled("analyses") or "none" not in self.fit_groups:
            return []
        return self.sources

    def pair_metric_files(self) -> list[str]:
        return [paths.pair_metrics(source) for source in self.analysis_sources()]

    def category_inputs(self) -> list[str]:
        return [paths.analysis_table("categories_long", source) for source in self.analysis_sources()]

    def analysis_outputs(self) -> list[str]:
        sources = self.analysis_sources()
        return [paths.figure(f"pairs_{source}.png") for source in sources] + (
            [paths.category_table("averaged")] if sources else [])

    # -----------------------------------------------------------------------------------------
    # rankings, figures and tables
    # -----------------------------------------------------------------------------------------

    @functools.cache
    def analyses(self) -> tuple[Analysis, ...]:
        return tuple(analyses(self.config))

    def ranking_cells(self) -> list[dict]:
        return [asdict(a) for a in self.analyses()]

    def ranking_files(self, ext: str, **where) -> list[str]:
        """The ranking files (``json`` or ``csv``) of the analyses whose fields match ``where``."""
        cells = [c for c in self.analyses() if all(getattr(c, k) == v for k, v in where.items())]
        return output_paths(paths.rankings_dir(), cells)[ext]

    @property
    def backbones(self) -> list[str]:
        return list(self.config["backbones"])

    def clique_map_inputs(self, backbone: str) -> list[str]:
        """The non-MCD ranking results of one backbone in the top-clique map's metric group."""
        return self.ranking_files("json", group=self.config["figures"]["clique_map_group"], backbone=backbone,
                                  mcd=False)

    def rc_model(self, source: str) -> str:
        """The model whose risk–coverage curves are drawn: ``figures.rc_curves.models``, else the first model."""
        return self.config["figures"]["rc_curves"]["models"].get(source) or self.models(source)[0]

    def rc_shift_types(self, source: str) -> dict[str, str]:
        """The drawn sets of a source's chosen model and their shift types: the test set, then every shifted set."""
        model = self.rc_model(source)
        return {d: self.eval_set_spec(source, d, model).shift_type
                for d in self.eval_datasets(source, model) if d not in ("train", "val")}

    def rc_csfs(self) -> list[str]:
        return list(self.config["figures"]["rc_curves"]["csfs"])

    def rc_inputs(self, source: str) -> list[str]:
        """The scores files the risk–coverage curves of a source read (one per fit-group slot needed)."""
        groups = sorted({self._scores_group(name) for name in self.rc_csfs()})
        return [paths.scores(source, self.rc_model(source), g) for g in groups]

    def rc_title(self, source: str) -> str:
        return f"{source}: {self.rc_model(source)}"

    def figure_targets(self) -> list[str]:
        """The final outputs of the figure rules (for rule all), the Conover heatmap included."""
        return ([paths.figure(f"top_cliques_{b}.png") for b in self.backbones]
                + [paths.figure(f"rc_curves_{s}.png") for s in self.sources]
                + [paths.table(name) for name in TABLES]
                + list(HEATMAP_FILES.values()))

    def heatmap_analysis(self) -> Analysis:
        """The ranking analysis whose Conover p-values the heatmap draws: ``figures.heatmap`` with a null
        ``group`` replaced by ``figures.clique_map_group`` and a null ``backbone`` / ``source`` by the
        config's first one.  The schema's default is the first column of the top-clique map: the clique
        map's group, first backbone, non-MCD, first source, ID ``test`` regime (misclassification); the
        paper's Figure 2 (App. C.1) is that cell for group ``augrc``."""
        figures = self.config["figures"]
        chosen = figures["heatmap"]
        return Analysis(chosen["group"] or figures["clique_map_group"], chosen["backbone"] or self.backbones[0],
                        bool(chosen["mcd"]), chosen["source"] or self.sources[0], chosen["regime"])

    def heatmap_input(self) -> str:
        """The ranking JSON file of :meth:`heatmap_analysis` (an output of the ``rank_csfs`` rule)."""
        return output_paths(paths.rankings_dir(), [self.heatmap_analysis()])["json"][0]

    def all_targets(self) -> dict[str, list[str]]:
        """The inputs of rule ``all``: every final output of the config's stages."""
        return {"features": self.feature_files(), "metrics": self.metric_files(),
                "results": [paths.results_table()], "projnorm": self.projnorm_outputs(),
                "rankings": [paths.ranking_summary()], "figures": self.figure_targets(),
                "nc_tables": self.nc_tables(), "proximity_tables": self.proximity_outputs(),
                "conformal": self.conformal_outputs(), "analyses": self.analysis_outputs()}

    # -----------------------------------------------------------------------------------------
    # resources
    # -----------------------------------------------------------------------------------------

    def resource(self, rule: str, key: str):
        """A resource setting of a rule (config ``resources``, keyed by rule name; defaults in the schema)."""
        return self.config["resources"][rule][key]


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


__all__ = ["Grid", "HEATMAP_FILES", "OPTIONAL_STAGES", "REGIMES", "TABLES", "canonical_json", "generated_set_folder",
           "same_file", "stage_enabled"]
