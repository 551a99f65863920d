"""The metric rows of one model with every convention preset on, against the default rows alone (a ratio).

    .venv/bin/python benchmarks/metric_presets.py [--n 10000] [--variants 83] [--sets 9] [--rounds 1]
                                                  [--out benchmarks/out/metric_presets]

One synthetic VGG-13 model scored like a real ``score_csf`` job: ``--variants`` CSF variants (83 = the VGG-13's
deterministic variants) on ``--sets`` evaluation sets of ``--n`` samples each — the ``val`` and ``test`` splits
(``misclf``) and ``sets − 2`` semantic sets (``correct_vs_ood``, ``newclass``, ``failure``) — through
:func:`csfbench.evaluation.metric_rows`, the function the job calls.  Confidences lie in [0, 1] so the
probability metrics are computed too, and are quantised to 3 decimals, so ties occur as they do with softmax
scores.  Two timed passes over the same scores (wall, ``time.perf_counter``, best of ``--rounds``):

1. ``default``: :data:`csfbench.metrics.DEFAULT_METRICS` (the ``csfbench`` preset, what a run computes unless
   ``evaluation.conventions`` says otherwise) — the baseline;
2. ``all presets``: :func:`csfbench.metrics.metric_names` of every preset of :data:`csfbench.metrics.PRESETS`.

Reported (not asserted): both times, the row counts and the ratio all/default.  Results go to ``<out>.json``
and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from csfbench.evaluation import metric_rows
from csfbench.metrics import DEFAULT_METRICS, PRESETS, metric_names
from csfbench.specs import DatasetSpec, EvalSet

#: the model columns of the rows (:func:`metric_rows` reads only these attributes of a ModelSpec)
SPEC = SimpleNamespace(source="synthetic", backbone="vgg13", paradigm="ce", dropout=0, reward=0.0, run=1)


def synthetic_scores(rng: np.random.Generator, n: int, variants: int, shifted: bool) -> dict:
    """{"det": {"correct", "labels", "scores"}} of one set: per variant a confidence whose quality varies."""
    correct = rng.random(n) < (0.0 if shifted else 0.9)
    labels = rng.integers(0, 10, n)
    scores = {}
    for k in range(variants):
        signal = rng.uniform(0.0, 2.0)
        raw = signal * (correct - 0.5) + rng.normal(0, 1, n)
        scores[(f"csf{k:02d}", "none")] = np.round(1 / (1 + np.exp(-raw)), 3)
    return {"det": {"correct": correct, "labels": labels, "scores": scores}}


def timed(sets: dict, reference: dict, metrics: tuple[str, ...], rounds: int) -> tuple[float, int]:
    """Best wall time of ``rounds`` passes of :func:`metric_rows` over every set, and the row count."""
    best, n_rows = float("inf"), 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        n_rows = sum(len(metric_rows(SPEC, eval_set, scores, None if eval_set.shift_type == "id" else reference,
                                     metrics)) for eval_set, scores in sets.values())
        best = min(best, time.perf_counter() - t0)
    return best, n_rows


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="samples per evaluation set")
    parser.add_argument("--variants", type=int, default=83, help="CSF variants of the model")
    parser.add_argument("--sets", type=int, default=9, help="evaluation sets: val, test and sets - 2 semantic sets")
    parser.add_argument("--rounds", type=int, default=1, help="timed passes per configuration (best is kept)")
    parser.add_argument("--out", default="benchmarks/out/metric_presets", help="output path without suffix")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    sets = {"val": (EvalSet("val", "id", "val"), synthetic_scores(rng, args.n, args.variants, False)),
            "test": (EvalSet("test", "id", "test"), synthetic_scores(rng, args.n, args.variants, False))}
    for k in range(args.sets - 2):
        name = f"ood{k}"
        sets[name] = (EvalSet(name, "semantic", "far", DatasetSpec(name, "npy", name)),
                      synthetic_scores(rng, args.n, args.variants, True))
    reference = sets["test"][1]
    everything = metric_names(tuple(PRESETS))
    default_s, default_rows = timed(sets, reference, DEFAULT_METRICS, args.rounds)
    all_s, all_rows = timed(sets, reference, everything, args.rounds)
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
              "n": args.n, "variants": args.variants, "sets": args.sets, "rounds": args.rounds,
              "default_metrics": len(DEFAULT_METRICS), "all_metrics": len(everything),
              "default_s": round(default_s, 2), "default_rows": default_rows,
              "all_s": round(all_s, 2), "all_rows": all_rows, "ratio": round(all_s / default_s, 2)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(
        f"| rows | metrics | wall (s) |\n|---|---|---|\n| default | {len(DEFAULT_METRICS)} ({default_rows} rows) | "
        f"{default_s:.2f} |\n| all presets | {len(everything)} ({all_rows} rows) | {all_s:.2f} |\n\n"
        f"ratio all/default: {all_s / default_s:.2f}\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
