"""Bootstrap intervals in the metric rows: :func:`csfbench.metrics.bootstrap.intervals` (several metrics from one
draw) equals :func:`~csfbench.metrics.bootstrap.interval` per metric; the ``failure`` scheme's weighted AUROC
replicates equal the metric on the explicit resample; :func:`csfbench.evaluation.metric_rows` writes the
``ci_*`` columns (seeded per row group, independent of the order the sets are scored); the settings are
validated and reach the score jobs; the results table carries the columns."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from csfbench.aggregate.results_table import TABLE_COLUMNS, merge_metric_files
from csfbench.errors import ConfigError
from csfbench.evaluation import (BOOTSTRAP_COLUMNS, COLUMNS, REPLICATE_COLUMN, Bootstrap, bootstrap_seed, conformal_rows,
                                 metric_rows)
from csfbench.metrics import DEFAULT_METRICS, UndefinedMetricError, build_scheme, metric
from csfbench.metrics.bootstrap import (CHUNK, SUPPORTED, _cells, _draw, _replicate_values, _Sorted, interval, intervals,
                                       percentile_interval, replicate_values)
from csfbench.specs import EvalSet
from csfbench.workflow.grid import Grid
from csfbench.workflow.settings import load_config, validate_config
from tests.helpers.demo_config import CONFIG, edited
from tests.unit.aggregate.test_group_columns import SPEC

TEST, VAL = EvalSet("test", "id", "test"), EvalSet("val", "id", "val")
NEAR, FAR = EvalSet("near", "semantic", "near"), EvalSet("far", "semantic", "far")
NOISE = EvalSet("noise", "covariate", "covariate")
BOOT = Bootstrap(n_boot=200, metrics=tuple(m for m in DEFAULT_METRICS if m in SUPPORTED))


def failure_set(seed: int = 0, n_id: int = 120, n_shift: int = 70):
    """A ``failure`` scheme evaluation set with ties: correct ID ~ N(1, 1), misclassified ID and shifted ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    correct = rng.random(n_id) < 0.7
    id_conf = np.round(rng.normal(correct.astype(float), 1.0) * 4) / 4
    return build_scheme("failure", id_conf, correct, np.round(rng.normal(0.0, 1.0, n_shift) * 4) / 4)


def test_intervals_equal_interval_per_metric_for_the_same_seed():
    built = failure_set()
    names = sorted(SUPPORTED)
    for kwargs in ({}, {"strata": built.shifted, "weight": built.weight}, {"stratify": False}):
        together = intervals(names, built.confidence, built.residual, n_boot=CHUNK + 37, seed=5, **kwargs)
        assert list(together) == names
        for name in names:
            assert together[name] == interval(name, built.confidence, built.residual, n_boot=CHUNK + 37, seed=5,
                                              **kwargs), (name, kwargs)


def test_failure_scheme_replicates_keep_the_cells_and_equal_the_weighted_metric_on_the_resample():
    # the ID correct, ID misclassified and shifted samples each keep their numbers, so build_scheme's weights
    # 1/n_id, 1/n_shift on the explicit resample are the drawn samples' own
    rng = np.random.default_rng(3)
    correct = rng.random(90) < 0.7
    id_conf = np.round(rng.normal(correct.astype(float), 1.0) * 4) / 4
    shift_conf = np.round(rng.normal(0, 1, 50) * 4) / 4
    built = build_scheme("failure", id_conf, correct, shift_conf)
    data = _Sorted(built.confidence, built.residual, built.weight)
    members = _cells(data.bad, True, built.shifted)
    assert [m.size for m in members] == [int(correct.sum()), int((~correct).sum()), 50]
    n_boot = CHUNK + 10
    fast = _replicate_values(("auroc", "augrc"), data, np.random.default_rng(0), n_boot, members)
    rng = np.random.default_rng(0)
    picks = np.concatenate([_draw(rng, min(CHUNK, n_boot - i), members) for i in range(0, n_boot, CHUNK)])
    explicit = {"auroc": [], "augrc": []}
    for p in picks:
        ids, shifted = p[p < 90], p[p >= 90] - 90
        resample = build_scheme("failure", id_conf[ids], correct[ids], shift_conf[shifted])
        explicit["auroc"].append(metric("auroc")(resample.confidence, resample.residual, weight=resample.weight))
        explicit["augrc"].append(metric("augrc")(resample.confidence, resample.residual))
    for name in explicit:
        np.testing.assert_allclose(fast[name], explicit[name], rtol=0, atol=1e-12)
    # the weighted AUROC is not the pooled one: its interval brackets the weighted value
    low, high = interval("auroc", built.confidence, built.residual, strata=built.shifted, weight=built.weight)
    assert low < metric("auroc")(built.confidence, built.residual, weight=built.weight) < high


def _scores(seed: int, n: int = 300, shift: float = 0.0) -> dict:
    """One mode's scores of a set: confidences ~ N(correct + shift, 0.5) in [0, 1] (so ECE is computed)."""
    rng = np.random.default_rng(seed)
    correct = rng.random(n) < 0.75
    conf = 1 / (1 + np.exp(-(2 * correct - 1 + shift + rng.normal(0, 0.5, n))))
    return {"det": {"correct": correct, "scores": {("MSR", "none"): conf, ("MLS", "none"): conf ** 2},
                    "protocols": {("MSR", "none"): "none", ("MLS", "none"): "none"}}}


def test_metric_rows_write_intervals_that_bracket_the_value_and_none_for_ece():
    reference = _scores(0)
    rows = pd.concat([metric_rows(SPEC, TEST, reference, None, DEFAULT_METRICS, BOOT),
                      metric_rows(SPEC, NEAR, _scores(1, shift=-2.0), reference, DEFAULT_METRICS, BOOT)])
    assert list(rows.columns) == COLUMNS + BOOTSTRAP_COLUMNS
    with_ci = rows[rows["metric"].isin(SUPPORTED)]
    assert set(with_ci["scheme"]) == {"misclf", "correct_vs_ood", "newclass", "failure"}
    assert (with_ci["n_boot"] == 200).all() and (with_ci["ci_level"] == 0.95).all()
    assert (with_ci["ci_low"] <= with_ci["value"] + 1e-12).all()
    assert (with_ci["value"] <= with_ci["ci_high"] + 1e-12).all()
    auroc = with_ci[with_ci["metric"] == "auroc"]
    assert (auroc["ci_low"] < auroc["ci_high"]).all()  # a clear case: the value lies strictly inside
    assert ((auroc["ci_low"] < auroc["value"]) & (auroc["value"] < auroc["ci_high"])).all()
    for name in ("ece", "mce"):
        plain = rows[rows["metric"] == name]
        assert len(plain) and plain[["ci_low", "ci_high", "ci_level"]].isna().all().all()
        assert (plain["n_boot"] == 0).all()


def test_no_intervals_when_off_or_unselected():
    reference = _scores(0)
    for off in (Bootstrap(), Bootstrap(n_boot=0, metrics=("auroc",))):
        rows = metric_rows(SPEC, TEST, reference, None, DEFAULT_METRICS, off)
        assert (rows["n_boot"] == 0).all() and rows[["ci_low", "ci_high", "ci_level"]].isna().all().all()
    # the default splits leave the validation rows without intervals; only the selected metrics get them
    only = Bootstrap(n_boot=50, metrics=("augrc",))
    assert (metric_rows(SPEC, VAL, reference, None, DEFAULT_METRICS, only)["n_boot"] == 0).all()
    rows = metric_rows(SPEC, TEST, reference, None, DEFAULT_METRICS, only)
    assert set(rows.loc[rows["n_boot"] > 0, "metric"]) == {"augrc"}
    val = metric_rows(SPEC, VAL, reference, None, DEFAULT_METRICS, Bootstrap(n_boot=50, metrics=("augrc",),
                                                                              splits=("val", "test")))
    assert set(val.loc[val["n_boot"] > 0, "metric"]) == {"augrc"}


def _write(tmp_path, sets, name: str, bootstrap: Bootstrap) -> pd.DataFrame:
    from csfbench.csf.score_files import write_set_scores

    def score_set(eval_set):
        data = _scores({"test": 0, "val": 1, "near": 2, "far": 3, "noise": 4}[eval_set.name],
                       shift={"near": -1.0, "far": -2.0}.get(eval_set.name, 0.0))["det"]
        n = data["correct"].size
        splits = {"det": SimpleNamespace(correct=data["correct"], pred=np.zeros(n, int), labels=np.zeros(n, int))}
        return splits, {"det": data["scores"]}, {"det": data["protocols"]}

    out = tmp_path / f"{name}.parquet"
    write_set_scores(SPEC, sets, score_set, tmp_path / f"{name}.h5", out,
                     {"source": "syn", "model": SPEC.model, "group": "none", "quirks": "strict", "config_hash": "x"},
                     DEFAULT_METRICS, bootstrap)
    return pd.read_parquet(out)


def test_intervals_do_not_depend_on_the_order_or_the_company_of_the_sets(tmp_path):
    boot = Bootstrap(n_boot=64, metrics=("auroc", "augrc"), seed=3)
    keys = [c for c in COLUMNS if c != "value"]
    forward = _write(tmp_path, [TEST, VAL, NEAR, FAR, NOISE], "forward", boot)
    backward = _write(tmp_path, [NOISE, FAR, NEAR, VAL, TEST], "backward", boot)
    pd.testing.assert_frame_equal(forward.sort_values(keys, ignore_index=True),
                                  backward.sort_values(keys, ignore_index=True))
    assert (forward["n_boot"] > 0).any()
    # a job that scores fewer sets writes the same intervals for the sets it shares
    fewer = _write(tmp_path, [FAR, TEST], "fewer", boot)
    shared = forward[forward["dataset"].isin(["far", "test"])].sort_values(keys, ignore_index=True)
    pd.testing.assert_frame_equal(shared, fewer.sort_values(keys, ignore_index=True))
    # the seed is the group's: another base seed, another draw
    other = _write(tmp_path, [TEST, FAR], "other", Bootstrap(n_boot=64, metrics=("auroc", "augrc"), seed=4))
    assert not np.array_equal(other.sort_values(keys)["ci_low"].dropna(), fewer.sort_values(keys)["ci_low"].dropna())
    seeds = {bootstrap_seed(3, SPEC, mode, dataset, scheme) for mode in ("det", "mcd")
             for dataset in ("test", "far") for scheme in ("misclf", "newclass")}
    assert len(seeds) == 8


def test_rows_keep_paired_replicates_of_the_chosen_metrics():
    # MSR and MLS = MSR² rank the samples alike, so on paired resamples (one draw for both) their AUROC replicates
    # are equal; the kept replicates are the first ones of the draw whose quantiles are the interval
    reference = _scores(0)
    boot = Bootstrap(n_boot=80, metrics=("auroc", "augrc"), seed=2, replicates=30, replicate_metrics=("auroc",))
    rows = pd.concat([metric_rows(SPEC, TEST, reference, None, DEFAULT_METRICS, boot),
                      metric_rows(SPEC, NEAR, _scores(1, shift=-2.0), reference, DEFAULT_METRICS, boot)])
    assert list(rows.columns) == COLUMNS + BOOTSTRAP_COLUMNS + [REPLICATE_COLUMN]
    kept = rows[rows[REPLICATE_COLUMN].notna()]
    assert set(kept["metric"]) == {"auroc"} and (kept[REPLICATE_COLUMN].map(len) == 30).all()
    assert len(kept) == len(rows[(rows["metric"] == "auroc") & (rows["n_boot"] > 0)])
    for (dataset, scheme), pair in kept.groupby(["dataset", "scheme"]):
        msr, mls = (pair.loc[pair["csf"] == name, REPLICATE_COLUMN].iloc[0] for name in ("MSR", "MLS"))
        np.testing.assert_allclose(msr, mls, rtol=0, atol=1e-12, err_msg=f"{dataset}/{scheme}")
    built = build_scheme("misclf", reference["det"]["scores"][("MSR", "none")], reference["det"]["correct"])
    values = replicate_values(["auroc"], built.confidence, built.residual, n_boot=80,
                              seed=bootstrap_seed(2, SPEC, "det", "test", "misclf"), strata=built.shifted)["auroc"]
    row = kept[(kept["dataset"] == "test") & (kept["csf"] == "MSR")].iloc[0]
    np.testing.assert_array_equal(row[REPLICATE_COLUMN], values[:30])
    assert (row["ci_low"], row["ci_high"]) == percentile_interval(values, 0.95)
    # off: no column
    assert REPLICATE_COLUMN not in metric_rows(SPEC, TEST, reference, None, DEFAULT_METRICS, BOOT).columns



def test_the_results_table_carries_the_columns_next_to_conformal_rows(tmp_path):
    reference = _scores(0)
    metric_rows(SPEC, TEST, reference, None, DEFAULT_METRICS, BOOT).to_parquet(tmp_path / "a.parquet", index=False)
    cal = {"det": {("MSR", "none"): np.linspace(0, 1, 10)}}
    conformal = conformal_rows(SPEC, NEAR, cal, {"det": {("MSR", "none"): np.linspace(0.2, 0.8, 7)}},
                               {("dkwm", 0.05): np.linspace(0.05, 1.0, 10)}, (0.95,), "test",
                               {(False, "MSR", "none"): "none"})
    conformal.to_parquet(tmp_path / "b.parquet", index=False)
    table = merge_metric_files([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert list(table.columns) == TABLE_COLUMNS and table["n_boot"].dtype == np.int64
    conformal = table[table["scheme"] == "conformal"]
    assert (conformal["n_boot"] == 0).all() and conformal["ci_low"].isna().all()
    assert (table.loc[table["metric"] == "auroc", "n_boot"] == 200).sum() == 2  # MSR and MLS, scheme misclf


def test_bootstrap_settings_validate_and_reach_the_score_jobs():
    demo = load_config(CONFIG)
    # the demo's: and the first 20 replicates of the ranked AUGRC rows kept for the clique stability
    assert json.loads(Grid(demo).bootstrap_json) == {"n_boot": 50, "level": 0.95, "seed": 0, "splits": ["test"],
                                                     "metrics": ["augrc"], "replicates": 20,
                                                     "replicate_metrics": ["augrc"]}
    off = validate_config(edited(demo, ("evaluation",), KeyError))
    assert json.loads(Grid(off).bootstrap_json) == {"n_boot": 0}  # off by default
    on = validate_config(edited(demo, ("evaluation",), {"bootstrap": {"n_boot": 100}}))
    settings = json.loads(Grid(on).bootstrap_json)
    assert settings == {"n_boot": 100, "level": 0.95, "seed": 0, "splits": ["test"],
                        "metrics": [m for m in DEFAULT_METRICS if m in SUPPORTED], "replicates": 20,
                        "replicate_metrics": [m for m in DEFAULT_METRICS if m in ("aurc", "augrc")]}
    assert Bootstrap(**settings).wanted("test") == tuple(settings["metrics"])
    chosen = validate_config(edited(demo, ("evaluation",), {"bootstrap": {"n_boot": 10, "metrics": ["augrc"]}}))
    assert json.loads(Grid(chosen).bootstrap_json)["metrics"] == ["augrc"]
    assert json.loads(Grid(chosen).bootstrap_json)["replicates"] == 10  # at most n_boot
    # no stability: no replicates kept, and the score jobs' settings do not mention them
    still = validate_config(edited(demo, ("ranking", "stability"), {"n_replicates": 0}))
    assert "replicates" not in json.loads(Grid(still).bootstrap_json)
    unranked = validate_config(edited(demo, ("evaluation",), {"bootstrap": {"n_boot": 10, "metrics": ["auroc"]}}))
    assert "replicates" not in json.loads(Grid(unranked).bootstrap_json)
    for bad, fragment in (("ece", "'ece'"), ("augcr", "'augcr'"), ("autc", "'autc'")):  # no replicate; typo; not a row
        with pytest.raises(ConfigError) as err:
            validate_config(edited(demo, ("evaluation",), {"bootstrap": {"n_boot": 10, "metrics": ["auroc", bad]}}))
        assert "evaluation/bootstrap/metrics/1" in str(err.value) and fragment in str(err.value), str(err.value)
    with pytest.raises(ConfigError, match="evaluation/bootstrap/n_boot"):
        validate_config(edited(demo, ("evaluation",), {"bootstrap": {"n_boot": -1}}))
    with pytest.raises(ConfigError, match="evaluation/bootstrap/level"):
        validate_config(edited(demo, ("evaluation",), {"bootstrap": {"level": 1.0}}))


def test_bootstrap_setting_errors_name_the_value():
    with pytest.raises(ValueError, match="'ece'"):
        Bootstrap(n_boot=10, metrics=("auroc", "ece"))
    with pytest.raises(ValueError, match="n_boot"):
        Bootstrap(n_boot=-1)
    with pytest.raises(ValueError, match="level"):
        Bootstrap(n_boot=10, level=1.5)
    with pytest.raises(ValueError, match="splits"):
        Bootstrap(splits=("train",))
    for bad in (11, -1, 2.5, True):
        with pytest.raises(ValueError, match="replicates"):
            Bootstrap(n_boot=10, replicates=bad)
    with pytest.raises(ValueError, match="strata"):
        intervals(["auroc"], np.arange(4.0), np.r_[0, 0, 1, 1], stratify=False, strata=np.r_[0, 1, 0, 1])


def test_a_metric_undefined_on_a_replicate_is_left_out_of_intervals_and_raises_in_interval():
    # label 1 holds confidences 1 and 0, label 0 one sample at 1: a replicate drawing the 1 twice is constant
    confidence, labels = np.array([1.0, 1.0, 0.0]), np.array([0.0, 1.0, 1.0])
    found = intervals(["autc", "auroc"], confidence, labels, n_boot=CHUNK)
    assert list(found) == ["auroc"]
    with pytest.raises(UndefinedMetricError, match="constant"):
        interval("autc", confidence, labels, n_boot=CHUNK)
