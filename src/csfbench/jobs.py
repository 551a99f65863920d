"""One function per workflow job; ``workflow_scripts/`` only forward the Snakemake object's fields.

Every function takes plain values (specs from :mod:`csfbench.config`, paths) so it can be called and
tested without Snakemake.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from csfbench.atomic import atomic_path
from csfbench.data.formats import open_dataset
from csfbench.data.sources import shift_set, source_split

log = logging.getLogger(__name__)


def write_json_atomic(obj: object, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


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
    write_json_atomic(index, out_json)
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


def extract(spec: dict, eval_set: dict, checkpoint: str | Path, out_h5: str | Path, batch_size: int,
            compression: str = "gzip", num_workers: int = 0) -> None:
    """Write the feature file of one (model, evaluation set)."""
    from csfbench.features.extract import extract_features
    from csfbench.models import load_checkpoint
    from csfbench.training.loop import resolve_device

    device = resolve_device()
    name = eval_set["name"]
    if eval_set["shift_type"] == "id":
        images = source_split(spec["dataset"], spec["val_size"], name)
        split = name
    else:
        images = shift_set(eval_set["dataset"], eval_set["shift_type"])
        split = eval_set["dataset"].get("split", "test")
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


def aggregate_results(metric_files: list[str], out_table: str | Path, out_selection: str | Path) -> None:
    """Merge the metric rows into ``results.parquet`` and write the validation-selected configurations."""
    from csfbench.aggregate.results_table import write_results_table
    from csfbench.aggregate.selection import select_configurations

    table = write_results_table(metric_files, out_table)
    chosen = select_configurations(table)
    with atomic_path(out_selection) as tmp:
        chosen.to_csv(tmp, index=False)
    log.info("results table: %d rows from %d files; %d selected configurations", len(table), len(metric_files),
             len(chosen))
