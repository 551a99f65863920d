# Settings, the experiment grid and the input functions shared by the rule files.  Every path comes
# from csfbench.workflow.paths; every default from config/schema.yaml (filled in by validate_config).
import functools
import json

from csfbench.workflow import grid, paths
from csfbench.atomic import remove_stale_temporaries
from csfbench.data import demo as demo_generator
from csfbench.workflow.ids import MODEL_PATTERN
from csfbench.workflow.settings import SPLITS, validate_config
from csfbench.shifts import names as shift_names

validate_config(config, origin="snakemake config")
grid.check_selections(config, origin="snakemake config")

SOURCES = list(config["sources"])
DATASET_NAMES = sorted(set(config["datasets"]) | set(SPLITS) | set(grid.generated_set_names(config)))


wildcard_constraints:
    source="|".join(SOURCES),
    model=MODEL_PATTERN,
    dataset="|".join(DATASET_NAMES),
    name="|".join(config["datasets"]),
    fit_group="|".join(config["csf"]["groups"]),


def res(rule_name, key):
    """A resource setting of a rule (config `resources`, keyed by rule name; defaults in the schema)."""
    return config["resources"][rule_name][key]


# ---- resolved specs, cached: the paper grid asks for them from thousands of jobs while the DAG is built
@functools.cache
def model_spec(source, model):
    return grid.model_spec(config, source, model)


def model_spec_json(wildcards):
    return model_spec(wildcards.source, wildcards.model).to_json()


@functools.cache
def _eval_set_json(source, dataset, model=None):
    return grid.eval_set_spec(config, source, dataset, model).to_json()


def eval_set_json(wildcards):
    # the model matters only for its own adversarial sets: other sets share one cache entry
    model = wildcards.get("model") if shift_names.parse_adversarial_set(wildcards.dataset) else None
    return _eval_set_json(wildcards.source, wildcards.dataset, model)


@functools.cache
def csf_fit_json(fit_group, source):
    """The part of the `csf` section a fit of `fit_group` of a `source` model reads, as JSON (one per group and
    source, not per job)."""
    return json.dumps(grid.csf_fit_config(config, fit_group, source), sort_keys=True)


def csf_ood_validation(wildcards):
    """The features of the source's OOD validation set, which the grid tuning protocol reads (else none)."""
    name = grid.ood_validation_set(config, wildcards.source)
    return [paths.features(wildcards.source, wildcards.model, name)] if name else []


def source_dataset(source):
    return config["sources"][source]["dataset"]


# ---- data
def demo_files():
    """The files the demo generator writes (empty when the config has no `demo` section)."""
    if "demo" not in config:
        return []
    root = config["data_root"]
    return [f"{root}/{name}/{split}/{array}.npy" for name, split in demo_generator.demo_splits(config["demo"]["spec"])
            for array in ("images", "labels")]


def dataset_index_inputs(wildcards):
    """The generated files behind a dataset, when the demo generator produces it."""
    root = f"{config['data_root']}/{config['datasets'][wildcards.name]['path']}/"
    return [f for f in demo_files() if f.startswith(root)]


# ---- training and features
def train_inputs(wildcards):
    spec = model_spec(wildcards.source, wildcards.model)
    inputs = {"index": paths.dataset_index(spec.dataset.name)}
    if spec.backbone == "vit" and "pretrain" in config:
        inputs["pretrained"] = spec.pretrained["file"]
    # a weights file the demo's pretraining writes is waited for; a user's file is checked by the job (so that a
    # dry run works without it) and its path is part of the model spec
    if spec.weights and "pretrain" in config and spec.weights["file"] == config["backbones"]["vit"]["pretrained"]["file"]:
        inputs["weights"] = spec.weights["file"]
    return inputs


def extract_inputs(wildcards):
    return {"checkpoint": paths.checkpoint(wildcards.source, wildcards.model),
            **eval_set_images(wildcards.source, wildcards.model, wildcards.dataset)}


def eval_set_images(source, model, dataset):
    """What the images of an evaluation set are read through: its dataset index or its generated images."""
    generated = grid.generated_set_folder(source, dataset, model)
    if generated is not None:  # a corruption or adversarial set written by the shift study's rules
        return {"images": paths.npy_file(generated, "images")}
    if dataset in SPLITS:
        return {"index": paths.dataset_index(source_dataset(source))}
    return {"index": paths.dataset_index(dataset)}


def all_feature_files():
    return [paths.features(source, str(model), dataset) for source, model in grid.iter_models(config)
            for dataset in grid.eval_datasets(config, source, model)]


# ---- CSF scoring: one job per (model, fit group) over every scored evaluation set
@functools.cache
def scored_sets(source, model):
    return tuple(grid.eval_set_spec(config, source, d, model) for d in grid.scored_datasets(config, source, model))


def score_inputs(wildcards):
    sets = scored_sets(wildcards.source, wildcards.model)
    return {"fit": paths.csf_fit(wildcards.source, wildcards.model, wildcards.fit_group),
            "features": [paths.features(wildcards.source, wildcards.model, s.name) for s in sets]}


def score_eval_sets_json(wildcards):
    return json.dumps([s.to_dict() for s in scored_sets(wildcards.source, wildcards.model)], sort_keys=True)


def all_metric_files():
    return [paths.metrics(source, str(model), fit_group) for source, model in grid.iter_models(config)
            for fit_group in config["csf"]["groups"]] + network_metric_files() + projnorm_metric_files()


# ---- CSFs that need the network (rules/network_csf.smk): fit per model, then one job per model scores every
# evaluation set into the scores/metrics files of the fit-group slot paths.NETWORK_GROUP
NETWORK_CSF = config["network_csf"]
# what a fit reads (the batch size is its own param; a change of `csf` never reruns these jobs)
NETWORK_CSF_FIT = json.dumps({k: v for k, v in NETWORK_CSF.items() if k != "batch_size"}, sort_keys=True)


def network_metric_files():
    if not NETWORK_CSF["methods"]:
        return []
    return [paths.metrics(source, str(model), paths.NETWORK_GROUP) for source, model in grid.iter_models(config)]


def network_fit_inputs(wildcards):
    return {"checkpoint": paths.checkpoint(wildcards.source, wildcards.model),
            "index": paths.dataset_index(source_dataset(wildcards.source))}


def network_score_inputs(wildcards):
    """The checkpoint, the fit, the images of every scored set (as extract_features reads them) and their
    feature files (whose correctness the metric rows use), in the order of score_eval_sets_json."""
    sets = scored_sets(wildcards.source, wildcards.model)
    images = {path for s in sets for path in eval_set_images(wildcards.source, wildcards.model, s.name).values()}
    return {"checkpoint": paths.checkpoint(wildcards.source, wildcards.model),
            "fit": paths.network_fit(wildcards.source, wildcards.model), "images": sorted(images),
            "features": [paths.features(wildcards.source, wildcards.model, s.name) for s in sets]}


# ---- shift study and ProjNorm (rules/shifts.smk, adversarial.smk, projnorm.smk)
PROJNORM = json.dumps(config.get("projnorm", {}), sort_keys=True)


def projnorm_partner(wildcards):
    """Checkpoint of the AgreeScore partner model (empty when projnorm.agree_run_offset is 0)."""
    partner = grid.agree_partner(config, wildcards.model)
    return {"partner": paths.checkpoint(wildcards.source, partner)} if partner else {}


def projnorm_shift_inputs(wildcards):
    return {**extract_inputs(wildcards), **projnorm_partner(wildcards),
            "reference": paths.projnorm_reference(wildcards.source, wildcards.model)}


def projnorm_partner_spec(wildcards):
    partner = grid.agree_partner(config, wildcards.model)
    return model_spec(wildcards.source, partner).to_json() if partner else "null"


@functools.cache
def projnorm_study(source):
    """[(model, [evaluation set])] of a source's study, in grid order."""
    return tuple((str(model), tuple(grid.projnorm_sets(config, source, model)))
                 for s, model in grid.study_models(config) if s == source)


def projnorm_eval_inputs(wildcards):
    study = projnorm_study(wildcards.source)
    return {"val": [paths.features(wildcards.source, m, "val") for m, _ in study],
            "features": [paths.features(wildcards.source, m, d) for m, sets in study for d in sets],
            "projnorm": [paths.projnorm_result(wildcards.source, m, d) for m, sets in study for d in sets]}


def projnorm_study_json(wildcards):
    """The study's model specs and evaluation sets, in the order of projnorm_eval_inputs."""
    return json.dumps([{"spec": model_spec(wildcards.source, m).to_dict(),
                        "eval_sets": [grid.eval_set_spec(config, wildcards.source, d, m).to_dict() for d in sets]}
                       for m, sets in projnorm_study(wildcards.source)], sort_keys=True)


def projnorm_sources():
    return sorted({source for source, _ in grid.study_models(config)}) if "projnorm" in config else []


def projnorm_outputs():
    return [out for source in projnorm_sources()
            for out in (paths.projnorm_table(source, "correlations.csv"), paths.projnorm_table(source, "stress.csv"),
                        paths.projnorm_scatter(source))]


def projnorm_metric_files():
    return [paths.projnorm_table(source, "rows.parquet") for source in projnorm_sources()]


# ---- neural collapse (rules/geometry.smk)
# the CSF fit groups whose projections the NC regimes reuse (a group not fitted is refitted with
# geometry/nc/variance)
NC_FIT_GROUPS = [g for g in ("global", "class") if g in config["csf"]["groups"]]


def nc_record_files(source):
    return [paths.nc_records(s, str(m)) for s, m in grid.iter_models(config) if s == source]


def nc_tables():
    if "geometry" not in config:
        return []
    return [paths.nc_table(source, ext) for source in SOURCES for ext in ("csv", "tex")]


# ---- near/mid/far stratification (rules/proximity.smk)
def semantic_sets(source):
    return [n for n, e in config["sources"][source]["ood"].items() if e["shift_type"] == "semantic"]


def proximity_sources():
    return [s for s in SOURCES if semantic_sets(s)] if "proximity" in config else []


def proximity_outputs():
    return [paths.proximity_table(source, ext) for source in proximity_sources() for ext in ("csv", "tex")]


def encoder_weights_input():
    """{"weights": file} when the proximity encoder's weights are the ones the workflow produces (the demo's
    pretrained ViT: a DAG input); user-provided weights are checked when the job starts (as for
    backbones/vit/pretrained in train_inputs)."""
    encoder = config["proximity"]["encoder"]
    if "pretrain" in config and encoder.get("file") == config["backbones"]["vit"]["pretrained"]["file"]:
        return {"weights": encoder["file"]}
    return {}


def proximity_embed_inputs(wildcards):
    names = [source_dataset(wildcards.source), *semantic_sets(wildcards.source)]
    return {"index": [paths.dataset_index(name) for name in names], **encoder_weights_input()}


def proximity_embed_params(wildcards):
    source = wildcards.source
    return json.dumps({"source_dataset": grid.dataset_spec(config, source_dataset(source)).to_dict(),
                       "val_size": config["sources"][source]["val_size"],
                       "ood": {n: grid.dataset_spec(config, n).to_dict() for n in semantic_sets(source)}},
                      sort_keys=True)


def static_regimes(wildcards):
    ood = config["sources"][wildcards.source]["ood"]
    return json.dumps({n: ood[n].get("regime") for n in semantic_sets(wildcards.source)})


# ---- conformal evaluation (rules/conformal.smk)
CONFORMAL = config["conformal"]
CONFORMAL_FIT = json.dumps({k: v for k, v in CONFORMAL.items() if k not in ("figure", "prediction_sets")},
                           sort_keys=True)


def conformal_band_files():
    """{(method, delta): band file} of the configured bands, for the calibration size n_cal."""
    n_mc, seed = CONFORMAL["n_mc"], CONFORMAL["seed"]
    return {(method, delta): paths.conformal_band(CONFORMAL["calibration"]["n_cal"], delta, method, n_mc, seed)
            for method in CONFORMAL["methods"] for delta in CONFORMAL["delta"]}


def conformal_groups():
    return list(config["csf"]["groups"]) + ([paths.NETWORK_GROUP] if NETWORK_CSF["methods"] else [])


def conformal_inputs(wildcards):
    groups = conformal_groups()
    return {"scores": [paths.scores(wildcards.source, wildcards.model, g) for g in groups],
            "metrics": [paths.metrics(wildcards.source, wildcards.model, g) for g in groups],
            "bands": list(conformal_band_files().values())}


def prediction_set_inputs(wildcards):
    """The feature files of the train and test splits; for the GRAM score also the checkpoint, the GRAM fit and
    the images of the test split (the network runs on them)."""
    source, model = wildcards.source, wildcards.model
    inputs = {"train": paths.features(source, model, "train"), "test": paths.features(source, model, "test")}
    if "gram" in CONFORMAL["prediction_sets"]["scores"]:
        inputs.update(checkpoint=paths.checkpoint(source, model), network_fit=paths.network_fit(source, model),
                      index=paths.dataset_index(source_dataset(source)))
    return inputs


def conformal_metric_files():
    if not CONFORMAL["enabled"]:
        return []
    return [paths.conformal_metrics(source, str(model)) for source, model in grid.iter_models(config)]


def conformal_outputs():
    if not CONFORMAL["enabled"]:
        return []
    return ([paths.prediction_sets(source, str(model)) for source, model in grid.iter_models(config)]
            + [paths.figure(f"conformal_{source}.png") for source in SOURCES]
            + [paths.table(f"conformal_{name}_{source}.csv") for source in SOURCES for name in ("table1", "table2")])


# ---- pair analyses (rules/analyses.smk)
def gallery_sets_json(source):
    """The evaluation sets of a source's rank-gap gallery (the ID test split and its semantic sets) as JSON."""
    names = ["test"] + semantic_sets(source)
    return json.dumps({"source": grid.dataset_spec(config, source_dataset(source)).to_dict(),
                       "val_size": config["sources"][source]["val_size"],
                       "sets": [grid.eval_set_spec(config, source, n).to_dict() for n in names]}, sort_keys=True)


def covariate_sets(source):
    """The covariate sets a source's models are scored on: its catalogue sets of shift type covariate and, when
    one of its models is in the shift study, the generated corruption sets."""
    generated = grid.corruption_sets(config, source) if any(s == source for s, _ in grid.study_models(config)) else []
    return [n for n, e in config["sources"][source]["ood"].items() if e["shift_type"] == "covariate"] + generated


def covariate_embed_inputs(wildcards):
    """What the covariate sets' images are read through (generated images or dataset indexes), the weights."""
    sets = [next(iter(eval_set_images(wildcards.source, None, name).values()))
            for name in covariate_sets(wildcards.source)]
    return {"sets": sets, **encoder_weights_input()}


def covariate_embed_sets(wildcards):
    source = wildcards.source
    return json.dumps({n: grid.eval_set_spec(config, source, n).dataset.to_dict() for n in covariate_sets(source)},
                      sort_keys=True)


def analysis_inputs(wildcards):
    """The scores and metric rows (fit group none) of a source's models, the indexes of the gallery's datasets and, where the
    proximity stage runs, its embeddings and those of the source's covariate sets."""
    names = [source_dataset(wildcards.source)] + semantic_sets(wildcards.source)
    models = [str(m) for m in grid.model_ids(config, wildcards.source)]
    inputs = {"scores": [paths.scores(wildcards.source, m, "none") for m in models],
              "metrics": [paths.metrics(wildcards.source, m, "none") for m in models],
              "indexes": [paths.dataset_index(n) for n in names]}
    if wildcards.source in proximity_sources():
        inputs["embeddings"] = paths.proximity_embeddings(wildcards.source)
        if covariate_sets(wildcards.source):
            inputs["covariate_embeddings"] = paths.covariate_embeddings(wildcards.source)
    return inputs


def analysis_sources():
    if not config["analyses"]["enabled"] or "none" not in config["csf"]["groups"]:
        return []
    return SOURCES


def pair_metric_files():
    return [paths.pair_metrics(source) for source in analysis_sources()]


def analysis_outputs():
    sources = analysis_sources()
    return [paths.figure(f"pairs_{source}.png") for source in sources] + (
        [paths.category_table("averaged")] if sources else [])


def conformal_report_bands():
    """{(method, n): band file} the report reads, all at the first delta: the figure's ROC band (first method,
    n_cal; the same file as the metric rows') and the band-width panel's (every method x figure.band_sizes)."""
    delta, n_mc, seed = CONFORMAL["delta"][0], CONFORMAL["n_mc"], CONFORMAL["seed"]
    sizes = [CONFORMAL["calibration"]["n_cal"]] + list(CONFORMAL["figure"]["band_sizes"])
    return {(method, n): paths.conformal_band(n, delta, method, n_mc, seed)
            for method in CONFORMAL["methods"] for n in sizes}
