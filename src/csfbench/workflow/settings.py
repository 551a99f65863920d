"""Settings: a config validated against ``config/schema.yaml`` with the schema's defaults filled in.

The schema is the one place that holds a setting's default: every optional key that has one carries a
``default:``, and :func:`validate_config` writes it into the config, so the rest of the code reads
``config[section][key]`` and never supplies a fallback of its own.  Cross-references the schema cannot
express (a source's dataset must be in the catalogue and have a labelled train split, a CSF name must exist, a
drawn CSF must be scored, an analysis pair must name sets that a source evaluates in those roles, an Outlier
Exposure model's outlier set must be a catalogue dataset that its source neither evaluates nor tunes on, a ViT's timm
architecture must build (:mod:`csfbench.workflow.vit_builds`), GRAM and RankFeat need library backbones with block
maps, a calibration set must fit its split, a resource key must be a rule) are checked here too, with errors that
name the key path, what was expected and what was found.
"""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, Iterable, NoReturn

import jsonschema
import yaml

from csfbench.aggregate.cells import REGIMES, SHIFT_TYPE, is_conformal
from csfbench.metrics import higher_is_better
from csfbench.errors import ConfigError, ConfigFileError, did_you_mean
from csfbench.evaluation import FPR_METRIC, conformal_metric
from csfbench.csf.engine import flavours
from csfbench.csf.fit_settings import TuningSettings
from csfbench.csf.projection import GROUP_VARIANTS, group_of, parse_variant
from csfbench.csf.registry import BY_NAME, SPACES, base_name, variants_for
from csfbench.data.formats import FORMATS
from csfbench.metrics import UnknownMetricError, metric_names, metric_spec
from csfbench.metrics.bootstrap import SUPPORTED as BOOTSTRAP_METRICS
from csfbench.specs import SPLITS
from csfbench.workflow.grid import stage_enabled
from csfbench.workflow.jobs import Jobs
from csfbench.workflow.config_file import describe_yaml_error
from csfbench.workflow.configurations import serves
from csfbench.workflow.ensembles import check_ensembles
from csfbench.workflow.merge import deep_merge
from csfbench.workflow.vit_builds import check_timm_builds
from csfbench.metrics.conformal import ASYMPTOTIC_METHODS, MIN_N_ASYMPTOTIC
from csfbench.network_csf.architectures import BLOCK_MAP_DETECTORS, block_maps_refusal, has_block_maps

#: libyaml's safe loader where PyYAML was built with it, for the schema (several times faster than the
#: pure-Python loader, whose error messages the users' config files get)
_SCHEMA_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SCHEMA_PATH = Path(__file__).with_name("schema.yaml")  # symlink to config/schema.yaml


def load_yaml(path: str | Path) -> Any:
    """The content of a YAML file; a file that is not YAML text is a :class:`ConfigFileError` naming the
    file and, for a syntax error, the line and column."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except UnicodeDecodeError as err:
        raise ConfigFileError(str(path), "", f"binary content (not UTF-8 text) at byte {err.start}") from err
    except yaml.YAMLError as err:
        raise ConfigFileError(str(path), *describe_yaml_error(err, path)) from err


_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER


def _finite_number(checker, instance) -> bool:
    """The schema's ``number``: a JSON number, so a finite one (YAML's ``.nan`` and ``.inf`` load as floats
    that no setting can take: a NaN learning rate trains a model to NaN logits)."""
    return _TYPES.is_type(instance, "number") and (not isinstance(instance, float) or math.isfinite(instance))


def _fill_defaults(validator_class):
    """``validator_class`` whose ``properties`` keyword first writes missing keys' ``default`` values
    into the instance (the jsonschema documentation's recipe), so nested defaults are filled too, and
    whose numbers are finite (:func:`_finite_number`)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, properties, instance, schema):
        if validator.is_type(instance, "object"):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = json.loads(json.dumps(subschema["default"]))  # a fresh copy
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": properties},
                                        type_checker=_TYPES.redefine("number", _finite_number))


_Validator = _fill_defaults(jsonschema.Draft202012Validator)


@functools.cache
def _cached_schema() -> str:
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        return json.dumps(yaml.load(fh, Loader=_SCHEMA_LOADER))


def schema() -> dict:
    """The schema as a fresh dict (read from its file once per process)."""
    return json.loads(_cached_schema())


def schema_default(key_path: str, complete: bool = False) -> Any:
    """The schema's ``default:`` of a key, e.g. ``"csf/tuning/budgets"`` (for tools and benchmarks that
    build settings without a config file); with ``complete``, the nested defaults filled in too (the section
    as :func:`validate_config` completes it when a config leaves it out)."""
    root = schema()
    node = root
    for key in key_path.split("/"):
        node = node["properties"][key]
    value = json.loads(json.dumps(node["default"]))
    if complete:
        _Validator({**node, "definitions": root.get("definitions", {})}).validate(value)
    return value



def _missing(error: jsonschema.ValidationError) -> list[str]:
    """The required keys absent from the object of a ``required`` error."""
    return [key for key in error.validator_value if key not in error.instance]


def _key_path(error: jsonschema.ValidationError) -> str:
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        path.append(_missing(error)[0])
    return "/".join(path) or "<top level>"


def _non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _describe_expected(error: jsonschema.ValidationError) -> str:
    validator, value = error.validator, error.validator_value
    if _non_finite(error.instance):
        return "a finite number"
    if validator == "required":
        return f"the required key(s) {_missing(error)}"
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return "only the keys " + (", ".join(allowed) if allowed else "described in the schema")
    if validator == "enum":
        return "one of " + ", ".join(repr(v) for v in value)
    if validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"a number with {validator} {value}"
    if validator == "type":
        return f"a value of type {value}"
    if validator == "maxLength":
        noun = "a name" if "propertyNames" in error.absolute_schema_path else "a string"
        return f"{noun} of at most {value} characters"
    if validator == "oneOf":
        return "a value matching one of: " + "; ".join(s.get("description", json.dumps(s)) for s in value)
    return f"{validator} {value!r}"


def _found(error: jsonschema.ValidationError) -> Any:
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"unexpected key(s) {extra}"
    if error.validator == "required":
        return f"no such key (present: {', '.join(sorted(error.instance))})"
    if error.validator == "maxLength":
        return f"{error.instance[:24]}... ({len(error.instance)} characters)"
    return error.instance


def validate_config(config: dict, origin: str = "config", rules: Iterable[str] | None = None,
                    build_models: bool = False) -> dict:
    """Validate ``config`` in place against the schema, fill in the schema's defaults and check
    cross-references; return it.

    ``origin`` names where the config came from (a file, "snakemake config") in error messages.
    ``rules``: the workflow's rule names; a ``resources`` key that is not one of them is an error.
    ``build_models``: also check that timm builds every ViT of the config (:func:`_check_timm_vits`).  That
    imports torch and timm (about 6 s on 2 cores), so Snakemake's own validation, which every job repeats,
    leaves it out; ``csfbench validate`` and ``make run`` do it before the DAG.
    Raises :class:`ConfigError` naming the key path, what was expected and what was found.
    """
    if not isinstance(config, dict):
        found = "nothing (an empty file)" if config is None else type(config).__name__
        raise ConfigError("<top level>", "a mapping of sections (see config/README.md)", found, origin)
    validator = _Validator(schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), _key_path(e)))
    if errors:
        err = jsonschema.exceptions.best_match(errors, key=jsonschema.exceptions.relevance)
        raise ConfigError(_key_path(err), _describe_expected(err), _found(err), origin)
    _check_source_training(config, origin)
    _check_augment(config["training"], "training", origin)
    _check_references(config, origin)
    _check_network_architectures(config, origin)
    _check_conformal(config, origin)
    _check_split_sizes(config, origin)
    grid = Jobs(config)
    _check_analyses(grid, origin)
    _check_ranking(config["ranking"], origin)
    _check_selections(grid, origin)
    if build_models:
        _check_timm_vits(config, origin)
    if rules is not None:
        _check_resource_rules(config["resources"], sorted(rules), origin)
    return config


def _metric_rows(evaluation: dict, origin: str) -> tuple[str, ...]:
    """The metric names of the run's rows (:func:`csfbench.metrics.metric_names`); an unknown name in
    ``evaluation/metrics`` is an error naming it and the known ones."""
    for number, name in enumerate(evaluation["metrics"]):
        try:
            metric_names((), (name,))
        except UnknownMetricError as err:
            raise ConfigError(f"evaluation/metrics/{number}", f"a metric name ({err})", name, origin) from None
    return metric_names(evaluation["conventions"], evaluation["metrics"])


def _check_bootstrap_metrics(metrics: list[str] | None, computed: tuple[str, ...], origin: str) -> None:
    """``evaluation/bootstrap/metrics`` must name metric rows of the run (``computed``) that have a weighted
    bootstrap replicate (:data:`csfbench.metrics.bootstrap.SUPPORTED`); null selects all of them."""
    valid = [name for name in computed if name in BOOTSTRAP_METRICS]
    for number, name in enumerate(metrics or ()):
        _require(name, valid, f"evaluation/bootstrap/metrics/{number}", origin,
                 "a metric row of the run (evaluation/conventions, evaluation/metrics) with a bootstrap replicate, "
                 "one of")


def _check_source_training(config: dict, origin: str) -> None:
    """A source's ``training`` overrides, deep-merged into the ``training`` section, must satisfy the
    section's schema (so ``epochz: 50`` or ``batch_size: 0`` is an error naming the source's key)."""
    overridden = {name: src for name, src in config["sources"].items() if src["training"]}
    if not overridden:
        return
    root = schema()
    validator = _Validator({**root, "required": ["training"], "properties": {"training": root["properties"]["training"]}})
    for name, src in overridden.items():
        merged = {"training": deep_merge(config["training"], src["training"])}
        errors = list(validator.iter_errors(merged))
        if errors:
            err = jsonschema.exceptions.best_match(errors, key=jsonschema.exceptions.relevance)
            path = "/".join(str(p) for p in list(err.absolute_path)[1:])
            raise ConfigError(f"sources/{name}/training/{path}".rstrip("/"), _describe_expected(err), _found(err),
                              origin)
        _check_augment(merged["training"], f"sources/{name}/training", origin)


def _check_augment(training: dict, where: str, origin: str) -> None:
    """Each backbone's ``common.augment``: at most one random crop, and ``[min, max]`` ranges of the
    random-resized crop in order (``where``: the key path of ``training`` in messages)."""
    for backbone, section in training.items():
        augment = section["common"]["augment"]
        key = f"{where}/{backbone}/common/augment"
        rrc = augment.get("random_resized_crop")
        if rrc is None:
            continue
        if augment["crop_padding"] > 0:
            raise ConfigError(f"{key}/crop_padding", "0 with random_resized_crop (one random crop)",
                              augment["crop_padding"], origin)
        for name in ("scale", "ratio"):
            if rrc[name][0] > rrc[name][1]:
                raise ConfigError(f"{key}/random_resized_crop/{name}", "[min, max] with min <= max", rrc[name], origin)


def _check_references(config: dict, origin: str) -> None:
    datasets = config["datasets"]
    for name, src in config["sources"].items():
        if src["dataset"] not in datasets:
            raise ConfigError(f"sources/{name}/dataset", f"a dataset of {sorted(datasets)}", src["dataset"], origin)
        _check_source_dataset(name, src["dataset"], datasets[src["dataset"]], origin)
        for ood in src["ood"]:
            if ood not in datasets:
                raise ConfigError(f"sources/{name}/ood/{ood}", f"a dataset of {sorted(datasets)}", ood, origin)
            if ood in SPLITS:
                raise ConfigError(f"sources/{name}/ood/{ood}", f"a name other than {SPLITS}", ood, origin)
            entry = src["ood"][ood]
            outside = [c for c in entry.get("label_space", []) if c >= src["n_classes"]]
            if outside:
                raise ConfigError(f"sources/{name}/ood/{ood}/label_space", f"class indices below n_classes = "
                                  f"{src['n_classes']}", outside, origin)
            if entry["logit_mask"] == "restrict" and "label_space" not in entry:
                raise ConfigError(f"sources/{name}/ood/{ood}/label_space", "the classes the prediction is "
                                  "restricted to (logit_mask: restrict)", None, origin)
        for backbone in _serving(config, name):
            if backbone not in src["image_size"]:
                raise ConfigError(f"sources/{name}/image_size", f"an entry for backbone '{backbone}'",
                                  src["image_size"], origin)
        vgg13 = config["backbones"].get("vgg13", {})
        dg_here = "dg" in vgg13.get("paradigms", []) and "vgg13" in _serving(config, name)
        if dg_here and not src.get("dg_rewards"):
            raise ConfigError(f"sources/{name}/dg_rewards", "a list of rewards (the dg paradigm is enabled)",
                              None, origin)
    for backbone, bcfg in config["backbones"].items():
        for source in bcfg.get("sources") or []:
            if source not in config["sources"]:
                raise ConfigError(f"backbones/{backbone}/sources", f"sources of {sorted(config['sources'])}", source,
                                  origin)
        if "library" in bcfg:  # evaluated without training: no training settings
            if "pretrained" in bcfg["paradigms"] and "weights" not in bcfg:
                raise ConfigError(f"backbones/{backbone}/weights", "the weights file of paradigm 'pretrained'", None,
                                  origin)
            continue
        training = config["training"].get(backbone)
        if training is None:
            raise ConfigError(f"training/{backbone}", "training settings for an enabled backbone", None, origin)
        for paradigm in bcfg["paradigms"]:
            if paradigm not in training:
                raise ConfigError(f"training/{backbone}/{paradigm}", "settings for an enabled paradigm", None, origin)
    for name in config["sources"]:
        if not _serving(config, name):
            raise ConfigError(f"sources/{name}", "a source that a backbone serves (every backbones/<name>/sources "
                              "leaves it out)", name, origin)
    if stage_enabled(config, "pretrain") and config["pretrain"]["dataset"] not in datasets:
        raise ConfigError("pretrain/dataset", f"a dataset of {sorted(datasets)}", config["pretrain"]["dataset"], origin)
    _check_written_paths(config, origin)
    _check_csf_names(config["csf"], origin)
    _check_ood_validation(config, origin)
    _check_outlier_sets(config, origin)
    check_ensembles(config, origin)


def _serving(config: dict, source: str) -> list[str]:
    """The backbones that serve ``source`` (whose ``sources`` is null or names it)."""
    return [backbone for backbone, bcfg in config["backbones"].items() if serves(bcfg, source)]


def _under_results(path: str) -> bool:
    """Whether ``path`` (relative to the working directory, or absolute) lies inside its ``results/``."""
    resolved = (Path.cwd() / path).resolve()
    return resolved.is_relative_to((Path.cwd() / "results").resolve())


def _check_written_paths(config: dict, origin: str) -> None:
    """The workflow writes only under ``results/``: the pretrained ViT file is the output of rule
    ``pretrain_vit`` when a ``pretrain`` section is present, and ``data_root`` is where the demo generator
    writes; either pointing outside ``results/`` (e.g. at a user's own weights or data) is an error."""
    if stage_enabled(config, "pretrain"):
        vit = config["backbones"].get("vit")
        if vit is None or "pretrained" not in vit:
            raise ConfigError("backbones/vit/pretrained", "a pretrained file for rule pretrain_vit to write "
                              "(the config has a `pretrain` section)", None, origin)
        if not _under_results(vit["pretrained"]["file"]):
            raise ConfigError("backbones/vit/pretrained/file", "a path under results/: with a `pretrain` section "
                              "it is the output of rule pretrain_vit (drop `pretrain` to use existing weights)",
                              vit["pretrained"]["file"], origin)
    if stage_enabled(config, "demo") and not _under_results(config["data_root"]):
        raise ConfigError("data_root", "a folder under results/: the demo generator writes its data there",
                          config["data_root"], origin)


def _check_csf_names(csf: dict, origin: str) -> None:
    """Every CSF named under ``methods``, ``fixed``, ``search_space`` and ``tuning/budgets`` must exist (or be
    ``projection``), so that a misspelt name is an error, not a silently ignored setting."""

    known = sorted(BY_NAME) + ["projection"]
    for name in csf["methods"] or ():
        if name not in BY_NAME:
            raise ConfigError(f"csf/methods/{name}", f"a CSF name of {sorted(BY_NAME)}", name, origin)
    for key, entries in (("fixed", csf["fixed"]), ("search_space", csf["search_space"]),
                         ("tuning/budgets", csf["tuning"]["budgets"])):
        for name in entries:
            if name not in known:
                raise ConfigError(f"csf/{key}/{name}", f"a CSF name of {known}", name, origin)
    for name in csf["tuning"]["grids"]:
        if name not in BY_NAME:
            raise ConfigError(f"csf/tuning/grids/{name}", f"a CSF name of {sorted(BY_NAME)}", name, origin)
    params = {name: sorted(space) for name, space in SPACES.items()}
    for name, values in csf["tuning"]["grids"].items():
        for param in values:
            if param not in params[name]:
                raise ConfigError(f"csf/tuning/grids/{name}/{param}",
                                  f"a tuned parameter of {name}: {params[name] or 'none'}", param, origin)
    for key in ("fixed", "search_space"):
        for name, values in csf[key].items():
            for param, value in values.items():
                where = f"csf/{key}/{name}/{param}"
                if param not in params[name]:
                    raise ConfigError(where, f"a tuned parameter of {name}: {params[name] or 'none'}", param, origin)
                low, high = (value, value) if key == "fixed" else value
                if low > high:
                    raise ConfigError(where, "a range [low, high] with low <= high", value, origin)
                if name == "projection" and not 0 < low <= high <= 1:
                    raise ConfigError(where, "a fraction of the variance in (0, 1]", value, origin)


def _check_ood_validation(config: dict, origin: str) -> None:
    """``csf.tuning.ood_validation`` names, per source, a catalogue dataset that is not evaluated for that
    source (tuning on a set and evaluating on it would leak); with the grid protocol every source needs one."""
    entries = config["csf"]["tuning"]["ood_validation"]
    datasets = config["datasets"]
    for source, name in entries.items():
        key = f"csf/tuning/ood_validation/{source}"
        if source not in config["sources"]:
            raise ConfigError(key, f"a source of {sorted(config['sources'])}", source, origin)
        src = config["sources"][source]
        if name not in datasets or name in SPLITS:
            raise ConfigError(key, f"a dataset of {sorted(datasets)}", name, origin)
        if name == src["dataset"] or name in src["ood"]:
            raise ConfigError(key, f"a dataset that source {source!r} does not evaluate (tuning on an evaluation set "
                              f"leaks it into the results): neither its dataset {src['dataset']!r} nor one of its ood "
                              f"sets {sorted(src['ood'])}", name, origin)
    if "grid" in config["csf"]["tuning"]["protocols"]:
        for source in config["sources"]:
            if source not in entries:
                raise ConfigError(f"csf/tuning/ood_validation/{source}", "the OOD validation set of source "
                                  f"{source!r} (a dataset of {sorted(datasets)}): the grid protocol tunes on it", None,
                                  origin)


def _check_outlier_sets(config: dict, origin: str) -> None:
    """The auxiliary outlier set of a source's Outlier Exposure models (``training/<backbone>/oe/outlier_dataset``, or
    the source's ``training`` override of it) must be a catalogue dataset that the source neither evaluates nor tunes
    on: not its own dataset, one of its ``ood`` sets (a model trained to give those images a uniform softmax would be
    scored on them) or its ``csf.tuning.ood_validation`` set (the grid protocol would tune on images the model was
    trained to reject).  The error names the outlier set and the source."""
    datasets = config["datasets"]
    for source, src in config["sources"].items():
        for backbone in _serving(config, source):
            if "oe" not in config["backbones"][backbone]["paradigms"]:
                continue
            override = src["training"].get(backbone, {}).get("oe", {})
            key = f"sources/{source}/training/{backbone}/oe/outlier_dataset" if "outlier_dataset" in override \
                else f"training/{backbone}/oe/outlier_dataset"
            name = override.get("outlier_dataset", config["training"][backbone]["oe"]["outlier_dataset"])
            if name not in datasets or name in SPLITS:
                raise ConfigError(key, f"a dataset of {sorted(datasets)}{did_you_mean(name, datasets)}", name, origin)
            tuned_on = config["csf"]["tuning"]["ood_validation"].get(source)
            if name == src["dataset"] or name in src["ood"] or name == tuned_on:
                role = ("its own dataset" if name == src["dataset"] else
                        f"its evaluation set sources/{source}/ood/{name}" if name in src["ood"] else
                        f"its OOD validation set csf/tuning/ood_validation/{source}")
                raise ConfigError(key, f"an outlier set that source {source!r} neither evaluates nor tunes on "
                                  f"(training on such a set leaks it into the results): not its dataset "
                                  f"{src['dataset']!r}, one "
                                  f"of its ood sets {sorted(src['ood'])} or its OOD validation set",
                                  f"outlier set {name!r}: {role} (source {source!r})", origin)


def _check_network_architectures(config: dict, origin: str) -> None:
    """GRAM and RankFeat in ``network_csf/methods`` read every model's block maps: each library backbone must be
    an architecture that has them (:func:`csfbench.network_csf.architectures.has_block_maps`, a name lookup
    without torch).  The error names the detectors, the backbone, its library and architecture, and how to
    turn them off; ODIN-IP runs on any architecture."""
    methods = config["network_csf"]["methods"]
    needed = [name for name in BLOCK_MAP_DETECTORS if name in methods]
    if not needed:
        return
    for backbone, bcfg in config["backbones"].items():
        if "library" in bcfg and not has_block_maps(bcfg["library"], bcfg["arch"]["name"]):
            model = f"backbone '{backbone}' ({bcfg['library']} {bcfg['arch']['name']})"
            keep = [name for name in methods if name not in BLOCK_MAP_DETECTORS]
            refusal = block_maps_refusal(model, needed, keep)
            conformal = config["conformal"]
            if "GRAM" in needed and conformal["enabled"] and "gram" in conformal["prediction_sets"]["scores"]:
                refusal += " (without GRAM, also drop 'gram' from conformal.prediction_sets.scores: it uses GRAM's fit)"
            raise ConfigError("network_csf/methods", f"network-pass detectors every backbone can run: {refusal}",
                              methods, origin)


def _check_conformal(config: dict, origin: str) -> None:
    """The calibration set of the conformal rows is data no CSF was fitted on (so not the ID validation split,
    on which temperatures, projection variances and hyper-parameters are fitted), large enough for its bands;
    the GRAM conformity score needs the GRAM fit of the network-pass stage."""
    conformal = config["conformal"]
    if not conformal["enabled"]:
        return
    if "gram" in conformal["prediction_sets"]["scores"] \
            and "GRAM" not in config["network_csf"]["methods"]:
        raise ConfigError("conformal/prediction_sets/scores", "no 'gram' unless network_csf.methods holds GRAM (the "
                          "class-dependent GRAM score uses its fit)", conformal["prediction_sets"]["scores"], origin)
    calibration = conformal["calibration"]
    if calibration["split"] == "val":
        raise ConfigError("conformal/calibration/split", "'test' (a held-out part of the ID test split): every CSF is "
                          "fitted or tuned on the ID validation split, and calibrating on it would break the "
                          "guarantee", "val", origin)
    asymptotic = sorted(set(conformal["methods"]) & set(ASYMPTOTIC_METHODS))
    if asymptotic and calibration["n_cal"] < MIN_N_ASYMPTOTIC:
        raise ConfigError("conformal/calibration/n_cal", f"at least {MIN_N_ASYMPTOTIC} for the band(s) {asymptotic} "
                          "(their c_n needs log log log n >= 0)", calibration["n_cal"], origin)


def _generated_test_size(config: dict, dataset: str) -> int | None:
    """The size of the official test split of a catalogue dataset that the demo generator writes (its
    ``demo.spec`` entry); None for data on disk, whose size is known only when it is read, and for a generated
    set without a test split (``n_test: 0``, the pretraining sets)."""
    entry = config["datasets"][dataset]
    if not stage_enabled(config, "demo") or entry["format"] != "npy":
        return None
    spec = config["demo"]["spec"].get(entry["path"])
    return (spec.get("n_test") or None) if isinstance(spec, dict) else None


def _check_split_sizes(config: dict, origin: str) -> None:
    """Where the config sets the size of a source's official test split (:func:`_generated_test_size`), its first
    ``val_size`` images must leave an ID test split, and the ``n_cal`` conformal calibration samples drawn from
    that split must leave some to evaluate (:func:`csfbench.stages.conformal.calibration_indices`)."""
    n_cal = config["conformal"]["calibration"]["n_cal"] if config["conformal"]["enabled"] else 0
    for source, src in config["sources"].items():
        n_official = _generated_test_size(config, src["dataset"])
        if n_official is None:
            continue
        if src["val_size"] >= n_official:
            raise ConfigError(f"sources/{source}/val_size", f"fewer than the {n_official} images of the test split "
                              f"of dataset {src['dataset']!r} (the rest is the ID test split)", src["val_size"], origin)
        if n_cal >= n_official - src["val_size"]:
            raise ConfigError("conformal/calibration/n_cal", f"fewer than the {n_official - src['val_size']} samples "
                              f"of the ID test split of source {source!r} ({n_official} test images less val_size "
                              f"{src['val_size']}), from which the calibration set is drawn", n_cal, origin)


def _read_splits(entry: dict) -> tuple[tuple[str, ...], bool]:
    """(official splits, labelled) of a catalogue ``entry`` as its format reads it with its options, from the
    config alone (:data:`csfbench.data.formats.FORMATS`; no data is read): ``()`` = one split, which the reader
    returns for any split asked.  Options change them for three formats: an ``imglist`` that maps splits to lists
    has those splits; an ``iconic444`` OOD list (option ``ood``) is split ``test``, unlabelled; ``wnid_folders``
    without ``wnids`` is unlabelled."""
    fmt, options = entry["format"], entry["options"]
    if fmt == "imglist" and isinstance(options.get("imglist"), dict):
        return tuple(options["imglist"]), True
    if fmt == "iconic444" and options.get("ood") is not None:
        return ("test",), False
    if fmt == "wnid_folders" and options.get("wnids") is None:
        return (), False
    return FORMATS[fmt].splits, FORMATS[fmt].labelled


def _source_formats() -> str:
    """The formats whose datasets can be a source (:func:`_check_source_dataset`), for its message."""
    formats = [key for key, fmt in FORMATS.items() if {"train", "test"} <= set(fmt.splits) and fmt.labelled]
    return ", ".join(f"{key} (without option ood)" if key == "iconic444" else key for key in formats) + \
        ", or imglist with option imglist: {train: list, test: list}"


def _check_source_dataset(source: str, dataset: str, entry: dict, origin: str) -> None:
    """A source trains on the ``train`` split of its dataset (labels 0..n_classes-1, which CSFs such as Mahalanobis
    fit on too) and validates and tests on its ``test`` split: its format must have both, labelled
    (:func:`_read_splits`).  A single-split dataset would be read as both (the test images trained on), an
    unlabelled one stops the run at its CSF fit; both are evaluation sets only."""
    splits, labelled = _read_splits(entry)
    if not splits:
        problem = "one split" if labelled else "one unlabelled split (every label -1)"
    else:
        problem = ", ".join(f"no {split} split" for split in ("train", "test") if split not in splits)
        if problem and not labelled:
            problem += ", unlabelled (every label -1)"
    if not problem and labelled:
        return
    options = f", options {entry['options']}" if entry["options"] else ""
    raise ConfigError(f"sources/{source}/dataset", "a dataset with a labelled train split and a test split (a source "
                      f"trains on train and validates and tests on test): format {_source_formats()}",
                      f"{dataset!r} (format {entry['format']}{options}: {problem}; it can be an evaluation set "
                      "under sources/<name>/ood)", origin)


#: the shift types of a pair's roles: the ID role is the ID test split or a covariate set, the OOD role a semantic
#: or covariate set (csfbench.stages.analyses)
_PAIR_ROLES = {"id": ("id", "covariate"), "ood": ("semantic", "covariate")}


def _pair_sets(grid: Jobs, source: str) -> dict[str, str]:
    """{set: shift type} of the sets a pair of ``source`` may name: the ID test split (``id``), its catalogue
    evaluation sets and its generated corruption sets (:meth:`~csfbench.workflow.grid.Grid.covariate_sets`)."""
    sets = {"test": "id", **{n: e["shift_type"] for n, e in grid.config["sources"][source]["ood"].items()}}
    return {**sets, **{name: "covariate" for name in grid.covariate_sets(source)}}


def _role_sets(sets: dict[str, str], role: str) -> list[str]:
    return [name for name, kind in sets.items() if kind in _PAIR_ROLES[role]]


def _check_analyses(grid: Jobs, origin: str) -> None:
    """The pair analyses name CSFs of the registry (a flavour such as ``MLS@T1`` by its base name), and pairs
    (:func:`_check_pair`) that a source evaluates."""
    analyses = grid.config["analyses"]
    if not analyses["enabled"]:
        return
    named = [("analyses/reference_csf", analyses["reference_csf"])]
    named += [(f"analyses/csfs/{i}", name) for i, name in enumerate(analyses["csfs"] or ())]
    for key, name in named:
        if name.split("@", 1)[0] not in BY_NAME:
            raise ConfigError(key, f"a CSF name of {sorted(BY_NAME)}", name, origin)
    evaluated = {source: _pair_sets(grid, source) for source in grid.sources}
    for i, pair in enumerate(analyses["pairs"]):
        _check_pair(f"analyses/pairs/{i}", pair["id"], pair["ood"], evaluated, origin)


def _check_pair(key: str, id_set: str, ood_set: str, evaluated: dict[str, dict[str, str]], origin: str) -> None:
    """A pair is analysed for every source that evaluates both of its sets (``evaluated``: {source:
    :func:`_pair_sets`}, :func:`csfbench.stages.analyses.pairs_of`): at least one source must, or the pair would
    be dropped without a row; and in each such source the ID role must be the ID test split or a covariate set,
    the OOD role a semantic or covariate set other than the ID-role set (a semantic ID-role set has no correct
    samples: its A_io, new-class and shift-detection AUROCs are one number)."""
    if id_set == ood_set:
        raise ConfigError(f"{key}/ood", "an OOD-role set other than the ID-role set", ood_set, origin)
    holders = [source for source, sets in evaluated.items() if id_set in sets and ood_set in sets]
    if not holders:
        _no_source_holds(key, id_set, ood_set, evaluated, origin)
    for source in holders:
        sets = evaluated[source]
        for role, name in (("id", id_set), ("ood", ood_set)):
            if sets[name] not in _PAIR_ROLES[role]:
                what = "the ID test split 'test' or a covariate set" if role == "id" else "a semantic or covariate set"
                raise ConfigError(f"{key}/{role}", f"{what} of source {source!r}, which evaluates both sets of the "
                                  f"pair: {_role_sets(sets, role)}", f"{name!r}, a{'n' * (sets[name][0] in 'aeiou')} "
                                  f"{sets[name]} set of source {source!r}", origin)


def _no_source_holds(key: str, id_set: str, ood_set: str, evaluated: dict[str, dict[str, str]], origin: str
                     ) -> NoReturn:
    """Raise the ConfigError of a pair whose two sets no source evaluates together: at the OOD role when no source
    evaluates the OOD-role set, else at the ID role, listing what the sources evaluate."""
    with_ood = {source: sets for source, sets in evaluated.items() if ood_set in sets}
    role, name, where = ("id", id_set, with_ood) if with_ood else ("ood", ood_set, evaluated)
    offered = "; ".join(f"source {source!r}: {_role_sets(sets, role)}" for source, sets in where.items())
    if role == "ood":
        raise ConfigError(f"{key}/ood", "a semantic or covariate set that a source evaluates (sources/<name>/ood, or "
                          f"a corruption set of the shifts stage): {offered}",
                          f"{ood_set!r}: no source evaluates it{did_you_mean(ood_set, _names(where, role))}", origin)
    raise ConfigError(f"{key}/id", f"the ID test split 'test' or a covariate set of a source that evaluates "
                      f"{ood_set!r}: {offered}", f"{id_set!r}: none of them evaluates it"
                      f"{did_you_mean(id_set, _names(where, role))}", origin)


def _names(evaluated: dict[str, dict[str, str]], role: str) -> set[str]:
    return {name for sets in evaluated.values() for name in _role_sets(sets, role)}


def _check_ranking(ranking: dict, origin: str) -> None:
    """What the schema cannot say of the ``ranking`` section: a failure scheme for every shift type, and per
    metric group metrics of one orientation (lower or higher is better) and of one kind (conformal metrics
    are ranked on their own scheme's rows, classical ones on the shift type's)."""
    absent = sorted(set(SHIFT_TYPE.values()) - set(ranking["schemes"]))
    if absent:
        raise ConfigError("ranking/schemes", "a failure scheme for every shift type", f"none for {absent}", origin)
    for group, metrics in ranking["metric_groups"].items():
        metrics = [m for m in metrics if _is_metric(m)]  # an unknown name is _check_selections' error, with the names
        if len({higher_is_better(m) for m in metrics}) > 1:
            raise ConfigError(f"ranking/metric_groups/{group}", "metrics of one orientation", metrics, origin)
        if len({is_conformal(m) for m in metrics}) > 1:
            raise ConfigError(f"ranking/metric_groups/{group}", "only conformal or only classical metrics (they are "
                              "ranked on different schemes)", metrics, origin)


def _is_metric(name: str) -> bool:
    try:
        metric_spec(name)
    except UnknownMetricError:
        return False
    return True


def _check_selections(grid: Jobs, origin: str) -> None:
    """Names that select parts of the grid must exist, or a typo would silently shrink the study:
    ``shifts.sources``/``shifts.models``, ``figures.rc_curves.models``, the metrics of
    ``ranking.metric_groups`` (a conformal metric of a configured band and δ included) and
    ``figures.table_metric``; the figures must draw what the grid computes (the clique map's metric group,
    CSF variants that each drawn model is scored with, the heatmap's ranking cell).  Raises ConfigError naming
    the key, the valid names and, where there is one, the closest match."""
    config = grid.config
    sources = grid.sources
    models = {str(m) for _, m in grid.iter_models()}
    if grid.enabled("shifts"):
        for source in config["shifts"].get("sources", []):
            _require(source, sources, "shifts/sources", origin)
        for model in config["shifts"].get("models", []):
            _require(model, models, "shifts/models", origin)
    figures = config["figures"]
    for source, model in figures["rc_curves"]["models"].items():
        _require(source, sources, f"figures/rc_curves/models/{source}", origin)
        _require(model, grid.models(source), f"figures/rc_curves/models/{source}", origin)
    computed = _metric_rows(config["evaluation"], origin)
    _check_bootstrap_metrics(config["evaluation"]["bootstrap"]["metrics"], computed, origin)
    conformal = config["conformal"]
    corrected = [conformal_metric(base, method, delta) for base in ("auroc", *FPR_METRIC.values())
                 for method in conformal["methods"] for delta in conformal["delta"]] if conformal["enabled"] else []
    for group, metrics in config["ranking"]["metric_groups"].items():
        for metric in metrics:
            _require(metric, [*computed, *corrected], f"ranking/metric_groups/{group}", origin)
    _require(figures["table_metric"], computed, "figures/table_metric", origin)
    _require(figures["clique_map_group"], list(config["ranking"]["metric_groups"]), "figures/clique_map_group",
             origin)
    for source in sources:
        for name in figures["rc_curves"]["csfs"]:
            _check_drawn_csf(grid, "figures/rc_curves/csfs", name, source, grid.rc_model(source), origin)
        if conformal["enabled"]:
            _check_drawn_csf(grid, "conformal/figure/csf", conformal["figure"]["csf"], source,
                             grid.models(source)[0], origin)
    cell = grid.heatmap_analysis()
    if cell not in grid.analyses():
        raise ConfigError("figures/heatmap", f"a ranking cell the config ranks (metric groups "
                          f"{sorted(config['ranking']['metric_groups'])}, backbones {grid.backbones}, sources "
                          f"{sources}, regimes {list(REGIMES)}; mcd only for a backbone with dropout models and "
                          "mcd_samples > 0)", cell.name, origin)


def _check_drawn_csf(grid: Jobs, key: str, name: str, source: str, model: str, origin: str) -> None:
    """A CSF variant a figure draws from ``model``'s scores must be one the model is scored with: a network-pass
    CSF of ``network_csf/methods``, or a (CSF, variant) flavour of the CSF stage (:func:`_scored_variants`)."""
    config = grid.config
    network = config["network_csf"]["methods"]
    if name in network:
        return
    head, variant = parse_variant(name)
    if group_of(variant) not in config["csf"]["groups"]:
        raise ConfigError(key, f"a CSF variant of a fit group in csf/groups {config['csf']['groups']} (or of "
                          f"network_csf/methods): {name!r} needs fit group {group_of(variant)!r}", name, origin)
    scored = _scored_variants(config["csf"], grid.model_spec(source, model).csf_backbone)
    csf = base_name(head)
    if name in scored.get(csf, ()):
        return
    if csf in scored:
        raise ConfigError(key, f"a variant of {csf} that model {model} is scored with: {list(scored[csf])}"
                          f"{did_you_mean(name, scored[csf])}", name, origin)
    # a registry CSF that csf/methods, its variants or the model (no confidence head) leave out: no guess
    hint = f" ({csf}'s variants: {list(BY_NAME[csf].variants)})" if csf in BY_NAME else \
        did_you_mean(name, [*network, *(n for names in scored.values() for n in names)])
    raise ConfigError(key, f"a CSF that model {model} is scored with: {[*sorted(scored), *network]}{hint}", name,
                      origin)


def _scored_variants(csf: dict, backbone: str) -> dict[str, list[str]]:
    """{registry CSF: the names of its variants in a scores file}, for a model the CSF registry sees as
    ``backbone`` (:attr:`csfbench.specs.ModelSpec.csf_backbone`): the loop of :func:`csfbench.csf.engine.fit_mode`
    over the ``csf`` section's methods, fit groups and flavours (``MSR``, ``MSR global``, ``MSR@T1``)."""
    variants = tuple(v for group in csf["groups"] for v in GROUP_VARIANTS[group])
    methods = None if csf["methods"] is None else frozenset(csf["methods"])
    tuning = TuningSettings.from_config(csf)
    scored: dict[str, list[str]] = {}
    for entry, variant in variants_for(backbone, variants, methods):
        for flavour in flavours(entry, tuning):
            name = flavour.name(entry.name)
            scored.setdefault(entry.name, []).append(name if variant == "none" else f"{name} {variant}")
    return scored


def _require(name: str, valid, key: str, origin: str, what: str = "one of") -> None:
    if name not in valid:
        raise ConfigError(key, f"{what} {sorted(valid)}{did_you_mean(name, valid)}", name, origin)


def _check_timm_vits(config: dict, origin: str) -> None:
    """The ViTs of ``backbones/vit`` and of a ``proximity/encoder`` of kind timm must be timm architectures that
    timm builds with their ``arch`` keywords (:func:`csfbench.workflow.vit_builds.check_timm_builds`), as
    :func:`csfbench.models.vit.create_timm_vit` builds them (at the first served source's image size and classes,
    with dropout where a model has it: the keywords, not the sizes, are what a config gets wrong)."""
    builds = []
    vit = config["backbones"].get("vit")
    source = next((s for s in config["sources"] if vit and "vit" in _serving(config, s)), None)
    if source is not None:
        src = config["sources"][source]
        builds.append(("backbones/vit/arch", vit["arch"], src["n_classes"], src["image_size"]["vit"],
                       max(vit["dropout"])))
    encoder = config.get("proximity", {}).get("encoder", {})
    if encoder.get("kind") == "timm":
        builds.append(("proximity/encoder/arch", encoder["arch"], encoder["num_classes"], encoder["image_size"], 0))
    check_timm_builds(builds, origin)


def _check_resource_rules(resources: dict, rules: list[str], origin: str) -> None:
    for name in resources:
        if name not in rules:
            raise ConfigError(f"resources/{name}", f"a rule name of {rules}", name, origin)


def load_config(path: str | Path, rules: Iterable[str] | None = None, build_models: bool = False) -> dict:
    """Read, validate and complete a YAML config file (see :func:`validate_config`)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("<file>", "an existing YAML file", str(path), str(path))
    return validate_config(load_yaml(path), str(path), rules, build_models)
