"""A small workflow run shared by the crash, incremental-rerun and manifest tests.

The config is the micro config cut to its core stages (one Deep Gamblers VGG-13 with 3 epochs, two OOD
sets, three CSF fit groups, no network-pass CSFs): 24 jobs instead of the full micro grid (demo data, 3 dataset indexes, 1 training,
5 feature files, 3 fits, 3 scoring jobs, the aggregation, 6 ranking/figure jobs and `all`), so that the tests that need
several runs stay within a few minutes.  The uninterrupted reference run happens once per pytest
session (its folder lives under the session's base temporary directory) and is only ever read.
"""
from __future__ import annotations

import re
import shutil
import signal
import time
from pathlib import Path

import psutil
import pytest
import yaml

from csfbench.workflow.settings import load_config

from tests.helpers.micro_run import MICRO, snakemake

#: the mark of the test files that use the session fixture ``reference`` (:func:`reference_run`): one unit of work
#: of a parallel run (tests/conftest.py), so that the run is made once
SHARES_REFERENCE_RUN = pytest.mark.xdist_group("reference-run")
MODEL = "vgg13_dg_do1_rew2.2_run1"
SOURCE = "demo10"
CORE_KEYS = ("seed", "data_root", "demo", "datasets", "sources", "backbones", "training", "features", "csf",
             "resources")


def core_config(**changes) -> dict:
    """The micro config cut to the core stages (see the module docstring), with top-level ``changes``."""
    micro = yaml.safe_load(MICRO.read_text())
    config = {key: micro[key] for key in CORE_KEYS}
    config["backbones"] = {"vgg13": dict(micro["backbones"]["vgg13"], paradigms=["dg"], dropout=[1], runs=[1])}
    config["training"] = {"vgg13": micro["training"]["vgg13"]}
    config["training"]["vgg13"]["dg"] = {"epochs": 3, "pretrain_epochs": 1}
    config["network_csf"] = {"methods": []}  # the network-pass CSFs are checked on the full micro run
    config.update(changes)
    return config


def write_config(config: dict, path: Path) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    load_config(path)  # a change that breaks the schema fails here, not inside Snakemake
    return path


def reference_run(root: Path) -> tuple[Path, Path]:
    """(work folder, config file) of an uninterrupted run of the core config under ``root`` (the
    session fixture ``reference`` of conftest.py makes it once per session)."""
    config = write_config(core_config(), root / "config.yaml")
    proc = snakemake("--cores", 2, "--configfile", config, workdir=root / "work")
    assert proc.returncode == 0, proc.stderr[-5000:]
    return root / "work", config


def copy_run(work: Path, dest: Path) -> Path:
    """A copy of a finished run (results and Snakemake's metadata, modification times kept)."""
    shutil.copytree(work, dest, symlinks=True)
    return dest


def scheduled_jobs(work: Path, config: Path, *extra) -> dict[str, int]:
    """Jobs per rule that a dry run of ``config`` in ``work`` schedules (empty when nothing is to be done)."""
    proc = snakemake("-n", "--quiet", "rules", "--cores", 1, "--configfile", config, *extra, workdir=work)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    counts = {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M) if rule != "total"}
    if not counts:
        assert "Nothing to be done" in out, out[-3000:]
    return counts


def wait_for(condition, proc, what: str, timeout: float = 600) -> None:
    """Poll ``condition`` every 20 ms while ``proc`` runs."""
    deadline = time.time() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}: {proc.stderr.read()[-3000:] if proc.stderr else ''}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def job_processes(proc, script: str) -> list[psutil.Process]:
    """The running Python processes of a Snakemake run that execute ``workflow_scripts/{script}``."""
    found = []
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if any(arg.endswith(f".{script}") or arg.endswith(f"/{script}") for arg in child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def freeze(proc) -> None:
    """SIGSTOP a Snakemake run (main process first, then every descendant) so that it cannot clean up."""
    main = psutil.Process(proc.pid)
    main.send_signal(signal.SIGSTOP)
    for child in main.children(recursive=True):
        try:
            child.send_signal(signal.SIGSTOP)
        except psutil.NoSuchProcess:
            continue
