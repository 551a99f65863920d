"""The jobs of csfbench.stages.conformal on tiny files: the band job (one band file per key, and a light start-up),
the prediction sets (the registry's conformity scores through the set methods) and the conformal metric rows."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from csfbench.metrics import DEFAULT_METRICS
from csfbench.csf.conformity_scores import CONFORMITY_SCORES
from csfbench.csf.score_files import write_set_scores
from csfbench.errors import ConfigError
from csfbench.features.store import FeatureWriter, run_attrs
from csfbench.metrics.conformal import correction_band as band_values
from csfbench.metrics.conformal import write_band
from csfbench.metrics.prediction_sets import evaluate_prediction_sets
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec
from csfbench.stages import conformal as stage
from csfbench.workflow.sections import ConformalFit, CorrectionBand, PredictionSets

SPEC = ModelSpec(source="syn", model="vgg13_devries_do0_rew0_run1", backbone="vgg13", paradigm="devries", dropout=0,
                 reward=0.0, run=1, seed=0, n_classes=3, image_size=32,
                 normalize={"mean": [0.5] * 3, "std": [0.25] * 3}, arch={}, mcd_samples=0, optim={},
                 paradigm_params={}, dataset=DatasetSpec("syn", "npy", "unused"), val_size=10)
SETS = PredictionSets.from_dict({"scores": ["softmax", "react", "odin", "knn", "mahalanobis"],
                                 "methods": ["lac", "aps", "raps"], "alphas": [0.1, 0.2], "cal_fraction": 0.5,
                                 "repeats": 2, "seed": 3, "raps": {"lam": 0.1, "k_reg": 1}, "react_percentile": 90,
                                 "odin_temperature": 10, "knn_k": 2})


def test_the_band_job_writes_the_band_of_its_key(tmp_path):
    band = CorrectionBand("dkwm", 30, 0.05, 100, 0)
    stage.correction_band(band, tmp_path / "band.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "band.npy"), band_values(30, 0.05, "dkwm", n_mc=100, seed=0))
    write_band(30, 0.05, "dkwm", 100, 0, tmp_path / "direct.npy")
    assert (tmp_path / "band.npy").read_bytes() == (tmp_path / "direct.npy").read_bytes()


def test_the_band_job_starts_without_pandas_or_the_csf_registry():
    code = ("import sys; import csfbench.stages.conformal; print(sorted(m for m in ('pandas', 'h5py', 'scipy', "
            "'csfbench.csf.registry', 'csfbench.evaluation') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _feature_file(path, split, arrays, head=None):
    n, d = arrays["features"].shape
    attrs = {**{k: getattr(SPEC, k) for k in ("backbone", "paradigm", "dropout", "reward", "run")}, **run_attrs(SPEC),
             "dataset": split, "split": "test", "n_classes": 3, "feature_dim": d, "image_size": 32,
             "package_version": "0", "git_commit": "x", "created": "now", "mcd_samples": 0, "shift_type": "id"}
    with FeatureWriter(path, n, 3, d, 0, False, attrs) as writer:
        pred = arrays["logits"].argmax(1)
        writer.write_batch({"features": arrays["features"].astype(np.float32),
                            "logits": arrays["logits"].astype(np.float32), "labels": arrays["labels"], "pred": pred,
                            "correct": pred == arrays["labels"],
                            "sample_id": np.array([str(i) for i in range(n)], dtype=object)})
        if head is not None:
            writer.write_head(*head)
    return path


@pytest.fixture(scope="module")
def feature_files(tmp_path_factory):
    rng = np.random.default_rng(5)
    means = np.abs(3.0 * np.eye(3, 6) + 0.5 * rng.random((3, 6)))
    head = ((means / np.linalg.norm(means, axis=1, keepdims=True)).astype(np.float32), np.zeros(3, np.float32))

    def split(n):
        labels = rng.integers(0, 3, n)
        features = np.abs(means[labels] + 0.8 * rng.normal(size=(n, 6))).astype(np.float32)
        return {"features": features, "logits": features @ head[0].T + head[1], "labels": labels}

    root = tmp_path_factory.mktemp("features")
    train, test = split(60), split(40)
    files = (_feature_file(root / "train.h5", "train", train, head), _feature_file(root / "test.h5", "test", test))
    # the arrays as the job reads them back (float32 in the files)
    as_read = {name: {k: v.astype(np.float32) if k != "labels" else v for k, v in arrays.items()}
               for name, arrays in (("train", train), ("test", test))}
    return files, as_read, head


def test_prediction_sets_feed_each_registered_score_to_the_set_methods(tmp_path, feature_files):
    (train_h5, test_h5), arrays, head = feature_files
    stage.prediction_set_table(SPEC, train_h5, test_h5, SETS, tmp_path / "sets.parquet")
    table = pd.read_parquet(tmp_path / "sets.parquet")
    assert list(table.columns) == stage.PREDICTION_SET_COLUMNS
    assert list(dict.fromkeys(table["score"])) == list(SETS.scores) and set(table["n_cal"]) == {20}
    for name in SETS.scores:
        score = CONFORMITY_SCORES[name]
        values = score.compute(arrays["test"], arrays["train"], head, **{k: getattr(SETS, k) for k in score.params})
        expected = evaluate_prediction_sets(values, arrays["test"]["labels"], n_cal=20, alphas=SETS.alphas,
                                            methods=SETS.methods, repeats=2, seed=3, lam=0.1, k_reg=1)
        mine = table[table["score"] == name]
        assert mine["size"].tolist() == [row.size for row in expected]
        assert mine["coverage"].tolist() == [row.coverage for row in expected]


def test_the_network_score_comes_from_its_provider_and_an_unknown_score_fails_first(tmp_path, feature_files):
    (train_h5, test_h5), arrays, _ = feature_files
    gram = replace(SETS, scores=("gram",))
    with pytest.raises(ValueError, match="'gram' needs the model's GRAM fit"):
        stage.prediction_set_table(SPEC, train_h5, test_h5, gram, tmp_path / "none.parquet")
    uniform = np.full((40, 3), 1 / 3)
    stage.prediction_set_table(SPEC, train_h5, test_h5, gram, tmp_path / "gram.parquet", lambda: uniform)
    table = pd.read_parquet(tmp_path / "gram.parquet")
    assert set(table["score"]) == {"gram"} and (table.loc[table["method"] == "lac", "size"] == 3).all()
    with pytest.raises(ValueError, match=r"unknown conformity score 'energy'; valid: \['softmax'"):
        stage.prediction_set_table(SPEC, "no-such.h5", "no-such.h5", replace(SETS, scores=("energy",)),
                                   tmp_path / "x.parquet")


def test_conformal_rows_calibrate_on_n_cal_samples_of_the_id_test_split(tmp_path):
    rng = np.random.default_rng(0)

    def score_set(eval_set):
        n = 50 if eval_set.name == "test" else 30
        correct = rng.random(n) < 0.7
        splits = {"det": SimpleNamespace(correct=correct, pred=np.zeros(n, int), labels=np.zeros(n, int))}
        return splits, {"det": {("MSR", "none"): rng.random(n)}}, {"det": {("MSR", "none"): "none"}}

    sets = [EvalSet("test", "id", "test"), EvalSet("far", "semantic", "far", DatasetSpec("far", "npy", "x"))]
    write_set_scores(SPEC, sets, score_set, tmp_path / "s.h5", tmp_path / "m.parquet",
                     {"source": "syn", "model": SPEC.model, "group": "none", "quirks": "strict", "config_hash": "x"},
                     DEFAULT_METRICS)
    write_band(20, 0.05, "dkwm", 100, 0, tmp_path / "band.npy")
    settings = ConformalFit.from_dict({"enabled": True, "delta": [0.05], "methods": ["dkwm"], "n_mc": 100, "seed": 0,
                                       "tpr": [0.95], "calibration": {"split": "test", "n_cal": 20, "seed": 1}})
    stage.conformal_metrics(SPEC, [tmp_path / "s.h5"], [tmp_path / "m.parquet"],
                            {("dkwm", 0.05): tmp_path / "band.npy"}, settings, tmp_path / "conformal.parquet")
    rows = pd.read_parquet(tmp_path / "conformal.parquet")
    assert set(rows["dataset"]) == {"far"} and set(rows["n_cal"]) == {20} and set(rows["calibration"]) == {"test"}
    assert {"auroc", "auroc@dkwm@0.05"} <= set(rows["metric"])
    with pytest.raises(ConfigError, match="fewer than the 50 samples of the ID test split"):
        stage.conformal_metrics(SPEC, [tmp_path / "s.h5"], [tmp_path / "m.parquet"], {},
                                replace(settings, calibration=replace(settings.calibration, n_cal=50)),
                                tmp_path / "x.parquet")
