"""The rules' jobs (csfbench.workflow.jobs) on the experiment grid, the decisions rules/common.smk used to make:
tested on the demo config and small edits of it, against values worked out by hand from the config."""
from __future__ import annotations

import copy
import json

import pytest

from csfbench.errors import ConfigError
from csfbench.workflow import paths
from csfbench.workflow.grid import OPTIONAL_STAGES, stage_enabled
from csfbench.workflow.jobs import Jobs, same_file
from csfbench.workflow.settings import load_yaml, validate_config
from tests.helpers.repo import REPO

DEMO = load_yaml(REPO / "config/config.yaml")


def grid(**sections) -> Jobs:
    """The demo config's grid with top-level ``sections`` replaced (None removes one)."""
    config = copy.deepcopy(DEMO)
    for name, value in sections.items():
        if value is None:
            config.pop(name, None)
        else:
            config[name] = value
    return Jobs(validate_config(config))


def test_every_optional_stage_has_the_same_switch():
    demo = grid()
    assert all(demo.enabled(stage) for stage in OPTIONAL_STAGES)  # the demo runs every stage
    for stage in OPTIONAL_STAGES:
        assert not stage_enabled({}, stage)  # an absent section: no jobs
    # written with enabled: false, a stage has no jobs but its settings are still checked
    off = grid(projnorm={**DEMO["projnorm"], "enabled": False}, geometry={**DEMO.get("geometry", {}), "enabled": False})
    assert off.projnorm_outputs() == off.projnorm_metric_files() == off.nc_tables() == []
    with pytest.raises(ConfigError, match="projnorm/iterations"):
        grid(projnorm={"enabled": False, "iterations": 0})
    # conformal and analyses: absent = off; written = on
    absent = grid(conformal=None, analyses=None, ranking={"metric_groups": {"augrc": ["augrc"]}})
    assert absent.conformal_outputs() == absent.conformal_metric_files() == absent.analysis_outputs() == []
    assert grid(conformal={"methods": ["dkwm", "mc_gamma0", "mc_search"]}).enabled("conformal")


def test_models_sets_and_the_files_of_rule_all():
    demo = grid()
    models = demo.models("demo10")
    assert models[0] == "vgg13_confidnet_do1_rew0_run1" and len(models) == len(set(models))
    sets = demo.eval_datasets("demo10", models[0])
    assert sets[:3] == ["train", "val", "test"] and sets[3:7] == list(DEMO["sources"]["demo10"]["ood"])
    assert demo.scored_datasets("demo10", models[0]) == sets[1:]
    # one feature file per (model, evaluation set), one metrics file per (model, fit group) plus the extra stages
    n_features = sum(len(demo.eval_datasets(s, m)) for s, m in demo.iter_models())
    targets = demo.all_targets()
    assert len(targets["features"]) == n_features == len(set(targets["features"]))
    n_models = len(list(demo.iter_models()))
    # per model: its fit groups and the network-pass CSFs; per ensemble: its own CSFs and those slots' member means
    n_ensembles = len(list(demo.iter_ensembles()))
    assert n_ensembles == 1 and demo.ensemble_scorers == ["ensemble", *demo.fit_groups, "network"]
    assert len(targets["metrics"]) == (n_models + n_ensembles) * (len(demo.fit_groups) + 1) + n_ensembles \
        + len(demo.projnorm_sources())
    assert targets["results"] == [paths.results_table()]


def test_job_inputs_name_the_files_of_the_jobs_they_depend_on():
    demo = grid()
    model = demo.models("demo10")[0]
    inputs = demo.score_inputs("demo10", model, "global")
    assert inputs["fit"] == paths.csf_fit("demo10", model, "global")
    assert inputs["features"] == [paths.features("demo10", model, d) for d in demo.scored_datasets("demo10", model)]
    assert json.loads(demo.score_eval_sets_json("demo10", model))[0]["name"] == "val"
    # the ID splits are read through the source's dataset index, a catalogue set through its own
    assert demo.eval_set_images("demo10", model, "test") == {"index": paths.dataset_index("demo10")}
    assert demo.eval_set_images("demo10", model, "near") == {"index": paths.dataset_index("near10")} or \
        list(demo.eval_set_images("demo10", model, "near")) == ["index"]
    fit = demo.csf_fit_config("none", "demo10")
    assert "groups" not in fit and "projection" not in fit["fixed"]


def test_the_workflow_weights_are_recognised_by_resolved_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert same_file("results/x/../pretrain/vit.pth", "./results/pretrain/vit.pth")
    assert same_file("results/a.pth", str(tmp_path / "results/a.pth"))
    assert not same_file("results/a.pth", "results/b.pth")
    demo = grid()
    produced = demo.pretrained_vit_file()
    spelled = "./" + produced.replace("/", "//", 1)  # another spelling of the same file
    assert demo._workflow_weights(spelled) == {"weights": spelled}
    assert demo._workflow_weights("my/own/weights.pth") == {}
    assert grid(pretrain=None)._workflow_weights(produced) == {}


def test_conformal_bands_carry_their_settings_as_numbers():
    demo = grid()
    conformal = validate_config(copy.deepcopy(DEMO))["conformal"]
    n_cal, delta = conformal["calibration"]["n_cal"], conformal["delta"][0]
    metric_bands = demo.conformal_metric_bands()
    assert [(m, d) for m, d, _ in metric_bands] == [(m, d) for m in conformal["methods"] for d in conformal["delta"]]
    method, _, path = metric_bands[0]
    wildcards = dict(n=str(n_cal), delta=str(delta), method=method, n_mc=str(conformal["n_mc"]),
                     seed=str(conformal["seed"]))
    assert paths.conformal_band(**wildcards) == path
    assert json.loads(demo.conformal_band_json(**wildcards)) == {
        "method": method, "n": n_cal, "delta": delta, "n_mc": conformal["n_mc"], "seed": conformal["seed"]}
    report = demo.conformal_report_bands()
    assert len(report) == len(conformal["methods"]) * (1 + len(conformal["figure"]["band_sizes"]))
    assert report[0][2] == path  # the figure's band is the metric rows' band
    with pytest.raises(ValueError, match="not a band file"):
        demo.conformal_band_json(**{**wildcards, "n": "7"})


def test_proximity_and_analyses_follow_their_stages():
    demo = grid()
    semantic = [n for n, e in DEMO["sources"]["demo10"]["ood"].items() if e["shift_type"] == "semantic"]
    assert demo.semantic_sets("demo10") == semantic
    assert "demo10" in demo.proximity_sources()
    inputs = demo.analysis_inputs("demo10")
    assert inputs["embeddings"] == paths.proximity_embeddings("demo10")
    assert inputs["scores"] == [paths.scores("demo10", m, "none") for m in demo.models("demo10")]
    no_proximity = grid(proximity=None)
    assert no_proximity.proximity_sources() == [] and "embeddings" not in no_proximity.analysis_inputs("demo10")
    without_none = copy.deepcopy(DEMO)
    without_none["csf"]["groups"] = ["global", "class"]
    without_none["figures"]["rc_curves"]["csfs"] = ["Maha global"]  # the demo draws fit group none's CSFs
    without_none["conformal"]["figure"] = {"csf": "Maha global"}
    assert Jobs(validate_config(without_none)).analysis_sources() == []  # the analyses read fit group none


def test_the_figure_selections_are_checked_before_the_dag():
    bad = copy.deepcopy(DEMO)
    bad["figures"]["rc_curves"]["csfs"] = ["MSR", "KNN global"]
    bad["csf"]["groups"] = ["none"]
    with pytest.raises(ConfigError, match="'figures/rc_curves/csfs'.*fit group 'global'"):
        validate_config(bad)
    bad = copy.deepcopy(DEMO)
    bad["figures"]["clique_map_group"] = "augrcc"
    with pytest.raises(ConfigError, match="'figures/clique_map_group'.*did you mean 'augrc'"):
        validate_config(bad)
