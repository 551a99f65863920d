"""CSF engine at paper scale: fit + score of all 83 non-MCD CSF variants, against pytorch-ood, in one run.

    .venv/bin/python benchmarks/csf_engine.py [--scale 1.0] [--tuning fixed|default|paper] [--groups none,global,class]
                                              [--init-points 20] [--n-iter 80] [--fit-only] [--threads N]
                                              [--no-engine] [--no-baseline] [--out benchmarks/out/csf_engine]

Synthetic model outputs of the paper's size (scale 1): 50,000 train × 512 dims, 100 classes, 5,000
validation, 9,000 ID test and 8 OOD sets of 10,000.  Features are ReLU outputs of class-structured
latent Gaussians (a 64-dim latent space with a decaying spectrum, mapped to 512 dims, plus isotropic
noise), so PCA subspaces have realistic sizes; the head is the nearest-class-mean linear classifier
of the training features (~80 % accuracy).  OOD sets: 4 sets of unseen latent classes, 2 with
broader latent spread, 2 of structure-free ReLU noise (labels −1).  ``--scale`` shrinks every split.

Engine (VGG-13/DeVries context, 83 variants): per fit group, ``fit_mode`` on train + val, then
``score_mode`` on the ID test set and every OOD set.  ``--tuning fixed`` fixes every tunable
hyper-parameter (values in :data:`FIXED`, KPCA ``n_landmarks`` = ``--n-landmarks``, 2000), so
nothing is tuned; ``--tuning default`` tunes all of them with the package's default budget
(20 + 80 probes, KPCA RecError 5 + 15: the ``csf.tuning.budgets`` default of ``config/schema.yaml``;
``--init-points/--n-iter`` replace the 20 + 80), ``--tuning paper`` with one budget for everything
(the paper's 20 + 80, or ``--init-points/--n-iter``).  Whenever some quantity got fewer probes than
``--target-init-points + --target-n-iter`` (20 + 80), the run also prints an EXTRAPOLATION to that
uniform budget (mean objective time per probe × probes + the Bayesian-optimisation overhead of the
target budget, measured with a zero-cost objective); it is labelled as such and never counts as a
measurement.  ``--fit-only`` skips scoring (scoring does
not depend on the tuning budget), e.g. to measure tuning costs at full scale in less time.

What is measured, per fit group, per CSF family (fit and score separately; score = test + all OOD
sets) and in total:

* wall time (``time.perf_counter``) and process CPU time.  The per-CSF fit time is the engine's
  own measurement (the INFO record "fitted X [v] in s" of ``csfbench.csf.engine``); the per-CSF
  score time wraps each CSF's score function (``engine.BY_NAME`` is patched for the run); the rest
  of ``score_mode`` is building the projected views ("views").  Tuning calls are wrapped to split
  objective time from Bayesian-optimisation overhead.
* peak memory: the kernel's resident-set high-water mark (VmHWM = ``getrusage`` ru_maxrss), reset
  through ``/proc/self/clear_refs`` at every phase boundary, so each figure is the exact RSS peak
  inside that phase (absolute, i.e. including the data held by the process, plus the increment
  over the RSS at the phase start).  Where the reset is not permitted the figures are process-wide
  high-water marks (upper bounds) and the report says so.

Baseline, same data, same hyper-parameters: pytorch-ood 0.4.0's MaxSoftmax, MaxLogit, EnergyBased,
Entropy, GEN, Mahalanobis, ViM, NNGuide, PNML, GradNorm and fDBD (fit on train, score on test + OOD
sets one set at a time), against our kernels on the unprojected features/logits (float32 features
and float64 logits, as the engine holds a feature file's float32 arrays; probabilities through
``views.softmax`` as the engine's ``View.probs``; pytorch-ood gets the same arrays).  Each side runs
in processes of its own (the data passed through ``/dev/shm``), alternating in ABBA order over
``--repeats`` rounds (default 6: each side first in 3), so that neither runs while the other
library's threads are still busy (torch leaves its OpenMP threads spin-waiting after each
operation) or on memory the other allocated.  In
each process, a detector's first run is an uncounted warm-up, on both sides, in round 0 and
afterwards for pairs whose slower side's median run is under 1 s; cheap detectors run again until
they have taken 0.2 s (at most 11 runs); a pair that has taken 30 s is left out of later rounds.
Per detector and side: the median of all runs.  ``--threads 1`` pins BLAS (threadpoolctl) and
torch to one thread each, which makes the ratios far less sensitive to other load on a shared
machine than the libraries' multi-threaded defaults.
Targets (reported, not asserted): fixed hyper-parameters ≤ 5 min and ≤ 8 GB peak; default tuning
≤ 30 min; every overlapping detector no slower than pytorch-ood's.  Results go to ``<out>.json``
and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import os
import platform
import shutil
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

# as the Snakefile sets for every job, before numpy loads OpenBLAS: its threads sleep at once after a
# threaded call instead of spinning against the row-block threads of the kernels
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np

from bench_memory import proc_status, reset_peak

from csfbench.csf import engine
from csfbench.csf import logit_scores as ls
from csfbench.csf.distance_scores import maha_fit, maha_score
from csfbench.csf.engine import TuningSettings, fit_mode, score_mode
from csfbench.csf.fdbd import fdbd
from csfbench.csf.gradnorm import gradnorm
from csfbench.csf.inputs import SplitData
from csfbench.csf.nnguide import NNGUIDE_SEED, nnguide_bank, nnguide_score
from csfbench.csf.pnml import pnml_fit, pnml_score
from csfbench.csf.projection import GROUP_VARIANTS
from csfbench.csf.registry import BY_NAME, ModelContext, variants_for
from csfbench.csf.subspace_scores import principal_dim, vim_fit, vim_score
from csfbench.csf.temperature import fit_temperature
from csfbench.csf.logit_scores import softmax
from csfbench.workflow.settings import schema_default

GB = 1e9
DEFAULT_BUDGETS = schema_default("csf/tuning/budgets")
N_CLASSES, DIM, LATENT = 100, 512, 64
SIZES = {"train": 50_000, "val": 5_000, "test": 9_000, "ood": 10_000}
N_OOD_SETS = 8
#: fixed hyper-parameters (``--tuning fixed``): inside the search spaces of docs/methods.md §3.2
FIXED = {"projection": {"variance": 0.9},
         "GEN": {"m": 10, "gamma": 0.1},
         "REN": {"m": 10, "gamma": 0.5},
         "NNGuide": {"k": 100, "alpha": 0.3},
         "KPCA RecError": {"variance": 0.9, "gamma": 0.5, "n_landmarks": 2000}}
TARGET_FIXED_S, TARGET_DEFAULT_S, TARGET_PEAK = 300.0, 1800.0, 8 * GB


# ---------------------------------------------------------------------------------------------- data
def make_data(scale: float, seed: int = 0) -> tuple[dict[str, SplitData], ModelContext]:
    """Synthetic VGG-13-like outputs: train, val, test and ood_1..ood_8 splits, and the model context."""
    rng = np.random.default_rng(seed)
    sizes = {k: max(int(round(v * scale)), 2 * N_CLASSES if k == "train" else 10) for k, v in SIZES.items()}
    mixing = rng.normal(size=(DIM, LATENT)) * (2.0 * np.arange(1, LATENT + 1) ** -0.5)[None, :]
    centres = rng.normal(size=(N_CLASSES, LATENT))

    def relu_features(latent: np.ndarray) -> np.ndarray:
        return np.maximum(latent @ mixing.T + 0.2 + 0.25 * rng.normal(size=(len(latent), DIM)), 0.0)

    def id_features(labels: np.ndarray) -> np.ndarray:
        return relu_features(centres[labels] + 1.2 * rng.normal(size=(len(labels), LATENT)))

    y_train = np.arange(sizes["train"]) % N_CLASSES
    h_train = id_features(y_train)
    means = np.stack([h_train[y_train == c].mean(0) for c in range(N_CLASSES)])
    weight, bias = means, -0.5 * np.sum(means**2, axis=1)          # nearest-class-mean head
    top2 = np.sort(h_train[:2000] @ weight.T + bias, axis=1)[:, -2:]
    scale_head = 4.0 / np.median(top2[:, 1] - top2[:, 0])            # median top-1 margin of 4 logits
    weight, bias = weight * scale_head, bias * scale_head

    def split(name: str, h: np.ndarray, labels: np.ndarray) -> SplitData:
        logits = h @ weight.T + bias
        srt = np.sort(logits, axis=1)
        confidence = 1.0 / (1.0 + np.exp(-(srt[:, -1] - srt[:, -2] - 1.0)))  # a DeVries-like head output
        # as csfbench.csf.inputs holds a feature file's float32 arrays: features float32, logits widened
        logits = logits.astype(np.float32).astype(np.float64)
        return SplitData(name, "det", h.astype(np.float32), logits, logits, labels, logits.argmax(1), confidence)

    splits = {"train": split("train", h_train, y_train)}
    for name in ("val", "test"):
        labels = rng.integers(0, N_CLASSES, sizes[name])
        splits[name] = split(name, id_features(labels), labels)
    n = sizes["ood"]
    for i in range(N_OOD_SETS):
        if i < 4:      # near OOD: unseen classes from the same latent distribution
            novel = rng.normal(size=(20, LATENT))
            h = relu_features(novel[rng.integers(0, 20, n)] + 1.2 * rng.normal(size=(n, LATENT)))
        elif i < 6:    # far OOD: broad latent spread
            h = relu_features((2.0 + i - 4) * rng.normal(size=(n, LATENT)))
        else:          # structure-free ReLU noise
            h = np.maximum(rng.normal(0.3, 1.0 + (i - 6), size=(n, DIM)), 0.0)
        splits[f"ood_{i + 1}"] = split(f"ood_{i + 1}", h, -np.ones(n, dtype=np.int64))
    ctx = ModelContext(N_CLASSES, "vgg13", "devries", weight, bias, weight, bias)
    return splits, ctx


# ------------------------------------------------------------------------------------------- memory
class PeakRss:
    """Exact per-phase RSS peaks from the kernel's high-water mark (VmHWM), reset at every checkpoint.

    ``begin(key)``/``end(key)`` open and close a phase; every checkpoint folds the high-water mark
    since the previous checkpoint into all open phases, then resets it (``/proc/self/clear_refs``
    "5").  Phases may nest or interleave.  Without a permitted reset (``exact`` False) every reading
    is the process-wide high-water mark so far, an upper bound.
    """

    def __init__(self):
        self.open: dict[str, list[int]] = {}
        self.exact = reset_peak()

    _status = staticmethod(proc_status)

    def checkpoint(self) -> None:
        hwm = self._status("VmHWM:")
        for entry in self.open.values():
            entry[1] = max(entry[1], hwm)
        if self.exact:
            reset_peak()

    def begin(self, key: str) -> None:
        self.checkpoint()
        rss = self._status("VmRSS:")
        self.open[key] = [rss, rss]

    def end(self, key: str) -> dict[str, float]:
        self.checkpoint()
        start, peak = self.open.pop(key)
        return {"peak_gb": peak / GB, "increment_gb": (peak - start) / GB}


# ------------------------------------------------------------------------------------------- engine
class EngineRecorder(logging.Handler):
    """Collects the engine's per-CSF fit times, the tuning records and the per-CSF score times."""

    def __init__(self, peaks: PeakRss):
        super().__init__(logging.DEBUG)
        self.peaks = peaks
        self.fit: dict[tuple[str, str], dict] = {}
        self.score: dict[tuple[str, str], dict] = {}
        self.setup: dict[str, float] = {}
        self.undefined: dict[tuple[str, str], str] = {}
        self.tunes: list[dict] = []
        self.in_fit = False

    def _next_csf(self) -> dict:
        out = self.peaks.end("csf")
        self.peaks.begin("csf")
        return out

    def emit(self, record: logging.LogRecord) -> None:
        if record.name != "csfbench.csf.engine" or not isinstance(record.args, tuple):
            return
        msg, args = str(record.msg), record.args
        if "projection and temperatures" in msg:
            self.setup[args[0]] = float(args[3])
            self.peaks.begin("csf")
            self.in_fit = True
        elif "fitted %s [%s] in" in msg:
            self.fit[(args[2], args[3])] = {"s": float(args[4]), **self._next_csf()}
        elif "is undefined" in msg:
            self.undefined[(args[2], args[3])] = str(args[4])
            self._next_csf()

    def close_fit(self) -> None:
        if self.in_fit:
            self.peaks.end("csf")
            self.in_fit = False

    def timed_tune(self, real_tune):
        def tune(objective, space, init_points, n_iter, seed, label=""):
            spent = {"s": 0.0, "n": 0}

            def timed_objective(params):
                t0 = time.perf_counter()
                try:
                    return objective(params)
                finally:
                    spent["s"] += time.perf_counter() - t0
                    spent["n"] += 1

            t0 = time.perf_counter()
            result = real_tune(timed_objective, space, init_points, n_iter, seed, label)
            total = time.perf_counter() - t0
            self.tunes.append({"label": label, "probes": spent["n"], "total_s": total, "objective_s": spent["s"],
                               "bo_overhead_s": total - spent["s"], "best": result[0]})
            return result
        return tune

    def timed_registry(self) -> dict:
        def wrap(csf):
            def score(state, view, ctx, hp):
                key = (csf.name, view.variant)
                self.peaks.begin("csf_score")
                t0 = time.perf_counter()
                out = csf.score(state, view, ctx, hp)
                elapsed = time.perf_counter() - t0
                mem = self.peaks.end("csf_score")
                entry = self.score.setdefault(key, {"s": 0.0, "peak_gb": 0.0, "increment_gb": 0.0})
                entry["s"] += elapsed
                entry["peak_gb"] = max(entry["peak_gb"], mem["peak_gb"])
                entry["increment_gb"] = max(entry["increment_gb"], mem["increment_gb"])
                return out
            return dataclasses.replace(csf, score=score)
        return {name: wrap(csf) for name, csf in BY_NAME.items()}


def run_engine(splits: dict[str, SplitData], ctx: ModelContext, tuning: TuningSettings, groups: list[str],
               peaks: PeakRss, fit_only: bool = False) -> dict:
    recorder = EngineRecorder(peaks)
    log = logging.getLogger("csfbench.csf.engine")
    log.setLevel(logging.INFO)
    log.addHandler(recorder)
    scored = [name for name in splits if name not in ("train", "val")]
    result = {"groups": {}}
    try:
        with ExitStack() as stack:
            stack.enter_context(mock.patch.object(engine, "tune", recorder.timed_tune(engine.tune)))
            stack.enter_context(mock.patch.object(engine, "BY_NAME", recorder.timed_registry()))
            peaks.begin("engine")
            t_all, c_all = time.perf_counter(), time.process_time()
            for group in groups:
                n_tunes = len(recorder.tunes)
                peaks.begin("group")
                peaks.begin("fit")
                t0, c0 = time.perf_counter(), time.process_time()
                fitted = fit_mode(group, splits["train"], splits["val"], ctx, tuning)
                fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
                recorder.close_fit()
                fit_mem = peaks.end("fit")
                print(f"  {group:6s} fit   {fit_s:8.1f} s  (cpu {fit_cpu:.1f} s, peak {fit_mem['peak_gb']:.2f} GB)",
                      flush=True)
                before = sum(v["s"] for k, v in recorder.score.items() if k[1] in GROUP_VARIANTS[group])
                peaks.begin("score")
                t0, c0 = time.perf_counter(), time.process_time()
                n_scores = 0
                for name in ([] if fit_only else scored):
                    n_scores = len(score_mode(splits[name], fitted, ctx))
                score_s, score_cpu = time.perf_counter() - t0, time.process_time() - c0
                score_mem = peaks.end("score")
                csf_score_s = sum(v["s"] for k, v in recorder.score.items() if k[1] in GROUP_VARIANTS[group]) - before
                group_mem = peaks.end("group")
                print(f"  {group:6s} score {score_s:8.1f} s  (cpu {score_cpu:.1f} s, peak {score_mem['peak_gb']:.2f} GB)"
                      f"  {n_scores} variants scored", flush=True)
                result["groups"][group] = {
                    "fit_s": fit_s, "fit_cpu_s": fit_cpu, "fit_mem": fit_mem,
                    "setup_s": recorder.setup.get(group, float("nan")),
                    "score_s": score_s, "score_cpu_s": score_cpu, "score_mem": score_mem,
                    "score_views_s": score_s - csf_score_s, "total_s": fit_s + score_s, "peak_gb": group_mem["peak_gb"],
                    "variants": len(variants_for(ctx.backbone, GROUP_VARIANTS[group])), "scored": n_scores,
                    "tunes": recorder.tunes[n_tunes:]}
                del fitted
            result["total_s"] = time.perf_counter() - t_all
            result["total_cpu_s"] = time.process_time() - c_all
            result["mem"] = peaks.end("engine")
    finally:
        log.removeHandler(recorder)
    result["undefined"] = {f"{k[0]} [{k[1]}]": v for k, v in recorder.undefined.items()}
    families: dict[str, dict] = {}
    for phase, records in (("fit", recorder.fit), ("score", recorder.score)):
        for (name, variant), entry in records.items():
            fam = families.setdefault(name, {"variants": set(), "fit_s": 0.0, "score_s": 0.0, "fit_peak_gb": 0.0,
                                             "fit_increment_gb": 0.0, "score_peak_gb": 0.0,
                                             "score_increment_gb": 0.0})
            fam["variants"].add(variant)
            fam[f"{phase}_s"] += entry["s"]
            fam[f"{phase}_peak_gb"] = max(fam[f"{phase}_peak_gb"], entry["peak_gb"])
            fam[f"{phase}_increment_gb"] = max(fam[f"{phase}_increment_gb"], entry["increment_gb"])
    for fam in families.values():
        fam["variants"] = sorted(fam["variants"])
        fam["total_s"] = fam["fit_s"] + fam["score_s"]
    result["families"] = dict(sorted(families.items(), key=lambda kv: -kv[1]["total_s"]))
    result["per_variant"] = {f"{k[0]} [{k[1]}]": {"fit": recorder.fit.get(k), "score": recorder.score.get(k)}
                             for k in sorted(set(recorder.fit) | set(recorder.score))}
    return result


def bo_overhead(init_points: int, n_iter: int, dims: int) -> float:
    """Seconds ``tune`` spends on Bayesian optimisation alone (zero-cost objective), ``dims`` parameters."""
    from csfbench.csf.tuning import tune

    space = {f"p{i}": (0.0, 1.0, "float") for i in range(dims)}
    t0 = time.perf_counter()
    tune(lambda p: -sum((v - 0.3) ** 2 for v in p.values()), space, init_points, n_iter, 1, "overhead")
    return time.perf_counter() - t0


def extrapolate(eng: dict, init_points: int, n_iter: int) -> dict:
    """Estimated engine time with ``init_points + n_iter`` probes per tuned quantity (an extrapolation).

    Every tuning call measured in the run is replaced by (its mean objective time per probe) × the
    target probe count + the BO overhead of the target budget (measured with a zero-cost objective
    for the same number of parameters); everything else (untuned fits, the refit with the best
    values, scoring) is kept as measured.
    """
    probes = init_points + n_iter
    dims = {}
    overhead = {}
    tunes = [t for g in eng["groups"].values() for t in g["tunes"]]
    for t in tunes:
        dims[t["label"]] = len(t["best"])
    for d in sorted(set(dims.values())):
        overhead[d] = bo_overhead(init_points, n_iter, d)
    measured = sum(t["total_s"] for t in tunes)
    estimated = {t["label"]: t["objective_s"] / max(t["probes"], 1) * probes + overhead[dims[t["label"]]]
                 for t in tunes}
    return {"probes": probes, "bo_overhead_s_by_dims": overhead, "tuning_measured_s": measured,
            "tuning_estimated_s": estimated, "total_estimated_s": eng["total_s"] - measured + sum(estimated.values())}


# ----------------------------------------------------------------------------------------- baseline
#: the detector pairs, ours / pytorch-ood's
DETECTORS = ("MSR / MaxSoftmax", "MLS / MaxLogit", "Energy / EnergyBased", "PE / Entropy", "GEN / GEN",
             "GradNorm / GradNorm", "Maha / Mahalanobis", "ViM / ViM", "NNGuide / NNGuide", "pNML / PNML",
             "fDBD / fDBD")
SIDES = ("ours", "theirs")


def baseline_detectors(side: str, splits: dict[str, SplitData], ctx: ModelContext,
                       temperature: float) -> dict[str, tuple]:
    """One side's detectors, by name of :data:`DETECTORS`: (fit() -> state, score(state, split name) -> confidence).
    Only pytorch-ood's side imports torch."""
    train = splits["train"]
    t = temperature
    hp_gen, hp_nng = FIXED["GEN"], FIXED["NNGuide"]
    dp = principal_dim(DIM)
    if side == "ours":
        def logit(score):
            return lambda: None, lambda st, s: score(splits[s].logits)

        return dict(zip(DETECTORS, [
            logit(lambda z: ls.msr(softmax(z, t))),
            logit(lambda z: ls.mls(z, t)),
            logit(lambda z: ls.energy(z, t)),
            logit(lambda z: ls.pe(softmax(z, t))),
            logit(lambda z: ls.gen(softmax(z, t), hp_gen["m"], hp_gen["gamma"])),
            (lambda: None, lambda st, s: gradnorm(splits[s].features, softmax(splits[s].logits, t), t)),
            (lambda: maha_fit(train.features, train.labels, N_CLASSES),
             lambda st, s: maha_score(splits[s].features, **st)),
            (lambda: vim_fit(train.features, train.logits, ctx.weight, ctx.bias, dp),
             lambda st, s: vim_score(splits[s].features, splits[s].logits, **st)),
            (lambda: nnguide_bank(train.features, train.logits, train.labels, N_CLASSES, hp_nng["alpha"]),
             lambda bank, s: nnguide_score(splits[s].features, splits[s].logits, bank, hp_nng["k"])),
            (lambda: pnml_fit(train.features),
             lambda st, s: pnml_score(splits[s].features, ctx.weight, ctx.bias, **st)),
            (lambda: {"mean": train.features.mean(0, dtype=np.float64)},
             lambda st, s: fdbd(splits[s].features, splits[s].logits, ctx.weight, st["mean"])),
        ]))

    import torch

    from csfbench.torch_compat import ensure_torchvision
    ensure_torchvision()
    import pytorch_ood.detector as ood

    f32 = {name: torch.from_numpy(s.features) for name, s in splits.items()}
    z64 = {name: torch.from_numpy(s.logits) for name, s in splits.items()}
    y_train = torch.from_numpy(train.labels)
    head = torch.nn.Linear(DIM, N_CLASSES)
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(ctx.weight))
        head.bias.copy_(torch.from_numpy(ctx.bias))
    # the rows nnguide_bank draws (same RandomState sequence), so both detectors search the same bank
    rng, per_class = np.random.RandomState(NNGUIDE_SEED), int(len(train) / N_CLASSES * hp_nng["alpha"])
    bank_rows = np.concatenate([rng.choice(np.flatnonzero(train.labels == c), min(per_class, int(
        (train.labels == c).sum())), replace=False) for c in range(N_CLASSES)])

    def logit(outlier):  # pytorch-ood scores outliers: negated into confidences
        return lambda: None, lambda st, s: -outlier(z64[s]).numpy()

    def fitted(fit):
        return fit, lambda det, s: -det.predict_features(f32[s]).numpy()

    return dict(zip(DETECTORS, [
        logit(lambda z: ood.MaxSoftmax(None, t=t).predict_logits(z)),
        logit(lambda z: ood.MaxLogit(None).predict_logits(z) / t),
        logit(lambda z: ood.EnergyBased(None, t=t).predict_logits(z)),
        logit(lambda z: ood.Entropy(None).predict_logits(z / t)),
        logit(lambda z: ood.GEN(None, gamma=hp_gen["gamma"], M=hp_gen["m"]).predict_logits(z / t)),
        (lambda: ood.GradNorm(head, param_filter=lambda n: n == "weight", temperature=t),
         lambda det, s: -det.predict(f32[s]).numpy()),
        fitted(lambda: ood.Mahalanobis(None).fit_features(f32["train"], y_train)),
        fitted(lambda: ood.ViM(None, d=dp, w=head.weight, b=head.bias).fit_features(f32["train"], y_train)),
        fitted(lambda: ood.NNGuide(None, head=head, k=hp_nng["k"]).fit_features(f32["train"][bank_rows],
                                                                                 y_train[bank_rows])),
        fitted(lambda: ood.PNML(None, head=head).fit_features(f32["train"], y_train)),
        fitted(lambda: ood.fDBD(None, head=head).fit_features(f32["train"])),
    ]))


#: within one process, a side's detector runs again while its runs there have taken less than this ...
CHEAP_SIDE_S = 0.2
#: ... up to this many times, so that the millisecond-scale logit scores get a stable median
MAX_RUNS_PER_PROCESS = 11
#: a detector pair whose runs (both sides, all rounds so far) have taken more than this is not run in
#: later rounds
SLOW_PAIR_S = 30.0
#: a detector's first run in each process is a warm-up, not counted (lazy library set-up,
#: first-touch page faults of the allocator's fresh memory), on both sides, in round 0 and then while
#: the pair's slower side has a median run under this; slower pairs count every run
WARM_UP_BELOW_S = 1.0


def _save_data(folder: Path, splits: dict[str, SplitData], ctx: ModelContext, temperature: float) -> None:
    for name, split in splits.items():
        for field in ("features", "logits", "labels"):
            np.save(folder / f"{name}.{field}.npy", getattr(split, field))
    np.save(folder / "head.weight.npy", ctx.weight)
    np.save(folder / "head.bias.npy", ctx.bias)
    (folder / "meta.json").write_text(json.dumps({"splits": list(splits), "temperature": temperature}))


def _load_data(folder: Path) -> tuple[dict[str, SplitData], ModelContext, float]:
    meta = json.loads((folder / "meta.json").read_text())
    splits = {}
    for name in meta["splits"]:
        features, logits, labels = (np.load(folder / f"{name}.{field}.npy")
                                    for field in ("features", "logits", "labels"))
        splits[name] = SplitData(name, "det", features, logits, logits, labels, logits.argmax(1), None)
    weight, bias = np.load(folder / "head.weight.npy"), np.load(folder / "head.bias.npy")
    return splits, ModelContext(N_CLASSES, "vgg13", "devries", weight, bias, weight, bias), meta["temperature"]


def baseline_side(side: str, folder: Path, round_: int, skip: list[str], warm_up: list[str]) -> None:
    """One round of one side, in a process of its own: every detector not in ``skip``, fit + score of the
    test and OOD sets, after an uncounted warm-up run for those in ``warm_up``, then as
    :data:`CHEAP_SIDE_S` and :data:`MAX_RUNS_PER_PROCESS` say; writes
    ``<side>.<round>.json`` (runs, memory increments) and, in round 0, each detector's confidences."""
    splits, ctx, temperature = _load_data(folder)
    scored = [name for name in splits if name not in ("train", "val")]
    peaks, report = PeakRss(), {}
    for index, (name, (fit, score)) in enumerate(baseline_detectors(side, splits, ctx, temperature).items()):
        if name in skip:
            continue
        runs, increment, warm = [], 0.0, name not in warm_up
        while not runs or sum(r[2] for r in runs) < CHEAP_SIDE_S and len(runs) < MAX_RUNS_PER_PROCESS:
            peaks.begin("run")
            t0 = time.perf_counter()
            state = fit()
            t_fit = time.perf_counter() - t0
            conf = np.concatenate([np.asarray(score(state, s), dtype=np.float64) for s in scored])
            total = time.perf_counter() - t0
            increment = max(increment, peaks.end("run")["increment_gb"])
            del state
            if not warm:
                warm = True
                continue
            runs.append((t_fit, total - t_fit, total))
        if round_ == 0:
            np.save(folder / f"{side}.{index}.npy", conf)
        report[name] = {"runs": runs, "increment_gb": increment}
    (folder / f"{side}.{round_}.json").write_text(json.dumps(report))


def run_baseline(splits: dict[str, SplitData], ctx: ModelContext, rounds: int, threads: int) -> list[dict]:
    """Both sides in alternating processes of their own (ABBA: each side first in every other round), so
    that neither runs while the other's library threads are still busy, e.g. the OpenMP threads torch
    leaves spin-waiting after each parallel operation.  Per detector and side: the median run."""
    import subprocess
    import tempfile

    from scipy.stats import spearmanr

    temperature = fit_temperature(splits["val"].logits, splits["val"].labels)
    shm, size = Path("/dev/shm"), sum(a.nbytes for s in splits.values() for a in (s.features, s.logits, s.labels))
    in_memory = shm.is_dir() and shutil.disk_usage(shm).free > 2 * size
    with tempfile.TemporaryDirectory(prefix="csf_engine_baseline_", dir=shm if in_memory else None) as tmp:
        folder = Path(tmp)
        _save_data(folder, splits, ctx, temperature)
        runs = {side: {name: [] for name in DETECTORS} for side in SIDES}
        round_medians = {side: {name: [] for name in DETECTORS} for side in SIDES}  # None: not run that round
        increments = {side: dict.fromkeys(DETECTORS, 0.0) for side in SIDES}
        skip: list[str] = []
        warm_up = list(DETECTORS)
        for round_ in range(max(1, rounds)):
            for side in SIDES if round_ % 2 == 0 else SIDES[::-1]:
                subprocess.run([sys.executable, __file__, "--baseline-side", side, "--baseline-data", str(folder),
                                "--baseline-round", str(round_), "--baseline-skip", json.dumps(skip),
                                "--baseline-warm-up", json.dumps(warm_up), "--threads", str(threads)], check=True)
                report = json.loads((folder / f"{side}.{round_}.json").read_text())
                for name in DETECTORS:
                    entry = report.get(name)
                    round_medians[side][name].append(
                        None if entry is None else float(np.median([r[2] for r in entry["runs"]])))
                    if entry is not None:
                        runs[side][name] += entry["runs"]
                        increments[side][name] = max(increments[side][name], entry["increment_gb"])
            skip = [name for name in DETECTORS
                    if sum(r[2] for side in SIDES for r in runs[side][name]) > SLOW_PAIR_S]
            warm_up = [name for name in DETECTORS
                       if max(float(np.median([r[2] for r in runs[side][name]])) for side in SIDES) < WARM_UP_BELOW_S]
        rows = []
        for index, name in enumerate(DETECTORS):
            row = {"detector": name, "repeats": {side: len(runs[side][name]) for side in SIDES}}
            for side in SIDES:
                median = sorted(runs[side][name], key=lambda r: r[2])[len(runs[side][name]) // 2]
                row[side] = {"fit_s": median[0], "score_s": median[1], "total_s": median[2],
                             "runs_s": [r[2] for r in runs[side][name]], "increment_gb": increments[side][name]}
            row["ratio"] = row["ours"]["total_s"] / row["theirs"]["total_s"]
            paired = [(o, t) for o, t in zip(*(round_medians[side][name] for side in SIDES))
                      if o is not None and t is not None]
            row["rounds"] = {"ours_no_slower": sum(o <= t for o, t in paired), "both_ran": len(paired)}
            row["spearman"] = float(spearmanr(*(np.load(folder / f"{side}.{index}.npy") for side in SIDES)).statistic)
            rows.append(row)
            print(f"  {name:22s} ours {row['ours']['total_s']:8.3f} s  pytorch-ood {row['theirs']['total_s']:8.3f} s"
                  f"  ratio {row['ratio']:6.3f}  spearman {row['spearman']:.4f}  runs {row['repeats']['ours']}"
                  f"/{row['repeats']['theirs']}  rounds ours <= theirs {row['rounds']['ours_no_slower']}"
                  f"/{row['rounds']['both_ran']}", flush=True)
    return rows


# ------------------------------------------------------------------------------------------- report
def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def targets(result: dict) -> list[tuple[str, str, str]]:
    """(target, measured, PASS/MISS/n/a) lines; time/memory targets are assessed at scale 1 with all groups."""
    eng, cfg = result.get("engine"), result["config"]
    full = cfg["scale"] == 1.0 and cfg["groups"] == ["none", "global", "class"] and not cfg.get("fit_only")
    lines = []
    if eng:
        # the engine's own peak (the data it holds included); the process peak also covers the baseline
        total, peak = eng["total_s"], eng["mem"]["peak_gb"]
        if cfg["tuning"] == "fixed":
            lines.append(("fit + score, all 83 variants, fixed hyper-parameters ≤ 5 min",
                          f"{total:.1f} s", verdict(total <= TARGET_FIXED_S if full else None)))
            lines.append(("peak memory (fixed hyper-parameters) ≤ 8 GB", f"{peak:.2f} GB",
                          verdict(peak * GB <= TARGET_PEAK if full else None)))
        else:
            default_budget = (cfg["tuning"] == "default" and cfg["init_points"] == 20 and cfg["n_iter"] == 80
                              and {k: list(v) for k, v in cfg["budgets"].items()}
                              == {k: [b["init_points"], b["n_iter"]] for k, b in DEFAULT_BUDGETS.items()})
            lines.append((f"fit + score, all 83 variants, {cfg['tuning']} tuning budget ≤ 30 min", f"{total:.1f} s",
                          verdict(total <= TARGET_DEFAULT_S if full and default_budget else None)))
            if "extrapolation" in eng:
                est = eng["extrapolation"]["total_estimated_s"]
                lines.append((f"  EXTRAPOLATED to {eng['extrapolation']['probes']} probes (not measured) ≤ 30 min",
                              f"≈ {est:.0f} s", verdict(est <= TARGET_DEFAULT_S if full else None)))
    for row in result.get("baseline", []):
        lines.append((f"{row['detector']}: ours no slower than pytorch-ood", f"ratio {row['ratio']:.3f}",
                      verdict(row["ratio"] <= 1.0)))
    return lines


def markdown(result: dict) -> str:
    cfg, out = result["config"], []
    out.append(f"# CSF engine benchmark ({cfg['date']}, {cfg['machine']})\n")
    if cfg.get("fit_only"):
        out.append("**fit only** (--fit-only): nothing was scored; score columns are empty, totals are fit times.\n")
    out.append(f"threads: {cfg.get('threads', 'default')}; load average at start / end: "
               f"{cfg['load_avg_start'][0]:.1f} / {cfg.get('load_avg_end', [float('nan')])[0]:.1f}\n")
    out.append(f"scale {cfg['scale']} — sizes {cfg['sizes']}; tuning {cfg['tuning']}"
               + (f" ({cfg['init_points']} + {cfg['n_iter']} probes; own budgets {json.dumps(cfg['budgets'])})"
                  if cfg["tuning"] != "fixed" else
                  f" (fixed: {json.dumps(cfg['fixed'])})") + f"; ID accuracy (test) {cfg['accuracy']:.3f}; "
               f"peak memory figures {'exact per phase (VmHWM reset)' if cfg['exact_peaks'] else 'process-wide upper bounds'}\n")
    eng = result.get("engine")
    if eng:
        out.append("| group | variants | fit s | of which projection + temperatures + views s | score s "
                   "(test + OOD) | of which views s | total s | peak RSS GB |")
        out.append("|---|---|---|---|---|---|---|---|")
        for g, r in eng["groups"].items():
            out.append(f"| {g} | {r['variants']} | {r['fit_s']:.1f} | {r['setup_s']:.1f} | {r['score_s']:.1f} | "
                       f"{r['score_views_s']:.1f} | {r['total_s']:.1f} | {r['peak_gb']:.2f} |")
        out.append(f"| **all** | {sum(r['variants'] for r in eng['groups'].values())} | "
                   f"{sum(r['fit_s'] for r in eng['groups'].values()):.1f} | | "
                   f"{sum(r['score_s'] for r in eng['groups'].values()):.1f} | | **{eng['total_s']:.1f}** "
                   f"(cpu {eng['total_cpu_s']:.1f}) | **{eng['mem']['peak_gb']:.2f}** |\n")
        out.append("| CSF family | variants | fit s | score s | total s | fit peak / +Δ GB | score peak / +Δ GB |")
        out.append("|---|---|---|---|---|---|---|")
        for name, f in eng["families"].items():
            out.append(f"| {name} | {len(f['variants'])} | {f['fit_s']:.2f} | {f['score_s']:.2f} | {f['total_s']:.2f} | "
                       f"{f['fit_peak_gb']:.2f} / +{f['fit_increment_gb']:.2f} | "
                       f"{f['score_peak_gb']:.2f} / +{f['score_increment_gb']:.2f} |")
        tunes = [t for r in eng["groups"].values() for t in r["tunes"]]
        if tunes:
            out.append("\n| tuned | probes | total s | objective s | BO overhead s |")
            out.append("|---|---|---|---|---|")
            for t in tunes:
                out.append(f"| {t['label']} | {t['probes']} | {t['total_s']:.1f} | {t['objective_s']:.1f} | "
                           f"{t['bo_overhead_s']:.1f} |")
        if "extrapolation" in eng:
            x = eng["extrapolation"]
            out.append(f"\n**Extrapolation (not measured)** to {x['probes']} probes per tuned quantity: "
                       f"≈ {x['total_estimated_s']:.0f} s in total (tuning measured {x['tuning_measured_s']:.0f} s → "
                       f"estimated {sum(x['tuning_estimated_s'].values()):.0f} s; BO overhead alone per tuning call, "
                       f"by number of parameters: "
                       + ", ".join(f"{d}: {v:.1f} s" for d, v in x["bo_overhead_s_by_dims"].items()) + ")")
            out.append("\n| tuned | estimated s at the target budget |")
            out.append("|---|---|")
            out.extend(f"| {k} | {v:.0f} |" for k, v in x["tuning_estimated_s"].items())
        if eng["undefined"]:
            out.append(f"\nundefined: {eng['undefined']}")
    if result.get("baseline"):
        out.append("\n| ours / pytorch-ood | ours fit + score s | pytorch-ood fit + score s | ratio | Spearman "
                   "| runs | rounds with ours' median <= theirs |")
        out.append("|---|---|---|---|---|---|---|")
        for row in result["baseline"]:
            o, t = row["ours"], row["theirs"]
            out.append(f"| {row['detector']} | {o['fit_s']:.3f} + {o['score_s']:.3f} | {t['fit_s']:.3f} + "
                       f"{t['score_s']:.3f} | {row['ratio']:.3f} | {row['spearman']:.4f} | "
                       f"{row['repeats']['ours']} / {row['repeats']['theirs']} | "
                       f"{row['rounds']['ours_no_slower']} / {row['rounds']['both_ran']} |")
    out.append("\n| target | measured | verdict |")
    out.append("|---|---|---|")
    out.extend(f"| {a} | {b} | {c} |" for a, b, c in targets(result))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the paper sizes for every split")
    parser.add_argument("--tuning", choices=["fixed", "default", "paper"], default="fixed",
                        help="fixed values; the package's default budgets; one budget for everything")
    parser.add_argument("--init-points", type=int, default=20, help="default tuning: random probes")
    parser.add_argument("--n-iter", type=int, default=80, help="default tuning: guided probes")
    parser.add_argument("--target-init-points", type=int, default=20,
                        help="default tuning with a smaller budget: extrapolate to this many random probes")
    parser.add_argument("--target-n-iter", type=int, default=80, help="... and this many guided probes")
    parser.add_argument("--n-landmarks", type=int, default=2000, help="fixed tuning: KPCA landmarks")
    parser.add_argument("--groups", default="none,global,class", help="comma-separated fit groups")
    parser.add_argument("--repeats", type=int, default=6,
                        help="baseline: rounds of alternating processes per side (median of all runs; an even "
                             "number puts each side first equally often); a detector pair is left out of later "
                             "rounds once it has taken 30 s")
    parser.add_argument("--no-engine", action="store_true", help="skip the engine part")
    parser.add_argument("--fit-only", action="store_true",
                        help="engine: fit only, score nothing (for tuning runs; scoring does not depend on the budget)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the pytorch-ood comparison")
    parser.add_argument("--threads", type=int, default=0,
                        help="BLAS (threadpoolctl) and torch threads; 0 = the libraries' defaults (all cores)")
    parser.add_argument("--seed", type=int, default=0, help="data seed")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "csf_engine"),
                        help="output prefix: <out>.json and <out>.md")
    # the baseline's worker processes (run_baseline)
    parser.add_argument("--baseline-side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--baseline-data", help=argparse.SUPPRESS)
    parser.add_argument("--baseline-round", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--baseline-skip", default="[]", help=argparse.SUPPRESS)
    parser.add_argument("--baseline-warm-up", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.threads:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=args.threads)
    if args.baseline_side:
        if args.threads and args.baseline_side == "theirs":
            import torch
            torch.set_num_threads(args.threads)
        baseline_side(args.baseline_side, Path(args.baseline_data), args.baseline_round,
                      json.loads(args.baseline_skip), json.loads(args.baseline_warm_up))
        return 0
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    unknown = set(groups) - set(GROUP_VARIANTS)
    if unknown:
        parser.error(f"unknown fit groups {sorted(unknown)}")

    peaks = PeakRss()
    peaks.begin("process")
    t0 = time.perf_counter()
    splits, ctx = make_data(args.scale, args.seed)
    fixed = json.loads(json.dumps(FIXED))
    fixed["KPCA RecError"]["n_landmarks"] = args.n_landmarks
    tuning = {"fixed": TuningSettings(20, 80, 1, fixed, {}),
              "default": TuningSettings(args.init_points, args.n_iter, 1,
                                        budgets={k: (b["init_points"], b["n_iter"]) for k, b in DEFAULT_BUDGETS.items()}),
              "paper": TuningSettings(args.init_points, args.n_iter, 1, budgets={})}[args.tuning]
    test = splits["test"]
    config = {"date": datetime.date.today().isoformat(),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
                         f"{platform.python_version()}, numpy {np.__version__}",
              "scale": args.scale, "sizes": {k: len(v) for k, v in splits.items()}, "tuning": args.tuning,
              "init_points": tuning.init_points, "n_iter": tuning.n_iter, "budgets": tuning.budgets,
              "fixed": tuning.fixed, "groups": groups,
              "fit_only": args.fit_only, "threads": args.threads or "default",
              "accuracy": float(test.correct.mean()), "exact_peaks": peaks.exact,
              "load_avg_start": os.getloadavg(), "data_s": time.perf_counter() - t0}
    print(f"data: {config['sizes']} in {config['data_s']:.1f} s, test accuracy {config['accuracy']:.3f}, "
          f"tuning {args.tuning}", flush=True)
    result = {"config": config}
    if not args.no_engine:
        print("engine (fit on train + val, score on test + OOD sets):", flush=True)
        result["engine"] = run_engine(splits, ctx, tuning, groups, peaks, args.fit_only)
        eng = result["engine"]
        print(f"  total  {eng['total_s']:8.1f} s  (cpu {eng['total_cpu_s']:.1f} s, peak {eng['mem']['peak_gb']:.2f} GB)")
        print("  slowest CSF families (fit + score s): " + ", ".join(
            f"{k} {v['total_s']:.1f}" for k, v in list(eng["families"].items())[:6]), flush=True)
        budget = (args.target_init_points, args.target_n_iter)
        probes = [t["probes"] for g in eng["groups"].values() for t in g["tunes"]]
        if args.tuning != "fixed" and any(n < sum(budget) for n in probes):
            eng["extrapolation"] = extrapolate(eng, *budget)
            print(f"  EXTRAPOLATION to {sum(budget)} probes per tuned quantity: "
                  f"{eng['extrapolation']['total_estimated_s']:.0f} s (BO overhead alone, by number of parameters: "
                  + ", ".join(f"{d}: {v:.1f} s" for d, v in eng["extrapolation"]["bo_overhead_s_by_dims"].items())
                  + ")", flush=True)
    if not args.no_baseline:
        print("baseline (fit on train, score test + OOD sets; median of runs in alternating processes):", flush=True)
        result["baseline"] = run_baseline(splits, ctx, args.repeats, args.threads)
    config["load_avg_end"] = os.getloadavg()
    result["peak_gb"] = peaks.end("process")["peak_gb"]
    for a, b, c in targets(result):
        print(f"{c:4s}  {a}: {b}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path, md_path = Path(f"{out}.json"), Path(f"{out}.md")
    json_path.write_text(json.dumps(result, indent=2, default=str) + "\n")
    md_path.write_text(markdown(result))
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
