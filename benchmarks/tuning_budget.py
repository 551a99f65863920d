"""What a smaller KPCA RecError search loses: the default budget (5 + 15) against the paper's (20 + 80).

    .venv/bin/python benchmarks/tuning_budget.py [--scale 0.2] [--seeds 0,1] [--budgets 5+15,20+80]
                                                 [--out benchmarks/out/tuning_budget]

The ``csf.tuning.budgets`` default of ``config/schema.yaml`` gives KPCA RecError 5 + 15 Bayesian-optimisation probes
instead of the paper's 20 + 80, because each probe decomposes an L×L Nyström problem over every
training row.  This script measures the cost of that choice on the synthetic features of
``benchmarks/csf_engine.py`` shrunk by ``--scale`` (and the landmark range [2000, 5000] with it, so
that the full search takes minutes, not hours): for each data seed, fit group (global, class) and
budget it tunes KPCA RecError (v, γ, n_L) on validation −AUGRC (every other hyper-parameter fixed)
and reports

* the best validation objective, as AUGRC × 1000 (lower = better);
* the ID test AUGRC × 1000 of the chosen hyper-parameters (misclassification; lower = better);
* the OOD AUROC of the chosen hyper-parameters, ID test vs the 8 OOD sets pooled (higher = better);
* the tuning time.

For scale, every row also gives the spread of the paper-budget search: the median and the best
validation AUGRC × 1000 over its probes.  Results go to ``<out>.json`` and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from csf_engine import FIXED, make_data  # noqa: E402  (the engine benchmark's data and fixed values)

from csfbench.csf.engine import TuningSettings, fit_mode, score_mode  # noqa: E402
from csfbench.metrics import augrc, auroc  # noqa: E402

KPCA = "KPCA RecError"
LANDMARKS = (2000, 5000)  # the n_L search range at scale 1 (docs/methods.md §3.2)


def run(scale: float, seed: int, group: str, budget: tuple[int, int]) -> dict:
    splits, ctx = make_data(scale, seed)
    fixed = {k: v for k, v in FIXED.items() if k != KPCA}
    landmarks = [max(2, int(round(b * scale))) for b in LANDMARKS]
    tuning = TuningSettings(1, 0, 1, fixed, {KPCA: {"n_landmarks": landmarks}}, {KPCA: budget})
    t0 = time.perf_counter()
    fitted = fit_mode(group, splits["train"], splits["val"], ctx, tuning)
    seconds = time.perf_counter() - t0
    variant = "global" if group == "global" else "class"
    item = fitted.csfs[(KPCA, variant)]
    test = splits["test"]
    test_conf = score_mode(test, fitted, ctx)[(KPCA, variant)]
    ood_conf = np.concatenate([score_mode(splits[f"ood_{i}"], fitted, ctx)[(KPCA, variant)] for i in range(1, 9)])
    is_id = np.r_[np.ones(len(test_conf)), np.zeros(len(ood_conf))]
    return {"seed": seed, "group": group, "budget": f"{budget[0]}+{budget[1]}", "params": item.params,
            "val_augrc_x1000": -1000 * float(item.objectives.max()),
            "val_augrc_median_probe_x1000": -1000 * float(np.median(item.objectives)),
            "test_augrc_x1000": 1000 * augrc(test_conf, (~test.correct).astype(float)),
            "ood_auroc": auroc(np.r_[test_conf, ood_conf], 1.0 - is_id),  # residual 1 = OOD
            "probes": len(item.objectives), "seconds": seconds}


def markdown(result: dict) -> str:
    cfg = result["config"]
    out = [f"# KPCA RecError tuning budget ({cfg['date']}, scale {cfg['scale']}, landmarks {cfg['landmarks']}, "
           f"load average {cfg['load_avg_start'][0]:.1f} → {cfg['load_avg_end'][0]:.1f})\n",
           "| seed | group | budget | val AUGRC ×1000 (best / median probe) | test AUGRC ×1000 | OOD AUROC | "
           "chosen (v, γ, n_L) | s |", "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        p = r["params"]
        out.append(f"| {r['seed']} | {r['group']} | {r['budget']} | {r['val_augrc_x1000']:.3f} / "
                   f"{r['val_augrc_median_probe_x1000']:.3f} | {r['test_augrc_x1000']:.3f} | {r['ood_auroc']:.4f} | "
                   f"({p['variance']:.3f}, {p['gamma']:.3f}, {p['n_landmarks']}) | {r['seconds']:.0f} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.2)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--groups", default="global,class")
    parser.add_argument("--budgets", default="5+15,20+80", help="comma-separated init_points+n_iter")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "tuning_budget"))
    args = parser.parse_args(argv)
    budgets = [tuple(int(x) for x in b.split("+")) for b in args.budgets.split(",")]
    config = {"date": datetime.date.today().isoformat(), "scale": args.scale, "load_avg_start": os.getloadavg(),
              "landmarks": [max(2, int(round(b * args.scale))) for b in LANDMARKS]}
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for group in args.groups.split(","):
            for budget in budgets:
                rows.append(run(args.scale, seed, group, budget))
                r = rows[-1]
                print(f"seed {seed} {group:6s} {r['budget']:6s} val AUGRC×1000 {r['val_augrc_x1000']:.3f} "
                      f"test {r['test_augrc_x1000']:.3f} OOD AUROC {r['ood_auroc']:.4f} {r['params']} "
                      f"{r['seconds']:.0f} s", flush=True)
    config["load_avg_end"] = os.getloadavg()
    result = {"config": config, "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    Path(f"{out}.md").write_text(markdown(result))
    print(f"wrote {out}.json and {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
