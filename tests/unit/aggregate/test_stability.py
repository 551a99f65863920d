"""Clique stability (:mod:`csfbench.aggregate.stability`): a clearly separated top clique has share 1, a pair whose
order is a coin flip per replicate shares it about half each; block replicates average the runs as the block values
do; the replicates join the results rows on their keys; a ranked cell records its stability, or why it has none."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from csfbench.aggregate.cells import Analysis
from csfbench.aggregate.ranking import ranking_frame, run_analysis, stability_table
from csfbench.aggregate.stability import JOIN_KEYS, block_replicates, clique_stability, read_replicates, with_replicates
from csfbench.evaluation import REPLICATE_COLUMN
from tests.unit.aggregate.test_ranking import _ranking

OPTIONS = {"alpha": 0.05, "p_adjust": "none", "higher_is_better": False, "omnibus_gate": False}


def test_a_clearly_separated_top_clique_has_share_one():
    # A ranks first in every block of every replicate (lower = better); B, C, D shuffle among themselves
    rng = np.random.default_rng(0)
    replicates = np.empty((40, 12, 4))
    replicates[..., 0] = rng.normal(0.0, 0.01, (40, 12))
    replicates[..., 1:] = 1.0 + rng.random((40, 12, 3))
    record = clique_stability(replicates, ["A", "B", "C", "D"], **OPTIONS)
    assert record["status"] == "ok" and record["n_replicates"] == 40 and record["n_tied"] == 0
    assert record["top_clique_share"] == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0}
    assert record["mean_layer"]["A"] == 1.0 and all(record["mean_layer"][e] > 1 for e in "BCD")


def test_a_coin_flip_pair_shares_the_top_clique_about_half_each():
    # A and B lead C, D, E in every block; per replicate a fair coin decides which of the two wins every block,
    # so the top clique is {A} on about half of the replicates and {B} on the others
    rng = np.random.default_rng(1)
    n_rep, n_blocks = 200, 12
    coin = rng.random(n_rep) < 0.5
    replicates = np.empty((n_rep, n_blocks, 5))
    replicates[..., 0] = np.where(coin[:, None], 0.0, 0.1)
    replicates[..., 1] = np.where(coin[:, None], 0.1, 0.0)
    replicates[..., 2:] = 1.0 + rng.random((n_rep, n_blocks, 3))
    record = clique_stability(replicates, ["A", "B", "C", "D", "E"], **OPTIONS)
    share = record["top_clique_share"]
    assert share["A"] == pytest.approx(coin.mean()) and share["B"] == pytest.approx(1 - coin.mean())
    assert 0.4 < share["A"] < 0.6
    assert share["C"] == share["D"] == share["E"] == 0.0
    assert record["mean_layer"]["A"] == pytest.approx(1 + (1 - coin.mean()))  # layer 1 when it wins, else 2


def test_higher_is_better_and_tied_replicates():
    replicates = np.stack([np.tile([3.0, 2.0, 1.0], (10, 1)), np.ones((10, 3))])  # a clear order, then all tied
    record = clique_stability(replicates, ["A", "B", "C"], **{**OPTIONS, "higher_is_better": True})
    assert record["n_tied"] == 1 and record["top_clique_share"] == {"A": 1.0, "B": 0.0, "C": 0.0}
    tied = clique_stability(np.ones((3, 4, 2)), ["A", "B"], **OPTIONS)
    assert tied["status"] == "skipped" and "ties every block" in tied["reason"]


def _rows(n_rep: int = 6, missing: bool = False) -> pd.DataFrame:
    """Two blocks (datasets) × two entities × two runs; replicate b of a row = its value + b."""
    rows = []
    for dataset in ("d1", "d2"):
        for entity, base in (("MSR", 0.1), ("Energy", 0.3)):
            for run in (1, 2):
                value = base + run / 100 + (dataset == "d2")
                rows.append({"dataset": dataset, "paradigm": "dg", "metric": "augrc", "entity": entity, "run": run,
                             "value": value, REPLICATE_COLUMN: value + np.arange(n_rep, dtype=float)})
    frame = pd.DataFrame(rows)
    if missing:
        frame.at[3, REPLICATE_COLUMN] = None
    return frame


def test_block_replicates_average_the_runs_like_the_block_values():
    rows = _rows()
    blocks = ["dataset", "paradigm", "metric"]
    kept = rows.groupby(blocks + ["entity"], as_index=False)["value"].mean()
    values, entities, reason = block_replicates(rows, blocks, kept, n_replicates=4)
    assert reason is None and entities == ["Energy", "MSR"] and values.shape == (4, 2, 2)
    means = kept.pivot_table(index=blocks, columns="entity", values="value").to_numpy()
    for b in range(4):
        np.testing.assert_allclose(values[b], means + b, rtol=0, atol=1e-12)
    # only the kept (block, entity) pairs enter: a dropped entity's rows are ignored
    values, entities, _ = block_replicates(rows, blocks, kept[kept["entity"] == "MSR"], n_replicates=100)
    assert entities == ["MSR"] and values.shape == (6, 2, 1)  # at most the replicates there are
    _, _, reason = block_replicates(_rows(missing=True), blocks, kept, n_replicates=4)
    assert reason.startswith("1 of 8 ranked rows have no bootstrap replicates (metric(s) ['augrc']")
    _, _, reason = block_replicates(rows.drop(columns=REPLICATE_COLUMN), blocks, kept, n_replicates=4)
    assert "n_boot is 0" in reason


def _keyed(n: int) -> pd.DataFrame:
    keys = {key: ["x"] * n for key in JOIN_KEYS}
    keys.update(run=list(range(1, n + 1)), mcd=[False] * n, tuning_protocol=[None] * n, dropout=[0.0] * n)
    return pd.DataFrame(keys)


def test_replicates_join_the_results_rows_on_their_keys(tmp_path):
    files = _keyed(3).assign(**{REPLICATE_COLUMN: [np.arange(3.0) + i for i in range(3)]})
    files.loc[1, REPLICATE_COLUMN] = None  # a row without replicates is not read
    files.to_parquet(tmp_path / "m.parquet", index=False)
    _keyed(2).to_parquet(tmp_path / "old.parquet", index=False)  # a metric file without the column
    replicates = read_replicates([tmp_path / "m.parquet", tmp_path / "old.parquet"])
    assert list(replicates["run"]) == [1, 3]
    rows = _keyed(3).assign(regime="near", tuning_protocol=[np.nan, None, np.nan]).iloc[::-1]  # any order, any null
    joined = with_replicates(rows, replicates)
    assert list(joined["run"]) == [3, 2, 1]
    np.testing.assert_array_equal(joined[REPLICATE_COLUMN].iloc[0], np.arange(3.0) + 2)
    assert joined[REPLICATE_COLUMN].iloc[1] is None
    assert with_replicates(rows, replicates.iloc[:0]) is rows
    with pytest.raises(ValueError, match="share their key columns"):
        with_replicates(rows, pd.concat([replicates, replicates]))


def _cell_rows(with_replicates: bool = True) -> pd.DataFrame:
    """A cell's ranked rows: three datasets, MSR best, then Energy, then GEN, with replicates around each value."""
    rng = np.random.default_rng(4)
    rows = []
    for i, dataset in enumerate(("d1", "d2", "d3", "d4", "d5", "d6")):
        for entity, base in (("MSR", 0.1), ("Energy", 0.2), ("GEN", 0.3)):
            value = base + 0.01 * i
            rows.append({"dataset": dataset, "paradigm": "dg", "metric": "augrc", "entity": entity, "run": 1,
                         "value": value, REPLICATE_COLUMN: value + rng.normal(0, 0.001, 30) if with_replicates else None})
    return pd.DataFrame(rows)


def test_a_ranked_cell_records_its_stability_in_the_json_the_csv_and_the_table():
    cell = Analysis("augrc", "vgg13", False, "s1", "test")
    result = run_analysis(_cell_rows(), cell, _ranking(metric_groups={"augrc": ["augrc"]}))
    assert result["status"] == "ok" and result["layers"][0]["members"] == ["MSR"]
    stability = result["stability"]
    assert stability["status"] == "ok" and stability["n_replicates"] == 30
    assert stability["top_clique_share"] == {"Energy": 0.0, "GEN": 0.0, "MSR": 1.0}
    frame = ranking_frame(result)
    assert list(frame["top_clique_share"]) == [1.0, 0.0, 0.0] and list(frame["mean_layer"]) == [1.0, 2.0, 3.0]
    table = stability_table([result])
    assert list(table["entity"]) == ["MSR", "Energy", "GEN"] and (table["n_replicates"] == 30).all()
    assert (table["group"] == "augrc").all() and table["top_clique"].tolist() == [True, False, False]
    fewer = run_analysis(_cell_rows(), cell, _ranking(metric_groups={"augrc": ["augrc"]}, stability={"n_replicates": 7}))
    assert fewer["stability"]["n_replicates"] == 7
    off = run_analysis(_cell_rows(), cell, _ranking(metric_groups={"augrc": ["augrc"]}, stability={"n_replicates": 0}))
    assert off["stability"]["status"] == "skipped" and "n_replicates is 0" in off["stability"]["reason"]
    none = run_analysis(_cell_rows(False), cell, _ranking(metric_groups={"augrc": ["augrc"]}))
    assert none["status"] == "ok" and none["stability"]["status"] == "skipped"
    assert ranking_frame(none)["top_clique_share"].isna().all() and stability_table([none, off]).empty
    skipped = run_analysis(None, cell, _ranking(metric_groups={"augrc": ["augrc"]}))
    assert skipped["stability"]["reason"] == "the cell was not ranked"
