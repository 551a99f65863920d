"""Group keys of an evaluation set (corruption, severity) in its metric rows and in the merged results table."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from csfbench.aggregate.results_table import merge_metric_files, write_results_table
from csfbench.evaluation import COLUMNS, GROUP_COLUMNS, metric_rows
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


def test_group_keys_come_from_the_dataset_options_or_the_generated_name():
    assert IMAGENET_C.groups == {"corruption": "gaussian_noise", "severity": 5}
    assert CIFAR_C.groups == {"corruption": "fog", "severity": 2}
    assert GENERATED.groups == {"corruption": "shot_noise", "severity": 3}
    assert FAR.groups == {"corruption": None, "severity": None}
    assert EvalSet("test", "id", "test").groups == {"corruption": None, "severity": None}
    assert list(GROUP_COLUMNS) == ["corruption", "severity"] and set(GROUP_COLUMNS) <= set(COLUMNS)
    # the JSON (a Snakemake param) is unchanged: the keys are derived, not stored
    assert "groups" not in IMAGENET_C.to_dict() and EvalSet.from_json(IMAGENET_C.to_json()).groups == IMAGENET_C.groups


def _scores(seed: int, n: int = 40) -> dict:
    rng = np.random.default_rng(seed)
    return {"det": {"correct": rng.random(n) < 0.6, "scores": {("MSR", "none"): rng.random(n)},
                    "protocols": {("MSR", "none"): "fixed"}}}


def test_metric_rows_carry_the_group_keys_and_the_results_table_keeps_them(tmp_path):
    reference = _scores(0)
    files = []
    for k, eval_set in enumerate((IMAGENET_C, GENERATED, FAR)):
        rows = metric_rows(SPEC, eval_set, _scores(k + 1), reference)
        assert list(rows.columns) == COLUMNS and len(rows) > 0
        assert rows["corruption"].tolist() == [eval_set.groups["corruption"]] * len(rows)
        assert rows["severity"].tolist() == [eval_set.groups["severity"]] * len(rows)
        files.append(tmp_path / f"{eval_set.name}.parquet")
        rows.to_parquet(files[-1], index=False)
    old = pd.read_parquet(files[-1]).drop(columns=GROUP_COLUMNS)  # a metric file written before the columns
    old["source"] = "older"
    files.append(tmp_path / "old.parquet")
    old.to_parquet(files[-1], index=False)

    table = merge_metric_files(files)
    assert str(table["severity"].dtype) == "Int64"
    write_results_table(files, tmp_path / "results.parquet")
    assert pq.read_schema(tmp_path / "results.parquet").field("severity").type == pa.int64()
    groups = table.groupby("dataset")[GROUP_COLUMNS].first()
    assert groups.loc["inc-gaussian-noise-5"].tolist() == ["gaussian_noise", 5]
    assert groups.loc["corrupt-shot_noise-3"].tolist() == ["shot_noise", 3]
    assert table.loc[table["dataset"] == "svhn", GROUP_COLUMNS].isna().all().all()
    by_severity = table[table["metric"] == "auroc"].groupby(["corruption", "severity"])["value"].count()
    assert by_severity.to_dict() == {("gaussian_noise", 5): 4, ("shot_noise", 3): 4}  # misclf + 3 shift schemes
