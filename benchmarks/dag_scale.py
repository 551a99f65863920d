"""Cost of building the DAG of the paper grid, and of a grid ten times larger, in one run.

    .venv/bin/python benchmarks/dag_scale.py [--scale 10] [--skip-large]

Runs `snakemake -n --configfile config/paper.yaml` (every job printed, as a user sees it) in an empty
working directory, then the same for a grid with `--scale` times as many runs per backbone (5 -> 50:
10x the models and jobs; the config is written to a temporary file), and a dry run of the paper grid
with `--profile profiles/slurm` to count SLURM submissions (a group job is one).  For each: Snakemake
jobs, wall time, CPU time (user + system; the honest figure on a shared machine) and peak RSS of the
Snakemake process (`wait4`'s ru_maxrss).  Cost grows no faster than linearly when CPU seconds per job
at the larger scale are within 25 % of those of the paper grid.  Target: paper grid <= 20 s of CPU on 2
cores.  Results go to benchmarks/out/dag_scale.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
LINEAR_TOLERANCE = 1.25


def plan_from_dry_run(output: str) -> tuple[dict[str, int], int]:
    """(Snakemake jobs per rule, submissions) from a dry run's printout.

    Submissions are the top-level entries (a job, or a group job with its members indented below it)
    other than the local target rule `all`.
    """
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", output, flags=re.M))
    per_rule = {rule: int(n) for rule, n in counts.items() if rule not in ("total", "all")}
    top = re.findall(r"^\[[^\]]+\](?: Group job (\w+)|\n(?:local)?rule (\w+):)", output, flags=re.M)
    return per_rule, sum(1 for group, rule in top if group or rule != "all")


def dry_run(config: Path, *extra: str) -> dict:
    """One dry run in an empty folder: jobs, submissions, wall/CPU seconds, peak RSS (MB)."""
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryFile("w+") as out:
        cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", work, "-n", "--configfile", str(config),
               *extra]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"dry run of {config} failed:\n{text[-3000:]}")
    per_rule, submissions = plan_from_dry_run(text)
    jobs = sum(per_rule.values()) + 1  # + all
    cpu = usage.ru_utime + usage.ru_stime
    return {"jobs": jobs, "per_rule": per_rule, "submissions": submissions, "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "cpu_ms_per_job": round(1000 * cpu / jobs, 3)}


def scaled_config(paper: Path, scale: int, dest: Path) -> Path:
    """The paper grid with `scale` times as many runs per backbone."""
    config = yaml.safe_load(paper.read_text())
    for backbone in config["backbones"].values():
        backbone["runs"] = list(range(1, scale * len(backbone["runs"]) + 1))
    dest.write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=REPO / "config/paper.yaml")
    parser.add_argument("--scale", type=int, default=10, help="runs multiplier of the large grid")
    parser.add_argument("--skip-large", action="store_true", help="only the paper grid")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/out/dag_scale.json")
    args = parser.parse_args(argv)
    report = {"load_average_before": os.getloadavg()}
    report["paper"] = dry_run(args.config)
    print(f"paper grid: {report['paper']}", flush=True)
    report["paper_slurm_profile"] = dry_run(args.config, "--profile", str(REPO / "profiles/slurm"))
    print(f"paper grid, SLURM profile: {report['paper_slurm_profile']}", flush=True)
    if not args.skip_large:
        with tempfile.TemporaryDirectory() as tmp:
            big = scaled_config(args.config, args.scale, Path(tmp) / "large.yaml")
            report[f"x{args.scale}"] = dry_run(big)
        large = report[f"x{args.scale}"]
        print(f"x{args.scale} grid: {large}", flush=True)
        ratio = large["cpu_ms_per_job"] / report["paper"]["cpu_ms_per_job"]
        report["cpu_per_job_ratio"] = round(ratio, 3)
        report["job_ratio"] = round(large["jobs"] / report["paper"]["jobs"], 3)
        report["at_most_linear"] = ratio <= LINEAR_TOLERANCE
    report["load_average_after"] = os.getloadavg()
    report["paper_within_20s_cpu"] = report["paper"]["cpu_s"] <= 20
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if not isinstance(v, dict)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
