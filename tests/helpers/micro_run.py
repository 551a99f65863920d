"""One finished micro-config workflow run per pytest process, shared by the workflow-level test files."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.repo import REPO, venv_bin


MICRO = REPO / "tests/config/micro.yaml"
#: the mark of the test files that read the shared micro run (:func:`finished_micro_run`): one unit of work of a
#: parallel run (tests/conftest.py), so that the run is made once
SHARES_MICRO_RUN = pytest.mark.xdist_group("micro-run")
_RUNS: dict[str, tuple[Path, float]] = {}


def snakemake(*args, workdir, timeout=900):
    cmd = [venv_bin("snakemake"), "-s", str(REPO / "Snakefile"), "--directory", str(workdir), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def finished_micro_run(tmp_path_factory) -> tuple[Path, float]:
    """(work directory, seconds) of the micro workflow run to completion; run once, then reused."""
    if "micro" not in _RUNS:
        workdir = tmp_path_factory.mktemp("micro_shared")
        t0 = time.time()
        proc = snakemake("--cores", 2, "--configfile", MICRO, workdir=workdir, timeout=1800)
        assert proc.returncode == 0, proc.stderr[-5000:]
        _RUNS["micro"] = (workdir, time.time() - t0)
    return _RUNS["micro"]
