"""Neighbour-count search ranges (KNN's and NNGuide's k) clipped to a fraction of the training rows."""
from __future__ import annotations

import dataclasses
from unittest import mock

import pytest

from csfbench.csf import engine
from csfbench.csf.engine import fit_mode
from csfbench.csf.fit_settings import TuningSettings
from csfbench.csf.registry import BY_NAME, CSFS, variants_for
from csfbench.csf.store import read_fit, write_fit
from csfbench.csf.tuning import Param, clip_counts
from csfbench.workflow.settings import schema_default

from tests.helpers.csf_synthetic import SIZES, make_splits

SPACE = {"k": Param(50, 1000, "int"), "alpha": Param(0.1, 0.5, "float")}


def test_a_range_above_the_fraction_is_clipped_and_recorded():
    space, clips = clip_counts(SPACE, ["k"], 1200, 0.05)
    assert space == {"k": Param(50, 60, "int"), "alpha": SPACE["alpha"]}  # 0.05 × 1,200 = 60; alpha untouched
    assert clips == {"k": {"range": [50, 1000], "clipped": [50, 60], "train_rows": 1200}}


def test_a_range_within_the_fraction_is_unchanged():
    assert clip_counts(SPACE, ["k"], 20_000, 0.05) == (SPACE, {})  # 0.05 × 20,000 = 1,000 = the high
    assert clip_counts(SPACE, ["k"], 50_000, 0.05) == (SPACE, {})
    assert clip_counts(SPACE, [], 1200, 0.05) == (SPACE, {})  # only the named counts are clipped


@pytest.mark.parametrize("rows, expected", [(600, (30, 30)), (19, (1, 1)), (1, (1, 1))])
def test_the_floor_keeps_a_range_of_at_least_one_point_and_k_at_least_one(rows, expected):
    space, clips = clip_counts(SPACE, ["k"], rows, 0.05)
    assert (space["k"].low, space["k"].high) == expected
    assert clips["k"]["range"] == [50, 1000] and clips["k"]["clipped"] == list(expected)


def test_the_neighbour_counts_are_knn_and_nnguide_k():
    assert {(csf.name, name) for csf in CSFS for name in csf.neighbour_counts} == {("KNN", "k"), ("NNGuide", "k")}
    assert all(set(csf.neighbour_counts) <= set(csf.space) for csf in CSFS)


def test_the_default_fraction_is_the_schemas():
    assert schema_default("csf/tuning/max_neighbour_fraction") == TuningSettings(1, 0, 1).max_neighbour_fraction == 0.05


def test_a_configured_range_is_clipped_like_the_built_in_one():
    splits, ctx = make_splits()
    tuning = TuningSettings(init_points=2, n_iter=1, seed=1, search_space={"KNN": {"k": [60, 300]}},
                            max_neighbour_fraction=0.05)  # cap 0.05 × 800 = 40, below the configured low
    item = fit_mode("none", splits["train"], splits["val"], ctx, tuning, frozenset({"KNN"})).csfs[("KNN", "none")]
    assert item.params == {"k": 40}
    assert item.range_clips == {"k": {"range": [60.0, 300.0], "clipped": [40, 40], "train_rows": SIZES["train"]}}


@pytest.mark.parametrize("fraction", [0, -0.1, 1.5])
def test_the_fraction_lies_in_zero_to_one(fraction):
    with pytest.raises(ValueError, match=r"max_neighbour_fraction: expected a number in \(0, 1\]"):
        TuningSettings(1, 0, 1, max_neighbour_fraction=fraction)


def test_a_fit_on_a_small_bank_never_probes_k_beyond_the_clip(tmp_path):
    """A real Bayesian search on the synthetic bank of 800 training rows: at a fraction of 0.1 the cap is 80,
    so KNN searches [50, 80] and NNGuide [10, 80]; no probe scores a k above it, and the fit file records the
    clip; a k pinned by ``csf.fixed`` is not clipped."""
    splits, ctx = make_splits()
    cap = int(0.1 * SIZES["train"])
    seen: dict[str, list[int]] = {"KNN": [], "NNGuide": []}

    def spied(csf):
        def score(state, view, c, hp):
            seen[csf.name].append(hp["k"])
            return csf.score(state, view, c, hp)
        return dataclasses.replace(csf, score=score)

    def spied_variants(backbone, variants, methods):
        return [(spied(csf), v) for csf, v in variants_for(backbone, variants, methods)]

    tuning = TuningSettings(init_points=4, n_iter=3, seed=1, max_neighbour_fraction=0.1)
    with mock.patch.object(engine, "variants_for", spied_variants):
        fitted = fit_mode("none", splits["train"], splits["val"], ctx, tuning, frozenset({"KNN", "NNGuide"}))
    for name, low in (("KNN", 50), ("NNGuide", 10)):
        item = fitted.csfs[(name, "none")]
        assert item.protocol == "bayes" and len(seen[name]) == 7 and max(seen[name]) <= cap
        assert low <= item.params["k"] <= cap
        k_column = sorted(BY_NAME[name].space).index("k")  # probed columns are the free parameters by name
        assert item.probed[:, k_column].max() <= cap
        high = BY_NAME[name].space["k"].high
        assert item.range_clips == {"k": {"range": [low, high], "clipped": [low, cap], "train_rows": SIZES["train"]}}
    write_fit(tmp_path / "fit.h5", {"det": fitted}, (ctx.weight, ctx.bias), {})
    stored = read_fit(tmp_path / "fit.h5")[0]["det"].csfs
    assert stored[("KNN", "none")].range_clips == fitted.csfs[("KNN", "none")].range_clips

    pinned = TuningSettings(init_points=2, n_iter=0, seed=1, fixed={"KNN": {"k": 200}}, max_neighbour_fraction=0.1)
    item = fit_mode("none", splits["train"], splits["val"], ctx, pinned, frozenset({"KNN"})).csfs[("KNN", "none")]
    assert item.protocol == "fixed" and item.params == {"k": 200} and item.range_clips == {}
