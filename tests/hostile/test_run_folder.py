"""`make run RESULTS=<a folder of the user's>` is refused before the DAG: `csfbench validate CONFIG --run-dir DIR`
accepts a new or empty folder (and marks it), or this config's own run folder; any other folder that holds files
is refused with a message naming it and what to do, and nothing is written into it.

Probe (before the fix): ``make run CONFIG=my.yaml RESULTS=~/project`` validated the config and ran Snakemake
in ``~/project``; a dry run showed it would overwrite ``~/project/results/results.parquet``.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess

import pytest
import yaml

from csfbench import cli
from csfbench.workflow.run_folder import MARKER, RunFolderError, check_run_folder, claim_run_folder
from csfbench.workflow.settings import load_yaml
from tests.helpers.repo import REPO


@pytest.fixture(scope="module")
def config_text():
    """tests/config/micro.yaml without its ViT (validated in about a second: nothing to build)."""
    config = copy.deepcopy(load_yaml(REPO / "tests/config/micro.yaml"))
    for section in ("backbones", "training"):
        del config[section]["vit"]
    for source in config["sources"].values():
        del source["image_size"]["vit"]
    del config["pretrain"], config["proximity"], config["ensembles"]
    return yaml.safe_dump(config)


@pytest.fixture
def config(tmp_path, config_text):
    path = tmp_path / "my.yaml"
    path.write_text(config_text)
    return path


@pytest.fixture
def user_folder(tmp_path):
    """A folder of the user's that holds a results table of its own."""
    folder = tmp_path / "project"
    (folder / "results").mkdir(parents=True)
    (folder / "results/results.parquet").write_bytes(b"the user's own table")
    (folder / "notes.txt").write_text("mine\n")
    return folder


def _validate(capsys, *argv):
    code = cli.main(["validate", *map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_users_folder_is_refused_and_left_untouched(capsys, config, user_folder):
    before = _snapshot(user_folder)
    code, out, err = _validate(capsys, config, "--run-dir", user_folder)
    assert code == 2 and out == ""
    assert err == (f"csfbench: error: {user_folder}: an existing folder that is not a csfbench run folder (it holds "
                   f"notes.txt, results and no {MARKER}); the run would write {user_folder / 'results'} there and "
                   f"overwrite the files of the same names; if it holds an earlier run of {config} (made before "
                   f"csfbench marked its run folders), take it over with `csfbench validate {config} --run-dir "
                   f"{user_folder} --adopt`; otherwise choose a new or empty folder with RESULTS=\n")
    assert _snapshot(user_folder) == before


def test_a_folder_without_workflow_files_gets_no_adopt_advice(tmp_path, config):
    folder = tmp_path / "photos"
    folder.mkdir()
    for i in range(7):
        (folder / f"img{i}.png").write_bytes(b"")
    with pytest.raises(RunFolderError) as err:
        check_run_folder(folder, config)
    assert "(it holds img0.png, img1.png, img2.png, img3.png, img4.png and 2 more and no" in str(err.value)
    assert "--adopt" not in str(err.value)


def test_a_new_folder_is_created_marked_and_accepted_again(capsys, tmp_path, config):
    folder = tmp_path / "runs/my"
    code, out, _ = _validate(capsys, config, "--run-dir", folder)
    assert code == 0
    assert out.splitlines()[-1] == f"{folder}: the run folder of {config} ({MARKER})"
    assert json.loads((folder / MARKER).read_text()) == {"format": "csfbench-run/1", "config": str(config.resolve())}
    (folder / "results").mkdir()  # what the run writes
    (folder / ".snakemake").mkdir()
    assert _validate(capsys, config, "--run-dir", folder)[0] == 0  # a rerun of the same config


def test_another_configs_run_folder_is_refused(capsys, tmp_path, config, config_text):
    folder = tmp_path / "runs/my"
    assert _validate(capsys, config, "--run-dir", folder)[0] == 0
    other = tmp_path / "other.yaml"
    other.write_text(config_text)
    code, _, err = _validate(capsys, other, "--run-dir", folder)
    assert code == 2
    assert err == (f"csfbench: error: {folder}: this is the run folder of {config.resolve()} (its {MARKER}), not of "
                   f"{other}; run {other} in a folder of its own (RESULTS=another folder), or run "
                   f"{config.resolve()} there\n")


def test_an_empty_folder_and_one_holding_only_the_config_are_accepted(capsys, tmp_path, config_text):
    empty = tmp_path / "empty"
    empty.mkdir()
    inside = tmp_path / "run"
    inside.mkdir()
    config = inside / "my.yaml"
    config.write_text(config_text)
    assert _validate(capsys, config, "--run-dir", empty)[0] == 0
    assert _validate(capsys, config, "--run-dir", inside)[0] == 0
    # a config inside its run folder is recorded relative to it: the folder can be moved
    assert json.loads((inside / MARKER).read_text())["config"] == "my.yaml"
    moved = tmp_path / "moved"
    shutil.move(inside, moved)
    check_run_folder(moved, moved / "my.yaml")


def test_the_checkout_is_the_demo_configs_run_folder_only(tmp_path, config):
    check_run_folder(REPO, REPO / "config/config.yaml")  # make demo, make run with the demo config (RESULTS=.)
    with pytest.raises(RunFolderError, match=f"^{REPO}: this is the run folder of {REPO / 'config/config.yaml'}"):
        check_run_folder(REPO, config)


def test_adopt_takes_over_an_unmarked_run_but_not_another_configs(capsys, tmp_path, config, config_text, user_folder):
    code, out, _ = _validate(capsys, config, "--run-dir", user_folder, "--adopt")
    assert code == 0 and f"{user_folder}: the run folder of {config}" in out
    assert (user_folder / MARKER).is_file()
    other = tmp_path / "other.yaml"
    other.write_text(config_text)
    assert _validate(capsys, other, "--run-dir", user_folder, "--adopt")[0] == 2


def test_an_invalid_config_claims_nothing(capsys, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("seed: [\n")
    folder = tmp_path / "new"
    assert _validate(capsys, config, "--run-dir", folder)[0] == 2
    assert not folder.exists()


@pytest.mark.parametrize("content, found", [("{not json", "not a readable run-folder marker"),
                                            ('{"config": 3}', "expected a run-folder marker of format")])
def test_a_broken_marker_is_named(tmp_path, config, content, found):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / MARKER).write_text(content)
    with pytest.raises(RunFolderError, match=f"^{folder / MARKER}: {found}"):
        check_run_folder(folder, config)


def test_a_file_is_not_a_run_folder(tmp_path, config):
    path = tmp_path / "results.txt"
    path.write_text("")
    with pytest.raises(RunFolderError, match="the run folder is a file, not a folder"):
        check_run_folder(path, config)


def test_adopt_needs_a_run_dir(capsys, config):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["validate", str(config), "--adopt"])
    assert exit_.value.code == 2
    assert "--adopt takes over the folder of --run-dir DIR, which is missing" in capsys.readouterr().err


def test_claiming_an_unwritable_folder_is_an_error_naming_it(tmp_path, config):
    parent = tmp_path / "file"
    parent.write_text("")
    with pytest.raises(RunFolderError, match=f"^{parent / 'run'}: cannot create the run folder or its {MARKER}"):
        claim_run_folder(parent / "run", config)


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_make_run_stops_before_snakemake_in_a_users_folder(config, user_folder):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    # `-o setup`: the venv is taken as it is (no pip, no byte-compilation)
    proc = subprocess.run(["make", "-C", str(REPO), "-o", "setup", "run", f"CONFIG={config}", f"RESULTS={user_folder}"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0
    assert f"csfbench: error: {user_folder}: an existing folder that is not a csfbench run folder" in proc.stderr
    assert "snakemake" not in proc.stdout.split("csfbench validate", 1)[1]
    assert not (user_folder / ".snakemake").exists() and not (user_folder / MARKER).exists()
