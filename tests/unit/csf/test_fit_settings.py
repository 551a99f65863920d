"""The typed CSF fit settings: the ``fit_csf`` param parsed once, every tuned value of its declared kind."""
from __future__ import annotations

import copy
import dataclasses
import json

import numpy as np
import pytest

from csfbench.csf.engine import fit_mode, fit_projection, score_mode
from csfbench.csf.fit_settings import FitSettings, TuningSettings
from csfbench.csf.registry import BY_NAME, PROJECTION_SPACE, SPACES
from csfbench.csf.store import read_fit, write_fit
from csfbench.csf.tuning import Param

from tests.helpers.csf_synthetic import make_splits

# a cut csf section as the fit_csf rule passes it, with numbers of the "wrong" JSON kind on purpose
CFG = {"methods": ["KNN", "ReAct", "NNGuide"], "quirks": "strict", "temperatures": ["fitted", "one"],
       "tuning": {"init_points": 2, "n_iter": 1, "seed": 3, "protocols": ["bayes", "grid"],
                  "budgets": {"KPCA RecError": {"init_points": 5, "n_iter": 15}},
                  "grids": {"KNN": {"k": [2, 8.0, 32]}}, "ood_validation": "noise", "max_neighbour_fraction": 1},
       "fixed": {"KNN": {"k": 5.0}, "ReAct": {"percentile": 90}, "projection": {"variance": 1}},
       "search_space": {"NNGuide": {"k": [10, 20]}, "projection": {"variance": [0.8, 0.9]}}}


def test_the_param_is_parsed_once_into_typed_frozen_settings():
    settings = FitSettings.from_json(json.dumps(CFG))
    assert settings.quirks == "strict" and settings.methods == frozenset({"KNN", "ReAct", "NNGuide"})
    assert settings.ood_validation == "noise"
    assert settings.config_json == json.dumps(CFG, sort_keys=True)  # the fit file's csf_config, as before
    t = settings.tuning
    assert (t.init_points, t.n_iter, t.seed) == (2, 1, 3)
    assert t.temperatures == ("fitted", "one") and t.protocols == ("bayes", "grid")
    assert t.budgets == {"KPCA RecError": (5, 15)}
    assert type(t.max_neighbour_fraction) is float and t.max_neighbour_fraction == 1.0
    assert t.fixed == {"KNN": {"k": 5}, "ReAct": {"percentile": 90.0}, "projection": {"variance": 1.0}}
    assert type(t.fixed["KNN"]["k"]) is int and type(t.fixed["ReAct"]["percentile"]) is float
    assert type(t.fixed["projection"]["variance"]) is float
    assert t.grids == {"KNN": {"k": (2, 8, 32)}} and all(type(k) is int for k in t.grids["KNN"]["k"])
    # a range stays real: the searches draw reals and cast each probe
    assert t.search_space == {"NNGuide": {"k": (10.0, 20.0)}, "projection": {"variance": (0.8, 0.9)}}
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.quirks = "compat_authors"
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.seed = 4


def test_the_ood_validation_set_is_read_with_the_grid_protocol_only():
    cfg = copy.deepcopy(CFG)
    cfg["tuning"]["protocols"] = ["bayes"]
    assert FitSettings.from_config(cfg).ood_validation is None
    cfg["tuning"].update(protocols=["grid"], ood_validation={"demo10": "noise"})  # an uncut section
    with pytest.raises(ValueError, match="ood_validation of one fit: expected a dataset name"):
        FitSettings.from_config(cfg)


def test_the_block_budget_is_read_and_checked():
    """``csf.block_mib``: the configured MiB; a section without it (a fit file written before the setting) gets the
    schema's default; a budget that is not a number > 0 is a ValueError naming the setting."""
    from csfbench.csf.blocks import DEFAULT_BLOCK_MIB
    from csfbench.workflow.settings import schema_default

    assert FitSettings.from_config({**CFG, "block_mib": 48}).block_mib == 48.0
    assert FitSettings.from_config(CFG).block_mib == DEFAULT_BLOCK_MIB == schema_default("csf/block_mib")
    for bad in (0, -1, "64", True):
        with pytest.raises(ValueError, match="block_mib"):
            FitSettings.from_config({**CFG, "block_mib": bad})


@pytest.mark.parametrize("key, values", [("temperatures", ("fitted", "hot")), ("temperatures", ()),
                                         ("protocols", ("bayes", "random")), ("protocols", ())])
def test_the_tuning_invariants_still_hold(key, values):
    with pytest.raises(ValueError, match=f"tuning {key}: expected a non-empty list of"):
        TuningSettings(1, 0, 1, **{key: values})


def test_every_tuned_quantity_declares_typed_parameters():
    assert SPACES["projection"] is PROJECTION_SPACE and PROJECTION_SPACE["variance"] == Param(0.85, 0.99, "float")
    for name, space in SPACES.items():
        for param in space.values():
            assert isinstance(param, Param) and param.kind in ("int", "float"), name
    assert BY_NAME["KNN"].typed({"k": 50.0}) == {"k": 50} and type(BY_NAME["KNN"].typed({"k": 50.0})["k"]) is int
    assert BY_NAME["GEN"].typed({"m": 3.9, "gamma": 1}) == {"m": 3, "gamma": 1.0}  # int() truncation, as before


def test_the_kernels_receive_the_declared_kinds_from_fit_and_from_the_fit_file(tmp_path, monkeypatch):
    from csfbench.csf import registry

    seen = []
    knn = BY_NAME["KNN"]
    checked = dataclasses.replace(knn, score=lambda s, v, c, hp: seen.append(hp["k"]) or knn.score(s, v, c, hp))
    monkeypatch.setitem(registry.BY_NAME, "KNN", checked)
    monkeypatch.setattr(registry, "CSFS", tuple(checked if c.name == "KNN" else c for c in registry.CSFS))
    splits, ctx = make_splits()
    tuning = TuningSettings(1, 0, 1, fixed={"KNN": {"k": 5.0}})
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, tuning, frozenset({"KNN"}))
    assert fitted.csfs[("KNN", "none")].params == {"k": 5} and fitted.csfs[("KNN", "none")].protocol == "fixed"
    write_fit(tmp_path / "fit.h5", {"det": fitted}, (ctx.weight, ctx.bias), {"quirks": "strict"})
    modes, _, _ = read_fit(tmp_path / "fit.h5")
    scores = score_mode(splits["test"], modes["det"], ctx)
    assert np.isfinite(scores[("KNN", "none")]).all()
    assert seen and all(type(k) is int and k == 5 for k in seen)


def test_the_projection_range_is_the_registrys_unless_the_config_replaces_it(monkeypatch):
    from csfbench.csf import engine

    spaces = []
    real = TuningSettings.search

    def search(self, objective, space, name, label):
        spaces.append(dict(space))
        return real(self, objective, space, name, label)

    monkeypatch.setattr(TuningSettings, "search", search)
    splits, ctx = make_splits()
    engine.fit_projection("global", splits["train"], splits["val"], ctx, TuningSettings(1, 0, 1))
    fit_projection("global", splits["train"], splits["val"], ctx,
                   TuningSettings(1, 0, 1, search_space={"projection": {"variance": [0.5, 0.6]}}))
    assert spaces == [{"variance": (0.85, 0.99, "float")}, {"variance": (0.5, 0.6, "float")}]
