"""The fit/score jobs on real HDF5 feature files: outputs, metric rows and bad input."""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd
import pytest

from csfbench.metrics import DEFAULT_METRICS
from csfbench.csf.fit_settings import FitSettings
from csfbench.csf.registry import variants_for
from csfbench.csf.store import read_scores
from csfbench.errors import FeatureFileError
from csfbench.evaluation import BOOTSTRAP_COLUMNS, COLUMNS, metric_rows
from csfbench.features.store import FeatureWriter, run_attrs
from csfbench.workflow.settings import schema_default
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec
from csfbench.stages.csf import fit_csf, score_csf

from tests.helpers.csf_synthetic import make_splits

MODEL = "vgg13_devries_do1_rew0_run1"
SPEC = ModelSpec(source="syn", model=MODEL, backbone="vgg13", paradigm="devries", dropout=1, reward=0.0, run=1,
                 seed=0, n_classes=5, image_size=32, normalize={"mean": [0.5] * 3, "std": [0.25] * 3},
                 arch={"width": 0.125}, mcd_samples=3, optim={}, paradigm_params={},
                 dataset=DatasetSpec("syn", "npy", "unused"), val_size=400)
GROUPS = ["none", "global", "class"]
# the complete csf settings of a fit (as grid.csf_fit_config cuts them; the budgets are the schema's default)
CSF_CFG = {"methods": None, "quirks": "strict", "temperatures": schema_default("csf/temperatures"),
           "tuning": {"init_points": 2, "n_iter": 1, "seed": 1, "budgets": schema_default("csf/tuning/budgets"),
                      "protocols": schema_default("csf/tuning/protocols"), "grids": {}, "ood_validation": None,
                      "max_neighbour_fraction": schema_default("csf/tuning/max_neighbour_fraction")},
           "fixed": {}, "search_space": {"KPCA RecError": {"n_landmarks": [40, 80]}}}
SETS = {"val": EvalSet("val", "id", "val"),
        "test": EvalSet("test", "id", "test"),
        "ood": EvalSet("ood", "semantic", "far", DatasetSpec("ood", "npy", "unused"))}


def write_feature_file(path, split, ctx, model=MODEL, passes=3):
    attrs = {**{k: getattr(SPEC, k) for k in ("backbone", "paradigm", "dropout", "reward", "run")},
             **run_attrs(SPEC), "model": model,
             "dataset": split.dataset, "split": "test", "n_classes": ctx.n_classes, "feature_dim": ctx.weight.shape[1],
             "image_size": 32, "package_version": "0", "git_commit": "x", "created": "now", "mcd_samples": passes,
             "shift_type": "semantic" if split.dataset == "ood" else "id"}
    n = len(split)
    with FeatureWriter(path, n, ctx.n_classes, ctx.weight.shape[1], passes, True, attrs, "gzip") as writer:
        writer.write_batch({"logits": split.logits.astype(np.float32), "features": split.features.astype(np.float32),
                            "labels": split.labels, "pred": split.pred, "correct": split.correct,
                            "sample_id": np.array([str(i) for i in range(n)], dtype=object),
                            "confidence": split.confidence.astype(np.float32),
                            "mcd/logits": split.pass_logits.astype(np.float32),
                            "mcd/features_mean": split.features.astype(np.float32),
                            "mcd/confidence": np.repeat(split.confidence[:, None], passes, 1).astype(np.float32)})
        if split.dataset == "train":
            writer.write_head(ctx.weight.astype(np.float32), ctx.bias.astype(np.float32))
    return path


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    root = tmp_path_factory.mktemp("features")
    splits, ctx = make_splits(passes=3)
    return {name: write_feature_file(root / f"{name}.h5", split, ctx) for name, split in splits.items()}, root


def _run_group(features, root, group):
    files, _ = features
    fit = root / group / "fit.h5"
    fit_csf(SPEC, FitSettings.from_config(CSF_CFG), group, files["train"], files["val"], fit)
    names = ("val", "test", "ood")
    # one scoring job per (model, fit group): every evaluation set into one scores and one metrics file
    score_csf(SPEC, [SETS[name] for name in names], fit, {name: files[name] for name in names},
              root / group / "scores.h5", root / group / "metrics.parquet", DEFAULT_METRICS)
    table = pd.read_parquet(root / group / "metrics.parquet")
    assert set(table["dataset"]) == set(names)
    out = {}
    for name in names:
        scores, attrs = read_scores(root / group / "scores.h5", name)
        assert attrs["dataset"] == name and set(scores) == {"det", "mcd"}
        out[name] = table[table["dataset"] == name].reset_index(drop=True)
    return fit, out


def test_jobs_write_fit_scores_and_metric_rows_for_every_variant(features):
    files, root = features
    total = set()
    for group in GROUPS:
        fit, rows = _run_group(features, root, group)
        with h5py.File(fit, "r") as fh:
            assert set(fh) == {"det", "mcd", "head"} and fh.attrs["model"] == MODEL
        for name, frame in rows.items():
            assert list(frame.columns) == COLUMNS + BOOTSTRAP_COLUMNS and frame["value"].notna().all()
            expected_schemes = {"misclf"} if name in ("val", "test") else {"correct_vs_ood", "newclass", "failure"}
            assert set(frame["scheme"]) == expected_schemes
        det = rows["test"][~rows["test"]["mcd"]]
        total |= set(zip(det["csf"], det["variant"]))
        mcd = set(rows["test"][rows["test"]["mcd"]]["csf"])
        if group == "none":
            assert {"EMSR", "MI", "Confidence"} <= mcd
    assert total == {(c.name, v) for c, v in variants_for("vgg13")}
    assert not list(root.glob("**/.*.tmp-*"))


def test_nan_features_are_rejected_with_the_file_and_dataset(features, tmp_path):
    files, _ = features
    splits, ctx = make_splits(passes=3)
    splits["val"].features[3, 2] = np.nan
    bad = write_feature_file(tmp_path / "val.h5", splits["val"], ctx)
    with pytest.raises(FeatureFileError, match=r"val.h5: dataset 'features': expected finite values, found 1"):
        fit_csf(SPEC, FitSettings.from_config(CSF_CFG), "none", files["train"], bad, tmp_path / "fit.h5")
    assert not (tmp_path / "fit.h5").exists()


def test_a_feature_file_of_another_model_is_rejected(features, tmp_path):
    files, _ = features
    splits, ctx = make_splits(passes=3)
    other = write_feature_file(tmp_path / "val.h5", splits["val"], ctx, model="vgg13_dg_do1_rew2.2_run1")
    with pytest.raises(FeatureFileError, match="attribute 'model': expected 'vgg13_devries_do1_rew0_run1'"):
        fit_csf(SPEC, FitSettings.from_config(CSF_CFG), "none", files["train"], other, tmp_path / "fit.h5")


def test_an_all_correct_id_set_gives_zero_risk_and_omits_undefined_metrics():
    conf = np.linspace(0, 1, 50)
    scores = {"det": {"correct": np.ones(50, bool), "scores": {("MSR", "none"): conf}}}
    rows = metric_rows(SPEC, SETS["test"], scores, None)
    values = dict(zip(rows["metric"], rows["value"]))
    assert values["aurc"] == 0.0 and values["augrc"] == 0.0
    assert "auroc" not in values and "fpr95" not in values  # undefined without failures: left out, logged


def test_shifted_sets_need_the_id_test_scores():
    scores = {"det": {"correct": np.zeros(5, bool), "scores": {("MSR", "none"): np.arange(5.0)}}}
    with pytest.raises(ValueError, match="ID test scores are needed"):
        metric_rows(SPEC, SETS["ood"], scores, None)
