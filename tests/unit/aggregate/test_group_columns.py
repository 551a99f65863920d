"""Group keys of an evaluation set (corruption, severity, rendition) and the ID-role set (id_set) in its metric rows,
in a scores file's set attributes and in the merged results table."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from csfbench.metrics import DEFAULT_METRICS
from csfbench.aggregate.results_table import merge_metric_files, write_results_table
from csfbench.evaluation import BOOTSTRAP_COLUMNS, COLUMNS, GROUP_COLUMNS, metric_rows
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec

SPEC = ModelSpec(source="syn", model="vgg13_devries_do0_rew0_run1", backbone="vgg13", paradigm="devries", dropout=0,
                 reward=0.0, run=1, seed=0, n_classes=3, image_size=32, normalize={"mean": [0.5] * 3, "std": [0.25] * 3},
                 arch={}, mcd_samples=0, optim={}, paradigm_params={}, dataset=DatasetSpec("syn", "npy", "unused"),
                 val_size=10)
IMAGENET_C = EvalSet("inc-gaussian-noise-5", "covariate", "covariate",
                     DatasetSpec("inc-gaussian-noise-5", "imagenet_c", "ImageNet-C", "test",
                                 {"corruption": "gaussian_noise", "severity": 5}))
CIFAR_C = EvalSet("c10c-fog-2", "covariate", "covariate",
                  DatasetSpec("c10c-fog-2", "cifar_c", "CIFAR-10-C", "test", {"corruption": "fog", "severity": 2}))
GENERATED = EvalSet("corrupt-shot_noise-3", "covariate", "covariate",
                    DatasetSpec("corrupt-shot_noise-3", "npy", "shifts/syn/corrupt-shot_noise-3", "test", {}))
FAR = EvalSet("svhn", "semantic", "far", DatasetSpec("svhn", "svhn", "svhn"))
RENDITION = EvalSet("imagenet-r-cartoon", "covariate", "covariate",
                    DatasetSpec("imagenet-r-cartoon", "wnid_folders", "imagenet-r", "test", {"rendition": "cartoon"}))


def test_group_keys_come_from_the_dataset_options_or_the_generated_name():
    none = {"rendition": None}
    assert IMAGENET_C.groups == {"corruption": "gaussian_noise", "severity": 5, **none}
    assert CIFAR_C.groups == {"corruption": "fog", "severity": 2, **none}
    assert GENERATED.groups == {"corruption": "shot_noise", "severity": 3, **none}
    assert FAR.groups == {"corruption": None, "severity": None, **none}
    assert EvalSet("test", "id", "test").groups == {"corruption": None, "severity": None, **none}
    assert RENDITION.groups == {"corruption": None, "severity": None, "rendition": "cartoon"}
    assert list(GROUP_COLUMNS) == ["corruption", "severity", "rendition"] and set(GROUP_COLUMNS) <= set(COLUMNS)
    # the JSON (a Snakemake param) is unchanged: the keys are derived, not stored
    assert "groups" not in IMAGENET_C.to_dict() and EvalSet.from_json(IMAGENET_C.to_json()).groups == IMAGENET_C.groups


def _scores(seed: int, n: int = 40) -> dict:
    rng = np.random.default_rng(seed)
    return {"det": {"correct": rng.random(n) < 0.6, "scores": {("MSR", "none"): rng.random(n)},
                    "protocols": {("MSR", "none"): "fixed"}}}


def test_metric_rows_carry_the_group_keys_and_the_results_table_keeps_them(tmp_path):
    reference = _scores(0)
    files = []
    for k, eval_set in enumerate((IMAGENET_C, GENERATED, FAR, RENDITION)):
        rows = metric_rows(SPEC, eval_set, _scores(k + 1), reference)
        assert list(rows.columns) == COLUMNS + BOOTSTRAP_COLUMNS and len(rows) > 0
        for key in GROUP_COLUMNS:
            assert rows[key].tolist() == [eval_set.groups[key]] * len(rows)
        # the OOD schemes put the ID test split in the ID role; misclf judges the set on its own
        assert set(rows.loc[rows["scheme"] != "misclf", "id_set"]) == {"test"}
        assert rows.loc[rows["scheme"] == "misclf", "id_set"].isna().all()
        files.append(tmp_path / f"{eval_set.name}.parquet")
        rows.to_parquet(files[-1], index=False)
    assert set(metric_rows(SPEC, EvalSet("val", "id", "val"), reference, None)["id_set"].isna()) == {True}
    old = pd.read_parquet(files[-1]).drop(columns=GROUP_COLUMNS + ["id_set"])  # written before the columns
    old["source"] = "older"
    files.append(tmp_path / "old.parquet")
    old.to_parquet(files[-1], index=False)

    table = merge_metric_files(files)
    assert str(table["severity"].dtype) == "Int64"
    write_results_table(files, tmp_path / "results.parquet")
    assert pq.read_schema(tmp_path / "results.parquet").field("severity").type == pa.int64()
    groups = table.groupby("dataset")[GROUP_COLUMNS].first().astype(object)
    groups = groups.where(groups.notna(), None)
    assert groups.loc["inc-gaussian-noise-5"].tolist() == ["gaussian_noise", 5, None]
    assert groups.loc["corrupt-shot_noise-3"].tolist() == ["shot_noise", 3, None]
    assert groups.loc["imagenet-r-cartoon"].tolist() == [None, None, "cartoon"]
    assert table.loc[table["source"] == "older", "id_set"].isna().all()
    assert table.loc[table["dataset"] == "svhn", GROUP_COLUMNS].isna().all().all()
    by_severity = table[table["metric"] == "auroc"].groupby(["corruption", "severity"])["value"].count()
    assert by_severity.to_dict() == {("gaussian_noise", 5): 4, ("shot_noise", 3): 4}  # misclf + 3 shift schemes


def test_a_scores_file_keeps_the_group_keys_for_the_conformal_and_pair_rows(tmp_path):
    from csfbench.csf.store import scores_sets, set_groups
    from csfbench.evaluation import conformal_rows
    from csfbench.stages.csf import write_set_scores

    def score_set(eval_set):
        data = _scores(3)
        splits = {"det": SimpleNamespace(correct=data["det"]["correct"], pred=np.zeros(40, int),
                                         labels=np.zeros(40, int))}
        return splits, {"det": data["det"]["scores"]}, {"det": data["det"]["protocols"]}

    sets = [EvalSet("test", "id", "test"), IMAGENET_C, RENDITION, FAR]
    write_set_scores(SPEC, sets, score_set, tmp_path / "none.h5", tmp_path / "none.parquet",
                     {"source": "syn", "model": SPEC.model, "group": "none", "quirks": "strict", "config_hash": "x"},
                     DEFAULT_METRICS)
    attrs = scores_sets(tmp_path / "none.h5")
    assert {name: set_groups(a) for name, a in attrs.items()} == {s.name: s.groups for s in sets}
    band = {("dkwm", 0.05): np.linspace(0.05, 1.0, 10)}
    cal = {"det": {("MSR", "none"): np.linspace(0, 1, 10)}}
    rows = conformal_rows(SPEC, EvalSet(IMAGENET_C.name, "covariate", "covariate"), cal,
                          {"det": {("MSR", "none"): np.linspace(0.2, 0.8, 7)}}, band, (0.95,), "test", {},
                          set_groups(attrs[IMAGENET_C.name]))
    assert set(rows["corruption"]) == {"gaussian_noise"} and set(rows["severity"]) == {5}
    assert set(rows["id_set"]) == {"test"}
