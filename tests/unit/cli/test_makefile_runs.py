"""The Makefile's run targets keep runs apart: a config other than the demo's runs in ``runs/<config stem>``.

``make -n`` prints the commands a target would run without running them; the lines checked are the target's
own commands that run the project's executables (``.venv/bin/...``) or print, after those of ``setup`` (the venv's
set-up and the package's byte-compilation), which every target runs first.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from csfbench.cli.init_config import default_results, make_command

from tests.helpers.repo import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


# variables that would change the defaults under test when the tests themselves run under make or a shell
# that sets them (`make test CORES=1` passes CORES through MAKEFLAGS)
_UNSET = ("CONFIG", "RESULTS", "MANIFEST", "CORES", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")


def _dry_run(target: str, *variables: str) -> list[str]:
    env = {key: value for key, value in os.environ.items() if key not in _UNSET}
    proc = subprocess.run(["make", "-n", "-C", str(REPO), target, *variables], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if not line.startswith("make")]  # "make: Entering ..."


def _commands(target: str, *variables: str) -> list[str]:
    setup, lines = _dry_run("setup", *variables), _dry_run(target, *variables)
    assert lines[:len(setup)] == setup, "the target does not run the set-up first"
    return [line for line in lines[len(setup):] if line.startswith((".venv/bin/", "echo "))]


def test_an_own_config_runs_in_runs_slash_its_stem():
    run = _commands("run", "CONFIG=x.yaml")
    config = f"--configfile {REPO / 'x.yaml'}"
    # the whole validation, ViTs built, and the run folder's check (csfbench.workflow.run_folder) first
    assert run == [f".venv/bin/csfbench validate {REPO / 'x.yaml'} --run-dir runs/x",
                   f".venv/bin/snakemake -s {REPO / 'Snakefile'} --directory runs/x {config} --cores 2",
                   ".venv/bin/csfbench summary --results runs/x/results",
                   f".venv/bin/snakemake -s {REPO / 'Snakefile'} --directory runs/x {config} "
                   "--report results/report.html",
                   f'echo "{REPO / "runs/x/results/report.html"}"']


def test_report_manifest_and_verify_follow_the_same_default():
    (report, echo) = _commands("report", "CONFIG=configs/my.v2.yaml")
    assert f"--directory runs/my.v2 --configfile {REPO / 'configs/my.v2.yaml'} --report results/report.html" in report
    assert echo == f'echo "{REPO / "runs/my.v2/results/report.html"}"'
    (write,) = _commands("manifest", "CONFIG=configs/my.v2.yaml")
    assert write == (".venv/bin/csfbench manifest write --results runs/my.v2/results --config configs/my.v2.yaml "
                     "--output runs/my.v2/results/manifest.json")
    (verify,) = _commands("verify", "CONFIG=configs/my.v2.yaml")
    assert verify == (".venv/bin/csfbench manifest verify --results runs/my.v2/results --config configs/my.v2.yaml "
                      "--manifest runs/my.v2/results/manifest.json")


def test_results_overrides_the_folder():
    run = _commands("run", "CONFIG=x.yaml", "RESULTS=/tmp/elsewhere")
    assert run[0].endswith(" --run-dir /tmp/elsewhere")
    assert "--directory /tmp/elsewhere --configfile" in run[1]
    assert run[2] == ".venv/bin/csfbench summary --results /tmp/elsewhere/results"
    assert run[-1] == 'echo "/tmp/elsewhere/results/report.html"'
    (write,) = _commands("manifest", "CONFIG=x.yaml", "RESULTS=r")
    assert "--results r/results --config x.yaml --output r/results/manifest.json" in write


@pytest.mark.parametrize("variables", [(), ("CONFIG=config/config.yaml",), ("CONFIG=./config/config.yaml",),
                                       (f"CONFIG={REPO / 'config/config.yaml'}",)])
def test_the_demo_config_keeps_the_checkouts_results(variables):
    run = _commands("run", *variables)
    assert run[0] == f".venv/bin/csfbench validate {REPO / 'config/config.yaml'} --run-dir ."
    assert f"--directory . --configfile {REPO / 'config/config.yaml'} --cores 2" in run[1]
    assert run[2] == ".venv/bin/csfbench summary --results ./results"
    assert run[-1] == f'echo "{REPO / "results/report.html"}"'


def test_init_proposes_the_makefiles_folder():
    """``csfbench init`` names the folder ``make run CONFIG=...`` uses, and adds RESULTS= only for another one."""
    config = REPO / "configs/my.v2.yaml"
    assert default_results(config) == "runs/my.v2"
    assert make_command(config, "runs/my.v2") == f"make run CONFIG={config}"
    assert make_command(config, "/tmp/r") == f"make run CONFIG={config} RESULTS=/tmp/r"
    (directory,) = {line.split("--directory ")[1].split()[0] for line in _commands("run", f"CONFIG={config}")
                    if "--directory" in line}
    assert directory == default_results(config)


def test_the_demo_validates_its_config_first_and_prints_the_reports_path_last():
    demo = _commands("demo")
    assert demo[0] == ".venv/bin/csfbench validate config/config.yaml --run-dir ."
    assert demo[1] == ".venv/bin/snakemake --cores 2 --configfile config/config.yaml"
    assert demo[-1] == f'echo "{REPO / "results/report.html"}"'
