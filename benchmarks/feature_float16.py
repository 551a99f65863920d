"""Float16 feature storage: the AUROC change of every CSF variant when the features are stored in float16.

    .venv/bin/python benchmarks/feature_float16.py [--scale 1.0] [--groups none,global,class] [--threads 0]
                                                   [--out benchmarks/out/feature_float16]

Data: the CSF-engine benchmark's synthetic VGG-13-like outputs at paper scale (``csf_engine.make_data``: 50,000
train × 512 ReLU features, 100 classes, 5,000 validation, 9,000 ID test and 8 OOD sets of 10,000).  Two engine
runs with every hyper-parameter fixed (:func:`fixed_parameters`, so that no tuning choice differs between
them), on the same logits
: the float32 features, and the same features rounded to float16 and
read back as float32 — what ``features.feature_dtype: float16`` stores and :func:`csfbench.features.store
.read_features` returns.  Per CSF variant and OOD set: the new-class AUROC (ID test positive, the OOD set
negative; higher confidence = more in-distribution); per CSF (its variants and the 8 sets): the largest and the
mean |ΔAUROC|.  The logit-only CSFs read no features, so their change is exactly 0.  Results go to
``<out>.json`` and ``<out>.md``; docs/benchmarks.md keeps the table.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # as the Snakefile sets for every job (see csf_engine.py)

import numpy as np
from csf_engine import FIXED, make_data
from posthoc_methods import FIXED as POSTHOC_FIXED

from csfbench.csf.engine import TuningSettings, fit_mode, score_mode
from csfbench.metrics import auroc


def fixed_parameters() -> dict:
    """Every tunable hyper-parameter fixed: the CSF-engine benchmark's values and the post-hoc methods
    benchmark's (ICONIC-444 Table 7 grid points; its ASH value for ASH-S, -B and -P), so that no tuning choice
    differs between the two runs."""
    fixed = json.loads(json.dumps(FIXED))
    for name, params in POSTHOC_FIXED.items():
        for csf in ([f"ASH-{v}" for v in "SBP"] if name == "ASH" else [name]):
            fixed.setdefault(csf, dict(params))
    return fixed


def as_float16(split):
    """The split with its features (and MC-mean features) rounded to float16, as float32."""
    return dataclasses.replace(split, features=split.features.astype(np.float16).astype(np.float32))


def newclass_aurocs(splits: dict, ctx, tuning: TuningSettings, groups: list[str]) -> dict:
    """{(CSF, variant): [new-class AUROC per OOD set]} of one engine run."""
    ood = [name for name in splits if name.startswith("ood")]
    out: dict = {}
    for group in groups:
        fitted = fit_mode(group, splits["train"], splits["val"], ctx, tuning)
        test = score_mode(splits["test"], fitted, ctx)
        sets = {name: score_mode(splits[name], fitted, ctx) for name in ood}
        for key, id_conf in test.items():
            # success (ID) positive: residual 0 for the ID rows, 1 for the OOD rows
            out[key] = [float(auroc(np.r_[id_conf, sets[name][key]],
                                    np.r_[np.zeros(len(id_conf)), np.ones(len(sets[name][key]))]))
                        for name in ood]
        del fitted
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--groups", default="none,global,class")
    parser.add_argument("--threads", type=int, default=0, help="BLAS threads (0: all cores)")
    parser.add_argument("--out", default="benchmarks/out/feature_float16")
    args = parser.parse_args()
    if args.threads:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=args.threads)
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    splits, ctx = make_data(args.scale)
    tuning = TuningSettings(20, 80, 1, fixed_parameters(), {})
    runs, seconds = {}, {}
    for precision, data in (("float32", splits), ("float16", {k: as_float16(v) for k, v in splits.items()})):
        start = time.perf_counter()
        runs[precision] = newclass_aurocs(data, ctx, tuning, groups)
        seconds[precision] = time.perf_counter() - start
        print(f"{precision}: {seconds[precision]:.1f} s, {len(runs[precision])} variants", flush=True)
    per_csf: dict[str, dict] = {}
    for (csf, variant), values in runs["float32"].items():
        other = runs["float16"].get((csf, variant))
        if other is None:
            continue
        change = np.abs(np.asarray(other) - np.asarray(values))
        entry = per_csf.setdefault(csf, {"variants": [], "changes": []})
        entry["variants"].append(variant)
        entry["changes"].extend(change[np.isfinite(change)].tolist())
    table = {csf: {"variants": sorted(e["variants"]), "max_abs_change": max(e["changes"], default=float("nan")),
                   "mean_abs_change": float(np.mean(e["changes"])) if e["changes"] else float("nan")}
             for csf, e in sorted(per_csf.items())}
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "cpus": os.cpu_count(), "scale": args.scale, "groups": groups,
              "seconds": seconds, "csfs": table}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2))
    lines = [f"# Float16 features: |ΔAUROC| per CSF ({report['date']}, scale {args.scale}, groups {groups})", "",
             "| CSF | variants | max |ΔAUROC| | mean |ΔAUROC| |", "|---|---|---|---|"]
    lines += [f"| {csf} | {', '.join(r['variants'])} | {r['max_abs_change']:.2e} | {r['mean_abs_change']:.2e} |"
              for csf, r in sorted(table.items(), key=lambda kv: -kv[1]["max_abs_change"])]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
