"""Distance-controlled AUROC (``csfbench.analysis.distance``; Yang, Zhang & Russakovsky, "ImageNet-OOD:
Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024, §4.2) at that paper's scale,
against a plain blocked numpy nearest-neighbour search, in one run.

    .venv/bin/python benchmarks/distance_controlled_auroc.py [--scale 1.0] [--dim 2048] [--bins 100]
        [--csfs 4] [--rounds 1] [--seed 0] [--out benchmarks/out/distance_controlled_auroc]

Data (float32, standard normal, seeded): the reference set of ``50,000 × scale`` rows (ImageNet-1K
val) and one query set of ``31,802 × scale`` rows (ImageNet-OOD), ``--dim`` features (2,048: the
PASS ResNet-50's width); per CSF (``--csfs``, the paper's four: MSP, Energy, ViM, ReAct) random
confidences for the reference rows (the positives) and the query rows.

Sides, each in a process of its own (data through ``/dev/shm``), ``--rounds`` times in ABBA order:

* ``ours`` — ``nearest_neighbour_distance(query, reference, return_index=True)`` (exact, blocked,
  float32 product, float64 distance of the chosen pair), then ``distance_controlled_auroc``
  (100 equal-count bins, per-bin AUROC against all reference scores, OLS with SEs) for every CSF;
* ``baseline`` — the plain blocked numpy search: per block of 1,024 queries
  ``‖q‖² − 2 q·Rᵀ + ‖r‖²`` in float32, ``argmin``, ``sqrt``; numpy's default (multi-threaded) BLAS.

Per side: the wall time of the search (and, for ``ours``, of the binning/fits and the total), its
CPU time (steadier than wall time on a machine shared with other jobs), the process's resident-set
peak (VmHWM; the kernel's high-water mark is reset after the data are loaded where
``/proc/self/clear_refs`` allows, so ``peak_above_data`` is the work's own memory) and the resident
set after loading.  At small ``--scale`` fixed costs weigh (the first ``map_row_blocks`` call looks
up the BLAS libraries through threadpoolctl, ~0.1 s), so ratios there overstate the steady cost.  Ratio = ours ÷ baseline (median over rounds; ≤ 1: ours no slower);
agreement = the largest relative difference between the two sides' distances and the share of
equal nearest indices.  Target (reported, not asserted): ≤ 8 GB peak.  Results go to ``<out>.json``
and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# as the Snakefile sets for every job, before numpy loads OpenBLAS (see csf_engine.py)
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np

from bench_memory import proc_status, reset_peak
from scipy.spatial.distance import cdist

N_REFERENCE, N_QUERY = 50_000, 31_802
CSFS = ("MSP", "Energy", "ViM", "ReAct", "KNN", "MaxLogit", "Mahalanobis", "ASH-B")
GB = 1e9
BASELINE_BLOCK = 1024


def make_data(folder: Path, scale: float, dim: int, n_csfs: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_ref, n_query = max(100, round(N_REFERENCE * scale)), max(100, round(N_QUERY * scale))
    np.save(folder / "reference.npy", rng.standard_normal((n_ref, dim), dtype=np.float32))
    np.save(folder / "query.npy", rng.standard_normal((n_query, dim), dtype=np.float32))
    np.save(folder / "id_scores.npy", rng.standard_normal((n_csfs, n_ref)))
    np.save(folder / "query_scores.npy", rng.standard_normal((n_csfs, n_query)) - 0.5)
    return {"n_reference": n_ref, "n_query": n_query, "dim": dim, "csfs": list(CSFS[:n_csfs])}


def baseline_search(query: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plain blocked numpy nearest neighbour: squared distances by the expansion, argmin, sqrt."""
    ref_sq = np.einsum("ij,ij->i", reference, reference)
    distance = np.empty(len(query))
    index = np.empty(len(query), dtype=np.int64)
    for start in range(0, len(query), BASELINE_BLOCK):
        q = query[start:start + BASELINE_BLOCK]
        d2 = np.einsum("ij,ij->i", q, q)[:, None] - 2.0 * (q @ reference.T) + ref_sq[None, :]
        nearest = np.argmin(d2, axis=1)
        index[start:start + BASELINE_BLOCK] = nearest
        distance[start:start + BASELINE_BLOCK] = np.sqrt(np.maximum(d2[np.arange(len(q)), nearest], 0.0))
    return distance, index


def child(side: str, folder: Path, n_bins: int) -> None:
    if side == "ours":  # imported before the clock starts (pandas, scipy: about 1 s)
        from csfbench.analysis.distance import distance_controlled_auroc, nearest_neighbour_distance
    reference = np.load(folder / "reference.npy")
    query = np.load(folder / "query.npy")
    id_scores = np.load(folder / "id_scores.npy")
    query_scores = np.load(folder / "query_scores.npy")
    csfs = json.loads((folder / "meta.json").read_text())["csfs"]
    rss_loaded = proc_status("VmRSS:")
    exact = reset_peak()
    out: dict = {"side": side, "rss_after_load": rss_loaded, "peak_exact": exact}
    t0, c0 = time.perf_counter(), time.process_time()
    if side == "ours":
        distance, index = nearest_neighbour_distance(query, reference, return_index=True)
        t1 = time.perf_counter()
        bins, fits = distance_controlled_auroc(dict(zip(csfs, id_scores)),
                                               {"query": (distance, dict(zip(csfs, query_scores)))}, n_bins)
        t2 = time.perf_counter()
        out.update(search_s=t1 - t0, bins_fits_s=t2 - t1, total_s=t2 - t0, n_bin_rows=len(bins),
                   slopes=fits["slope"].round(6).tolist())
    else:
        distance, index = baseline_search(query, reference)
        t2 = time.perf_counter()
        out.update(search_s=t2 - t0, total_s=t2 - t0)
    out.update(cpu_s=time.process_time() - c0, peak_rss=proc_status("VmHWM:"))
    out["peak_above_data"] = out["peak_rss"] - rss_loaded if exact else None
    np.save(folder / f"{side}_distance.npy", distance)
    np.save(folder / f"{side}_index.npy", index)
    print(json.dumps(out))


def run_side(side: str, folder: Path, n_bins: int) -> dict:
    cmd = [sys.executable, __file__, "--child", side, "--data", str(folder), "--bins", str(n_bins)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 50,000 × 31,802 rows")
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--bins", type=int, default=100)
    parser.add_argument("--csfs", type=int, default=4, choices=range(1, len(CSFS) + 1))
    parser.add_argument("--rounds", type=int, default=1, help="ABBA rounds (each runs both sides twice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/out/distance_controlled_auroc")
    parser.add_argument("--child", choices=("ours", "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.data), args.bins)
        return

    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=shm, prefix="dcauroc-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        meta = make_data(folder, args.scale, args.dim, args.csfs, args.seed)
        (folder / "meta.json").write_text(json.dumps(meta))
        print(f"data: {meta['n_reference']:,} reference × {meta['n_query']:,} query × {args.dim} float32 "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        runs: dict[str, list[dict]] = {"ours": [], "baseline": []}
        for _ in range(args.rounds):
            for side in ("ours", "baseline", "baseline", "ours"):
                result = run_side(side, folder, args.bins)
                runs[side].append(result)
                print(f"  {side:8s} search {result['search_s']:7.2f} s  total {result['total_s']:7.2f} s  "
                      f"peak {result['peak_rss'] / GB:5.2f} GB", flush=True)
        ours_d, base_d = np.load(folder / "ours_distance.npy"), np.load(folder / "baseline_distance.npy")
        ours_i, base_i = np.load(folder / "ours_index.npy"), np.load(folder / "baseline_index.npy")
        agreement = {"max_rel_diff": float(np.max(np.abs(ours_d - base_d) / np.maximum(base_d, 1e-30))),
                     "same_index": float(np.mean(ours_i == base_i))}
        # where the two picked different neighbours: each side's distance over the float64 exact minimum
        differ = np.flatnonzero(ours_i != base_i)
        agreement["n_different_index"] = int(differ.size)
        if differ.size:
            reference = np.load(folder / "reference.npy", mmap_mode="r")
            query = np.load(folder / "query.npy", mmap_mode="r")
            # scipy's cdist: float64 differences, no expansion
            exact = cdist(np.asarray(query[differ[:20]], np.float64), np.asarray(reference, np.float64)).min(axis=1)
            agreement["ours_excess_max"] = float(np.max(ours_d[differ[:20]] / exact - 1))
            agreement["baseline_excess_max"] = float(np.max(base_d[differ[:20]] / exact - 1))

    def median(side: str, key: str) -> float:
        return float(np.median([r[key] for r in runs[side]]))

    summary = {
        "ours_search_s": median("ours", "search_s"), "ours_bins_fits_s": median("ours", "bins_fits_s"),
        "ours_total_s": median("ours", "total_s"), "baseline_s": median("baseline", "search_s"),
        "ours_peak_gb": max(r["peak_rss"] for r in runs["ours"]) / GB,
        "baseline_peak_gb": max(r["peak_rss"] for r in runs["baseline"]) / GB,
        "data_rss_gb": median("ours", "rss_after_load") / GB,
    }
    summary["ours_cpu_s"], summary["baseline_cpu_s"] = median("ours", "cpu_s"), median("baseline", "cpu_s")
    summary["ratio_total"] = summary["ours_total_s"] / summary["baseline_s"]
    summary["ratio_cpu"] = summary["ours_cpu_s"] / summary["baseline_cpu_s"]  # steadier on a shared machine
    summary["ratio_search"] = summary["ours_search_s"] / summary["baseline_s"]
    above = [r["peak_above_data"] for side in runs for r in runs[side] if r["peak_above_data"] is not None]
    if above:
        summary["ours_peak_above_data_gb"] = max(r["peak_above_data"] for r in runs["ours"]) / GB
        summary["baseline_peak_above_data_gb"] = max(r["peak_above_data"] for r in runs["baseline"]) / GB
    record = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "args": vars(args), "data": meta,
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "numpy": np.__version__,
                          "python": platform.python_version()},
              "summary": summary, "agreement": agreement, "runs": runs}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(record, indent=2))
    lines = [
        f"# Distance-controlled AUROC ({meta['n_reference']:,} × {meta['n_query']:,} × {args.dim}, "
        f"{len(meta['csfs'])} CSFs, {args.bins} bins; {os.cpu_count()} CPUs, {record['date']})", "",
        "| side | search (s) | bins + OLS (s) | total (s) | CPU (s) | peak RSS (GB) |", "|---|---|---|---|---|---|",
        f"| ours | {summary['ours_search_s']:.2f} | {summary['ours_bins_fits_s']:.3f} | "
        f"{summary['ours_total_s']:.2f} | {summary['ours_cpu_s']:.2f} | {summary['ours_peak_gb']:.2f} |",
        f"| baseline (plain blocked numpy NN) | {summary['baseline_s']:.2f} | — | {summary['baseline_s']:.2f} | "
        f"{summary['baseline_cpu_s']:.2f} | {summary['baseline_peak_gb']:.2f} |", "",
        f"Ratio ours ÷ baseline (wall): total {summary['ratio_total']:.3f}, search alone "
        f"{summary['ratio_search']:.3f}; CPU time {summary['ratio_cpu']:.3f}. "
        f"Data resident after loading: {summary['data_rss_gb']:.2f} GB. Agreement: max relative distance "
        f"difference {agreement['max_rel_diff']:.2e}, same nearest index {100 * agreement['same_index']:.3f} %.",
    ]
    if agreement["n_different_index"]:
        lines.append(f"Queries whose nearest indices differ: {agreement['n_different_index']} (up to 20 checked): "
                     f"distance over the float64 exact minimum, ours ≤ {agreement['ours_excess_max']:.1e}, "
                     f"baseline ≤ {agreement['baseline_excess_max']:.1e} (relative).")
    if "ours_peak_above_data_gb" in summary:
        lines.append(f"Peak above the loaded data: ours {summary['ours_peak_above_data_gb']:.2f} GB, baseline "
                     f"{summary['baseline_peak_above_data_gb']:.2f} GB.")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
