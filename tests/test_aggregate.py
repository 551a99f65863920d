"""Results table merge and validation-based model selection (spec 000 §1.7 V3)."""
from __future__ import annotations

import pandas as pd
import pytest

from csfbench.aggregate.results_table import merge_metric_files
from csfbench.aggregate.selection import select_configurations, selected_rows
from csfbench.evaluation import COLUMNS


def _row(dropout, reward, run, split, metric, value, csf="MSR", mcd=False, dataset=None, scheme="misclf"):
    return {"source": "s", "backbone": "vgg13", "paradigm": "dg", "dropout": dropout, "reward": reward, "run": run,
            "mcd": mcd, "csf": csf, "projection": "none", "dataset": dataset or split, "shift_type": "id",
            "regime": split, "scheme": scheme, "split": split, "metric": metric, "value": value}


def _table():
    # validation AUGRC means over runs: (0, 2.2) -> 0.30, (1, 2.2) -> 0.20, (1, 6.0) -> 0.25
    val = {(0, 2.2): (0.28, 0.32), (1, 2.2): (0.10, 0.30), (1, 6.0): (0.25, 0.25)}
    rows = []
    for (dropout, reward), values in val.items():
        for run, v in zip((1, 2), values):
            rows.append(_row(dropout, reward, run, "val", "augrc", v))
            rows.append(_row(dropout, reward, run, "val", "auroc", 1 - v if dropout == 0 else 0.5))
            rows.append(_row(dropout, reward, run, "test", "augrc", 10 * dropout + reward + run))
            rows.append(_row(dropout, reward, run, "test", "auroc", 0.1 * run))
            rows.append(_row(dropout, reward, run, "test", "augrc", 0.5, dataset="ood", scheme="correct_vs_ood"))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_selection_takes_the_best_validation_mean_over_runs_per_metric():
    chosen = select_configurations(_table()).set_index("metric")
    assert tuple(chosen.loc["augrc", ["dropout", "reward"]]) == (1, 2.2)
    assert chosen.loc["augrc", "val_value"] == pytest.approx(0.20)
    # AUROC is higher-is-better: (0, 2.2) has mean 0.70 against 0.5
    assert tuple(chosen.loc["auroc", ["dropout", "reward"]]) == (0, 2.2)


def test_selected_rows_report_every_run_of_the_chosen_configuration():
    rows = selected_rows(_table())
    augrc_test = rows[(rows.metric == "augrc") & (rows.dataset == "test")]
    assert sorted(augrc_test["run"]) == [1, 2] and set(augrc_test["dropout"]) == {1}
    assert sorted(augrc_test["value"]) == [10 + 2.2 + 1, 10 + 2.2 + 2]
    assert set(rows[rows.metric == "augrc"]["dataset"]) == {"test", "ood"}
    assert "val" not in set(rows["split"])


def test_merge_sorts_rows_and_rejects_duplicated_keys(tmp_path):
    table = _table()
    paths = []
    for i, part in enumerate((table.iloc[::2], table.iloc[1::2])):
        paths.append(tmp_path / f"{i}.parquet")
        part.to_parquet(paths[-1], index=False)
    merged = merge_metric_files(paths)
    assert merged.equals(merge_metric_files(paths[::-1]))
    assert len(merged) == len(table)
    table.iloc[:3].to_parquet(tmp_path / "dup.parquet", index=False)
    with pytest.raises(ValueError, match="share their key columns"):
        merge_metric_files(paths + [tmp_path / "dup.parquet"])


def test_selection_without_validation_rows_is_an_error():
    with pytest.raises(ValueError, match="validation rows"):
        select_configurations(_table().query("split != 'val'"))
