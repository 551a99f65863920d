# Config validation, the experiment grid and named helpers shared by the rule files.
import functools
import json

from csfbench import config as cfg
from csfbench.data import demo as demo_data
from csfbench.ids import MODEL_PATTERN

cfg.validate_config(config, source="snakemake config")

SOURCES = list(config["sources"])
DATASET_NAMES = sorted(set(config["datasets"]) | {"train", "val", "test"} | set(cfg.generated_set_names(config)))


wildcard_constraints:
    source="|".join(SOURCES),
    model=MODEL_PATTERN,
    dataset="|".join(DATASET_NAMES),
    name="|".join(config["datasets"]),
    projection="|".join(config["csf"]["groups"]),


def res(rule_name, key, default=None):
    """Resource setting of a rule from the config's `resources` section."""
    return config["resources"].get(rule_name, {}).get(key, default)


@functools.cache
def _model_spec(source, model):
    """The resolved spec of a model (read-only: shared by every job of the model)."""
    return cfg.model_spec(config, source, model)


@functools.cache
def _model_spec_json(source, model):
    return json.dumps(_model_spec(source, model), sort_keys=True)


@functools.cache
def _eval_set_json(source, dataset, model=None):
    return json.dumps(cfg.eval_set_spec(config, source, dataset, model), sort_keys=True)


# cached: the paper grid evaluates these for ~15,000 jobs while the DAG is built
def model_spec_json(wildcards):
    return _model_spec_json(wildcards.source, wildcards.model)


@functools.cache
def csf_fit_json(group):
    """The part of the ``csf`` section a fit of projection ``group`` reads, as JSON (one per group, not per job)."""
    return json.dumps(cfg.csf_fit_config(config, group), sort_keys=True)


def eval_set_json(wildcards):
    # the model matters only for its own adversarial sets: other sets share one cache entry
    model = wildcards.get("model") if cfg.shift_names.parse_adversarial_set(wildcards.dataset) else None
    return _eval_set_json(wildcards.source, wildcards.dataset, model)


def demo_files():
    """The files the demo generator writes (empty when the config has no `demo` section)."""
    if "demo" not in config:
        return []
    root = config["data_root"]
    return [
        f"{root}/{name}/{split}/{array}.npy"
        for name, split in demo_data.SPLITS
        for array in ("images", "labels")
    ]


def index_file(name):
    return f"results/data/index/{name}.json"


def dataset_index_inputs(wildcards):
    """The generated files behind a dataset, when the demo generator produces it."""
    root = f"{config['data_root']}/{config['datasets'][wildcards.name]['path']}/"
    return [f for f in demo_files() if f.startswith(root)]


def train_inputs(wildcards):
    spec = _model_spec(wildcards.source, wildcards.model)
    inputs = {"index": index_file(spec["dataset"]["name"])}
    if spec["backbone"] == "vit" and "pretrain" in config:
        inputs["pretrained"] = spec["pretrained"]["file"]
    return inputs


def extract_inputs(wildcards):
    spec = _model_spec(wildcards.source, wildcards.model)
    generated = cfg.generated_set_folder(wildcards.source, wildcards.dataset, wildcards.model)
    if generated is not None:  # a corruption or adversarial set written by the shift study's rules
        return {"checkpoint": f"results/models/{wildcards.source}/{wildcards.model}/checkpoint.pt",
                "images": f"{generated}/test/images.npy"}
    eval_set = cfg.eval_set_spec(config, wildcards.source, wildcards.dataset)
    name = eval_set["dataset"]["name"] if "dataset" in eval_set else spec["dataset"]["name"]
    return {
        "checkpoint": f"results/models/{wildcards.source}/{wildcards.model}/checkpoint.pt",
        "index": index_file(name),
    }


def scored_datasets(source, model=None):
    """Evaluation sets that are scored: every set but the training split (with a model: also its generated sets)."""
    return [d for d in cfg.eval_datasets(config, source, model) if d != "train"]


def score_inputs(wildcards):
    base = f"results/{{kind}}/{wildcards.source}/{wildcards.model}"
    inputs = {
        "fit": f"{base.format(kind='csf')}/{wildcards.projection}/fit.h5",
        "features": f"{base.format(kind='features')}/{wildcards.dataset}.h5",
    }
    if wildcards.dataset not in ("val", "test"):
        inputs["id_scores"] = f"{base.format(kind='scores')}/{wildcards.projection}/test.h5"
    return inputs


def all_metric_files():
    return [
        f"results/metrics/{source}/{model}/{projection}/{dataset}.parquet"
        for source, model in cfg.iter_models(config)
        for projection in config["csf"]["groups"]
        for dataset in scored_datasets(source, model)
    ] + projnorm_metric_files()


def all_feature_files():
    return [
        f"results/features/{source}/{model}/{dataset}.h5"
        for source, model in cfg.iter_models(config)
        for dataset in cfg.eval_datasets(config, source, model)
    ]


# shift study and ProjNorm (rules/shifts.smk, adversarial.smk, projnorm.smk)
PROJNORM = json.dumps(cfg.projnorm_settings(config), sort_keys=True)


def projnorm_partner(wildcards):
    """Checkpoint of the AgreeScore partner model (empty when projnorm.agree_run_offset is 0)."""
    partner = cfg.agree_partner(config, wildcards.model)
    return {"partner": f"results/models/{wildcards.source}/{partner}/checkpoint.pt"} if partner else {}


def projnorm_shift_inputs(wildcards):
    return {**extract_inputs(wildcards), **projnorm_partner(wildcards),
            "reference": f"results/projnorm/{wildcards.source}/{wildcards.model}/reference.safetensors"}


def projnorm_partner_spec(wildcards):
    partner = cfg.agree_partner(config, wildcards.model)
    return _model_spec_json(wildcards.source, partner) if partner else "null"


@functools.cache  # the evaluation job asks for it twice (input and params); callers must not modify it
def projnorm_study(source):
    """(model, sets) of a source's study: the model's spec, val features, and per set its eval spec and files."""
    return [
        {
            "spec": _model_spec(source, str(model)),
            "val": f"results/features/{source}/{model}/val.h5",
            "sets": [
                {
                    "eval_set": cfg.eval_set_spec(config, source, d, model),
                    "features": f"results/features/{source}/{model}/{d}.h5",
                    "projnorm": f"results/projnorm/{source}/{model}/{d}.json",
                }
                for d in cfg.projnorm_sets(config, source, model)
            ],
        }
        for s, model in cfg.study_models(config)
        if s == source
    ]


def projnorm_eval_inputs(wildcards):
    study = projnorm_study(wildcards.source)
    return [m["val"] for m in study] + [f for m in study for s in m["sets"] for f in (s["features"], s["projnorm"])]


def projnorm_sources():
    return sorted({source for source, _ in cfg.study_models(config)}) if "projnorm" in config else []


def projnorm_outputs():
    return [
        f"results/{kind}/projnorm/{source}_{name}"
        for source in projnorm_sources()
        for kind, name in [("tables", "correlations.csv"), ("tables", "stress.csv"), ("figures", "scatter.png")]
    ]


def projnorm_metric_files():
    return [f"results/tables/projnorm/{source}_rows.parquet" for source in projnorm_sources()]


# ---- neural collapse (rules/geometry.smk)

# the CSF fit groups whose projections the NC regimes reuse (a group not fitted is refitted with
# geometry/nc/variance)
NC_FIT_GROUPS = [g for g in ("global", "class") if g in config["csf"]["groups"]]


def nc_record_files(source):
    return [f"results/geometry/{s}/{m}/nc.csv" for s, m in cfg.iter_models(config) if s == source]


def nc_tables():
    if "geometry" not in config:
        return []
    return [f"results/tables/nc_{source}.{ext}" for source in SOURCES for ext in ("csv", "tex")]


# ---- near/mid/far stratification (rules/proximity.smk)


def semantic_sets(source):
    return [n for n, e in config["sources"][source]["ood"].items() if e["shift_type"] == "semantic"]


def proximity_sources():
    return [s for s in SOURCES if semantic_sets(s)] if "proximity" in config else []


def proximity_outputs():
    return [
        f"results/tables/proximity_{source}.{ext}"
        for source in proximity_sources()
        for ext in ("csv", "tex")
    ]


def proximity_embed_inputs(wildcards):
    names = [config["sources"][wildcards.source]["dataset"], *semantic_sets(wildcards.source)]
    inputs = {"index": [index_file(name) for name in names]}
    encoder = config["proximity"]["encoder"]
    # weights the workflow produces (the demo's pretrained ViT) are a DAG input; user-provided weights are
    # checked when the job starts (as for backbones/vit/pretrained in train_inputs)
    if "pretrain" in config and encoder.get("file") == config["backbones"]["vit"]["pretrained"]["file"]:
        inputs["weights"] = encoder["file"]
    return inputs


def proximity_embed_params(wildcards):
    src = config["sources"][wildcards.source]
    return json.dumps(
        {
            "source_dataset": cfg.dataset_spec(config, src["dataset"]),
            "val_size": src["val_size"],
            "ood": {n: cfg.dataset_spec(config, n) for n in semantic_sets(wildcards.source)},
            "encoder": config["proximity"]["encoder"],
            "batch_size": config["proximity"].get("batch_size", 256),
        },
        sort_keys=True,
    )


def static_regimes(wildcards):
    ood = config["sources"][wildcards.source]["ood"]
    return json.dumps({n: ood[n].get("regime") for n in semantic_sets(wildcards.source)})
