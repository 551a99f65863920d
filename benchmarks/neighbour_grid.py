"""A whole neighbour-count grid from one search: KNN's and NNGuide's k grid against their largest k alone.

    .venv/bin/python benchmarks/neighbour_grid.py [--scale 1.0] [--rounds 3] [--threads 0]
                                                  [--out benchmarks/out/neighbour_grid]

Data: the CSF-engine benchmark's synthetic VGG-13-like outputs (``csf_engine.make_data``): a bank of
50,000 training rows × 512 float32 features, 100 classes; the scored rows are the ID test set (9,000) and
8 OOD sets of 10,000 (89,000 rows), as in ``posthoc_methods.py``.  Per method and k grid (KNN: ICONIC-444's
Table 7 grid k ∈ {50, 100, 200, 500, 1000}; NNGuide: k ∈ {10, 50, 100, 200, 500} over its search range 10–500,
α = 0.3, a bank of 15,000 rows), each timed as the fit plus the scores of the 9 splits:

* ``largest`` — the largest k alone (the baseline);
* ``grid`` — every k of the grid inside :func:`csfbench.csf.neighbours.shared_search` (one search per split
  for the largest k, kept sorted, every k read from it): what a tuning search now costs;
* ``per_k`` — every k searched on its own (what a tuning search cost before), for reference.

Rounds alternate the order of the three sides (ABC, CBA, …); per side the median over rounds.  Target
(reported, not asserted): grid ≤ 1.2 × largest; the grid's scores equal the per-k scores (KNN within the
float32 product's rounding, 2e-6, since the bank chunks differ with k; NNGuide to 1e-12 relative).
``--threads`` pins BLAS to N threads (threadpoolctl); 0 keeps all cores.  Results go to ``<out>.json`` and
``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # as the Snakefile sets for every job (see csf_engine.py)

import numpy as np
from csf_engine import make_data
from threadpoolctl import threadpool_limits

from csfbench.csf.knn import KNN_GRID, knn_fit, knn_score
from csfbench.csf.neighbours import shared_search
from csfbench.csf.nnguide import nnguide_bank, nnguide_score

GRIDS = {"KNN": tuple(KNN_GRID["k"]), "NNGuide": (10, 50, 100, 200, 500)}
NNGUIDE_ALPHA = 0.3
TARGET_RATIO = 1.2
SIDES = ("largest", "grid", "per_k")
TOLERANCE = {"KNN": ("atol", 2e-6), "NNGuide": ("rtol", 1e-12)}


def methods(splits: dict, ctx) -> dict:
    """(fit() -> state, score(state, split, k) -> confidence) per method."""
    train = splits["train"]
    return {
        "KNN": (lambda: knn_fit(train.features), lambda state, s, k: knn_score(state, s.features, k)),
        "NNGuide": (lambda: nnguide_bank(train.features, train.logits, train.labels, ctx.n_classes, NNGUIDE_ALPHA),
                    lambda bank, s, k: nnguide_score(s.features, s.logits, bank, k)),
    }


def run_side(side: str, fit, score, grid: tuple[int, ...], scored: list) -> tuple[float, dict]:
    """Wall time of the fit and the scores of every split under ``side``; the scores {k: [per split]}."""
    start = time.perf_counter()
    state = fit()
    ks = (max(grid),) if side == "largest" else grid
    scores: dict[int, list] = {k: [] for k in ks}
    for split in scored:
        if side == "grid":
            with shared_search(max(grid)):
                for k in ks:
                    scores[k].append(score(state, split, k))
        else:
            for k in ks:
                scores[k].append(score(state, split, k))
    return time.perf_counter() - start, scores


def max_difference(a: dict, b: dict, kind: str) -> float:
    """The largest absolute (``atol``) or relative (``rtol``) difference between two sides' scores."""
    worst = 0.0
    for k in a:
        for x, y in zip(a[k], b[k]):
            diff = np.abs(x - y)
            worst = max(worst, float(np.max(diff if kind == "atol" else diff / np.maximum(np.abs(y), 1e-300))))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the paper-scale row counts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="BLAS threads (0: all cores)")
    parser.add_argument("--out", default="benchmarks/out/neighbour_grid")
    args = parser.parse_args()
    splits, ctx = make_data(args.scale)
    scored = [splits[name] for name in splits if name not in ("train", "val")]
    limits = threadpool_limits(args.threads) if args.threads else None
    results = {}
    for name, (fit, score) in methods(splits, ctx).items():
        grid = GRIDS[name]
        times: dict[str, list[float]] = {side: [] for side in SIDES}
        kept: dict[str, dict] = {}
        for round_ in range(args.rounds):
            for side in (SIDES if round_ % 2 == 0 else SIDES[::-1]):
                seconds, scores = run_side(side, fit, score, grid, scored)
                times[side].append(seconds)
                kept.setdefault(side, scores)
                print(f"{name} round {round_} {side}: {seconds:.2f} s", flush=True)
        median = {side: statistics.median(times[side]) for side in SIDES}
        kind, tol = TOLERANCE[name]
        difference = max_difference(kept["grid"], kept["per_k"], kind)
        results[name] = {"grid": list(grid), "seconds": times, "median_s": median,
                         "grid_over_largest": median["grid"] / median["largest"],
                         "per_k_over_largest": median["per_k"] / median["largest"],
                         "max_difference_grid_vs_per_k": difference, "difference_kind": kind, "tolerance": tol,
                         "equal": difference <= tol}
        del kept
    if limits is not None:
        limits.restore_original_limits()
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "cpus": os.cpu_count(), "threads": args.threads, "scale": args.scale,
              "rounds": args.rounds, "scored_rows": int(sum(len(s.labels) for s in scored)),
              "bank_rows": int(len(splits["train"].labels)), "target_ratio": TARGET_RATIO, "methods": results}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2))
    lines = [f"# Neighbour grid from one search ({report['date']}, {report['cpus']} CPUs, threads {args.threads}, "
             f"scale {args.scale}, {args.rounds} rounds)", "",
             "| method | grid | largest k alone (s) | grid (s) | per-k (s) | grid ÷ largest | per-k ÷ largest | "
             "max difference | equal |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        m = r["median_s"]
        lines.append(f"| {name} | {r['grid']} | {m['largest']:.2f} | {m['grid']:.2f} | {m['per_k']:.2f} | "
                     f"{r['grid_over_largest']:.3f} | {r['per_k_over_largest']:.3f} | "
                     f"{r['max_difference_grid_vs_per_k']:.2g} ({r['difference_kind']}) | {r['equal']} |")
    lines.append(f"\nTarget: grid ≤ {TARGET_RATIO} × the largest k alone.")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
