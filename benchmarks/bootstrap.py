"""Bootstrap percentile intervals (``csfbench.metrics.bootstrap``) at paper scale: the weighted one-sort
replicates against explicit resampling, and every metric from one draw against one draw per metric, in one run.

    .venv/bin/python benchmarks/bootstrap.py [--n-id 10000] [--n-ood 10000] [--n-boot 1000] [--explicit 50]
                                             [--metrics auroc,augrc,aurc,fpr95,aupr_in] [--out benchmarks/out/bootstrap]

One model's scores on one OOD set: ``--n-id`` ID confidences ~ N(1, 1) and ``--n-ood`` OOD ones ~ N(0, 1),
rounded to 3 decimals so that ties occur as in float16/softmax scores.  Per metric (AUROC, AUGRC, AURC,
FPR@95, AUPR-In):

* **weighted** — :func:`~csfbench.metrics.bootstrap.interval` with ``--n-boot`` stratified replicates (draws
  included): wall and CPU time, and the peak of Python/numpy allocations during the call (``tracemalloc``);
* **explicit** — the textbook loop: per replicate, stratified indices drawn with ``Generator.integers``, the
  resample built by indexing and the registry's metric called on it (one sort per replicate), timed on
  ``--explicit`` replicates and scaled to ``--n-boot``; its peak likewise.

Ratio = explicit CPU time (scaled) ÷ weighted CPU time (CPU, not wall: on a shared machine the wall time
follows the other users' load).  Then **joint** — :func:`~csfbench.metrics.bootstrap.intervals` of all the metrics
from one draw (what a metric row group costs, :func:`csfbench.evaluation.metric_rows`), checked equal to the
per-metric intervals, against the sum of the per-metric weighted CPU times.  Every CPU time is the least of
``--repeats`` runs (the others' load only adds to it).  ``--explicit 0`` skips the explicit loop (a row-group
measurement: ``--n-id 650 --n-ood 650 --n-boot 100 --metrics <the rows'>``).  Results go to ``<out>.json`` and
``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from csfbench.metrics import metric
from csfbench.metrics.bootstrap import interval, intervals

METRICS = ("auroc", "augrc", "aurc", "fpr95", "aupr_in")
MB = 1e6


def measured(fn, repeats: int = 1):
    """(result, wall s, CPU s, tracemalloc peak MB) of ``fn()``: the least wall and CPU time of ``repeats`` runs
    (untraced), the peak from one more traced run."""
    wall, cpu = np.inf, np.inf
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    tracemalloc.start()
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] / MB
    tracemalloc.stop()
    return result, wall, cpu, peak


def scores(n_id: int, n_ood: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    confidence = np.round(np.r_[rng.normal(1.0, 1.0, n_id), rng.normal(0.0, 1.0, n_ood)], 3)
    return confidence, np.r_[np.zeros(n_id), np.ones(n_ood)]


def explicit(name: str, confidence: np.ndarray, labels: np.ndarray, n_boot: int, seed: int = 0) -> np.ndarray:
    """The metric on ``n_boot`` stratified resamples built one by one."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(labels == 0), np.flatnonzero(labels == 1)]
    function = metric(name)
    values = np.empty(n_boot)
    for b in range(n_boot):
        picks = np.concatenate([index[rng.integers(0, index.size, index.size)] for index in members])
        values[b] = function(confidence[picks], labels[picks])
    return values


def run(n_id: int, n_ood: int, n_boot: int, n_explicit: int, metrics=METRICS, repeats: int = 3) -> dict:
    confidence, labels = scores(n_id, n_ood)
    rows = {}
    for name in metrics:
        (low, high), wall, cpu, peak = measured(lambda: interval(name, confidence, labels, n_boot=n_boot), repeats)
        rows[name] = {"estimate": metric(name)(confidence, labels), "ci_low": low, "ci_high": high,
                      "weighted_wall_s": wall, "weighted_cpu_s": cpu, "weighted_peak_mb": peak}
        if n_explicit:
            _, e_wall, e_cpu, e_peak = measured(lambda: explicit(name, confidence, labels, n_explicit))
            scale = n_boot / n_explicit
            rows[name].update(explicit_wall_s_scaled=e_wall * scale, explicit_cpu_s_scaled=e_cpu * scale,
                              explicit_peak_mb=e_peak, cpu_ratio=e_cpu * scale / cpu)
    together, wall, cpu, peak = measured(lambda: intervals(metrics, confidence, labels, n_boot=n_boot), repeats)
    if together != {name: (r["ci_low"], r["ci_high"]) for name, r in rows.items()}:
        raise AssertionError("intervals() differs from interval() per metric")
    separate = sum(r["weighted_cpu_s"] for r in rows.values())
    joint = {"wall_s": wall, "cpu_s": cpu, "peak_mb": peak, "per_metric_cpu_s": separate, "cpu_ratio": separate / cpu}
    return {"n_id": n_id, "n_ood": n_ood, "n_boot": n_boot, "n_explicit": n_explicit, "repeats": repeats,
            "distinct_confidences": int(np.unique(confidence).size), "rows": rows, "joint": joint}


def markdown(result: dict) -> str:
    cfg = result["config"]
    out = [f"# Bootstrap intervals ({cfg['date']}, load average {cfg['load_avg_start'][0]:.1f} → "
           f"{cfg['load_avg_end'][0]:.1f})\n",
           f"{result['n_id']:,} ID + {result['n_ood']:,} OOD rows ({result['distinct_confidences']:,} distinct "
           f"confidences), B = {result['n_boot']:,} stratified replicates; explicit timed on "
           f"{result['n_explicit']} replicates and scaled\n",
           "| metric | estimate | 95 % interval | weighted CPU s | weighted peak MB | explicit CPU s (scaled) "
           "| explicit peak MB | CPU ratio |",
           "|---|---|---|---|---|---|---|---|"]
    out += [f"| {name} | {r['estimate']:.4f} | [{r['ci_low']:.4f}, {r['ci_high']:.4f}] | {r['weighted_cpu_s']:.4f} "
            f"| {r['weighted_peak_mb']:.1f} | {r.get('explicit_cpu_s_scaled', np.nan):.2f} "
            f"| {r.get('explicit_peak_mb', np.nan):.1f} | {r.get('cpu_ratio', np.nan):.1f} |"
            for name, r in result["rows"].items()]
    joint = result["joint"]
    out += ["", "Every metric from one draw (`intervals`, equal to `interval` per metric): "
            f"CPU {joint['cpu_s']:.4f} s, peak {joint['peak_mb']:.1f} MB; one draw per metric: {joint['per_metric_cpu_s']:.4f} s "
            f"(**{joint['cpu_ratio']:.1f}×**; least of {result['repeats']} runs)"]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-id", type=int, default=10_000)
    parser.add_argument("--n-ood", type=int, default=10_000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--explicit", type=int, default=50, help="explicit replicates timed (then scaled; 0: none)")
    parser.add_argument("--metrics", default=",".join(METRICS), help="comma-separated metric names")
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (the least is kept)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "bootstrap"))
    args = parser.parse_args(argv)
    config = {"date": datetime.date.today().isoformat(), "load_avg_start": os.getloadavg()}
    result = {"config": config, **run(args.n_id, args.n_ood, args.n_boot, args.explicit,
                                      tuple(args.metrics.split(",")), args.repeats)}
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
