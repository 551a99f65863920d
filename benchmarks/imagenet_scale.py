"""ImageNet scale: the stored-output CSF stage on a synthetic ResNet-50-shaped run, in bounded memory.

    nice .venv/bin/python benchmarks/imagenet_scale.py [--scale 1.0] [--query-fraction 0.02] [--sets test,ood]
        [--methods KNN,NNGuide,...] [--feature-dtype float16] [--block-mib 128] [--whole] [--dir /tmp/imagenet_scale]
        [--keep] [--out benchmarks/out/imagenet_scale]

Data (written to HDF5 under ``--dir`` by a child process, uncompressed, deleted afterwards unless ``--keep``):
OpenOOD's ImageNet-1K shape — a training bank of 1,281,167 rows × 2,048 ReLU features (``--feature-dtype``:
the features' storage dtype, ``features.feature_dtype``; the logits are float32), 1,000 classes, a linear
nearest-class-mean head, 10,000 validation rows, 50,000 ID test rows and 100,000 OOD rows (unseen latent
classes), all × ``--scale``.  Of the test and OOD sets only ``--query-fraction`` of the rows is written, and the
sets named by ``--sets`` are scored; the score times are extrapolated to all rows of both sets (every CSF scores
each row alone, so its score time is linear in the rows).  The training bank is always whole: the memory figure
is that of the full bank.

Run: the CSF stage's own jobs, :func:`csfbench.stages.csf.fit_csf` (group ``none``) and
:func:`~csfbench.stages.csf.score_csf`, in this process, with the CSFs of ``--methods`` (default: every
stored-output CSF of the unprojected group that applies to a pretrained classifier; not ``Confidence``, which
needs a confidence head) and every hyper-parameter fixed (:data:`FIXED`; no tuning, so the figures are one fit and
one scoring per CSF), at ``csf.block_mib`` = ``--block-mib``.  Per CSF: its fit time and the RSS high-water mark
during its fit (with the states of the CSFs fitted before it), its score time (measured, and extrapolated) and the
high-water mark of its scoring (``csf_engine.EngineRecorder``/``PeakRss``: per-phase VmHWM); for the stage, each
job's time and high-water mark.  ``--whole`` reads every split whole.  Target (issue 52): peak RSS <= 12 GB on a
24 GB, 2-core machine.  Results go to ``<out>.json`` and ``<out>.md``; docs/benchmarks.md keeps the figures.
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # as the Snakefile sets for every job (see csf_engine.py)

import numpy as np
from csf_engine import GB, EngineRecorder, PeakRss

from csfbench.csf import engine
from csfbench.csf import inputs
from csfbench.csf.fit_settings import FitSettings
from csfbench.csf.registry import variants_for
from csfbench.features.store import FeatureWriter, run_attrs
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec
from csfbench.stages.csf import fit_csf, score_csf
from csfbench.workflow.settings import schema_default

SIZES = {"train": 1_281_167, "val": 10_000, "test": 50_000, "ood": 100_000}
DIM, N_CLASSES, LATENT = 2048, 1000, 256
BATCH = 16384
TARGET_PEAK = 12 * GB
#: every tuned hyper-parameter, fixed: ImageNet settings where the papers give them (KNN: Sun et al., ICML 2022,
#: k = 1000 on ImageNet, the top of ICONIC-444's grid; ReAct p = 90; ODIN T = 1000), the CSF-engine and post-hoc
#: benchmarks' values otherwise; NNGuide's α at the low end of its search range [0.1, 0.5]
FIXED = {"GEN": {"m": 10, "gamma": 0.1}, "REN": {"m": 10, "gamma": 0.5}, "ODIN": {"temperature": 1000},
         "KNN": {"k": 1000}, "NNGuide": {"k": 100, "alpha": 0.1}, "ReAct": {"percentile": 90},
         "ASH-S": {"percentile": 90}, "ASH-B": {"percentile": 90}, "ASH-P": {"percentile": 90},
         "SCALE": {"percentile": 85}, "DICE": {"percentile": 70}}
SPEC = ModelSpec(source="imagenet_syn", model="resnet50_pretrained_run1", backbone="resnet50", paradigm="pretrained",
                 dropout=0, reward=0.0, run=1, seed=0, n_classes=N_CLASSES, image_size=224,
                 normalize={"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}, arch={}, mcd_samples=0,
                 optim={}, paradigm_params={}, dataset=DatasetSpec("imagenet_syn", "npy", "unused"),
                 val_size=SIZES["val"])
SETS = [EvalSet("test", "id", "test"), EvalSet("ood", "semantic", "far", DatasetSpec("ood", "npy", "unused"))]


# ---------------------------------------------------------------------------------------------- data
def sizes(scale: float, fraction: float) -> dict[str, int]:
    out = {k: max(int(round(v * scale)), 2 * N_CLASSES if k in ("train", "val") else 100) for k, v in SIZES.items()}
    out.update({k: max(int(round(out[k] * fraction)), 100) for k in ("test", "ood")})
    return out


def generate(root: Path, n: dict[str, int], feature_dtype: str, seed: int = 0) -> None:
    """Write train, val, test and ood feature files of the synthetic ResNet-50-shaped model into ``root``."""
    rng = np.random.default_rng(seed)
    mixing = (rng.normal(size=(DIM, LATENT)) * (2.0 * np.arange(1, LATENT + 1) ** -0.5)[None, :]).astype(np.float32)
    centres = rng.normal(size=(N_CLASSES, LATENT)).astype(np.float32)
    novel = rng.normal(size=(200, LATENT)).astype(np.float32)

    def features(latent_centres: np.ndarray) -> np.ndarray:
        latent = latent_centres + 1.2 * rng.standard_normal(latent_centres.shape, dtype=np.float32)
        h = latent @ mixing.T
        h += 0.2
        h += 0.25 * rng.standard_normal(h.shape, dtype=np.float32)
        return np.maximum(h, 0.0, out=h)

    pilot = np.arange(50 * N_CLASSES) % N_CLASSES  # a nearest-class-mean head from 50 rows per class
    h = features(centres[pilot])
    means = np.stack([h[pilot == c].mean(0) for c in range(N_CLASSES)])
    weight, bias = means, -0.5 * np.sum(means**2, axis=1)
    top2 = np.sort(h[:4000] @ weight.T + bias, axis=1)[:, -2:]
    gain = 4.0 / np.median(top2[:, 1] - top2[:, 0])  # a median top-1 margin of 4 logits
    weight, bias = (weight * gain).astype(np.float32), (bias * gain).astype(np.float32)
    del h

    for name, count in n.items():
        attrs = {**{k: getattr(SPEC, k) for k in ("backbone", "paradigm", "dropout", "reward", "run")},
                 **run_attrs(SPEC), "dataset": name, "split": "test", "n_classes": N_CLASSES, "feature_dim": DIM,
                 "image_size": 224, "package_version": "0", "git_commit": "benchmark", "created": "now",
                 "mcd_samples": 0, "shift_type": "semantic" if name == "ood" else "id"}
        with FeatureWriter(root / f"{name}.h5", count, N_CLASSES, DIM, 0, False, attrs, "none",
                           feature_dtype) as writer:
            for start in range(0, count, BATCH):
                size = min(BATCH, count - start)
                labels = (np.arange(start, start + size) % N_CLASSES if name == "train"
                          else rng.integers(0, N_CLASSES, size))
                h = features(novel[rng.integers(0, len(novel), size)] if name == "ood" else centres[labels])
                logits = h @ weight.T + bias
                pred = logits.argmax(1)
                labels = -np.ones(size, dtype=np.int64) if name == "ood" else labels
                writer.write_batch({"logits": logits, "features": h, "labels": labels, "pred": pred,
                                    "correct": pred == labels,
                                    "sample_id": np.array([f"{name}{i}" for i in range(start, start + size)],
                                                          dtype=object)})
            if name == "train":
                writer.write_head(weight, bias)
        print(f"  wrote {name}: {count} rows", flush=True)


# ---------------------------------------------------------------------------------------------- run
def applicable() -> list[str]:
    """The CSFs of the unprojected group that apply to a pretrained classifier (no confidence head)."""
    return sorted(csf.name for csf, _ in variants_for(SPEC.csf_backbone, ("none",)))


class Progress(EngineRecorder):
    """:class:`csf_engine.EngineRecorder` that also prints every CSF's fit as it ends (a long run shows where it is)."""

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        if record.name == "csfbench.csf.engine" and "fitted %s [%s] in" in str(record.msg):
            entry = self.fit[(record.args[2], record.args[3])]
            print(f"    fitted {record.args[2]:10s} {entry['s']:8.1f} s  peak {entry['peak_gb']:.2f} GB", flush=True)


def csf_config(block_mib: float, methods: list[str]) -> dict:
    return {"methods": methods, "quirks": "strict", "temperatures": ["fitted"], "block_mib": block_mib,
            "tuning": {"init_points": 1, "n_iter": 0, "seed": 1, "budgets": schema_default("csf/tuning/budgets"),
                       "protocols": ["bayes"], "grids": {}, "ood_validation": None,
                       "max_neighbour_fraction": schema_default("csf/tuning/max_neighbour_fraction")},
            "fixed": FIXED, "search_space": {}}


def run_stage(root: Path, block_mib: float, whole: bool, methods: list[str], sets: list[EvalSet]) -> dict:
    """fit_csf + score_csf of the ``none`` group, with per-CSF times and RSS peaks."""
    peaks = PeakRss()
    recorder = Progress(peaks)
    log = logging.getLogger("csfbench.csf.engine")
    log.setLevel(logging.INFO)
    log.addHandler(recorder)
    settings = FitSettings.from_config(csf_config(block_mib, methods))
    real_load = inputs.load_splits
    out: dict = {}
    try:
        with ExitStack() as stack:
            stack.enter_context(mock.patch.object(engine, "BY_NAME", recorder.timed_registry()))
            if whole:  # every split read whole, as before row blocks
                for module in ("csfbench.stages.csf.load_splits",):
                    stack.enter_context(mock.patch(module, lambda *a, lazy=False: real_load(*a, lazy=False)))
            fit = root / "fit.h5"
            peaks.begin("fit_csf")
            t0 = time.perf_counter()
            fit_csf(SPEC, settings, "none", root / "train.h5", root / "val.h5", fit)
            out["fit_csf_s"] = time.perf_counter() - t0
            recorder.close_fit()
            out["fit_csf_mem"] = peaks.end("fit_csf")
            print(f"  fit_csf   {out['fit_csf_s']:8.1f} s  peak {out['fit_csf_mem']['peak_gb']:.2f} GB", flush=True)
            out["fit_file_gb"] = fit.stat().st_size / GB
            peaks.begin("score_csf")
            t0 = time.perf_counter()
            score_csf(SPEC, sets, fit, {s.name: root / f"{s.name}.h5" for s in sets}, root / "scores.h5",
                      root / "metrics.parquet", ("auroc",))
            out["score_csf_s"] = time.perf_counter() - t0
            out["score_csf_mem"] = peaks.end("score_csf")
            print(f"  score_csf {out['score_csf_s']:8.1f} s  peak {out['score_csf_mem']['peak_gb']:.2f} GB", flush=True)
    finally:
        log.removeHandler(recorder)
    # the phases' high-water marks (PeakRss resets the kernel's at every checkpoint, and so ru_maxrss)
    out["peak_rss_gb"] = max(out["fit_csf_mem"]["peak_gb"], out["score_csf_mem"]["peak_gb"])
    out["undefined"] = {f"{k[0]} [{k[1]}]": v for k, v in recorder.undefined.items()}
    out["csfs"] = {name: {"fit_s": recorder.fit.get((name, "none"), {}).get("s", 0.0),
                          "fit_peak_gb": recorder.fit.get((name, "none"), {}).get("peak_gb", float("nan")),
                          "score_s": recorder.score.get((name, "none"), {}).get("s", float("nan")),
                          "score_peak_gb": recorder.score.get((name, "none"), {}).get("peak_gb", float("nan"))}
                   for name in methods}
    import pandas as pd  # the stage's metric rows: new-class AUROC of ood against test, a sanity check

    table = pd.read_parquet(root / "metrics.parquet")
    rows = table[(table["dataset"] == "ood") & (table["metric"] == "auroc") & (table["scheme"] == "newclass")]
    out["auroc"] = {str(r["csf"]): float(r["value"]) for _, r in rows.iterrows()} if len(rows) else {}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--query-fraction", type=float, default=1.0)
    parser.add_argument("--feature-dtype", choices=("float32", "float16"), default="float16")
    parser.add_argument("--block-mib", type=float, default=128.0)
    parser.add_argument("--whole", action="store_true", help="read every split whole (the path before row blocks)")
    parser.add_argument("--methods", default="", help="comma-separated CSFs (default: every one that applies)")
    parser.add_argument("--sets", default="test,ood", help="the evaluation sets scored (of test, ood)")
    parser.add_argument("--dir", default="/tmp/imagenet_scale")
    parser.add_argument("--keep", action="store_true", help="keep the feature files")
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)  # the data child
    parser.add_argument("--out", default="benchmarks/out/imagenet_scale")
    args = parser.parse_args()
    root = Path(args.dir)
    n = sizes(args.scale, args.query_fraction)
    if args.generate:
        generate(root, n, args.feature_dtype)
        return
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if not all((root / f"{name}.h5").is_file() for name in n):  # the data in a child: its memory is not ours
        subprocess.run([sys.executable, __file__, "--generate", "--scale", str(args.scale), "--query-fraction",
                        str(args.query_fraction), "--feature-dtype", args.feature_dtype, "--dir", str(root)],
                       check=True)
    generate_s = time.perf_counter() - t0
    print(f"data {n} in {generate_s:.0f} s", flush=True)
    try:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()] or applicable()
        sets = [s for s in SETS if s.name in args.sets.split(",")]
        result = run_stage(root, args.block_mib, args.whole, methods, sets)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    scored = sum(n[s.name] for s in sets)
    whole_sets = sum(round(SIZES[s] * args.scale) for s in ("test", "ood"))  # every row of both sets
    for entry in result["csfs"].values():
        entry["score_full_s"] = entry["score_s"] * whole_sets / scored
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "cpus": os.cpu_count(), "scale": args.scale, "sizes": n,
              "query_fraction": args.query_fraction, "sets": [s.name for s in sets], "scored_rows": scored,
              "feature_dtype": args.feature_dtype, "block_mib": args.block_mib,
              "whole": args.whole, "methods": methods, "not_run": sorted(set(applicable()) - set(methods)),
              "generate_s": generate_s, "target_peak_gb": TARGET_PEAK / GB, **result}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2))
    lines = [f"# ImageNet scale ({report['date']}): scale {args.scale}, train {n['train']} × {DIM} "
             f"{args.feature_dtype}, {N_CLASSES} classes, scored {scored} rows of {', '.join(s.name for s in sets)} "
             f"(of {whole_sets} test + OOD rows), block {args.block_mib} MiB{', whole splits' if args.whole else ''}",
             "", f"peak RSS {report['peak_rss_gb']:.2f} GB (target {TARGET_PEAK / GB:.0f} GB); fit_csf "
             f"{report['fit_csf_s']:.0f} s (peak {report['fit_csf_mem']['peak_gb']:.2f} GB), score_csf "
             f"{report['score_csf_s']:.0f} s (peak {report['score_csf_mem']['peak_gb']:.2f} GB); fit.h5 "
             f"{report['fit_file_gb']:.2f} GB", "",
             "| CSF | fit s | fit peak GB | score s (measured) | score s (all rows) | score peak GB |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {name} | {e['fit_s']:.1f} | {e['fit_peak_gb']:.2f} | {e['score_s']:.1f} | {e['score_full_s']:.1f} | "
              f"{e['score_peak_gb']:.2f} |" for name, e in sorted(result["csfs"].items(), key=lambda kv: kv[0])]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
