"""Results table merge and validation-based model selection.

The selection is that of Claros-Olivares & Brockmeier, *A Systematic Analysis of Out-of-Distribution
Detection Under Representation and Training Paradigm Shifts* (preprint; no year or arXiv id in its text),
App. E and Tables 8–10: per (source, paradigm, CSF variant, metric), the (dropout, reward) configuration
with the best validation mean over runs, chosen separately for each metric as in the authors' code."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from csfbench.aggregate.results_table import apply_regimes, merge_metric_files, read_regimes, write_results_table
from csfbench.aggregate.selection import select_configurations, selected_rows
from csfbench.evaluation import COLUMNS


def _row(dropout, reward, run, split, metric, value, csf="MSR", mcd=False, dataset=None, scheme="misclf"):
    return {"source": "s", "backbone": "vgg13", "paradigm": "dg", "dropout": dropout, "reward": reward, "run": run,
            "mcd": mcd, "csf": csf, "variant": "none", "dataset": dataset or split, "shift_type": "id",
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


def _ood_table():
    rows = [_row(0, 2.2, 1, "test", "augrc", 0.1)]
    for name, regime in (("svhn", "mid"), ("places", "far"), ("textures", "semantic")):
        row = _row(0, 2.2, 1, "test", "augrc", 0.2, dataset=name, scheme="correct_vs_ood")
        rows.append({**row, "shift_type": "semantic", "regime": regime})
    rows.append({**_row(0, 2.2, 1, "test", "augrc", 0.3, dataset="blur", scheme="failure"),
                 "shift_type": "covariate", "regime": "covariate"})
    return pd.DataFrame(rows, columns=COLUMNS)


def _regimes_file(tmp_path, rows, name="regimes.csv"):
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_regimes_files_set_the_regime_of_semantic_sets_in_the_results_table(tmp_path):
    metrics = tmp_path / "m.parquet"
    _ood_table().to_parquet(metrics, index=False)
    regimes = _regimes_file(tmp_path, [{"source": "s", "dataset": "svhn", "regime": "near"},
                                       {"source": "s", "dataset": "textures", "regime": "far"},
                                       {"source": "s", "dataset": "not-evaluated", "regime": "mid"},
                                       {"source": "other", "dataset": "places", "regime": "near"}])
    table = write_results_table([metrics], tmp_path / "results.parquet", [regimes])
    got = dict(zip(table["dataset"], table["regime"]))
    # svhn and textures take the file's regime, places (no row for source s) and the ID/covariate sets keep theirs
    assert got == {"test": "test", "svhn": "near", "places": "far", "textures": "far", "blur": "covariate"}
    assert pd.read_parquet(tmp_path / "results.parquet").equals(table)
    assert table.equals(table.sort_values([c for c in COLUMNS if c != "value"], ignore_index=True))
    # without regimes files the rows keep the config's regimes
    assert write_results_table([metrics], tmp_path / "plain.parquet")["regime"].tolist().count("semantic") == 1


def test_regimes_for_non_semantic_sets_or_bad_values_are_errors(tmp_path):
    with pytest.raises(ValueError, match="not semantic shifts: \\['blur'\\]"):
        apply_regimes(pa.Table.from_pandas(_ood_table()), pd.DataFrame([{"source": "s", "dataset": "blur",
                                                                         "regime": "far"}]))
    bad = _regimes_file(tmp_path, [{"source": "s", "dataset": "svhn", "regime": "very far"}])
    with pytest.raises(ValueError, match="regime must be one of.*very far"):
        read_regimes([bad])
    twice = [_regimes_file(tmp_path, [{"source": "s", "dataset": "svhn", "regime": r}], f"{r}.csv")
             for r in ("near", "far")]
    with pytest.raises(ValueError, match="several regimes"):
        read_regimes(twice)
    with pytest.raises(ValueError, match="lacks the columns \\['regime'\\]"):
        read_regimes([_regimes_file(tmp_path, [{"source": "s", "dataset": "svhn"}], "short.csv")])
