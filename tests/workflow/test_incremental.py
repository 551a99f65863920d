"""Incremental reruns: Snakemake dry runs on a completed run schedule exactly the jobs a config change
affects (its job-count table is parsed).  Adding an OOD set is covered by
``test_workflow.test_adding_an_ood_set_schedules_only_its_own_jobs`` (dry run) and
``test_crash_resume.test_keep_going_finishes_independent_branches_after_a_failure`` (a real run).
"""
import pytest
import yaml

from tests.helpers.workflow_runs import SHARES_REFERENCE_RUN, scheduled_jobs, write_config


pytestmark = [pytest.mark.workflow, SHARES_REFERENCE_RUN]
UPSTREAM = ("demo_data", "index_dataset", "train", "extract_features")  # never rerun by a CSF setting
N_MODELS = 1  # the core config's model: one score_csf job per fit group scores val, test, near and noise


def _changed(config_path, tmp_path, change):
    settings = yaml.safe_load(config_path.read_text())
    change(settings)
    return write_config(settings, tmp_path / "changed.yaml")


@pytest.fixture(scope="module")
def downstream_of_fits(reference):
    """What a refit of every group schedules beyond the fits and scores (aggregation, rankings, figures)."""
    work, config = reference
    jobs = scheduled_jobs(work, config, "--forcerun", "fit_csf")
    assert jobs.pop("fit_csf") == 3 and jobs.pop("score_csf") == 3 * N_MODELS
    assert jobs["aggregate_results"] == 1 and all(rule not in jobs for rule in UPSTREAM)
    return jobs


@pytest.mark.parametrize("change, groups", [
    # KPCA RecError exists only in the projected groups: the `none` fit is not redone
    (lambda c: c["csf"]["search_space"]["KPCA RecError"].update(n_landmarks=[100, 150]), 2),
    # GEN has a variant in every group
    (lambda c: c["csf"].setdefault("fixed", {}).update(GEN={"gamma": 0.3}), 3),
], ids=["kpca-landmarks", "gen-gamma"])
def test_a_csf_hyperparameter_reruns_only_its_fits_scores_metrics_and_aggregation(
        reference, downstream_of_fits, tmp_path, change, groups):
    work, config = reference
    jobs = scheduled_jobs(work, _changed(config, tmp_path, change))
    assert all(rule not in jobs for rule in UPSTREAM), jobs  # no training, no feature extraction
    # one fit per affected group; its scoring job (scores and metric rows of every scored set); then the aggregation
    assert jobs.pop("fit_csf") == groups and jobs.pop("score_csf") == groups * N_MODELS
    assert jobs["aggregate_results"] == 1 and set(jobs) <= set(downstream_of_fits)
    if groups == 3:  # every group refitted: the same as a forced refit of all fits
        assert jobs == downstream_of_fits


def test_dropping_a_projection_group_refits_nothing(reference, downstream_of_fits, tmp_path):
    work, config = reference
    jobs = scheduled_jobs(work, _changed(config, tmp_path, lambda c: c["csf"].update(groups=["none", "global"])))
    # the other groups' fits and scores stay valid; the aggregation sees fewer metric files
    assert jobs["aggregate_results"] == 1 and set(jobs) <= set(downstream_of_fits)


@pytest.fixture(scope="module")
def everything(reference, tmp_path_factory):
    """Every job of the workflow: what a dry run schedules in an empty folder."""
    _, config = reference
    jobs = scheduled_jobs(tmp_path_factory.mktemp("empty"), config)
    assert jobs["demo_data"] == 1 and jobs["train"] == 1
    return jobs


def test_changing_the_demo_seed_reruns_everything(reference, everything, tmp_path):
    work, config = reference
    changed = _changed(config, tmp_path, lambda c: c["demo"].update(seed=c["demo"]["seed"] + 1))
    assert scheduled_jobs(work, changed) == everything


def test_changing_the_global_seed_retrains_without_regenerating_data(reference, everything, tmp_path):
    work, config = reference
    jobs = scheduled_jobs(work, _changed(config, tmp_path, lambda c: c.update(seed=c["seed"] + 1)))
    # the model seeds derive from it; the demo data have their own seed and are kept
    assert jobs == {rule: n for rule, n in everything.items() if rule not in ("demo_data", "index_dataset")}
