"""One function per workflow job; ``workflow_scripts/`` only forward the Snakemake object's fields.

Every function takes plain values (specs from :mod:`csfbench.config`, paths) so it can be called and
tested without Snakemake.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from csfbench.atomic import atomic_path, save_npy, write_json
from csfbench.data.formats import open_dataset
from csfbench.data.sources import shift_set, source_split

log = logging.getLogger(__name__)


def demo_data(out_files: list[str], seed: int, spec: dict, threads: int = 1) -> dict:
    """Generate the embedded demo datasets (see :mod:`csfbench.data.demo`) as the declared ``out_files``.

    The files are ``{root}/{dataset}/{split}/{images,labels}.npy``; the root is taken from them.
    """
    from csfbench.data.demo import generate_demo

    root = Path(out_files[0]).parents[2]
    summary = generate_demo(root, seed, spec, threads=threads)
    missing = [f for f in out_files if not Path(f).is_file()]
    if missing:
        raise RuntimeError(f"demo generator did not write the declared outputs {missing}")
    log.info("demo data: %s", json.dumps(summary, sort_keys=True))
    return summary


def index_dataset(dataset: dict, splits: list[str], out_json: str | Path) -> dict:
    """Open the used official ``splits`` of a catalogue dataset, check them, record counts and label range.

    Fails fast with a :class:`~csfbench.errors.DatasetError` (dataset, path tried, expected layout)
    when the data are missing or malformed.
    """
    index = {"name": dataset["name"], "format": dataset["format"], "path": dataset["path"],
             "options": dataset.get("options", {}), "splits": {}}
    for split in splits:
        images = open_dataset(dataset["format"], dataset["path"], split, dataset["name"], **dataset.get("options", {}))
        labels = images.labels
        index["splits"][split] = {"n": len(images), "label_min": int(labels.min()) if len(labels) else None,
                                  "label_max": int(labels.max()) if len(labels) else None,
                                  "first_sample_id": str(images.sample_ids[0]) if len(images) else None}
        log.info("%s/%s: %d images", dataset["name"], split, len(images))
    write_json(index, out_json, sort_keys=True)
    return index


def train(spec: dict, checkpoint: str | Path, history: str | Path, num_workers: int = 0) -> None:
    """Train one model (all paradigm stages) with resume support next to the checkpoint."""
    from csfbench.training.loop import resolve_device, train_model

    train_set = source_split(spec["dataset"], spec["val_size"], "train")
    val_set = source_split(spec["dataset"], spec["val_size"], "val")
    _check_labels(train_set.labels, spec)
    checkpoint = Path(checkpoint)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    device = resolve_device()
    log.info("training %s/%s on %s: %d train, %d val images", spec["source"], spec["model"], device,
             len(train_set), len(val_set))
    train_model(spec, train_set, val_set, checkpoint, Path(history), checkpoint.with_name("resume.pt"),
                device=device, num_workers=num_workers)


def _check_labels(labels: np.ndarray, spec: dict) -> None:
    if len(labels) and (labels.min() < 0 or labels.max() >= spec["n_classes"]):
        from csfbench.errors import ConfigError

        raise ConfigError(f"sources/{spec['source']}/n_classes", f"labels in 0..{spec['n_classes'] - 1}",
                          f"labels in {labels.min()}..{labels.max()} in dataset '{spec['dataset']['name']}'")


def pretrain(spec: dict, out_file: str | Path, history: str | Path) -> None:
    """Pretrain a timm ViT from scratch (the demo's stand-in for ImageNet-21k weights).

    The result is saved as a timm state dict in safetensors format, loadable through timm's
    pretrained-file mechanism exactly like downloaded weights.
    """
    from safetensors.torch import save_file

    from csfbench.training.loop import resolve_device, train_model

    out_file = Path(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    # the pretraining set has a single (train) split: its last val_size images monitor the training
    images = source_split(spec["dataset"], spec["val_size"], "train")
    cut = len(images) - spec["val_size"]
    train_set, val_set = images.subset(np.arange(cut)), images.subset(np.arange(cut, len(images)))
    work = out_file.with_name(out_file.stem + ".work")
    work.mkdir(exist_ok=True)
    model = train_model(spec, train_set, val_set, work / "checkpoint.pt", Path(history), work / "resume.pt",
                        device=resolve_device())
    state = {k.removeprefix("encoder.vit."): v.detach().cpu().contiguous()
             for k, v in model.state_dict().items() if k.startswith("encoder.vit.")}
    state.update({f"head.{k}": v.detach().cpu().contiguous() for k, v in model.head.state_dict().items()})
    with atomic_path(out_file) as tmp:
        save_file(state, str(tmp))
    (work / "checkpoint.pt").unlink(missing_ok=True)
    work.rmdir()


def eval_images(spec: dict, eval_set: dict):
    """The images of an evaluation set (an ID split of the model's source or a shifted set) and its split."""
    if eval_set["shift_type"] == "id":
        return source_split(spec["dataset"], spec["val_size"], eval_set["name"]), eval_set["name"]
    return shift_set(eval_set["dataset"], eval_set["shift_type"]), eval_set["dataset"].get("split", "test")


def extract(spec: dict, eval_set: dict, checkpoint: str | Path, out_h5: str | Path, batch_size: int,
            compression: str = "gzip", num_workers: int = 0) -> None:
    """Write the feature file of one (model, evaluation set)."""
    from csfbench.features.extract import extract_features
    from csfbench.models import load_checkpoint
    from csfbench.training.loop import resolve_device

    device = resolve_device()
    name = eval_set["name"]
    images, split = eval_images(spec, eval_set)
    model = load_checkpoint(spec, checkpoint, device)
    extract_features(model, spec, images, out_h5, name, split, eval_set["shift_type"], batch_size, device,
                     compression=compression, num_workers=num_workers, with_head=(name == "train"))


def _csf_context(spec: dict, head: tuple[np.ndarray, np.ndarray], quirks: str):
    from csfbench.csf.registry import ModelContext

    c = int(spec["n_classes"])
    weight, bias = (np.asarray(a, dtype=np.float64) for a in head)
    return ModelContext(c, spec["backbone"], spec["paradigm"], weight[:c], bias[:c], weight, bias, quirks)


def _modes(spec: dict) -> tuple[str, ...]:
    return ("det", "mcd") if int(spec["mcd_samples"]) > 0 else ("det",)


def fit_csf(spec: dict, csf_cfg: dict, group: str, train_h5: str | Path, val_h5: str | Path,
            out_h5: str | Path) -> None:
    """Fit every CSF variant of one (model, projection fit group) on train + val into ``fit.h5``."""
    from csfbench.config import spec_hash
    from csfbench.csf.engine import TuningSettings, fit_mode
    from csfbench.csf.inputs import load_splits
    from csfbench.csf.store import write_fit
    from csfbench.features.store import read_features
    from csfbench.provenance import git_commit, package_version, utc_now

    expect = {"model": spec["model"], "source": spec["source"]}
    arrays, _ = read_features(train_h5, keys=("head/weight", "head/bias"))
    if "head/weight" not in arrays:
        raise ValueError(f"{train_h5}: the train feature file has no 'head/weight'")
    head = (arrays["head/weight"], arrays["head/bias"])
    quirks = csf_cfg.get("quirks", "strict")
    tuning = TuningSettings.from_config(csf_cfg)
    train, val = (load_splits(path, _modes(spec), expect) for path in (train_h5, val_h5))
    modes = {mode: fit_mode(group, train[mode], val[mode], _csf_context(spec, head, quirks), tuning)
             for mode in _modes(spec)}
    attrs = {"source": spec["source"], "model": spec["model"], "group": group, "quirks": quirks,
             "csf_config": json.dumps(csf_cfg, sort_keys=True), "config_hash": spec_hash(spec),
             "package_version": package_version(), "git_commit": git_commit(), "created": utc_now()}
    write_fit(out_h5, modes, head, attrs)
    log.info("%s/%s: wrote %s (%d variants)", spec["model"], group, out_h5,
             sum(len(m.csfs) for m in modes.values()))


def score_and_evaluate(spec: dict, eval_set: dict, fit_h5: str | Path, features_h5: str | Path,
                       out_scores: str | Path, out_metrics: str | Path, id_scores_h5: str | Path | None = None) -> None:
    """Score one evaluation set with a fitted group and write its scores file and metric rows."""
    from csfbench.csf.engine import score_mode
    from csfbench.csf.inputs import load_splits
    from csfbench.csf.store import read_fit, read_scores, write_scores
    from csfbench.evaluation import metric_rows

    fitted, head, fit_attrs = read_fit(fit_h5)
    if fit_attrs["model"] != spec["model"]:
        raise ValueError(f"{fit_h5}: fit of model {fit_attrs['model']!r}, expected {spec['model']!r}")
    expect = {"model": spec["model"], "source": spec["source"], "dataset": eval_set["name"]}
    ctx = _csf_context(spec, head, str(fit_attrs["quirks"]))
    splits = load_splits(features_h5, tuple(fitted), expect)
    if len(next(iter(splits.values()))) == 0:
        raise ValueError(f"{features_h5}: empty evaluation set {eval_set['name']!r}")
    scores = {mode: score_mode(splits[mode], fm, ctx) for mode, fm in fitted.items()}
    attrs = {k: fit_attrs[k] for k in ("source", "model", "group", "quirks", "config_hash")}
    attrs.update(dataset=eval_set["name"], shift_type=eval_set["shift_type"], regime=eval_set["regime"])
    write_scores(out_scores, scores, splits, attrs)
    # the same mapping read_scores returns, from memory (no read-back of the file just written)
    own = {mode: {"correct": splits[mode].correct, "scores": scores[mode]} for mode in scores}
    reference = read_scores(id_scores_h5)[0] if id_scores_h5 else None
    rows = metric_rows(spec, eval_set, own, reference)
    with atomic_path(out_metrics) as tmp:
        rows.to_parquet(tmp, index=False)
    log.info("%s/%s/%s: %d metric rows", spec["model"], fit_attrs["group"], eval_set["name"], len(rows))


def aggregate_results(metric_files: list[str], out_table: str | Path, out_selection: str | Path,
                      regime_files: list[str] = ()) -> None:
    """Merge the metric rows into ``results.parquet`` (with the proximity stage's resolved regimes) and write
    the validation-selected configurations."""
    from csfbench.aggregate.results_table import write_results_table
    from csfbench.aggregate.selection import select_configurations

    table = write_results_table(metric_files, out_table, regime_files)
    chosen = select_configurations(table)
    with atomic_path(out_selection) as tmp:
        chosen.to_csv(tmp, index=False)
    log.info("results table: %d rows from %d files; %d selected configurations", len(table), len(metric_files),
             len(chosen))


# ---------------------------------------------------------------------------------------------
# shift study: corruption sets, adversarial sets, ProjNorm and its evaluation (spec §3)
# ---------------------------------------------------------------------------------------------

def corrupt_set(dataset: dict, val_size: int, corruption: dict, out_images: str | Path,
                out_labels: str | Path) -> None:
    """Corrupt the ID test split of a source (``corruption``: family, severity, seed) into the npy layout."""
    from csfbench.shifts.corruptions import corrupt_images

    images = source_split(dataset, val_size, "test")
    clean = np.stack([images.image(i) for i in range(len(images))])
    save_npy(corrupt_images(clean, corruption["family"], corruption["severity"], corruption["seed"]), out_images)
    save_npy(images.labels.astype(np.int64), out_labels)
    log.info("%s: %s severity %d on %d images", dataset["name"], corruption["family"], corruption["severity"],
             len(images))


def adversarial_set(spec: dict, attack: dict, checkpoint: str | Path, batch_size: int, out_images: str | Path,
                    out_labels: str | Path) -> dict:
    """Attack the model's ID test split (``attack`` from :func:`csfbench.config.attack_spec`) into the npy layout."""
    from csfbench.attacks.sets import attack_set
    from csfbench.config import derive_seed
    from csfbench.models import load_checkpoint
    from csfbench.training.loop import resolve_device

    device = resolve_device()
    images = source_split(spec["dataset"], spec["val_size"], "test")
    model = load_checkpoint(spec, checkpoint, device)
    adv, summary = attack_set(model, spec, images, attack, batch_size, device,
                              derive_seed(spec["seed"], "attack", attack["name"], attack["eps"]))
    save_npy(adv, out_images)
    save_npy(images.labels.astype(np.int64), out_labels)
    return summary


def projnorm_reference(spec: dict, settings: dict, checkpoint: str | Path, out_file: str | Path) -> None:
    """θ_ref of ProjNorm as safetensors: θ₀ fine-tuned on the training split (``reference: finetune``,
    true labels, as in the authors' code) or the trained model itself (``reference: trained``)."""
    from safetensors.torch import save_file

    from csfbench.models import load_checkpoint
    from csfbench.projnorm.finetune import finetune, initial_model, trained_parameters
    from csfbench.training.loop import resolve_device

    device = resolve_device()
    if settings["reference"] == "trained":
        model = load_checkpoint(spec, checkpoint, device)
    else:
        train_set = source_split(spec["dataset"], spec["val_size"], "train")
        model = finetune(initial_model(spec, int(settings["seed"]), device), spec, train_set, train_set.labels,
                         settings, device)
    state = {k: v.detach().float().cpu().contiguous() for k, v in trained_parameters(model).items()}
    with atomic_path(out_file) as tmp:
        save_file(state, str(tmp))


def projnorm_shift(spec: dict, eval_set: dict, settings: dict, checkpoint: str | Path, reference: str | Path,
                   out_json: str | Path, partner_spec: dict | None = None,
                   partner_checkpoint: str | Path | None = None) -> dict:
    """ProjNorm of one (model, shifted set): pseudo-label with the model, fine-tune θ₀ on the pseudo-labels,
    ‖θ_ref − θ̃‖₂; with a partner model also the AgreeScore disagreement rate on the same images."""
    import time

    from safetensors.torch import load_file

    from csfbench.models import load_checkpoint
    from csfbench.projnorm.baselines import agree_score
    from csfbench.projnorm.finetune import finetune, initial_model, parameter_distance, predict, trained_parameters
    from csfbench.training.loop import resolve_device

    t0 = time.perf_counter()
    device = resolve_device()
    images, _ = eval_images(spec, eval_set)
    m = int(settings.get("max_samples") or 0)
    if 0 < m < len(images):
        rng = np.random.default_rng(int(settings["seed"]))
        images = images.subset(np.sort(rng.choice(len(images), m, replace=False)))
    batch = int(settings["batch_size"])
    pseudo = predict(load_checkpoint(spec, checkpoint, device), spec, images, batch, device)
    tilde = finetune(initial_model(spec, int(settings["seed"]), device), spec, images, pseudo, settings, device)
    value = parameter_distance(trained_parameters(tilde), load_file(str(reference)))
    result = {"source": spec["source"], "model": spec["model"], "dataset": eval_set["name"],
              "shift_type": eval_set["shift_type"], "n": len(images), "projnorm": value,
              "settings": settings}
    if partner_checkpoint:
        partner = predict(load_checkpoint(partner_spec, partner_checkpoint, device), partner_spec, images, batch, device)
        result.update(agree_score=agree_score(pseudo, partner), agree_partner=partner_spec["model"])
    write_json(result, out_json, sort_keys=True)  # no wall-clock time: equal runs write equal files
    log.info("%s/%s: ProjNorm %.4f on %d images (%.1fs)", spec["model"], eval_set["name"], value, len(images),
             time.perf_counter() - t0)
    return result


def projnorm_evaluate(models: list[dict], atc_score: str, out_tables: dict, out_figure: str | Path,
                      out_metrics: str | Path) -> None:
    """Tables, scatter plot and metric rows of one source's error-prediction study.

    ``models`` items: ``{"spec", "val": h5, "sets": [{"eval_set", "features", "projnorm"}]}``;
    ``out_tables``: paths for ``per_set``, ``correlations``, ``stress`` and ``stress_mse`` (CSV).
    """
    import pandas as pd

    from csfbench.projnorm.evaluate import correlations, stress_table
    from csfbench.projnorm.plots import scatter_plot
    from csfbench.projnorm.rows import metric_rows
    from csfbench.projnorm.study import model_rows

    per_set = pd.concat([model_rows(m["spec"], m["val"], m["sets"], atc_score) for m in models], ignore_index=True)
    corr = correlations(per_set)
    stress, mse = stress_table(per_set)
    for key, frame in (("per_set", per_set), ("correlations", corr), ("stress", stress), ("stress_mse", mse)):
        with atomic_path(out_tables[key]) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
    source = models[0]["spec"]["source"]
    scatter_plot(per_set, out_figure, f"{source}: predictor vs test error ({len(models)} model(s))")
    rows = metric_rows({m["spec"]["model"]: m["spec"] for m in models}, per_set, corr, stress)
    with atomic_path(out_metrics) as tmp:
        rows.to_parquet(tmp, index=False)
    for row in corr.itertuples():
        log.info("%s %s: R2 %.3f, Spearman %.3f over %d sets", row.model, row.predictor, row.r2, row.spearman,
                 row.n_sets)
