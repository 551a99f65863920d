"""Post-hoc methods from stored outputs at paper scale, in one run: fit + score of every new method
together, KNN against faiss-cpu's exact ``IndexFlatL2``, and each method pytorch-ood 0.4.0 also has
against pytorch-ood's detector on the same features.

    .venv/bin/python benchmarks/posthoc_methods.py [--scale 1.0] [--rounds 2] [--threads 0]
                                                   [--methods KNN,KLM] [--references "faiss IndexFlatL2"]
                                                   [--out benchmarks/out/posthoc_methods]

Data: the CSF-engine benchmark's synthetic VGG-13-like outputs (``csf_engine.make_data``): 50,000
training rows × 512 float32 features, 100 classes, float64 logits of a nearest-class-mean head; the
scored rows are the ID test set (9,000) and 8 OOD sets of 10,000 (89,000 rows).  Every method is
fitted on the training split and scores the 9 evaluated splits one at a time, with the fixed
hyper-parameters of :data:`FIXED` (inside ICONIC-444's Table 7 grids).

Sides, each in processes of its own (data through ``/dev/shm``), alternating in ABBA order over
``--rounds`` (so neither runs while the other library's threads still spin):

* ``ours`` — every method of :data:`METHODS`, each once in sequence: the wall time of that pass and
  the process's resident-set peak (VmHWM) are the "all together" figures.  A method whose run took
  under 1 s then runs again, uncounted first, until its counted runs have taken 0.2 s (at most 11),
  for its own per-method figure (median run);
* ``reference`` — faiss ``IndexFlatL2`` for KNN (on the same unit float32 rows, ``−sqrt`` of its
  squared distance) and pytorch-ood's detectors (:data:`REFERENCES`), timed the same way.

Per method and side: the median over rounds of the per-process median; ratio = ours / reference
(≤ 1: ours no slower); Spearman between the two sides' confidences of round 0 (OpenMax is compared
under the ``"unknown"`` rule, the one pytorch-ood implements; both rules cost the same).  ``--threads``
pins BLAS (threadpoolctl), torch and faiss to N threads; 0 keeps the libraries' defaults (all cores).

BLAS kernels: faiss-cpu 1.15.1 bundles its own OpenBLAS (0.3.15), which does not recognise newer CPUs
(a Sapphire Rapids Xeon among them) and falls back to its SSE3 ``Prescott`` kernels, 6× slower for
``IndexFlatL2``'s product on such a host.  So that faiss is not handicapped, the reference side's
processes get ``OPENBLAS_CORETYPE`` set to the kernel the newest OpenBLAS loaded with numpy and scipy
detected (unless it is set already; ours use numpy's OpenBLAS, which detects the CPU itself), and the
report names the kernel each BLAS library in each side's process runs (threadpoolctl).
Targets (reported, not asserted): all methods together ≤ 90 s and ≤ 8 GB; KNN no slower than faiss;
every method no slower than pytorch-ood's.  Results go to ``<out>.json`` and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# as the Snakefile sets for every job, before numpy loads OpenBLAS (see csf_engine.py)
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np
from csf_engine import GB, PeakRss, _load_data, _save_data, make_data

from csfbench.csf.class_templates import klm_fit, klm_score, rmds_fit, rmds_score, she_fit, she_score
from csfbench.csf.distance_scores import max_cosine
from csfbench.csf.feature_shaping import ash_score, dice_fit, dice_score, react_fit, react_score, scale_score
from csfbench.csf.knn import knn_fit, knn_score
from csfbench.csf.logit_methods import odin
from csfbench.csf.logit_scores import energy, gen, max_softmax, softmax
from csfbench.csf.openmax import openmax_fit, openmax_score

#: fixed hyper-parameters, each in ICONIC-444's Table 7 grid (percentiles in percent)
FIXED = {"ODIN": {"temperature": 1000}, "GEN": {"m": 10, "gamma": 0.1}, "KNN": {"k": 50},
         "ReAct": {"percentile": 90}, "ASH": {"percentile": 90}, "SCALE": {"percentile": 85},
         "DICE": {"percentile": 70}}
#: every method, and the reference implementations it is compared with
REFERENCES = {"MSP": ["pytorch-ood MaxSoftmax"], "EBO": ["pytorch-ood EnergyBased"], "ODIN": ["pytorch-ood ODIN"],
              "GEN": ["pytorch-ood GEN"], "KLM": ["pytorch-ood KLMatching"], "OpenMax": ["pytorch-ood OpenMax"],
              "KNN": ["faiss IndexFlatL2", "pytorch-ood KNN"], "ReAct": ["pytorch-ood ReAct"],
              "ASH-S": ["pytorch-ood ASH"], "ASH-B": ["pytorch-ood ASH"], "ASH-P": ["pytorch-ood ASH"],
              "SCALE": ["pytorch-ood SCALE"], "DICE": ["pytorch-ood DICE"], "RMDS": ["pytorch-ood RMD"],
              "SHE": ["pytorch-ood SHE"], "MaxCosine": []}
METHODS = tuple(REFERENCES)
REFERENCE_NAMES = tuple(dict.fromkeys(ref for refs in REFERENCES.values() for ref in refs))
SIDES = ("ours", "reference")
TARGET_S, TARGET_PEAK = 90.0, 8 * GB
#: a run under this is repeated for its per-method figure (an uncounted warm-up first) ...
CHEAP_S = 1.0
#: ... until the counted runs have taken this long, at most MAX_RUNS times
CHEAP_TOTAL_S, MAX_RUNS = 0.2, 11


def pair_key(method: str, reference: str) -> str:
    return f"{method} / {reference}"


def conf_file(folder: Path, side: str, name: str) -> Path:
    """Where a side's round-0 confidences of detector ``name`` are kept."""
    return folder / f"{side}.{''.join(c if c.isalnum() else '_' for c in name)}.npy"


def ours(splits: dict, ctx) -> dict[str, tuple]:
    """Our methods, by name: (fit() -> state, score(state, split name) -> confidence)."""
    train, w, b = splits["train"], ctx.weight, ctx.bias
    ash, hp = FIXED["ASH"]["percentile"], FIXED

    def logit(score):
        return lambda: None, lambda state, s: score(splits[s].logits)

    def feature(fit, score):
        return fit, lambda state, s: score(state, splits[s])

    return {
        "MSP": logit(max_softmax),
        "EBO": logit(energy),
        "ODIN": logit(lambda z: odin(z, hp["ODIN"]["temperature"])),
        "GEN": logit(lambda z: gen(softmax(z), hp["GEN"]["m"], hp["GEN"]["gamma"])),
        "KLM": feature(lambda: klm_fit(train.logits), lambda st, s: klm_score(st, s.logits)),
        "OpenMax": feature(lambda: openmax_fit(train.logits, train.labels),
                           lambda st, s: openmax_score(st, s.logits, rule="unknown")),
        "KNN": feature(lambda: knn_fit(train.features), lambda st, s: knn_score(st, s.features, hp["KNN"]["k"])),
        "ReAct": feature(lambda: react_fit(train.features, hp["ReAct"]["percentile"]),
                         lambda st, s: react_score(st, s.features, w, b)),
        **{f"ASH-{v.upper()}": feature(lambda: None, lambda st, s, v=v: ash_score(s.features, w, b, ash, v))
           for v in ("s", "b", "p")},
        "SCALE": feature(lambda: None, lambda st, s: scale_score(s.features, w, b, hp["SCALE"]["percentile"])),
        "DICE": feature(lambda: dice_fit(train.features, w, hp["DICE"]["percentile"]),
                        lambda st, s: dice_score(st, s.features, b)),
        "RMDS": feature(lambda: rmds_fit(train.features, train.labels, ctx.n_classes),
                        lambda st, s: rmds_score(st, s.features)),
        "SHE": feature(lambda: she_fit(train.features, train.logits, train.labels),
                       lambda st, s: she_score(st, s.features, s.logits)),
        "MaxCosine": feature(lambda: None, lambda st, s: max_cosine(s.features, w)),
    }


def references(splits: dict, ctx) -> dict[str, tuple]:
    """The reference implementations, by ``"<method> / <reference>"``, as (fit, score) of :func:`ours`.
    pytorch-ood's outlier scores are negated; its feature-map detectors get B×D×1×1 maps and fractions."""
    import faiss
    import torch

    from csfbench.torch_compat import ensure_torchvision
    ensure_torchvision()
    import pytorch_ood.detector as ood

    train, hp = splits["train"], FIXED
    f32 = {name: torch.from_numpy(s.features) for name, s in splits.items()}
    z64 = {name: torch.from_numpy(s.logits) for name, s in splits.items()}
    y_train = torch.from_numpy(train.labels)
    head = torch.nn.Linear(ctx.weight.shape[1], ctx.n_classes)
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(ctx.weight))
        head.bias.copy_(torch.from_numpy(ctx.bias))

    def head_of_maps(x):
        return head(x.flatten(1))

    def maps(name):
        return f32[name][:, :, None, None]

    def logit(detector):
        return lambda: detector, lambda det, s: -det.predict_logits(z64[s]).numpy()

    def features(fit):
        return fit, lambda det, s: -det.predict_features(f32[s]).numpy()

    def feature_maps(fit):
        return fit, lambda det, s: -det.predict_feature_maps(maps(s)).numpy()

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def faiss_fit():
        index = faiss.IndexFlatL2(train.features.shape[1])
        index.add(unit(train.features))
        return index

    def faiss_score(index, s):
        squared, _ = index.search(unit(splits[s].features), hp["KNN"]["k"])
        return -np.sqrt(squared[:, -1].astype(np.float64))

    def openmax_fit():
        correct = np.flatnonzero(train.logits.argmax(axis=1) == train.labels)
        detector = ood.OpenMax(None, tailsize=20, alpha=3, euclid_weight=1.0)
        return detector.fit_logits(z64["train"][correct], y_train[correct])

    def react_fit():
        return ood.ReAct(None, head_of_maps, percentile=hp["ReAct"]["percentile"] / 100).fit_feature_maps(
            maps("train"), y_train)

    ash = hp["ASH"]["percentile"] / 100
    return {
        "MSP / pytorch-ood MaxSoftmax": logit(ood.MaxSoftmax(None)),
        "EBO / pytorch-ood EnergyBased": logit(ood.EnergyBased(None)),
        "ODIN / pytorch-ood ODIN": (lambda: ood.ODIN(torch.nn.Identity(), eps=0.0,
                                                     temperature=hp["ODIN"]["temperature"]),
                                    lambda det, s: -det.predict(z64[s]).numpy()),
        "GEN / pytorch-ood GEN": logit(ood.GEN(None, gamma=hp["GEN"]["gamma"], M=hp["GEN"]["m"])),
        "KLM / pytorch-ood KLMatching": (lambda: ood.KLMatching(None).fit_logits(z64["train"]),
                                         lambda det, s: -det.predict_logits(z64[s]).numpy()),
        "OpenMax / pytorch-ood OpenMax": (openmax_fit, lambda det, s: -det.predict_logits(z64[s]).numpy()),
        "KNN / faiss IndexFlatL2": (faiss_fit, faiss_score),
        "KNN / pytorch-ood KNN": features(lambda: ood.KNN(None, k=hp["KNN"]["k"]).fit_features(f32["train"], y_train)),
        "ReAct / pytorch-ood ReAct": feature_maps(react_fit),
        **{f"ASH-{v.upper()} / pytorch-ood ASH": feature_maps(
            lambda v=v: ood.ASH(None, head_of_maps, variant=f"ash-{v}", percentile=ash)) for v in ("s", "b", "p")},
        "SCALE / pytorch-ood SCALE": feature_maps(
            lambda: ood.SCALE(None, head_of_maps, percentile=hp["SCALE"]["percentile"] / 100)),
        "DICE / pytorch-ood DICE": features(lambda: ood.DICE(None, w=head.weight, b=head.bias,
                                                            p=hp["DICE"]["percentile"] / 100).fit_features(
            f32["train"], y_train)),
        "RMDS / pytorch-ood RMD": features(lambda: ood.RMD(None).fit_features(f32["train"], y_train)),
        "SHE / pytorch-ood SHE": features(lambda: ood.SHE(None, head=head).fit_features(f32["train"], y_train)),
    }


def run_side(side: str, folder: Path, round_: int, methods: list[str], reference_names: list[str]) -> None:
    """One side in this process: every detector of ``methods`` once in sequence (the "all together"
    pass), then the repeats of the cheap ones; writes ``<side>.<round>.json`` and, in round 0, the
    confidences (:func:`conf_file`)."""
    splits, ctx, _ = _load_data(folder)
    scored = [name for name in splits if name not in ("train", "val")]
    detectors = ours(splits, ctx) if side == "ours" else references(splits, ctx)
    detectors = {name: d for name, d in detectors.items() if name.split(" / ")[0] in methods
                 and (side == "ours" or name.split(" / ")[1] in reference_names)}
    peaks = PeakRss()

    def run(fit, score) -> tuple[list[float], np.ndarray]:
        t0 = time.perf_counter()
        state = fit()
        t_fit = time.perf_counter() - t0
        conf = np.concatenate([np.asarray(score(state, s), dtype=np.float64) for s in scored])
        total = time.perf_counter() - t0
        return [t_fit, total - t_fit, total], conf

    report: dict = {"methods": {}}
    peaks.begin("pass")
    t_pass = time.perf_counter()
    for name, (fit, score) in detectors.items():
        peaks.begin("method")
        timing, conf = run(fit, score)
        report["methods"][name] = {"runs": [timing], **peaks.end("method")}
        if round_ == 0:
            np.save(conf_file(folder, side, name), conf)
    report["pass_s"] = time.perf_counter() - t_pass
    report["pass_peak_gb"] = peaks.end("pass")["peak_gb"]
    for name, (fit, score) in detectors.items():
        runs = report["methods"][name]["runs"]
        if runs[0][2] < CHEAP_S:
            runs.clear()  # the first run becomes the warm-up
            while sum(r[2] for r in runs) < CHEAP_TOTAL_S and len(runs) < MAX_RUNS:
                runs.append(run(fit, score)[0])
    report["blas"] = blas_kernels()
    (folder / f"{side}.{round_}.json").write_text(json.dumps(report))


def blas_kernels() -> list[str]:
    """The BLAS libraries loaded in this process, each as "prefix version: CPU kernel" (threadpoolctl; "?"
    where the library does not report its kernel, as MKL), sorted."""
    from threadpoolctl import threadpool_info
    return sorted(f"{i['prefix']} {i['version']}: {i.get('architecture') or '?'}"
                  for i in threadpool_info() if i["user_api"] == "blas")


def reference_environment() -> dict[str, str]:
    """The reference side's environment: this one's, with ``OPENBLAS_CORETYPE`` set (unless it is set
    already) to the kernel that the newest OpenBLAS loaded here (numpy's or scipy's) detected, for the
    older OpenBLAS bundled with faiss-cpu."""
    from threadpoolctl import threadpool_info

    def version(entry: dict) -> tuple[int, ...]:
        return tuple(int(part) for part in str(entry.get("version") or "0").split(".") if part.isdigit())

    env = dict(os.environ)
    loaded = [i for i in threadpool_info() if i["internal_api"] == "openblas" and i.get("architecture")]
    if loaded and "OPENBLAS_CORETYPE" not in env:
        env["OPENBLAS_CORETYPE"] = max(loaded, key=version)["architecture"]
    return env


def _median_run(entry: dict) -> list[float]:
    """The (fit, score, total) of the run with the median total."""
    runs = sorted(entry["runs"], key=lambda r: r[2])
    return runs[len(runs) // 2]


def summarise(reports: dict[str, list[dict]], folder: Path, methods: list[str],
              reference_names: list[str]) -> dict:
    """Medians over rounds, ratios and Spearman correlations (round-0 confidences)."""
    from scipy.stats import spearmanr

    def per_method(side: str) -> dict:
        out = {}
        for name in reports[side][0]["methods"]:
            runs = [_median_run(r["methods"][name]) for r in reports[side]]
            out[name] = {key: float(np.median([r[i] for r in runs])) for i, key in enumerate(("fit_s", "score_s", "total_s"))}
            out[name]["rounds_total_s"] = [r[2] for r in runs]
            out[name]["peak_gb"] = max(r["methods"][name]["peak_gb"] for r in reports[side])
            out[name]["increment_gb"] = max(r["methods"][name]["increment_gb"] for r in reports[side])
        return out

    ours_methods, reference_methods = per_method("ours"), per_method("reference")
    pairs = []
    for method in methods:
        for ref in (r for r in REFERENCES[method] if r in reference_names):
            key = pair_key(method, ref)
            a, b = np.load(conf_file(folder, "ours", method)), np.load(conf_file(folder, "reference", key))
            mine, theirs = ours_methods[method], reference_methods[key]
            pairs.append({"pair": key, "ours_s": mine["total_s"], "reference_s": theirs["total_s"],
                          "ratio": mine["total_s"] / theirs["total_s"],
                          "round_ratios": [x / y for x, y in zip(mine["rounds_total_s"], theirs["rounds_total_s"])],
                          "spearman": float(spearmanr(a, b).statistic)})
    passes = [r["pass_s"] for r in reports["ours"]]
    return {"ours": ours_methods, "reference": reference_methods, "pairs": pairs,
            "blas": {side: reports[side][0]["blas"] for side in SIDES},
            "all_together": {"methods": len(methods), "s": float(np.median(passes)), "s_runs": passes,
                             "peak_gb": max(r["pass_peak_gb"] for r in reports["ours"])}}


def targets(result: dict) -> list[tuple[str, str, str]]:
    together = result["all_together"]
    lines = [(f"all {together['methods']} methods together ≤ {TARGET_S:.0f} s", f"{together['s']:.1f} s",
              "pass" if together["s"] <= TARGET_S else "FAIL"),
             (f"all together ≤ {TARGET_PEAK / GB:.0f} GB", f"{together['peak_gb']:.2f} GB",
              "pass" if together["peak_gb"] * GB <= TARGET_PEAK else "FAIL")]
    lines += [(f"{p['pair']}: ours no slower", f"ratio {p['ratio']:.3f}", "pass" if p["ratio"] <= 1 else "FAIL")
              for p in result["pairs"]]
    return lines


def markdown(result: dict) -> str:
    cfg, out = result["config"], []
    out.append(f"# Post-hoc methods benchmark ({cfg['date']}, {cfg['machine']})\n")
    out.append(f"threads: {cfg['threads']}; rounds: {cfg['rounds']}; load average at start / end: "
               f"{cfg['load_avg_start'][0]:.1f} / {cfg['load_avg_end'][0]:.1f}; sizes {cfg['sizes']}; "
               f"fixed hyper-parameters {json.dumps(FIXED)}\n")
    out.append("BLAS kernels: " + "; ".join(f"{side}: {', '.join(libs)}" for side, libs in result["blas"].items())
               + f" (the reference side's OPENBLAS_CORETYPE: {cfg['openblas_coretype']})\n")
    together = result["all_together"]
    out.append(f"All {together['methods']} methods together (fit + score, one pass): median {together['s']:.1f} s "
               f"(runs: {', '.join(f'{s:.1f}' for s in together['s_runs'])}), peak RSS {together['peak_gb']:.2f} GB\n")
    out.append("| method | fit s | score s | total s | peak / +Δ GB |")
    out.append("|---|---|---|---|---|")
    for name, m in result["ours"].items():
        out.append(f"| {name} | {m['fit_s']:.3f} | {m['score_s']:.3f} | {m['total_s']:.3f} | "
                   f"{m['peak_gb']:.2f} / +{m['increment_gb']:.2f} |")
    out.append("\n| ours / reference | ours s | reference s | ratio | ratio per round | Spearman |")
    out.append("|---|---|---|---|---|---|")
    out.extend(f"| {p['pair']} | {p['ours_s']:.3f} | {p['reference_s']:.3f} | {p['ratio']:.3f} | "
               f"{' '.join(f'{r:.2f}' for r in p['round_ratios'])} | {p['spearman']:.5f} |" for p in result["pairs"])
    out.append("\n| target | measured | verdict |")
    out.append("|---|---|---|")
    out.extend(f"| {a} | {b} | {c} |" for a, b, c in targets(result))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the paper sizes for every split")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of alternating side processes (ABBA)")
    parser.add_argument("--threads", type=int, default=0,
                        help="BLAS (threadpoolctl), torch and faiss threads; 0 = the libraries' defaults")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of the methods (and their references) to run")
    parser.add_argument("--references", default=",".join(REFERENCE_NAMES),
                        help="comma-separated subset of the reference implementations to run (all by default)")
    parser.add_argument("--seed", type=int, default=0, help="data seed")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "posthoc_methods"),
                        help="output prefix: <out>.json and <out>.md")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if set(methods) - set(METHODS):
        parser.error(f"unknown methods {sorted(set(methods) - set(METHODS))}; known: {', '.join(METHODS)}")
    reference_names = [r.strip() for r in args.references.split(",") if r.strip()]
    if set(reference_names) - set(REFERENCE_NAMES):
        parser.error(f"unknown references {sorted(set(reference_names) - set(REFERENCE_NAMES))}; "
                     f"known: {', '.join(REFERENCE_NAMES)}")
    if args.threads:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=args.threads)
    if args.side:
        if args.threads and args.side == "reference":
            import faiss
            import torch
            torch.set_num_threads(args.threads)
            faiss.omp_set_num_threads(args.threads)
        run_side(args.side, Path(args.data), args.round, methods, reference_names)
        return 0

    t0 = time.perf_counter()
    splits, ctx = make_data(args.scale, args.seed)
    config = {"date": datetime.date.today().isoformat(),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
                         f"{platform.python_version()}, numpy {np.__version__}",
              "scale": args.scale, "sizes": {k: len(v) for k, v in splits.items()}, "rounds": args.rounds,
              "threads": args.threads or "default", "load_avg_start": os.getloadavg()}
    env = {"ours": dict(os.environ), "reference": reference_environment()}
    config["openblas_coretype"] = env["reference"].get("OPENBLAS_CORETYPE", "unset")
    print(f"data: {config['sizes']} in {time.perf_counter() - t0:.1f} s", flush=True)
    shm, size = Path("/dev/shm"), sum(a.nbytes for s in splits.values() for a in (s.features, s.logits, s.labels))
    in_memory = shm.is_dir() and shutil.disk_usage(shm).free > 2 * size
    reports: dict[str, list[dict]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="posthoc_methods_", dir=shm if in_memory else None) as tmp:
        folder = Path(tmp)
        _save_data(folder, splits, ctx, 1.0)
        del splits
        for round_ in range(max(1, args.rounds)):
            for side in SIDES if round_ % 2 == 0 else SIDES[::-1]:
                t_side = time.perf_counter()
                subprocess.run([sys.executable, __file__, "--side", side, "--data", str(folder), "--round", str(round_),
                                "--threads", str(args.threads), "--methods", ",".join(methods),
                                "--references", ",".join(reference_names)], check=True, env=env[side])
                reports[side].append(json.loads((folder / f"{side}.{round_}.json").read_text()))
                print(f"round {round_} {side:9s} {time.perf_counter() - t_side:7.1f} s", flush=True)
        result = summarise(reports, folder, methods, reference_names)
    config["load_avg_end"] = os.getloadavg()
    result = {"config": config, **result}
    print(markdown(result))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(result, indent=2) + "\n")
    Path(f"{out}.md").write_text(markdown(result))
    print(f"wrote {out}.json and {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
