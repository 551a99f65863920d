"""Aggregation at paper scale: results-table merge, model selection and every ranking analysis, in one run.

    .venv/bin/python benchmarks/aggregate.py [--config config/paper.yaml] [--scale 1.0] [--no-baseline]
                                             [--out benchmarks/out/aggregate]

A synthetic results table the size of the full grid of ``--config``: every source × model (backbone ×
paradigm × dropout × reward × run, :func:`csfbench.workflow.grid.model_ids`) × input mode (``det``; ``mcd`` for
dropout models of backbones with MC-dropout passes) × CSF variant (:func:`csfbench.csf.registry.variants_for`
over every projection variant, plus the MCD-E variants and MI in ``mcd`` mode, as the engine scores
them) × evaluation set (val, test, the source's shifted sets and, for the models of the ``shifts`` study,
their corruption and adversarial sets) × failure scheme
(:func:`csfbench.evaluation.schemes_for`) × metric (every metric of :data:`csfbench.metrics.DEFAULT_METRICS`,
an upper bound: ECE/MCE are omitted for CSFs outside [0, 1] in real runs). ``--scale`` < 1 keeps that
fraction of the runs (at least one). Values are uniform noise around a per-variant quality, so the
rankings have real structure. One parquet file per (source, model), the metric rows of every projection
group and evaluation set of the model (a real run has one file per model × group × set).

Phases, each timed (wall, ``time.perf_counter``) with its exact RSS peak (VmHWM, reset at each phase
boundary through ``/proc/self/clear_refs``; a process-wide upper bound where that is not permitted):

1. ``merge``: :func:`csfbench.aggregate.results_table.write_results_table` (read, check, sort, write);
2. ``select``: :func:`csfbench.aggregate.selection.select_configurations` (what the aggregate_results job
   writes: the selected configuration of every cell, from the validation rows);
3. ``rank``: :func:`csfbench.aggregate.ranking.rank_results`, every analysis of the config (metric group ×
   backbone × MCD flag × source × regime), including its own validation-based selection of the rows it ranks;
4. ``baseline`` (same run, same table): naive pandas — ``selected_rows`` on the whole table, then the seed
   paper's per-cell style: boolean masks on every selected row, ``pivot_table(aggfunc="mean")``, complete
   blocks, scikit-posthocs' Conover directly and networkx cliques — and a check that it finds the same
   top cliques.

Target (reported, not asserted): merge + select + rank ≤ 2 min on 2 cores. Results go to ``<out>.json``
and ``<out>.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from csfbench.aggregate.cells import Analysis, analyses, ranking_settings
from csfbench.aggregate.ranking import rank_results, ranked_rows
from csfbench.aggregate.results_table import write_results_table
from csfbench.aggregate.selection import select_configurations, selected_rows
from csfbench.workflow.grid import Grid
from csfbench.workflow.settings import load_config
from csfbench.csf.engine import EXPECTED
from csfbench.csf.registry import variants_for
from csfbench.evaluation import COLUMNS, GROUP_COLUMNS, id_role, schemes_for
from csfbench.metrics import DEFAULT_METRICS

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from csf_engine import PeakRss  # noqa: E402  (the exact per-phase RSS peaks of the engine benchmark)


class Phase:
    """Wall and process CPU time, the 1-minute load average at its end and the exact RSS peak
    (:class:`csf_engine.PeakRss`) of a ``with`` block, printed and recorded. On a shared machine the CPU
    time is the steadier figure (the wall time grows with other load)."""

    def __init__(self, name: str, record: dict, peaks: PeakRss):
        self.name, self.record, self.peaks = name, record, peaks

    def __enter__(self):
        self.peaks.begin(self.name)
        self.t0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        seconds, cpu = time.perf_counter() - self.t0, time.process_time() - self.cpu0
        self.record[self.name] = {"seconds": seconds, "cpu_seconds": cpu, "load_avg_1min": os.getloadavg()[0],
                                  **self.peaks.end(self.name)}
        print(f"{self.name:>9}: {seconds:7.1f} s wall, {cpu:7.1f} s CPU, RSS peak "
              f"{self.record[self.name]['peak_gb']:.2f} GB (load average {os.getloadavg()[0]:.1f})", flush=True)


def variant_lists(backbone: str) -> dict[str, list[tuple[str, str]]]:
    det = [(csf.name, v) for csf, v in variants_for(backbone)]
    return {"det": det, "mcd": det + [(f"E{name}", "none") for name in EXPECTED] + [("MI", "none")]}


def model_rows(config: dict, source: str, model, rng: np.random.Generator) -> pd.DataFrame:
    """Every metric row of one model (all modes, projection groups, evaluation sets)."""
    spec = config["backbones"][model.backbone]
    modes = ["det"] + (["mcd"] if model.dropout == 1 and spec.get("mcd_samples", 0) > 0 else [])
    lists = variant_lists(model.backbone)
    sets = [Grid(config).eval_set_spec(source, d, model) for d in Grid(config).eval_datasets(source, model) if d != "train"]
    cells = [(s, scheme, metric) for s in sets for scheme in schemes_for(s) for metric in DEFAULT_METRICS]
    parts = []
    for mode in modes:
        variants = lists[mode]
        n_var, n_cell = len(variants), len(cells)
        quality = (np.arange(n_var) % 17) / 17.0  # a fixed per-variant quality: structured rankings
        values = 0.1 + 0.2 * quality[:, None] + 0.3 * rng.random((n_var, n_cell))
        frame = pd.DataFrame({
            "csf": np.repeat([v[0] for v in variants], n_cell),
            "variant": np.repeat([v[1] for v in variants], n_cell),
            "dataset": np.tile([c[0].name for c in cells], n_var),
            "shift_type": np.tile([c[0].shift_type for c in cells], n_var),
            "regime": np.tile([c[0].regime for c in cells], n_var),
            "scheme": np.tile([c[1] for c in cells], n_var),
            # as csfbench.evaluation.metric_rows writes them: the set in the ID role, the set's group keys
            "id_set": np.tile([id_role(c[1]) for c in cells], n_var),
            **{key: np.tile([c[0].groups[key] for c in cells], n_var) for key in GROUP_COLUMNS},
            "split": np.tile(["val" if c[0].name == "val" else "test" for c in cells], n_var),
            "metric": np.tile([c[2] for c in cells], n_var),
            "value": values.ravel(),
        })
        frame = frame.assign(source=source, backbone=model.backbone, paradigm=model.paradigm, dropout=model.dropout,
                             reward=float(model.reward), run=model.run, mcd=mode == "mcd", tuning_protocol="none")
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)[COLUMNS]


def write_grid(config: dict, scale: float, folder: Path, seed: int = 0) -> tuple[list[Path], int]:
    rng = np.random.default_rng(seed)
    paths, n_rows = [], 0
    for source in config["sources"]:
        models = Grid(config).model_ids(source)
        for model in models:
            runs = config["backbones"][model.backbone]["runs"]
            if model.run not in runs[:max(1, round(scale * len(runs)))]:
                continue
            frame = model_rows(config, source, model, rng)
            paths.append(folder / f"{source}_{model}.parquet")
            frame.to_parquet(paths[-1], index=False)
            n_rows += len(frame)
    return paths, n_rows


def baseline_rankings(table: pd.DataFrame, config: dict, settings: dict) -> dict[str, list[str]]:
    """Naive pandas: select on the whole table, then Claros-Olivares & Brockmeier's per-cell loop (boolean masks on
    every selected row, pivot_table, Conover, cliques); returns each cell's top clique."""
    import scikit_posthocs as sp

    rows = ranked_rows(selected_rows(table), settings)
    out = {}
    for cell in analyses(config):
        mask = ((rows["backbone"] == cell.backbone) & (rows["mcd"] == cell.mcd) & (rows["source"] == cell.source)
                & (rows["cell_regime"] == cell.regime) & rows["metric"].isin(settings["metric_groups"][cell.group]))
        part = rows[mask]
        if part.empty:
            continue
        pivot = part.pivot_table(index=settings["blocks"], columns="entity", values="value", aggfunc="mean").dropna()
        if pivot.shape[0] < 2 or pivot.shape[1] < 2:
            continue
        p = sp.posthoc_conover_friedman(pivot.to_numpy())
        p.index = p.columns = pivot.columns
        ranks = pivot.rank(axis=1).mean()
        graph = nx.Graph()
        graph.add_nodes_from(pivot.columns)
        graph.add_edges_from((a, b) for a in p.index for b in p.columns if a < b and p.at[a, b] >= settings["alpha"])
        cliques = sorted(nx.find_cliques(graph), key=lambda c: (min(ranks[c]), ranks[c].mean(), -len(c), sorted(c)))
        out[cell.name] = sorted(cliques[0])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(REPO / "config/paper.yaml"))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--out", default=str(REPO / "benchmarks/out/aggregate"))
    args = parser.parse_args(argv)
    config = load_config(args.config)
    settings = ranking_settings(config.get("ranking"))
    phases: dict = {}
    peaks = PeakRss()
    with tempfile.TemporaryDirectory(prefix="csfbench-aggregate-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        paths, n_rows = write_grid(config, args.scale, folder)
        print(f"synthetic grid: {n_rows:,} metric rows in {len(paths)} files ({time.perf_counter() - t0:.0f} s)")
        with Phase("merge", phases, peaks):
            table = write_results_table(paths, folder / "results.parquet")
        size_mb = (folder / "results.parquet").stat().st_size / 1e6
    with Phase("select", phases, peaks):
        chosen = select_configurations(table)  # what the aggregate_results job writes
    cells = analyses(config)
    with Phase("rank", phases, peaks):
        results = rank_results(table, cells, settings)
    total = sum(phases[k]["seconds"] for k in ("merge", "select", "rank"))
    n_ok = sum(r["status"] == "ok" for r in results)
    agree = None
    if not args.no_baseline:
        with Phase("baseline", phases, peaks):
            base = baseline_rankings(table, config, settings)
        ours = {Analysis(**r["analysis"]).name: sorted(r["layers"][0]["members"]) for r in results if r["status"] == "ok"}
        agree = ours == base
        print(f"baseline top cliques identical to ours: {agree} ({len(base)} cells)")
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "platform": platform.platform(), "pandas": pd.__version__},
        "config": args.config, "scale": args.scale, "rows": n_rows, "files": len(paths),
        "results_parquet_mb": size_mb, "selected_configurations": len(chosen), "analyses": len(cells), "ranked": n_ok,
        "peaks_exact": peaks.exact, "phases": phases, "total_seconds": total,
        "total_cpu_seconds": sum(phases[k]["cpu_seconds"] for k in ("merge", "select", "rank")),
        "baseline_agrees": agree,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [f"# Aggregation benchmark ({report['date']})", "",
             f"{n_rows:,} metric rows in {len(paths)} files ({size_mb:.0f} MB parquet); {len(chosen):,} selected "
             f"configurations; {len(cells)} analyses, {n_ok} ranked", "", "| phase | wall s | CPU s | RSS peak GB | load avg |",
             "|---|---|---|---|---|"]
    lines += [f"| {k} | {v['seconds']:.1f} | {v['cpu_seconds']:.1f} | {v['peak_gb']:.2f} | {v['load_avg_1min']:.1f} |"
              for k, v in phases.items()]
    cpu = sum(phases[k]["cpu_seconds"] for k in ("merge", "select", "rank"))
    lines += ["", f"merge + select + rank: {total:.1f} s wall, {cpu:.1f} s CPU (target ≤ 120 s); "
              f"baseline agrees: {agree}"]
    Path(f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
