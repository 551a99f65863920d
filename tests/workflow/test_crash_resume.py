"""Crash safety and resume: SIGKILL of a training job, of a feature extraction job and of the whole
Snakemake run, then reruns that end identical to an uninterrupted run; ``--keep-going`` after a failure.

One crashed run goes through all three kills in turn (fixture ``crashed_run``): (1) the training job is
killed once its first epoch is saved; Snakemake reports the failure and stops; (2) the rerun resumes
the training and, while it extracts features, Snakemake and its jobs are frozen (SIGSTOP, so nothing
can clean up), the extraction jobs are killed and the feature folder is inspected; then the whole
process group is killed; (3) ``--unlock`` (a killed run leaves its lock behind) and a rerun with
``--rerun-incomplete`` complete.  The uninterrupted reference is the session's shared run
(the session fixture ``reference`` of conftest.py, ``workflow_runs.reference_run``).
"""
import os
import re
import signal
import subprocess

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from csfbench.workflow import paths
from csfbench.atomic import atomic_path
from csfbench.features.store import FeatureWriter, read_features
from csfbench.workflow.manifest import build_manifest

from tests.helpers.repo import REPO, venv_bin
from tests.helpers.workflow_runs import (MODEL, SHARES_REFERENCE_RUN, SOURCE, copy_run, freeze, job_processes,
                                        snakemake, wait_for, write_config)

pytestmark = [pytest.mark.workflow, SHARES_REFERENCE_RUN]


def _start(work, config, *extra):
    cmd = [venv_bin("snakemake"), "-s", str(REPO / "Snakefile"), "--directory", str(work), "--cores", "2",
           "--configfile", str(config), *extra]
    # a session of its own: the whole run (Snakemake and every job) can be killed as one process group
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.fixture(scope="module")
def crashed_run(reference, tmp_path_factory):
    _, config = reference
    work = tmp_path_factory.mktemp("crashed")
    model_dir = work / f"results/models/{SOURCE}/{MODEL}"
    features = work / f"results/features/{SOURCE}/{MODEL}"
    seen = {}

    # (1) kill the training job once its first epoch is checkpointed
    run = _start(work, config)
    wait_for(lambda: (model_dir / "resume.pt").exists(), run, "the first training epoch")
    trainers = job_processes(run, "train.py")
    assert len(trainers) == 1, trainers
    trainers[0].send_signal(signal.SIGKILL)
    seen["train_rc"] = run.wait(timeout=600)
    seen["checkpoint_after_kill"] = (model_dir / "checkpoint.pt").exists()
    seen["resume_epoch"] = torch.load(model_dir / "resume.pt", weights_only=True)["epoch"]

    # (2) rerun; freeze everything during feature extraction, kill the extraction jobs, look, kill all
    run = _start(work, config)
    wait_for(lambda: any(features.glob(".*.h5.tmp-*")), run, "a feature file being written")
    freeze(run)
    extractors = job_processes(run, "extract_features.py")
    for proc in extractors:
        proc.send_signal(signal.SIGKILL)
    seen["n_extractors"] = len(extractors)
    seen["partial"] = sorted(p.name for p in features.glob(".*.h5.tmp-*"))
    seen["complete_after_kill"] = sorted(p.name for p in features.glob("*.h5"))
    seen["train_log"] = (work / f"results/logs/train/{SOURCE}/{MODEL}.log").read_text()
    os.killpg(run.pid, signal.SIGKILL)
    seen["snakemake_rc"] = run.wait(timeout=60)

    # (3) remove the killed run's lock, then rerun the incomplete jobs to the end
    seen["unlock_rc"] = snakemake("--unlock", "--configfile", config, workdir=work).returncode
    proc = snakemake("--cores", 2, "--configfile", config, "--rerun-incomplete", workdir=work)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return work, seen


def test_killed_training_job_resumes_from_its_last_epoch_to_a_bit_identical_checkpoint(reference, crashed_run):
    ref, _ = reference
    work, seen = crashed_run
    assert seen["train_rc"] != 0 and not seen["checkpoint_after_kill"]  # nothing that looks complete
    assert 1 <= seen["resume_epoch"] < 3
    # the rerun resumed from the saved epoch instead of starting over
    assert re.search(rf"resuming {MODEL} from stage \d+ epoch {seen['resume_epoch']}", seen["train_log"])
    path = f"results/models/{SOURCE}/{MODEL}/checkpoint.pt"
    a, b = (torch.load(root / path, weights_only=True) for root in (ref, work))
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert not (work / f"results/models/{SOURCE}/{MODEL}/resume.pt").exists()


def test_killed_feature_extraction_leaves_no_complete_looking_file(reference, crashed_run):
    ref, _ = reference
    work, seen = crashed_run
    assert seen["n_extractors"] >= 1 and seen["partial"]
    for name in seen["partial"]:
        final = re.fullmatch(r"\.(.+\.h5)\.tmp-\d+", name).group(1)
        assert final not in seen["complete_after_kill"], name  # only the hidden temporary name exists
        a, _ = read_features(ref / f"results/features/{SOURCE}/{MODEL}/{final}")
        b, _ = read_features(work / f"results/features/{SOURCE}/{MODEL}/{final}")
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{final}: {key}")
    # the rerun's writers removed the killed writers' leftovers
    assert not list(work.glob("results/**/.*.tmp-*"))


def test_killed_snakemake_reruns_incomplete_jobs_to_the_uninterrupted_results(reference, crashed_run):
    ref, config = reference
    work, seen = crashed_run
    assert seen["snakemake_rc"] == -signal.SIGKILL and seen["unlock_rc"] == 0
    expected, found = (build_manifest(root / "results", config)["files"] for root in (ref, work))
    assert found.keys() == expected.keys()
    # checkpoint, 5 feature files, 3 fits, 3 score and 3 metric files (one per fit group, covering every scored
    # set) and all that is made from them (the results table)
    assert len([path for path in found if path.endswith((".pt", ".h5", ".parquet"))]) == 1 + 5 + 3 + 3 + 3 + 1
    assert {path for path in expected if found[path] != expected[path]} == set()
    assert snakemake("-n", "--cores", 1, "--configfile", config, workdir=work).returncode == 0


def test_keep_going_finishes_independent_branches_after_a_failure(reference, tmp_path):
    ref, config = reference
    work = copy_run(ref, tmp_path / "work")
    settings = yaml.safe_load(config.read_text())
    # two new OOD sets: `digits` is fine, `broken` points at a folder that does not exist
    settings["datasets"]["broken"] = {"format": "npy", "path": "no-such-folder"}
    settings["sources"][SOURCE]["ood"].update(digits={"shift_type": "semantic", "regime": "mid"},
                                              broken={"shift_type": "semantic", "regime": "far"})
    extended = write_config(settings, tmp_path / "extended.yaml")
    before = {p: p.stat().st_mtime_ns for p in work.glob("results/**/*") if p.is_file() and "logs" not in p.parts
              and "benchmarks" not in p.parts}
    proc = snakemake("--cores", 2, "--keep-going", "--configfile", extended, workdir=work)
    assert proc.returncode != 0
    assert "dataset 'broken'" in (work / "results/logs/data/index_broken.log").read_text()
    assert re.search(r"Error in rule index_dataset", proc.stderr)
    ran = re.findall(r"^(?:local)?rule (\w+):$", proc.stderr, flags=re.M)
    # the digits branch ran as far as it can: its index and its feature file.  The model's scoring jobs (one
    # per fit group, over every evaluation set) need the broken set's features too, so they wait with the
    # aggregation; nothing that exists was redone
    assert sorted(ran) == sorted(["index_dataset"] * 2 + ["extract_features"])
    assert (work / paths.features(SOURCE, MODEL, "digits")).is_file()
    assert not (work / paths.features(SOURCE, MODEL, "broken")).exists()
    for group in ("none", "global", "class"):
        metrics = pd.read_parquet(work / paths.metrics(SOURCE, MODEL, group))
        assert not {"digits", "broken"} & set(metrics["dataset"])  # the old rows, not rescored
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_atomic_writers_remove_dead_writers_leftovers_and_keep_nothing_on_error(tmp_path):
    target = tmp_path / "f.h5"
    leftover = tmp_path / ".f.h5.tmp-999999"  # what a writer killed mid-file leaves behind
    leftover.write_bytes(b"half a file")
    other = tmp_path / ".g.h5.tmp-999999"  # another target's: not touched
    other.write_bytes(b"")
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"complete")
    assert target.read_bytes() == b"complete" and not leftover.exists() and other.exists()
    # a feature writer that fails while laying out its file leaves no file at all
    with pytest.raises(TypeError):
        FeatureWriter(tmp_path / "x.h5", 2, 3, 4, 0, False, attrs={"bad": {"a mapping": 1}})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".g.h5.tmp-999999", "f.h5"]
