"""Temperature as a choice (fitted T or T = 1) and the two tuning protocols (Bayesian optimisation of validation
−AUGRC, grid search by validation AUROC against an OOD validation set), checked against hand computations.

Claros-Olivares & Brockmeier fit T on validation and tune by Bayesian optimisation; ICONIC-444 (Krumpl,
Avenhaus & Possegger, arXiv 2601.10802) and ImageNet-OOD (Yang, Zhang & Russakovsky, ICLR 2024) run the logit
scores at T = 1, and ICONIC-444 grid-searches its Table 7 grids on the ID and an OOD validation set.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import json

import h5py
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from csfbench.metrics import DEFAULT_METRICS
from csfbench.csf.engine import TuningSettings, fit_mode, flavours, score_mode, tuning_protocols
from csfbench.csf.fit_settings import FitSettings
from csfbench.csf.knn import knn_fit, knn_score
from csfbench.csf.logit_methods import gen_grid
from csfbench.csf.logit_scores import energy, softmax
from csfbench.csf.logit_scores import gen as gen_score
from csfbench.csf.projection import GROUPS, project
from csfbench.csf.registry import ALIASES, BY_NAME, base_name, flavour_name, grid_points
from csfbench.csf.store import read_fit, write_fit
from csfbench.csf.tuning import WORST, grid_search
from csfbench.errors import ConfigError
from csfbench.evaluation import BOOTSTRAP_COLUMNS, COLUMNS
from csfbench.workflow.grid import Grid
from csfbench.workflow.settings import load_config, schema_default, validate_config
from csfbench.stages.csf import fit_csf, score_csf

from tests.helpers.csf_synthetic import FIXED, make_splits
from tests.unit.stages.test_csf_jobs import CSF_CFG, SETS, SPEC, write_feature_file

BOTH = ("fitted", "one")
# every tunable parameter fixed except those a test searches
FIXED_BUT = {name: params for name, params in FIXED.items() if name not in ("KNN", "GEN")}


def _tuning(**kwargs) -> TuningSettings:
    return TuningSettings(init_points=1, n_iter=0, seed=1, **{"fixed": FIXED, **kwargs})


def _ood_val(passes: int = 0):
    """An OOD validation split distinct from the evaluated OOD set (another draw of the generator)."""
    other, _ = make_splits(passes=passes, seed=7)
    return dataclasses.replace(other["ood"], dataset="ood_val")


# ---------------------------------------------------------------------------------------------
# temperatures
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("group", GROUPS)
def test_mls_at_t1_is_the_max_logit_and_at_the_fitted_t_the_max_logit_over_t(group):
    splits, ctx = make_splits()
    fitted = fit_mode(group, splits["train"], splits["val"], ctx, _tuning(temperatures=BOTH))
    scores = score_mode(splits["test"], fitted, ctx)
    variant = {"none": "none", "global": "global", "class": "class_avg"}[group]
    if group == "global":
        logits = project(splits["test"].features, fitted.projection["mean"], fitted.projection["basis"]) @ ctx.weight.T
    elif group == "none":
        logits = splits["test"].logits
    else:
        logits = None  # the class-projected logits: checked through the fitted T below
    t = fitted.temperatures[variant]
    assert t != pytest.approx(1.0, abs=1e-3)  # the synthetic model is not calibrated at T = 1
    if logits is not None:
        np.testing.assert_allclose(scores[("MLS@T1", variant)], logits.max(1), rtol=1e-12)
        np.testing.assert_allclose(scores[("MLS", variant)], logits.max(1) / t, rtol=1e-12)
    np.testing.assert_allclose(scores[("MLS", variant)] * t, scores[("MLS@T1", variant)], rtol=1e-10)
    # the flavours are fitted once each, under their own names, with what they ran at recorded
    assert fitted.csfs[("MLS@T1", variant)].temperature == "one"
    assert fitted.csfs[("MLS", variant)].temperature == "fitted"


def test_softmax_and_energy_scores_at_t1_use_unit_temperature_and_declared_aliases_hold():
    splits, ctx = make_splits()
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, _tuning(temperatures=BOTH))
    scores = score_mode(splits["test"], fitted, ctx)
    z = splits["test"].logits
    np.testing.assert_allclose(scores[("MSR@T1", "none")], softmax(z, 1.0).max(1), rtol=1e-12)
    np.testing.assert_allclose(scores[("Energy@T1", "none")], energy(z, 1.0), rtol=1e-12)
    t = fitted.temperatures["none"]
    np.testing.assert_allclose(scores[("MSR", "none")], softmax(z, t).max(1), rtol=1e-12)
    # MSR at T = 1 is MSP and Energy at T = 1 is EBO: declared registry aliases, not silent duplicates
    for a, b in ((("MSR@T1", "none"), ("MSP", "none")), (("Energy@T1", "none"), ("EBO", "none"))):
        assert (a, b) in ALIASES
        # MSP adds float32 exponentials in float64 (logit_scores._shifted_exp_sums); MSR@T1 reads the float64
        # probabilities
        np.testing.assert_allclose(scores[a], scores[b], rtol=1e-6)
    assert not np.allclose(scores[("MSR", "none")], scores[("MSR@T1", "none")])


def test_t1_flavours_carry_distinct_names_and_the_default_adds_none():
    splits, ctx = make_splits()
    default = set(score_mode(splits["test"], fit_mode("none", splits["train"], splits["val"], ctx, _tuning()), ctx))
    assert not any("@" in name for name, _ in default)
    only_one = set(score_mode(splits["test"], fit_mode("none", splits["train"], splits["val"], ctx,
                                                        _tuning(temperatures=("one",))), ctx))
    temperature_csfs = {c.name for c in BY_NAME.values() if c.uses_temperature} - {"KPCA RecError"}  # no `none`
    assert {(f"{n}@T1", "none") for n in temperature_csfs} <= only_one
    assert not {(n, "none") for n in temperature_csfs} & only_one
    # CSFs that read no temperature keep their bare name at any temperature setting
    assert {("KNN", "none"), ("MSP", "none"), ("NNGuide", "none")} <= default & only_one
    both = set(score_mode(splits["test"], fit_mode("none", splits["train"], splits["val"], ctx,
                                                    _tuning(temperatures=BOTH)), ctx))
    assert both == default | only_one and len(both) == len(default) + len(temperature_csfs)
    assert flavour_name("GEN", "one", "grid") == "GEN@T1@grid" and base_name("EGEN@T1@grid") == "EGEN"


def test_kpca_landmarks_at_t1_use_the_unit_temperature_energy():
    splits, ctx = make_splits()
    fitted = fit_mode("global", splits["train"], splits["val"], ctx, _tuning(temperatures=BOTH))
    state = {t: fitted.csfs[(name, "global")].state
             for t, name in (("fitted", "KPCA RecError"), ("one", "KPCA RecError@T1"))}
    assert fitted.base_temperature != pytest.approx(1.0, abs=1e-3)
    assert state["fitted"].keys() == state["one"].keys()
    # the same training rows, different landmark sets (lowest energies at T vs at 1)
    assert any(not np.array_equal(state["fitted"][k], state["one"][k]) for k in state["one"])


def test_mcd_expected_scores_and_mutual_information_at_t1():
    splits, ctx = make_splits(passes=3)
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, _tuning(temperatures=BOTH))
    scores = score_mode(splits["test"], fitted, ctx)
    passes = splits["test"].pass_logits
    np.testing.assert_allclose(scores[("EMLS@T1", "none")], passes.max(2).mean(1), rtol=1e-12)
    np.testing.assert_allclose(scores[("EMSR@T1", "none")], softmax(passes, 1.0).max(2).mean(1), rtol=1e-12)
    p = softmax(passes, 1.0)
    mean = p.mean(1)
    mi = -(-(mean * np.log(mean)).sum(1) + (p * np.log(p)).sum(2).mean(1))
    np.testing.assert_allclose(scores[("MI@T1", "none")], mi, rtol=1e-9, atol=1e-12)
    assert ("MI", "none") in scores and not np.allclose(scores[("MI", "none")], scores[("MI@T1", "none")])


# D = 128 > NeCo's 100 components: with D <= 100 NeCo keeps every direction and is the max logit, MLS@T1
@pytest.mark.parametrize("kwargs", [{"dim": 128}, {"passes": 3, "dim": 128}, {"backbone": "vit", "dim": 128}])
def test_no_two_flavours_give_identical_scores_unless_declared_aliases(kwargs):
    splits, ctx = make_splits(**kwargs)
    scores: dict = {}
    for group in GROUPS:
        fitted = fit_mode(group, splits["train"], splits["val"], ctx, _tuning(temperatures=BOTH))
        for name in ("test", "ood"):
            for key, conf in score_mode(splits[name], fitted, ctx).items():
                scores.setdefault(key, []).append(conf)
    scores = {key: np.concatenate(parts) for key, parts in scores.items()}
    identical = [(a, b) for a, b in itertools.combinations(sorted(scores), 2)
                 if np.allclose(scores[a], scores[b], rtol=1e-9, atol=1e-12)
                 and (a, b) not in ALIASES and (b, a) not in ALIASES]
    assert not identical, identical


# ---------------------------------------------------------------------------------------------
# tuning protocols
# ---------------------------------------------------------------------------------------------

def test_grid_search_visits_every_point_and_keeps_the_first_best():
    space = {"k": (1, 100, "int"), "gamma": (0.0, 1.0, "float"), "m": (1, 9, "int")}
    values = {(1, 0.5): 0.2, (2, 0.5): 0.7, (3, 0.5): 0.7, (1, 0.9): 0.1, (2, 0.9): ValueError, (3, 0.9): 0.3}

    def objective(p):
        assert p["m"] == 4 and isinstance(p["k"], int)  # the held parameter, ints truncated
        v = values[(p["k"], p["gamma"])]
        if v is ValueError:
            raise ValueError("degenerate")
        return v

    best, probed, targets = grid_search(objective, {"k": (1.9, 2, 3), "gamma": (0.5, 0.9)}, space, {"m": 4.7})
    assert best == {"m": 4, "k": 2, "gamma": 0.5}  # (2, 0.5) and (3, 0.5) tie: the first in product order
    # product over the sorted names (gamma, k): gamma varies slowest
    np.testing.assert_array_equal(probed, [[0.5, 1], [0.5, 2], [0.5, 3], [0.9, 1], [0.9, 2], [0.9, 3]])
    np.testing.assert_array_equal(targets, [0.2, 0.7, 0.7, 0.1, WORST, 0.3])
    with pytest.raises(ValueError, match="empty"):
        grid_search(objective, {"k": ()}, space)


def _sklearn_auroc(id_conf, ood_conf):
    return roc_auc_score(np.r_[np.ones(len(id_conf)), np.zeros(len(ood_conf))], np.r_[id_conf, ood_conf])


def test_a_neighbour_search_fits_once_and_searches_once_per_split_for_the_whole_k_grid(monkeypatch):
    from csfbench.csf import knn, registry

    splits, ctx = make_splits()
    grid = {"KNN": {"k": [1, 3, 10, 30, 100]}}
    fits, searches = [], []
    fit, search = registry.knn_fit, knn._search
    monkeypatch.setattr(registry, "knn_fit", lambda *args: fits.append(1) or fit(*args))
    monkeypatch.setattr(knn, "_search", lambda *args: searches.append((len(args[1]), args[2], args[3]))
                        or search(*args))
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, _tuning(fixed=FIXED_BUT, protocols=("grid",),
                      grids=grid), frozenset({"KNN"}), _ood_val())
    assert fitted.csfs[("KNN@grid", "none")].probed[:, 0].tolist() == grid["KNN"]["k"]
    # one fit for the five points; one search of k = 100 (kept sorted) per split: validation and OOD validation
    assert len(fits) == 1
    assert searches == [(len(splits["val"].features), 100, True), (len(_ood_val().features), 100, True)]


def test_a_search_that_varies_a_fit_parameter_shares_no_neighbour_search(monkeypatch):
    # NNGuide's Bayesian search probes α (the bank's sampling ratio) as well as k: every probe refits the bank, so
    # the engine enters no shared search and each probe searches its own k alone (kept: False)
    from csfbench.csf import nnguide

    splits, ctx = make_splits()
    calls = []
    top_sums = nnguide._top_sums
    monkeypatch.setattr(nnguide, "_top_sums", lambda *args: calls.append(args[3]) or top_sums(*args))
    fixed = {name: params for name, params in FIXED.items() if name != "NNGuide"}
    tuning = TuningSettings(init_points=2, n_iter=1, seed=1, fixed=fixed)
    fit_mode("none", splits["train"], splits["val"], ctx, tuning, frozenset({"NNGuide"}))
    assert len(calls) >= 3 and not any(calls)


def test_grid_protocol_picks_the_grid_point_with_the_best_validation_auroc():
    splits, ctx = make_splits()
    ood_val = _ood_val()
    grid = {"KNN": {"k": [1, 3, 10, 30, 100]}}
    tuning = _tuning(fixed=FIXED_BUT, protocols=("bayes", "grid"), grids=grid)
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, tuning, frozenset({"KNN", "GEN"}), ood_val)
    # independently: fit on train, score val and the OOD validation split, sklearn's AUROC per k
    state = knn_fit(splits["train"].features)
    aurocs = [_sklearn_auroc(knn_score(state, splits["val"].features, k), knn_score(state, ood_val.features, k))
              for k in grid["KNN"]["k"]]
    item = fitted.csfs[("KNN@grid", "none")]
    assert item.protocol == "grid" and item.params == {"k": grid["KNN"]["k"][int(np.argmax(aurocs))]}
    np.testing.assert_allclose(item.objectives, aurocs, rtol=1e-12)
    np.testing.assert_array_equal(item.probed[:, 0], grid["KNN"]["k"])
    assert fitted.csfs[("KNN", "none")].protocol == "bayes"  # side by side: the seed paper's search
    # GEN's published grid, M truncated to <= C (ICONIC-444 Table 7): every point probed, AUROC by sklearn
    gen = fitted.csfs[("GEN@grid", "none")]
    points = gen_grid(ctx.n_classes)
    assert grid_points(BY_NAME["GEN"], ctx) == points and max(points["m"]) <= ctx.n_classes
    assert len(gen.objectives) == len(points["m"]) * len(points["gamma"])
    t = fitted.temperatures["none"]
    expected = {(g, m): _sklearn_auroc(gen_score(softmax(splits["val"].logits, t), m, g),
                                       gen_score(softmax(ood_val.logits, t), m, g))
                for g, m in itertools.product(points["gamma"], points["m"])}
    np.testing.assert_allclose(gen.objectives, list(expected.values()), rtol=1e-12)
    assert (gen.params["gamma"], gen.params["m"]) == max(expected, key=expected.get)


def test_a_parameter_pinned_by_fixed_is_held_by_the_bayesian_search_too():
    """GEN with m fixed and gamma free: every Bayesian probe (and the choice) keeps the pinned m."""
    splits, ctx = make_splits()
    fixed = {**FIXED_BUT, "GEN": {"m": 3}}
    fitted = fit_mode("none", splits["train"], splits["val"], ctx,
                      TuningSettings(init_points=3, n_iter=2, seed=1, fixed=fixed), frozenset({"GEN"}))
    item = fitted.csfs[("GEN", "none")]
    assert item.protocol == "bayes" and item.params["m"] == 3 and len(item.objectives) == 5
    assert len(set(item.probed[:, 0])) == 5  # the free gamma is searched (the only free dimension)


def test_protocol_flavours_follow_the_settings():
    def names(csf, **kwargs):
        return [f.name(csf) + ":" + f.protocol for f in flavours(BY_NAME[csf], _tuning(fixed={}, **kwargs))]

    assert names("KNN") == ["KNN:bayes"] and names("MSR") == ["MSR:none"]
    assert names("KNN", protocols=("bayes", "grid")) == ["KNN:bayes", "KNN@grid:grid"]
    assert names("KNN", protocols=("grid",)) == ["KNN@grid:grid"]
    # REN has no published grid: tuned by Bayesian optimisation under any protocol, unless a grid is given
    assert names("REN", protocols=("grid",)) == ["REN:bayes"]
    assert names("REN", protocols=("grid",), grids={"REN": {"m": [2], "gamma": [0.5]}}) == ["REN@grid:grid"]
    assert names("GEN", protocols=("bayes", "grid"), temperatures=BOTH) == [
        "GEN:bayes", "GEN@grid:grid", "GEN@T1:bayes", "GEN@T1@grid:grid"]
    assert [f.protocol for f in flavours(BY_NAME["KNN"], _tuning(protocols=("grid",)))] == ["fixed"]  # k pinned
    with pytest.raises(ValueError, match="temperatures"):
        _tuning(temperatures=("two",))
    with pytest.raises(ValueError, match="protocols"):
        _tuning(protocols=("random",))


def test_the_grid_protocol_needs_an_ood_validation_split_that_is_not_an_id_split():
    splits, ctx = make_splits()
    tuning = _tuning(protocols=("grid",))
    with pytest.raises(ValueError, match="OOD validation split"):
        fit_mode("none", splits["train"], splits["val"], ctx, tuning, frozenset({"KNN"}))
    with pytest.raises(ValueError, match="not the ID split 'test'"):
        fit_mode("none", splits["train"], splits["val"], ctx, tuning, frozenset({"KNN"}), splits["test"])


def test_fit_file_round_trip_keeps_flavour_temperature_and_protocol(tmp_path):
    splits, ctx = make_splits(passes=3)
    tuning = _tuning(fixed=FIXED_BUT, temperatures=BOTH, protocols=("bayes", "grid"), grids={"KNN": {"k": [2, 8]}})
    fitted = fit_mode("global", splits["train"], splits["val"], ctx, tuning, None, _ood_val(passes=3))
    write_fit(tmp_path / "fit.h5", {"mcd": fitted}, (ctx.weight, ctx.bias), {"model": "m", "group": "global",
                                                                             "quirks": "strict"})
    back, _, _ = read_fit(tmp_path / "fit.h5")
    for key, item in fitted.csfs.items():
        got = back["mcd"].csfs[key]
        assert (got.csf, got.temperature, got.protocol) == (item.csf, item.temperature, item.protocol), key
    assert back["mcd"].temperature_choices == BOTH and back["mcd"].projection_protocol == "fixed"
    assert fitted.csfs[("GEN@T1@grid", "global")].protocol == "grid"
    before, after = score_mode(splits["ood"], fitted, ctx), score_mode(splits["ood"], back["mcd"], ctx)
    assert before.keys() == after.keys()
    for key in before:
        np.testing.assert_array_equal(before[key], after[key])
    protocols = tuning_protocols(back["mcd"], after)
    assert protocols[("GEN@grid", "global")] == "grid" and protocols[("GEN", "global")] == "bayes"
    assert protocols[("MLS@T1", "global")] == "none" and protocols[("NNGuide", "global")] == "fixed"


# ---------------------------------------------------------------------------------------------
# the jobs: fit attributes and the tuning_protocol column of the metric rows
# ---------------------------------------------------------------------------------------------

def test_jobs_record_the_protocol_in_the_fit_and_in_every_metric_row(tmp_path):
    splits, ctx = make_splits(passes=3)
    splits["ood_val"] = _ood_val(passes=3)
    files = {name: write_feature_file(tmp_path / f"{name}.h5", split, ctx) for name, split in splits.items()}
    cfg = copy.deepcopy(CSF_CFG)
    cfg["methods"] = ["MSR", "MLS", "KNN", "NNGuide", "EBO"]
    cfg["temperatures"] = list(BOTH)
    cfg["fixed"] = {"NNGuide": FIXED["NNGuide"]}
    cfg["tuning"].update(protocols=["bayes", "grid"], grids={"KNN": {"k": [2, 8, 32]}}, ood_validation="ood_val")
    fit = tmp_path / "fit.h5"
    fit_csf(SPEC, FitSettings.from_config(cfg), "none", files["train"], files["val"], fit, files["ood_val"])
    with h5py.File(fit, "r") as fh:
        assert fh.attrs["ood_validation"] == "ood_val" and json.loads(fh.attrs["tuning_protocols"]) == ["bayes", "grid"]
        for mode in ("det", "mcd"):
            assert fh[f"{mode}/csf/KNN@grid/none"].attrs["tuning_protocol"] == "grid"
            assert fh[f"{mode}/csf/KNN@grid/none"].attrs["csf"] == "KNN"
            assert fh[f"{mode}/csf/MLS@T1/none"].attrs["temperature"] == "one"
            assert fh[f"{mode}/csf/NNGuide/none"].attrs["tuning_protocol"] == "fixed"
    names = ("val", "test", "ood")
    score_csf(SPEC, [SETS[n] for n in names], fit, {n: files[n] for n in names}, tmp_path / "scores.h5",
              tmp_path / "metrics.parquet", DEFAULT_METRICS)
    rows = pd.read_parquet(tmp_path / "metrics.parquet")
    assert list(rows.columns) == COLUMNS + BOOTSTRAP_COLUMNS and rows["tuning_protocol"].notna().all()
    protocol = rows.groupby("csf")["tuning_protocol"].agg(set).to_dict()
    assert protocol == {"KNN": {"bayes"}, "KNN@grid": {"grid"}, "NNGuide": {"fixed"}, "MSR": {"none"},
                        "MSR@T1": {"none"}, "MLS": {"none"}, "MLS@T1": {"none"}, "EBO": {"none"},
                        "EMSR": {"none"}, "EMSR@T1": {"none"}, "EMLS": {"none"}, "EMLS@T1": {"none"},
                        "MI": {"none"}, "MI@T1": {"none"}}
    # the OOD validation set is never evaluated
    assert "ood_val" not in set(rows["dataset"])


def test_the_grid_protocol_job_refuses_a_missing_ood_validation_file(tmp_path):
    splits, ctx = make_splits(passes=3)
    files = {name: write_feature_file(tmp_path / f"{name}.h5", splits[name], ctx) for name in ("train", "val")}
    cfg = copy.deepcopy(CSF_CFG)
    cfg["methods"] = ["KNN"]
    cfg["tuning"].update(protocols=["grid"], ood_validation="ood_val")
    with pytest.raises(ValueError, match="OOD validation set 'ood_val'"):
        fit_csf(SPEC, FitSettings.from_config(cfg), "none", files["train"], files["val"], tmp_path / "fit.h5")


# ---------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(repo):
    return load_config(repo / "config/config.yaml")


def _with_ood_validation(demo, name="noise", protocols=("bayes", "grid")):
    """The demo with ``noise`` taken out of demo10's evaluation sets and made its OOD validation set."""
    config = copy.deepcopy(demo)
    config["sources"]["demo10"]["ood"] = {k: v for k, v in config["sources"]["demo10"]["ood"].items() if k != "noise"}
    config["csf"]["tuning"]["protocols"] = list(protocols)
    config["csf"]["tuning"]["ood_validation"] = {source: name for source in config["sources"]}
    for source in config["sources"]:
        if source != "demo10":  # a dataset the source does not evaluate (pretrain20 reads the pretraining set)
            config["csf"]["tuning"]["ood_validation"][source] = "digits" if source == "pretrain20" else "pretrain"
    return config


def test_defaults_are_the_seed_papers_and_live_in_the_schema(demo):
    assert schema_default("csf/temperatures") == ["fitted"] and schema_default("csf/tuning/protocols") == ["bayes"]
    assert demo["csf"]["tuning"]["ood_validation"] == {} and demo["csf"]["tuning"]["grids"] == {}
    cut = Grid(demo).csf_fit_config("none", "demo10")
    assert cut["tuning"]["ood_validation"] is None and cut["tuning"]["protocols"] == ["bayes"]


def test_the_ood_validation_set_is_extracted_for_the_fit_and_never_evaluated(demo):
    config = validate_config(_with_ood_validation(demo))
    assert Grid(config).ood_validation_set("demo10") == "noise"
    assert "noise" not in Grid(config).eval_datasets("demo10")
    spec = Grid(config).eval_set_spec("demo10", "noise")
    assert spec.shift_type == "semantic" and spec.dataset.name == "noise"
    assert Grid(config).used_splits("noise") == [config["datasets"]["noise"]["split"]]
    assert Grid(config).csf_fit_config("none", "demo10")["tuning"]["ood_validation"] == "noise"
    # without the grid protocol the entry is not read
    bayes = validate_config(_with_ood_validation(demo, protocols=("bayes",)))
    assert Grid(bayes).ood_validation_set("demo10") is None
    assert Grid(bayes).csf_fit_config("none", "demo10")["tuning"]["ood_validation"] is None


@pytest.mark.parametrize("edit, fragments", [
    (lambda c: c["csf"].update(temperatures=["fitted", "two"]), ["csf/temperatures/1", "'one'", "'two'"]),
    (lambda c: c["csf"]["tuning"].update(protocols=["random"]), ["csf/tuning/protocols/0", "'grid'", "'random'"]),
    (lambda c: c["csf"]["tuning"].update(protocols=["grid"]), ["csf/tuning/ood_validation/demo10", "grid protocol"]),
    (lambda c: c["csf"]["tuning"].update(protocols=["grid"], ood_validation={"demo10": "svhn", "pretrain20": "noise"}),
     ["csf/tuning/ood_validation/demo10", "'svhn'", "a dataset of"]),
    (lambda c: c["csf"]["tuning"].update(protocols=["grid"], ood_validation={"demo10": "near", "pretrain20": "demo10"}),
     ["csf/tuning/ood_validation/demo10", "'near'", "leaks"]),
    (lambda c: c["csf"]["tuning"].update(ood_validation={"demo11": "noise"}),
     ["csf/tuning/ood_validation/demo11", "a source of"]),
    (lambda c: c["csf"]["tuning"].update(ood_validation={"demo10": "test"}), ["csf/tuning/ood_validation/demo10"]),
    (lambda c: c["csf"]["tuning"].update(grids={"Knn": {"k": [5]}}), ["csf/tuning/grids/Knn", "'KNN'"]),
    (lambda c: c["csf"]["tuning"].update(grids={"KNN": {"kk": [5]}}), ["csf/tuning/grids/KNN/kk", "['k']"]),
])
def test_config_errors_name_the_key(demo, edit, fragments):
    config = copy.deepcopy(demo)
    edit(config)
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)
