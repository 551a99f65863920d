"""GPU kernels: the numpy kernels of the CSF stage against their torch path on a device (docs/benchmarks.md,
"GPU kernels"; docs/methods.md §5.16).

    nice .venv/bin/python benchmarks/gpu_kernels.py [--device cuda] [--scale 1.0] [--query-fraction 0.05]
        [--fit-fraction 0.25] [--block-mib 128] [--threads 2] [--cases knn_cifar,...] [--out benchmarks/out/gpu_kernels]

Cases (synthetic ReLU features around per-class centres, seed 0; every row count × ``--scale``):

- ``knn_cifar``: KNN's search (:func:`csfbench.csf.knn.knn_score`, k = 1000) of 89,000 queries in a 50,000 × 512
  float32 bank, the shape of ``benchmarks/posthoc_methods.py``;
- ``knn_imagenet``: the same in a 1,281,167 × 2,048 float16 bank (ImageNet-1K, ``features.feature_dtype``
  float16), on ``--query-fraction`` of its 150,000 test + OOD queries;
- ``maha_fit``: Maha's fit (:func:`csfbench.csf.distance_scores.maha_fit`: class means and the tied covariance;
  the pseudo-inverse is on the host in both paths) on ``--fit-fraction`` of 1,281,167 × 2,048 float32 rows,
  1,000 classes;
- ``maha_score``: Maha's scoring of ``--query-fraction`` of 150,000 × 2,048 rows with that fit.

Each case runs the numpy kernels (BLAS limited to ``--threads``) and the torch path on ``--device``
(:func:`csfbench.csf.device.compute_device`, one untimed warm-up call first: CUDA's context and kernels load
once per process), at ``csf.block_mib`` = ``--block-mib``; the times of the fractional cases are extrapolated
linearly to all rows (every row is searched, summed or scored alone).  Printed per case: both times, their
ratio, and the largest difference of the results against the tolerance the kernels state.  Without a CUDA
device the script says so and exits with status 2, unless ``--device cpu`` asks for torch on the host (for
information only).  Results also go to ``<out>.json``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from csfbench.csf import distance_scores as dist
from csfbench.csf import knn
from csfbench.csf.blocks import block_budget
from csfbench.csf.device import compute_device

SEED = 0
K = 1000
#: (bank rows, queries, dimension, classes, bank dtype) of the KNN cases
KNN_SHAPES = {"knn_cifar": (50_000, 89_000, 512, 10, np.float32),
              "knn_imagenet": (1_281_167, 150_000, 2_048, 1_000, np.float16)}
#: (training rows, queries, dimension, classes) of the Maha cases
MAHA_SHAPE = (1_281_167, 150_000, 2_048, 1_000)
CASES = ("knn_cifar", "knn_imagenet", "maha_fit", "maha_score")
#: rows generated per step (bounds the float64 temporaries of the generator)
GENERATE_ROWS = 65_536


def relu_features(n: int, centres: np.ndarray, rng: np.random.Generator, dtype=np.float32) -> tuple:
    """(n × D ReLU features of ``dtype`` around the rows of ``centres`` (C × D), their labels 0..C-1 in turn)."""
    labels = np.arange(n) % len(centres)
    out = np.empty((n, centres.shape[1]), dtype=dtype)
    for start in range(0, n, GENERATE_ROWS):
        rows = slice(start, min(start + GENERATE_ROWS, n))
        out[rows] = np.maximum(centres[labels[rows]] + rng.normal(size=(rows.stop - rows.start, centres.shape[1])),
                               0.0)
    return out, labels


def timed(run, device, threads: int, warm_up=None) -> tuple[float, object]:
    """(seconds, result) of ``run()`` on the numpy kernels (``device`` None) or the torch path on ``device``
    (after an untimed ``warm_up()``), BLAS limited to ``threads``."""
    with threadpool_limits(threads), compute_device(device):
        if device is not None and warm_up is not None:
            warm_up()
        start = time.perf_counter()
        result = run()
        if device is not None and torch.device(device).type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start, result


def knn_case(name: str, scale: float, fraction: float) -> dict:
    n_bank, n_query, dim, classes, dtype = KNN_SHAPES[name]
    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(classes, dim)) * 1.5
    bank = knn.knn_fit(relu_features(max(int(n_bank * scale), K), centres, rng, dtype)[0])
    share = fraction if name == "knn_imagenet" else 1.0
    queries = relu_features(max(int(n_query * scale * share), 100), centres, rng)[0]
    return {"run": lambda: knn.knn_score(bank, queries, K), "warm_up": lambda: knn.knn_score(bank, queries[:8], K),
            "extrapolate": n_query * scale / len(queries), "difference": "max |Δ squared distance|",
            "compare": lambda a, b: float(np.abs(a**2 - b**2).max()), "tolerance": 2e-5,
            "shape": f"{len(queries):,} queries × {len(bank['bank']):,} × {dim} {np.dtype(dtype).name}, k = {K}"}


def maha_data(scale: float, fit_fraction: float, fraction: float) -> dict:
    n_train, n_query, dim, classes = MAHA_SHAPE
    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(classes, dim)) * 1.5
    train, labels = relu_features(max(int(n_train * scale * fit_fraction), 2 * classes), centres, rng)
    queries = relu_features(max(int(n_query * scale * fraction), 100), centres, rng)[0]
    return {"train": train, "labels": labels, "queries": queries, "classes": classes,
            "fit_extrapolate": n_train * scale / len(train), "score_extrapolate": n_query * scale / len(queries)}


def maha_fit_case(data: dict) -> dict:
    train, labels, classes = data["train"], data["labels"], data["classes"]

    def compare(a, b):
        return float(np.abs(a["precision"] - b["precision"]).max() / np.abs(a["precision"]).max())

    return {"run": lambda: dist.maha_fit(train, labels, classes),
            "warm_up": lambda: dist.maha_fit(train[:2 * classes], labels[:2 * classes], classes),
            "extrapolate": data["fit_extrapolate"], "difference": "max |Δ precision| / max |precision|",
            "compare": compare, "tolerance": 1e-7,
            "shape": f"{len(train):,} rows × {train.shape[1]}, {classes} classes"}


def maha_score_case(data: dict, fit: dict) -> dict:
    queries = data["queries"]
    h = queries.astype(np.float64)
    # the magnitude of the terms: hᵀPh + max_k μ_kᵀPμ_k (the tolerance is relative to it)
    terms = np.einsum("ij,ij->i", h @ fit["precision"], h) + np.max(
        np.einsum("cj,cj->c", fit["means"] @ fit["precision"], fit["means"]))
    return {"run": lambda: dist.maha_score(queries, fit["means"], fit["precision"]),
            "warm_up": lambda: dist.maha_score(queries[:8], fit["means"], fit["precision"]),
            "extrapolate": data["score_extrapolate"], "difference": "max |Δ score| / (hᵀPh + max μᵀPμ)",
            "compare": lambda a, b: float(np.max(np.abs(a - b) / terms)), "tolerance": 1e-9,
            "shape": f"{len(queries):,} queries × {queries.shape[1]}, {len(fit['means'])} classes"}


def measure(name: str, case: dict, device, threads: int) -> dict:
    """Both paths of one case: times (extrapolated), ratio and the results' difference."""
    host, expected = timed(case["run"], None, threads)
    on_device, got = timed(case["run"], device, threads, case["warm_up"])
    difference = case["compare"](expected, got)
    row = {"case": name, "shape": case["shape"], "numpy_s": host * case["extrapolate"],
           "torch_s": on_device * case["extrapolate"], "speed_up": host / on_device, "difference": difference,
           "difference_kind": case["difference"], "tolerance": case["tolerance"],
           "within_tolerance": difference <= case["tolerance"]}
    print(f"| {name} | {row['shape']} | {row['numpy_s']:.1f} | {row['torch_s']:.2f} | {row['speed_up']:.1f}× | "
          f"{difference:.1e} ({case['difference']}; ≤ {case['tolerance']:.0e}: {row['within_tolerance']}) |",
          flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", help="torch device of the torch path (cpu: torch on the host)")
    ap.add_argument("--scale", type=float, default=1.0, help="all row counts × this")
    ap.add_argument("--query-fraction", type=float, default=0.05, help="share of the ImageNet queries run")
    ap.add_argument("--fit-fraction", type=float, default=0.25, help="share of the ImageNet training rows fitted")
    ap.add_argument("--block-mib", type=float, default=128, help="csf.block_mib")
    ap.add_argument("--threads", type=int, default=2, help="BLAS threads of the numpy kernels")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--out", default="benchmarks/out/gpu_kernels")
    args = ap.parse_args(argv)
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        print(f"no CUDA device visible to torch ({torch.__version__}): the GPU path is not measured; "
              "--device cpu times torch on the host, for information only", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    cases = args.cases.split(",")
    print(f"device: {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'torch on the CPU'}; "
          f"torch {torch.__version__}; block_mib {args.block_mib}; numpy on {args.threads} BLAS thread(s)\n")
    print("| case | shape | numpy s | torch s | speed-up | difference |\n|---|---|---|---|---|---|")
    rows = []
    with block_budget(args.block_mib):
        for name in (c for c in cases if c in KNN_SHAPES):
            rows.append(measure(name, knn_case(name, args.scale, args.query_fraction), device, args.threads))
        if {"maha_fit", "maha_score"} & set(cases):
            data = maha_data(args.scale, args.fit_fraction, args.query_fraction)
            fit = dist.maha_fit(data["train"], data["labels"], data["classes"])
            if "maha_fit" in cases:
                rows.append(measure("maha_fit", maha_fit_case(data), device, args.threads))
            if "maha_score" in cases:
                rows.append(measure("maha_score", maha_score_case(data, fit), device, args.threads))
    out = Path(args.out).with_suffix(".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "torch": torch.__version__, "rows": rows}, indent=1))
    return 0 if all(row["within_tolerance"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
