"""Deep-ensemble scoring from the stored files: an ensemble of 5 members against one member's scoring job.

    .venv/bin/python benchmarks/ensemble_scoring.py [--scale 1.0] [--members 5] [--rounds 2] [--threads 0]
                                                    [--workdir DIR] [--keep] [--no-profile]
                                                    [--out benchmarks/out/ensemble_scoring]

Data: the CSF-engine benchmark's synthetic VGG-13-like outputs at paper scale (``csf_engine.make_data``: 50,000
train × 512 ReLU features, 100 classes, 5,000 validation, 9,000 ID test and 8 OOD sets of 10,000), drawn once.
Member m (runs 1..M, no MC dropout) sees the same samples — the same labels and sample ids in the same order —
through its own deterministic perturbation (seeded by the data seed and m): its features are the shared ones plus
Gaussian noise (``--feature-noise`` × their standard deviation, then ReLU), its head the shared nearest-class-mean
head with noise on the weights and biases (``--head-noise`` relative), and its logits, predictions and DeVries-like
confidence follow from them.  Each member's feature files (train with the head, val, test, ood_1..ood_8; gzip, as
the workflow writes them, :class:`csfbench.features.store.FeatureWriter`) go under a temporary folder, and each
member is fit (``fit_csf``, fit group ``none``, every tunable hyper-parameter fixed: the values of
``feature_float16.fixed_parameters``, so nothing is tuned — the run checks that no search was started) and scored
(``score_csf``, group ``none``, the 10 evaluation sets).

Measured, each job in a fresh process of its own (``multiprocessing`` spawn; the imports are done before the
clock starts and the kernel's RSS high-water mark VmHWM is reset through ``/proc/self/clear_refs``, so the peak is
that job's, absolute — the imported libraries included — and as an increment over the RSS at its start):

* ``member`` (the baseline) — one member's scoring job, ``csfbench.stages.csf.score_csf`` of member 1, group
  ``none``: its fit file and 10 feature files read, every CSF variant of the group scored, metric rows, scores and
  metrics files written;
* ``ensemble`` — ``csfbench.stages.ensembles.score_ensemble(..., scorer="ensemble")``: the ensemble's own 7 CSFs
  from the members' logits (M × 10 feature files read: logits, labels and sample ids);
* ``member mean`` — ``score_ensemble(..., scorer="none")``: the mean of the M members' group-``none`` CSF scores
  (M score files, M metric files for the tuning protocols and the M × 10 feature files' logits read).

Rounds alternate the order of the three jobs (ABC, CBA, …); reported: every round, the median, and each ensemble
job's ratio to the member job (wall time, CPU time, peak RSS, RSS increment).  Unless ``--no-profile``, one extra
run of each job under cProfile (not timed with the rounds) splits its time into reading the stored files, scoring,
metric rows and writing.  Metrics: ``csfbench.metrics.DEFAULT_METRICS``; no bootstrap.  No target (the issue asks
for the ratio); the question is whether an ensemble scored from stored files costs less than one member's scoring
job.  The temporary folder is removed at the end unless ``--keep``.  Results go to ``<out>.json`` and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # as the Snakefile sets for every job (see csf_engine.py)
sys.path.insert(0, str(Path(__file__).resolve().parent))  # csf_engine & co. in the spawned job processes too

import numpy as np
from bench_memory import proc_status, reset_peak
from csf_engine import N_CLASSES, N_OOD_SETS, make_data
from feature_float16 import fixed_parameters

from csfbench.specs import DatasetSpec, EnsembleSpec, EvalSet, ModelSpec

GB = 1e9
JOBS = ("member", "ensemble", "member mean")
SOURCE, BACKBONE, PARADIGM = "syn", "vgg13", "devries"
#: the profile's split of a job's time: (label, module path suffix, function); cumulative times, not nested
PHASES = {
    "member": [("read fit file", "csfbench/csf/store.py", "read_fit"),
               ("read feature files", "csfbench/csf/inputs.py", "load_splits"),
               ("CSF scores", "csfbench/csf/engine.py", "score_mode"),
               ("metric rows", "csfbench/evaluation.py", "metric_rows"),
               ("write scores file", "csfbench/csf/store.py", "write_scores")],
    "ensemble": [("read member metric files", "csfbench/evaluation.py", "tuning_protocols"),
                 ("read feature files (logits)", "csfbench/ensembles/members.py", "read_member"),
                 ("read member score files", "csfbench/stages/ensembles.py", "_member_scores"),
                 ("check samples", "csfbench/ensembles/members.py", "check_same_samples"),
                 ("stack, mean, prediction", "csfbench/ensembles/members.py", "stacked"),
                 ("stack, mean, prediction", "csfbench/ensembles/scores.py", "ensemble_prediction"),
                 ("ensemble CSFs / member mean", "csfbench/ensembles/scores.py", "ensemble_confidences"),
                 ("ensemble CSFs / member mean", "csfbench/ensembles/scores.py", "member_average"),
                 ("metric rows", "csfbench/evaluation.py", "metric_rows"),
                 ("write scores file", "csfbench/csf/store.py", "write_scores")],
}
#: inside the phases above: HDF5 dataset reads (h5py), the metric rows' metric evaluations
DETAIL = [("of which h5py dataset reads", "h5py/_hl/dataset.py", "__getitem__"),
          ("of which metric evaluations", "csfbench/metrics/schemes.py", "evaluate")]


# ------------------------------------------------------------------------------------------------- specs
def member_spec(run: int, scale: float) -> ModelSpec:
    return ModelSpec(source=SOURCE, model=f"{BACKBONE}_{PARADIGM}_do0_rew0_run{run}", backbone=BACKBONE,
                     paradigm=PARADIGM, dropout=0, reward=0.0, run=run, seed=run, n_classes=N_CLASSES,
                     image_size=32, normalize={"mean": [0.5] * 3, "std": [0.25] * 3}, arch={}, mcd_samples=0,
                     optim={}, paradigm_params={}, dataset=DatasetSpec(SOURCE, "npy", "unused"),
                     val_size=max(int(round(5000 * scale)), 10))


def ensemble_spec(members: list[ModelSpec]) -> EnsembleSpec:
    runs = "-".join(str(m.run) for m in members)
    return EnsembleSpec(SOURCE, f"{BACKBONE}_{PARADIGM}_do0_rew0_ens{runs}", BACKBONE, PARADIGM, 0, 0.0,
                        tuple(members))


def eval_sets() -> list[EvalSet]:
    """val, test and ood_1..ood_8 (semantic; the first 4 near, the rest far, as ``make_data`` draws them)."""
    return ([EvalSet("val", "id", "val"), EvalSet("test", "id", "test")]
            + [EvalSet(f"ood_{i}", "semantic", "near" if i <= 4 else "far", DatasetSpec(f"ood_{i}", "npy", "unused"))
               for i in range(1, N_OOD_SETS + 1)])


def csf_config() -> dict:
    """The cut ``csf`` section of a member's fit: the schema's defaults, every tunable parameter fixed."""
    from csfbench.workflow.settings import schema_default
    return {"methods": None, "quirks": "strict", "temperatures": schema_default("csf/temperatures"),
            "tuning": {"init_points": 20, "n_iter": 80, "seed": 1, "budgets": schema_default("csf/tuning/budgets"),
                       "protocols": ["bayes"], "grids": {}, "ood_validation": None,
                       "max_neighbour_fraction": schema_default("csf/tuning/max_neighbour_fraction")},
            "fixed": fixed_parameters(), "search_space": {}}


# -------------------------------------------------------------------------------------------------- data
def write_members(root: Path, members: list[ModelSpec], scale: float, seed: int, feature_noise: float,
                  head_noise: float) -> dict:
    """Every member's feature files {member model: {split: path}}; the members' test accuracies."""
    from csfbench.features.store import FeatureWriter, run_attrs

    splits, ctx = make_data(scale, seed)
    weight, bias = np.asarray(ctx.weight, np.float64), np.asarray(ctx.bias, np.float64)
    feature_sd = float(np.std(splits["train"].features))
    ids = {name: np.array([f"{name}-{i:06d}" for i in range(len(s.labels))], dtype=object)
           for name, s in splits.items()}
    files, accuracy = {}, {}
    for spec in members:
        rng = np.random.default_rng([seed, spec.run])
        w = weight * (1.0 + head_noise * rng.normal(size=weight.shape))
        b = bias + head_noise * np.abs(bias) * rng.normal(size=bias.shape)
        files[spec.model] = {}
        for name, split in splits.items():
            h = np.maximum(split.features + feature_noise * feature_sd
                           * rng.normal(size=split.features.shape).astype(np.float32), 0.0).astype(np.float32)
            logits = (h.astype(np.float64) @ w.T + b).astype(np.float32)
            top2 = np.sort(logits, axis=1)[:, -2:].astype(np.float64)
            confidence = (1.0 / (1.0 + np.exp(-(top2[:, 1] - top2[:, 0] - 1.0)))).astype(np.float32)
            pred = logits.argmax(1).astype(np.int64)
            labels = split.labels.astype(np.int64)
            if name == "test":
                accuracy[spec.model] = float((pred == labels).mean())
            attrs = {**run_attrs(spec), "backbone": spec.backbone, "paradigm": spec.paradigm,
                     "dropout": spec.dropout, "reward": spec.reward, "run": spec.run, "dataset": name,
                     "split": name if name in ("train", "val", "test") else "test", "n_classes": N_CLASSES,
                     "feature_dim": h.shape[1], "image_size": spec.image_size, "package_version": "0",
                     "git_commit": "benchmark", "created": "benchmark", "mcd_samples": 0,
                     "shift_type": "id" if name in ("train", "val", "test") else "semantic"}
            path = root / spec.model / f"{name}.h5"
            path.parent.mkdir(parents=True, exist_ok=True)
            with FeatureWriter(path, len(labels), N_CLASSES, h.shape[1], 0, True, attrs, "gzip") as writer:
                writer.write_batch({"logits": logits, "features": h, "labels": labels, "pred": pred,
                                    "correct": pred == labels, "sample_id": ids[name], "confidence": confidence})
                if name == "train":
                    writer.write_head(w.astype(np.float32), b.astype(np.float32))
            files[spec.model][name] = str(path)
        print(f"  {spec.model}: feature files written, test accuracy {accuracy[spec.model]:.3f}", flush=True)
    return files, accuracy


# ------------------------------------------------------------------------------------- jobs (own process)
def _job(job: dict) -> dict:
    """Run one job in this (fresh) process: the imports first, then the clock and the reset RSS peak."""
    logging.basicConfig(level=logging.WARNING)
    if job.get("threads"):
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=job["threads"])
    from unittest import mock

    import csfbench.csf.fit_settings as fit_settings
    from csfbench.csf.fit_settings import FitSettings
    from csfbench.evaluation import Bootstrap
    from csfbench.metrics import DEFAULT_METRICS
    from csfbench.stages.csf import fit_csf, score_csf
    from csfbench.stages.ensembles import score_ensemble

    kind, a = job["kind"], job["args"]
    if kind == "fit":
        settings = FitSettings.from_config(job["csf_cfg"])
        run = lambda: fit_csf(a["spec"], settings, "none", a["train"], a["val"], a["out"])  # noqa: E731
    elif kind == "member":
        run = lambda: score_csf(a["spec"], a["sets"], a["fit"], a["features"], a["scores"],  # noqa: E731
                                a["metrics"], DEFAULT_METRICS, Bootstrap())
    else:
        run = lambda: score_ensemble(a["spec"], a["sets"], a["scorer"], a["features"],  # noqa: E731
                                     a["member_scores"], a["member_metrics"], a["scores"], a["metrics"],
                                     DEFAULT_METRICS, Bootstrap())
    searches = {"n": 0}
    real_tune = fit_settings.tune

    def counted_tune(*args, **kwargs):
        searches["n"] += 1
        return real_tune(*args, **kwargs)

    exact = reset_peak()
    rss0 = proc_status("VmRSS:")
    profile = None
    with mock.patch.object(fit_settings, "tune", counted_tune):
        t0, c0 = time.perf_counter(), time.process_time()
        if job.get("profile"):
            import cProfile
            profile = cProfile.Profile()
            profile.runcall(run)
        else:
            run()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = proc_status("VmHWM:")
    out = {"wall_s": wall, "cpu_s": cpu, "peak_gb": peak / GB, "start_rss_gb": rss0 / GB,
           "increment_gb": (peak - rss0) / GB, "exact_peak": exact, "searches": searches["n"]}
    if profile is not None:
        out["profile"] = profile_split(profile, job["phases"], wall)
    return out


def profile_split(profile, phases: list[tuple[str, str, str]], wall: float) -> dict:
    """{label: cumulative s} of the phases (summed per label), the rest, and the 15 costliest functions."""
    import pstats
    stats = pstats.Stats(profile).stats
    total = max((ct for (_, _, name), (_, _, _, ct, _) in stats.items() if name == "<lambda>"), default=wall)

    def cumulative(suffix: str, func: str) -> float:
        return sum(ct for (path, _, name), (_, _, _, ct, _) in stats.items()
                   if name == func and path.replace("\\", "/").endswith(suffix))

    split: dict[str, float] = {}
    for label, suffix, func in phases:
        split[label] = split.get(label, 0.0) + cumulative(suffix, func)
    split["other (parquet, loops, ...)"] = total - sum(split.values())
    detail = {label: cumulative(suffix, func) for label, suffix, func in DETAIL}
    top = sorted(((ct, tt, f"{Path(path).name}:{line}({name})")
                  for (path, line, name), (_, _, tt, ct, _) in stats.items()), reverse=True)
    own = sorted(((tt, f"{Path(path).name}:{line}({name})") for (path, line, name), (_, _, tt, _, _) in stats.items()),
                 reverse=True)
    return {"profiled_s": total, "split_s": split, "detail_s": detail,
            "top_cumulative": [{"function": f, "cumulative_s": ct, "own_s": tt} for ct, tt, f in top[:15]],
            "top_own": [{"function": f, "own_s": tt} for tt, f in own[:15]]}


def in_fresh_process(job: dict) -> dict:
    """``_job(job)`` in a new spawned interpreter (one task, then it exits), so its RSS peak is the job's own."""
    with mp.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        return pool.apply(_job, (job,))


# ------------------------------------------------------------------------------------------------ report
def median_of(runs: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in runs) for key in ("wall_s", "cpu_s", "peak_gb", "increment_gb")}


def markdown(report: dict) -> str:
    cfg = report["config"]
    lines = [f"# Ensemble scoring from stored files ({cfg['date']}, {cfg['cpus']} CPUs, threads {cfg['threads']}, "
             f"scale {cfg['scale']}, {cfg['members']} members, {cfg['rounds']} rounds)", "",
             f"sizes {cfg['sizes']}; member test accuracies {cfg['member_accuracy']}, ensemble "
             f"{cfg['ensemble_accuracy']:.3f}; load average start / end {cfg['load_avg_start'][0]:.1f} / "
             f"{cfg['load_avg_end'][0]:.1f}; peaks "
             f"{'exact per job (VmHWM reset)' if cfg['exact_peaks'] else 'process-wide'}",
             "", "| job | round | wall s | CPU s | peak RSS GB | RSS increment GB |", "|---|---|---|---|---|---|"]
    for job in JOBS:
        for i, r in enumerate(report["rounds"][job]):
            lines.append(f"| {job} | {i} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_gb']:.3f} | "
                         f"{r['increment_gb']:.3f} |")
        m = report["median"][job]
        lines.append(f"| **{job}** | median | **{m['wall_s']:.2f}** | **{m['cpu_s']:.2f}** | **{m['peak_gb']:.3f}** | "
                     f"**{m['increment_gb']:.3f}** |")
    lines += ["", "| ratio to the member job (medians) | wall | CPU | peak RSS | RSS increment | per round (wall) |",
              "|---|---|---|---|---|---|"]
    for job in JOBS[1:]:
        r = report["ratio"][job]
        lines.append(f"| {job} | **{r['wall_s']:.3f}** | {r['cpu_s']:.3f} | {r['peak_gb']:.3f} | "
                     f"{r['increment_gb']:.3f} | {', '.join(f'{x:.3f}' for x in r['rounds_wall'])} |")
    lines += ["", "| job | metric rows | CSF variants |", "|---|---|---|"]
    lines += [f"| {job} | {report['outputs'][job]['rows']:,} | {report['outputs'][job]['variants']} |" for job in JOBS]
    if report.get("profile"):
        lines += ["", "cProfile split (one extra run each, profiled seconds; profiling slows Python-heavy parts):", "",
                  "| job | phase | s | share |", "|---|---|---|---|"]
        for job, p in report["profile"].items():
            for label, s in list(p["split_s"].items()) + list(p["detail_s"].items()):
                lines.append(f"| {job} | {label} | {s:.2f} | {s / p['profiled_s']:.1%} |")
            lines.append(f"| {job} | **total** | **{p['profiled_s']:.2f}** | |")
    lines += ["", "Preparation (not part of the comparison): "
              + ", ".join(f"{k} {v:.1f} s" for k, v in report["preparation_s"].items())
              + f"; the members' fits started {report['fit_searches']} hyper-parameter searches."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the paper sizes for every split")
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="data seed")
    parser.add_argument("--feature-noise", type=float, default=0.1,
                        help="a member's feature noise, relative to the features' standard deviation")
    parser.add_argument("--head-noise", type=float, default=0.05, help="a member's relative head noise")
    parser.add_argument("--threads", type=int, default=0, help="BLAS threads of every job (0: the libraries' default)")
    parser.add_argument("--workdir", help="folder for the members' files (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the members' files")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile runs")
    parser.add_argument("--out", default="benchmarks/out/ensemble_scoring", help="output prefix")
    args = parser.parse_args(argv)

    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="csfbench_ensemble_"))
    root.mkdir(parents=True, exist_ok=True)
    members = [member_spec(run, args.scale) for run in range(1, args.members + 1)]
    ens, sets = ensemble_spec(members), eval_sets()
    names = [s.name for s in sets]
    load_start = os.getloadavg()
    prep, cfg = {}, csf_config()
    try:
        print(f"members' files under {root}", flush=True)
        t0 = time.perf_counter()
        files, accuracy = write_members(root, members, args.scale, args.seed, args.feature_noise, args.head_noise)
        prep["data + feature files"] = time.perf_counter() - t0
        fits, member_out, member_runs, searches = {}, {}, [], 0
        t0 = time.perf_counter()
        for spec in members:
            fits[spec.model] = str(root / spec.model / "fit_none.h5")
            r = in_fresh_process({"kind": "fit", "threads": args.threads, "csf_cfg": cfg,
                                  "args": {"spec": spec, "train": files[spec.model]["train"],
                                           "val": files[spec.model]["val"], "out": fits[spec.model]}})
            searches += r["searches"]
            print(f"  fit {spec.model}: {r['wall_s']:.1f} s, peak {r['peak_gb']:.2f} GB, {r['searches']} searches",
                  flush=True)
        prep["5 fits"] = time.perf_counter() - t0
        t0 = time.perf_counter()

        def member_job(spec, tag):
            return {"kind": "member", "threads": args.threads, "phases": PHASES["member"],
                    "args": {"spec": spec, "sets": sets, "fit": fits[spec.model],
                             "features": {n: files[spec.model][n] for n in names},
                             "scores": str(root / spec.model / f"scores_none{tag}.h5"),
                             "metrics": str(root / spec.model / f"metrics_none{tag}.parquet")}}

        for spec in members:  # the member mean's inputs
            r = in_fresh_process(member_job(spec, ""))
            member_out[spec.model] = (r, member_job(spec, "")["args"])
            member_runs.append(r)
            print(f"  score {spec.model}: {r['wall_s']:.1f} s, peak {r['peak_gb']:.2f} GB", flush=True)
        prep[f"{len(members)} member scoring jobs"] = time.perf_counter() - t0

        def ensemble_job(scorer, tag):
            none = scorer != "ensemble"
            return {"kind": "ensemble", "threads": args.threads, "phases": PHASES["ensemble"],
                    "args": {"spec": ens, "sets": sets, "scorer": scorer,
                             "features": {m.model: {n: files[m.model][n] for n in names} for m in members},
                             "member_scores": ({m.model: member_out[m.model][1]["scores"] for m in members}
                                               if none else {}),
                             "member_metrics": [member_out[m.model][1]["metrics"] for m in members] if none else [],
                             "scores": str(root / f"ensemble_{scorer}{tag}.h5"),
                             "metrics": str(root / f"ensemble_{scorer}{tag}.parquet")}}

        jobs = {"member": lambda tag: member_job(members[0], tag),
                "ensemble": lambda tag: ensemble_job("ensemble", tag),
                "member mean": lambda tag: ensemble_job("none", tag)}
        rounds: dict[str, list[dict]] = {job: [] for job in JOBS}
        for i in range(args.rounds):
            for job in (JOBS if i % 2 == 0 else JOBS[::-1]):
                r = in_fresh_process(jobs[job](f"_round{i}"))
                rounds[job].append(r)
                print(f"round {i} {job:12s}: {r['wall_s']:7.2f} s wall, {r['cpu_s']:7.2f} s CPU, peak "
                      f"{r['peak_gb']:.3f} GB (+{r['increment_gb']:.3f})", flush=True)
        profile = {}
        if not args.no_profile:
            for job in JOBS:
                spec = dict(jobs[job]("_profile"), profile=True)
                profile[job] = in_fresh_process(spec)["profile"]
                print(f"profile {job}: " + ", ".join(f"{k} {v:.1f} s" for k, v in profile[job]["split_s"].items()),
                      flush=True)
        import pandas as pd
        outputs = {}
        for job in JOBS:
            rows = pd.read_parquet(jobs[job]("_round0")["args"]["metrics"], columns=["csf", "variant", "mcd"])
            outputs[job] = {"rows": len(rows), "variants": len(rows.drop_duplicates())}
        from csfbench.csf.store import read_scores
        ens_acc = float(read_scores(jobs["ensemble"]("_round0")["args"]["scores"], "test")[0]["det"]["correct"].mean())
        median = {job: median_of(rounds[job]) for job in JOBS}
        ratio = {job: {**{k: median[job][k] / median["member"][k] for k in median[job]},
                       "rounds_wall": [a["wall_s"] / b["wall_s"] for a, b in zip(rounds[job], rounds["member"])]}
                 for job in JOBS[1:]}
        sizes = {}
        import h5py
        for name in ["train"] + names:
            with h5py.File(files[members[0].model][name], "r") as fh:
                sizes[name] = int(fh["labels"].shape[0])
        report = {"config": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                             "host": platform.node(), "cpus": os.cpu_count(),
                             "machine": f"{platform.machine()}, Python {platform.python_version()}, "
                                        f"numpy {np.__version__}",
                             "threads": args.threads or "default", "scale": args.scale, "members": args.members,
                             "rounds": args.rounds, "seed": args.seed, "feature_noise": args.feature_noise,
                             "head_noise": args.head_noise, "sizes": sizes, "fixed": cfg["fixed"],
                             "member_accuracy": {k: round(v, 3) for k, v in accuracy.items()},
                             "ensemble_accuracy": ens_acc,
                             "exact_peaks": all(r["exact_peak"] for runs in rounds.values() for r in runs),
                             "load_avg_start": load_start, "load_avg_end": os.getloadavg()},
                  "preparation_s": prep, "fit_searches": searches, "member_input_runs": member_runs,
                  "rounds": rounds, "median": median, "ratio": ratio, "outputs": outputs, "profile": profile}
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
            print(f"removed {root}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    text = markdown(report)
    Path(f"{out}.md").write_text(text)
    print(text)
    print(f"wrote {out}.json and {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
