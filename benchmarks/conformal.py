"""Conformal OOD evaluation (``csfbench.metrics.conformal``): the Monte-Carlo band search at ICONIC
size, and the conformal metrics of a whole model against the classical ones, in one run.

    .venv/bin/python benchmarks/conformal.py [--n 100000] [--n-mc 10000] [--out benchmarks/out/conformal]

* **Band search** — ``mc_search`` at n = ``--n`` calibration points with ``--n-mc`` simulated
  order-statistic vectors (one streamed pass, then the γ bisection): wall and CPU time, the peak of
  numpy allocations during the search (``tracemalloc``) and the process's resident-set high-water
  mark (``getrusage``).  Target: ≤ 8 GB.  For scale, the other four bands at the same n, and every
  band's correction at an empirical FPR of 0.05 and 0.5 (points).
* **Metrics** — synthetic confidences for the 83 CSF variants of one model × 9 evaluated sets (ID test
  9,000 as the calibration set, 8 OOD sets of 10,000; per variant and OOD set a random mean shift, so
  AUROCs spread over about 0.55–0.99): the classical metrics (``csfbench.metrics.auroc`` and
  ``fpr_at_tpr(positive="failure")`` at TPR 0.95 and 0.99) and the conformal ones
  (``conformal_auroc``, ``conformal_fpr_at_tpr`` at 0.95 and 0.99) for δ ∈ {0.01, 0.05} × 5 methods,
  the bands built first (their time reported apart, as each is built once per process).  Ratio =
  conformal CPU time per (δ, method) setting ÷ classical CPU time (CPU, not wall: on a shared machine
  the wall time follows the other users' load).

Results go to ``<out>.json`` and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from csfbench.metrics import auroc, fpr_at_tpr
from csfbench.metrics import conformal as cf

GB = 1e9
N_VARIANTS, N_ID, N_OOD_SETS, N_OOD = 83, 9000, 8, 10_000
DELTAS, TPRS = (0.01, 0.05), (0.95, 0.99)


def timed(fn):
    """(result, wall s, CPU s) of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def shifts(n: int, band: np.ndarray) -> dict[str, float]:
    """The correction h(FPR) − FPR in points at empirical FPRs 0.05 and 0.5."""
    return {f"shift_at_{f}": 100 * (float(np.append(band, 1.0)[round(f * n)]) - f) for f in (0.05, 0.5)}


def band_search(n: int, n_mc: int) -> dict:
    tracemalloc.start()
    band, wall, cpu = timed(lambda: cf.correction_band(n, 0.05, "mc_search", n_mc=n_mc, seed=0))
    numpy_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    others = {}
    for method in cf.METHODS[:-1]:
        other, other_wall, _ = timed(lambda: cf.correction_band(n, 0.05, method))
        others[method] = {"wall_s": other_wall, **shifts(n, other)}
    return {"n": n, "n_mc": n_mc, "delta": 0.05, "wall_s": wall, "cpu_s": cpu, "numpy_peak_gb": numpy_peak / GB,
            "rss_peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GB,
            "mc_search": shifts(n, band), "other_bands": others}


def synthetic_scores(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """ID confidences (variants × N_ID) ~ N(0, 1) and OOD ones (variants × sets × N_OOD) ~ N(−μ, 1),
    μ ~ Uniform(0.2, 3.3)."""
    rng = np.random.default_rng(seed)
    id_scores = rng.normal(size=(N_VARIANTS, N_ID))
    shift = rng.uniform(0.2, 3.3, size=(N_VARIANTS, N_OOD_SETS, 1))
    return id_scores, rng.normal(size=(N_VARIANTS, N_OOD_SETS, N_OOD)) - shift


def classical(id_scores: np.ndarray, ood_scores: np.ndarray) -> list[float]:
    pooled = np.r_[id_scores, ood_scores]
    residual = np.r_[np.zeros(id_scores.size), np.ones(ood_scores.size)]
    return [auroc(pooled, residual)] + [fpr_at_tpr(pooled, residual, t, positive="failure") for t in TPRS]


def conformal(id_scores: np.ndarray, ood_scores: np.ndarray, delta: float, method: str) -> list[float]:
    return [cf.conformal_auroc(id_scores, ood_scores, delta, method)] + [
        cf.conformal_fpr_at_tpr(id_scores, ood_scores, delta, method, t) for t in TPRS]


def metrics() -> dict:
    id_scores, ood_scores = synthetic_scores()
    pairs = [(id_scores[v], ood_scores[v, s]) for v in range(N_VARIANTS) for s in range(N_OOD_SETS)]
    settings = [(d, m) for d in DELTAS for m in cf.METHODS]
    _, band_wall, _ = timed(lambda: [cf.correction_band(N_ID, d, m) for d, m in settings])
    values, wall, cpu = timed(lambda: np.array([classical(i, o) for i, o in pairs]))
    rows = {"classical": {"wall_s": wall, "cpu_s": cpu, "auroc_range": [float(values[:, 0].min()),
                                                                       float(values[:, 0].max())]}}
    for delta, method in settings:
        corrected, wall, cpu = timed(lambda: np.array([conformal(i, o, delta, method) for i, o in pairs]))
        rows[f"{method} δ={delta}"] = {
            "wall_s": wall, "cpu_s": cpu, "cpu_ratio": cpu / rows["classical"]["cpu_s"],
            "mean_auroc_drop_points": 100 * float(np.mean(values[:, 0] - corrected[:, 0])),
            "mean_fpr95_rise_points": 100 * float(np.mean(corrected[:, 1] - values[:, 1])),
            "all_conformal_worse": bool(np.all(corrected[:, 0] <= values[:, 0])
                                        and np.all(corrected[:, 1:] >= values[:, 1:]))}
    return {"pairs": len(pairs), "settings": len(settings), "bands_wall_s": band_wall, "rows": rows}


def markdown(result: dict) -> str:
    cfg, search, met = result["config"], result["band_search"], result["metrics"]
    classical_row, low_high = met["rows"]["classical"], met["rows"]["classical"]["auroc_range"]
    out = [f"# Conformal evaluation ({cfg['date']}, load average {cfg['load_avg_start'][0]:.1f} → "
           f"{cfg['load_avg_end'][0]:.1f})\n",
           f"mc_search, n = {search['n']:,}, {search['n_mc']:,} draws, δ = {search['delta']}: "
           f"{search['wall_s']:.1f} s wall, {search['cpu_s']:.1f} s CPU, "
           f"numpy peak {search['numpy_peak_gb']:.3f} GB, process RSS peak {search['rss_peak_gb']:.2f} GB\n",
           f"| band (n = {search['n']:,}, δ = 0.05) | build s | shift at FPR 0.05 (points) | shift at FPR 0.5 (points) |",
           "|---|---|---|---|"]
    bands = {"mc_search": {"wall_s": search["wall_s"], **search["mc_search"]}, **search["other_bands"]}
    out += [f"| {m} | {r['wall_s']:.3f} | {r['shift_at_0.05']:.3f} | {r['shift_at_0.5']:.3f} |" for m, r in bands.items()]
    out += [f"\nMetrics: {met['pairs']} (variant, OOD set) pairs, AUROC {low_high[0]:.3f}–{low_high[1]:.3f}; "
            f"the {met['settings']} bands at n = {N_ID:,} built in {met['bands_wall_s']:.1f} s\n",
            "| metrics | wall s | CPU s | CPU ÷ classical | mean AUROC drop (points) | mean FPR@95 rise (points) "
            "| conformal never better |",
            "|---|---|---|---|---|---|---|",
            f"| classical | {classical_row['wall_s']:.2f} | {classical_row['cpu_s']:.2f} | 1 | | | |"]
    out += [f"| {k} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['cpu_ratio']:.2f} | {r['mean_auroc_drop_points']:.2f} "
            f"| {r['mean_fpr95_rise_points']:.2f} | {r['all_conformal_worse']} |"
            for k, r in met["rows"].items() if k != "classical"]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--n-mc", type=int, default=10_000)
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "conformal"))
    args = parser.parse_args(argv)
    config = {"date": datetime.date.today().isoformat(), "load_avg_start": os.getloadavg()}
    result = {"config": config, "band_search": band_search(args.n, args.n_mc), "metrics": metrics()}
    config["load_avg_end"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(result, indent=2) + "\n")
    Path(f"{out}.md").write_text(markdown(result))
    print(markdown(result))
    print(f"wrote {out}.json and {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
