"""Cost of building the DAG of the paper grid, against a plain Snakefile and a grid ten times larger.

    .venv/bin/python benchmarks/dag_scale.py [--rounds 2] [--scale 10] [--skip-large]

Runs `snakemake -n --configfile config/paper.yaml` (every job printed, as a user sees it) in an empty
working directory.  From its per-rule job counts it writes a plain Snakefile in a temporary folder
(`write_plain_snakefile`: the same rule names with the same number of jobs each, every job one output
file named by its wildcards, no input or params functions, no scripts, conda environments, resources or
logs; each rule's jobs depend on one job of the previous rule, and `all` collects the outputs no later
job consumes) and dry-runs it the same way (same flags, from the repository, so that the workflow
profile profiles/default applies to both).  The two dry runs alternate for `--rounds` rounds; each
figure is the median over the rounds, and each run records the 1-minute load average when it starts.
Then a dry run of the paper grid with `--profile profiles/slurm` counts SLURM submissions (a group job
is one), and one of a grid with `--scale` times as many runs per backbone (5 -> 50: 10x the models and
jobs; the config is written to a temporary file).  For each: Snakemake jobs, wall time, CPU time (user
+ system; the honest figure on a shared machine) and peak RSS of the Snakemake process (`wait4`'s
ru_maxrss).

Targets: the paper grid's CPU within 1.5x that of the plain Snakefile measured in the same run
(`cpu_ratio_vs_plain`, `within_target`), and <= 20 s of CPU on 2 cores (`paper_within_20s_cpu`).  Cost
grows no faster than linearly when CPU seconds per job at the larger scale are within 25 % of those of
the paper grid (`at_most_linear`).  Results go to benchmarks/out/dag_scale.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
LINEAR_TOLERANCE = 1.25
PLAIN_CPU_TARGET = 1.5  # paper grid CPU / plain Snakefile CPU


def plan_from_dry_run(output: str) -> tuple[dict[str, int], int]:
    """(Snakemake jobs per rule, submissions) from a dry run's printout.

    Submissions are the top-level entries (a job, or a group job with its members indented below it)
    other than the local target rule `all`.
    """
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", output, flags=re.M))
    per_rule = {rule: int(n) for rule, n in counts.items() if rule not in ("total", "all")}
    top = re.findall(r"^\[[^\]]+\](?: Group job (\w+)|\n(?:local)?rule (\w+):)", output, flags=re.M)
    return per_rule, sum(1 for group, rule in top if group or rule != "all")


def dry_run(config: Path | None, *extra: str, snakefile: Path = REPO / "Snakefile") -> dict:
    """One dry run of `snakefile` (with `config`, if given) in an empty folder: jobs, submissions,
    wall/CPU seconds, peak RSS (MB) and the 1-minute load average at its start."""
    configfile = ["--configfile", str(config)] if config is not None else []
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryFile("w+") as out:
        cmd = [SNAKEMAKE, "-s", str(snakefile), "--directory", work, "-n", *configfile, *extra]
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"dry run of {snakefile} ({config}) failed:\n{text[-3000:]}")
    per_rule, submissions = plan_from_dry_run(text)
    jobs = sum(per_rule.values()) + 1  # + all
    cpu = usage.ru_utime + usage.ru_stime
    return {"jobs": jobs, "per_rule": per_rule, "submissions": submissions, "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "cpu_ms_per_job": round(1000 * cpu / jobs, 3), "load_average_1min": round(load, 2)}


def write_plain_snakefile(per_rule: dict[str, int], folder: Path) -> Path:
    """A plain Snakefile with `per_rule[rule]` jobs of each rule, written to `folder`; returns its path.

    The rules form a chain in the order of `per_rule` (a dry run prints them roughly upstream first).
    Job i of the k-th rule depends on job i mod n of the previous rule (n jobs).  Its id is the parent's
    id, `~`, the rule's tag (k in letters: Snakemake refuses a periodic wildcard such as 0~0~0...) and i,
    so the dependency lies in the file names alone, without input functions: the one output is
    `<rule>/{parent}~<tag>{i}.out` (the first rule's `<rule>/a{i}.out`), the input
    `<previous rule>/{parent}.out`.  `all` (a local rule) collects, from targets.json, every output that
    no job of the next rule consumes, so every job is needed.  No params, scripts, conda environments,
    resources or logs: what a dry run of as many jobs costs Snakemake itself.
    """
    rules = list(per_rule.items())

    def tag(k: int) -> str:
        return (tag(k // 26 - 1) if k >= 26 else "") + chr(ord("a") + k % 26)

    ids: list[list[str]] = []  # per rule, its jobs' ids
    for k, (_, n) in enumerate(rules):
        ids.append([f"{ids[-1][i % len(ids[-1])]}~{tag(k)}{i}" if ids else f"{tag(k)}{i}" for i in range(n)])
    targets = [f"{rule}/{job}.out"
               for k, (rule, n) in enumerate(rules)
               for job in ids[k][min(n, rules[k + 1][1]) if k + 1 < len(rules) else 0:]]
    (folder / "targets.json").write_text(json.dumps(targets))
    lines = ["import json", "", "localrules: all", "", "rule all:",
             f"    input: json.load(open({str(folder / 'targets.json')!r}))"]
    for k, (rule, _) in enumerate(rules):
        lines += ["", f"rule {rule}:"]
        if k == 0:
            lines += [f'    output: "{rule}/{tag(k)}{{i}}.out"']
        else:
            lines += [f'    input: "{rules[k - 1][0]}/{{parent}}.out"',
                      f'    output: "{rule}/{{parent}}~{tag(k)}{{i}}.out"']
        lines += ['    wildcard_constraints: parent=r"[a-z]+\\d+(~[a-z]+\\d+)*", i=r"\\d+"',
                  '    shell: "touch {output}"']
    snakefile = folder / "Snakefile"
    snakefile.write_text("\n".join(lines) + "\n")
    return snakefile


def median_run(runs: list[dict]) -> dict:
    """One figure of repeated dry runs of one Snakefile: wall, CPU and peak RSS the medians over `runs`,
    with every run's CPU seconds and load average; jobs and plan as the runs found them (all alike)."""
    median = {key: value for key, value in runs[0].items() if key != "load_average_1min"}
    for key in ("wall_s", "cpu_s", "peak_rss_mb"):
        median[key] = round(statistics.median(run[key] for run in runs), 2)
    median["cpu_ms_per_job"] = round(1000 * median["cpu_s"] / median["jobs"], 3)
    median["rounds_cpu_s"] = [run["cpu_s"] for run in runs]
    median["rounds_load_average_1min"] = [run["load_average_1min"] for run in runs]
    return median


def paper_against_plain(config: Path, rounds: int) -> tuple[list[dict], list[dict]]:
    """`rounds` dry runs of the workflow with `config`, each followed by one of the plain Snakefile of
    the plan of the first (written to a temporary folder); the two kinds of run alternate."""
    real_runs, plain_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(1, rounds + 1):
            real_runs.append(dry_run(config))
            if round_ == 1:
                plain = write_plain_snakefile(real_runs[0]["per_rule"], Path(tmp))
            plain_runs.append(dry_run(None, snakefile=plain))
            for run in (real_runs[-1], plain_runs[-1]):
                if run["per_rule"] != real_runs[0]["per_rule"]:
                    raise RuntimeError(f"round {round_} planned {run['per_rule']}, "
                                       f"not {real_runs[0]['per_rule']}")
            print(f"round {round_}: paper grid {real_runs[-1]['cpu_s']} s CPU, plain Snakefile "
                  f"{plain_runs[-1]['cpu_s']} s CPU ({real_runs[-1]['jobs']} jobs each)", flush=True)
    return real_runs, plain_runs


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
    parser.add_argument("--rounds", type=int, default=2,
                        help="alternating dry runs of the paper grid and of the plain Snakefile (medians)")
    parser.add_argument("--scale", type=int, default=10, help="runs multiplier of the large grid")
    parser.add_argument("--skip-large", action="store_true", help="only the paper grid")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/out/dag_scale.json")
    args = parser.parse_args(argv)
    report = {"load_average_before": os.getloadavg()}
    real_runs, plain_runs = paper_against_plain(args.config, max(args.rounds, 1))
    report["paper"] = median_run(real_runs)
    report["plain"] = median_run(plain_runs)
    print(f"paper grid: {report['paper']}", flush=True)
    print(f"plain Snakefile: {report['plain']}", flush=True)
    report["cpu_ratio_vs_plain"] = round(report["paper"]["cpu_s"] / report["plain"]["cpu_s"], 3)
    report["plain_cpu_target"] = PLAIN_CPU_TARGET
    report["within_target"] = report["cpu_ratio_vs_plain"] <= PLAIN_CPU_TARGET
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
