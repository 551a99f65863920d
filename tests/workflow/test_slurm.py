"""The workflow on a real single-node SLURM cluster, submitted through `--profile profiles/slurm`.

One module-scoped run: the harness (`slurm_cluster.py`) starts munged, slurmctld and slurmd; Snakemake
runs the micro config cut to one model (`workflow_runs.core_config`: demo data, dataset indexes, training
on the fake GPU, feature extraction, CSF fits, scoring, aggregation) with the SLURM profile, then a
second invocation whose dataset does not exist, so that its job fails; then the daemons are stopped.
The only options added to the profile are those a one-node cluster without accounting needs: one of
its two cores in place of the profile's 8 (`cores` and the threads of the grouped rules), `squeue` for
job status (no slurmdbd), no account, a 1 s first status check, and kept SLURM logs to inspect.

Skipped (with the reason) where slurm-wlm/munge are missing and cannot be installed (not root, no apt).
"""
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from csfbench.workflow import paths

from benchmarks.dag_scale import plan_from_dry_run  # one parser of dry-run plans for both
from tests.helpers.repo import REPO, venv_bin
from tests.helpers.slurm_cluster import PARTITION, SYSTEM_CONF, SlurmCluster, ensure_installed, unavailable_reason
from tests.helpers.workflow_runs import MODEL, SOURCE, core_config, write_config


pytestmark = pytest.mark.workflow

LOCAL_CLUSTER_OPTIONS = (
    # the profile's `cores` and grouped-rule threads (8) scaled down to one of the node's two CPUs, so
    # that two groups run side by side
    "--cores", "1", "--set-threads", "fit_csf=1", "score_csf=1", "extract_features=1",
    "--slurm-status-command", "squeue",                # no slurmdbd, so no sacct
    "--slurm-no-account",                              # no accounts without accounting
    "--slurm-init-seconds-before-status-checks", "1",
    "--slurm-keep-successful-logs",
    "--slurm-logdir", "slurm-logs",
)
TARGET = "results/results.parquet"  # the aggregation: every core stage, not the later report stages
SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.")


def snakemake_slurm(cluster, workdir, config, *args):
    cmd = [venv_bin("snakemake"), "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--profile", str(REPO / "profiles/slurm"), "--configfile", str(config), *LOCAL_CLUSTER_OPTIONS,
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=cluster.env, cwd=REPO, timeout=1500)


def job_record(cluster, slurm_id: str) -> dict[str, str]:
    """`scontrol show job` fields of a (finished) job (the harness's MinJobAge keeps it for an hour)."""
    out = cluster.run("scontrol", "show", "job", "-d", slurm_id).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"no local SLURM cluster: {reason}")
    root = tmp_path_factory.mktemp("slurm")
    ensure_installed(root / "apt.log")
    work, broken_work = root / "work", root / "broken"
    config = write_config(core_config(), root / "config.yaml")
    broken = core_config()
    broken["datasets"]["absent"] = {"format": "npy", "path": "no-such-folder"}
    broken["sources"][SOURCE]["ood"]["absent"] = {"shift_type": "semantic", "regime": "far"}
    broken_config = write_config(broken, root / "broken.yaml")
    record = {"work": work, "broken_work": broken_work}
    cluster = SlurmCluster(root / "cluster")
    record["system_conf_before"] = SYSTEM_CONF.exists() or SYSTEM_CONF.is_symlink()
    with cluster:
        t0 = time.time()
        record["proc"] = snakemake_slurm(cluster, work, config, TARGET)
        record["seconds"] = time.time() - t0
        out = record["proc"].stdout + record["proc"].stderr
        record["plan"] = plan_from_dry_run(out)  # the run prints its job table and each submission as -n does
        record["jobs"] = {sid: job_record(cluster, sid) for _, sid, _ in SUBMITTED.findall(out)}
        # (the profile's retry would only repeat the same failure)
        record["failed"] = snakemake_slurm(cluster, broken_work, broken_config, "--retries", "0",
                                           "results/data/index/absent.json")
        record["controller_log"] = cluster.controller_log()
    record["alive_after_stop"] = cluster.alive()
    record["system_conf_after"] = SYSTEM_CONF.exists() or SYSTEM_CONF.is_symlink()
    record["started"] = dict(cluster.started)
    return record


def test_micro_workflow_completes_under_slurm(slurm_run):
    proc, work = slurm_run["proc"], slurm_run["work"]
    assert proc.returncode == 0, proc.stderr[-5000:]
    results = pd.read_parquet(work / "results/results.parquet")
    assert set(results["source"]) == {SOURCE} and len(results) > 0
    for group in ("none", "global", "class"):
        # one metrics file per (model, fit group) with the rows of every scored set
        metrics = pd.read_parquet(work / paths.metrics(SOURCE, MODEL, group))
        assert {"val", "test", "near", "noise"} <= set(metrics["dataset"])
    assert (work / f"results/models/{SOURCE}/{MODEL}/checkpoint.pt").is_file()
    per_rule, submissions = slurm_run["plan"]
    print(f"SLURM run: {sum(per_rule.values())} Snakemake jobs in {submissions} SLURM jobs, "
          f"{slurm_run['seconds']:.0f} s")


def test_every_job_ran_as_a_completed_slurm_job(slurm_run):
    out = slurm_run["proc"].stdout + slurm_run["proc"].stderr
    submitted = SUBMITTED.findall(out)
    per_rule, submissions = slurm_run["plan"]
    for rule in ("demo_data", "index_dataset", "train", "extract_features", "fit_csf", "score_csf",
                 "aggregate_results"):
        assert per_rule.get(rule), f"the run does not exercise {rule}: {per_rule}"
    assert len(submitted) == submissions  # one sbatch per job or group job, none run on the head node
    ran = {}
    for _, slurm_id, log in submitted:
        job = slurm_run["jobs"][slurm_id]
        assert job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0", job
        assert job["Partition"] == PARTITION
        assert f"JobId={slurm_id} " in slurm_run["controller_log"]
        # the job's own log: the Snakemake that srun started inside the allocation ran these jobs
        for rule in re.findall(r"^localrule (\w+):", Path(log).read_text(), flags=re.M):
            ran[rule] = ran.get(rule, 0) + 1
    assert ran == per_rule  # every Snakemake job of the plan ran inside some SLURM job


def test_gpu_rules_get_the_fake_gpu(slurm_run):
    # the plugin's job comment: rule_<rule>_wildcards_<values>, or rule_<group>_<rules> for a group job
    def jobs(prefix):
        found = [job for job in slurm_run["jobs"].values() if job["Comment"].startswith(prefix)]
        assert found, (prefix, [job["Comment"] for job in slurm_run["jobs"].values()])
        return found

    for job in jobs("rule_train_wildcards") + jobs("rule_extract_"):  # training and extraction groups
        assert job["TresPerJob"] == "gres:gpu:1" and job["JOB_GRES"] == "gpu:1", job
    for job in jobs("rule_csf_") + jobs("rule_aggregate_results"):  # CSF groups and aggregation: CPU only
        assert "gpu" not in job.get("TresPerJob", "") + job.get("JOB_GRES", ""), job


def test_failing_job_is_reported_as_failed_with_its_log(slurm_run):
    proc, work = slurm_run["failed"], slurm_run["broken_work"]
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "SLURM status is: 'FAILED'" in out, out[-3000:]
    log = "results/logs/data/index_absent.log"
    assert log in out, out[-3000:]
    assert "dataset 'absent'" in (work / log).read_text()
    slurm_logs = re.findall(r"\(log: (\S+)\)", out)
    assert slurm_logs and all(Path(p).is_file() for p in slurm_logs)
    assert not (work / "results/data/index/absent.json").exists()


def test_daemons_started_by_the_harness_are_stopped(slurm_run):
    assert set(slurm_run["started"]) == {"munged", "slurmctld", "slurmd"}
    assert not any(slurm_run["alive_after_stop"].values()), slurm_run["alive_after_stop"]
    assert slurm_run["system_conf_after"] == slurm_run["system_conf_before"]  # its symlink is removed
