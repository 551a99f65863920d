"""Ranking analysis on the results table (spec 000 §5 after V3): cells, blocks, skip reasons, files."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from csfbench.aggregate.ranking import (
    Analysis,
    analyses,
    output_paths,
    rank_results,
    ranked_rows,
    ranking_settings,
    run_analysis,
    write_rankings,
)
from csfbench.aggregate.selection import selected_rows
from csfbench.config import load_config
from csfbench.stats import rank_table
from results_synthetic import synthetic_results

from conftest import REPO


def _result(results, **key):
    matches = [r for r in results if all(r["analysis"][k] == v for k, v in key.items())]
    assert len(matches) == 1, key
    return matches[0]


def test_blocks_are_dataset_paradigm_metric_with_runs_averaged():
    settings = ranking_settings(None)
    results = rank_results(synthetic_results(), [Analysis("rc", "vgg13", False, "s1", "near")], settings)
    (result,) = results
    assert result["status"] == "ok"
    # one near dataset × 2 paradigms × 2 metrics; runs averaged into one block value
    assert result["n_blocks"] == 4 and result["dropped_blocks"] == []
    # every block ranks GEN < MSR < MSR global < Energy (Energy's selected dropout-0 rows add 0.05)
    assert list(result["mean_ranks"]) == ["GEN", "MSR", "MSR global", "Energy"]
    assert list(result["mean_ranks"].values()) == [1.0, 2.0, 3.0, 4.0]
    assert result["layers"][0]["members"] == ["GEN"]
    assert result["scheme"] == "correct_vs_ood" and result["metrics"] == ["augrc", "aurc"]


def test_cell_values_match_an_independent_pivot_of_the_selected_rows():
    table = synthetic_results()
    settings = ranking_settings({"blocks": ["dataset", "paradigm", "metric", "run"]})
    (result,) = rank_results(table, [Analysis("augrc", "vgg13", True, "s1", "far")], settings)
    sel = selected_rows(table)
    rows = sel[(sel.mcd) & (sel.dataset == "o_far") & (sel.scheme == "correct_vs_ood") & (sel.metric == "augrc")]
    rows = rows.assign(entity=rows.csf + rows.projection.map(lambda p: "" if p == "none" else f" {p}"))
    expected = rank_table(rows, ["dataset", "paradigm", "metric", "run"], "entity", "value")
    assert result["n_blocks"] == 4  # 2 paradigms × 2 runs: run is a block column here
    assert result["mean_ranks"] == expected["mean_ranks"] and result["pvalues"] == expected["pvalues"]
    # MCD rows exist only for dropout 1, so every MCD variant (Energy too) competes at dropout 1
    assert set(rows["dropout"]) == {1}


def test_regimes_and_schemes_select_the_right_rows():
    rows = ranked_rows(selected_rows(synthetic_results()), ranking_settings(None))
    assert set(zip(rows["dataset"], rows["cell_regime"], rows["scheme"])) == {
        ("test", "test", "misclf"), ("o_near", "near", "correct_vs_ood"), ("o_far", "far", "correct_vs_ood")}
    assert set(rows["entity"]) == {"GEN", "MSR", "MSR global", "Energy"}


def test_degenerate_cells_are_skipped_with_a_reason():
    table = synthetic_results()
    settings = ranking_settings(None)
    cells = [Analysis("augrc", "vgg13", False, "s1", "mid"),      # no mid set
             Analysis("augrc", "vit", False, "s1", "test"),       # no such backbone
             Analysis("augrc", "vgg13", False, "s1", "test")]     # 1 dataset × 2 paradigms × 1 metric = 2 blocks
    mid, vit, test = rank_results(table, cells, settings)
    assert mid["status"] == "skipped" and "no selected rows for regime 'mid'" in mid["reason"]
    assert vit["status"] == "skipped" and "vit" in vit["reason"]
    assert test["status"] == "ok" and test["n_blocks"] == 2
    one_paradigm = table[table.paradigm == "dg"]
    (skipped,) = rank_results(one_paradigm, cells[2:], settings)
    assert skipped["status"] == "skipped" and "at least 2 complete blocks" in skipped["reason"]
    single = table[(table.csf == "MSR") & (table.projection == "none")]
    (skipped,) = rank_results(single, cells[2:], settings)
    assert "at least 2 entities" in skipped["reason"]
    assert run_analysis(None, cells[0], settings)["status"] == "skipped"
    (skipped,) = rank_results(table[table.metric == "aurc"], [Analysis("augrc", "vgg13", False, "s1", "test")],
                              settings)
    assert skipped["status"] == "skipped" and "no selected rows" in skipped["reason"]


def test_incomplete_blocks_are_dropped_and_listed():
    table = synthetic_results()
    table = table[~((table.csf == "GEN") & (table.paradigm == "dg") & (table.dataset == "o_near"))]
    (result,) = rank_results(table, [Analysis("rc", "vgg13", False, "s1", "near")], ranking_settings(None))
    assert result["n_blocks"] == 2 and len(result["dropped_blocks"]) == 2
    assert all(d["missing"] == ["GEN"] and d["block"]["paradigm"] == "dg" for d in result["dropped_blocks"])


def test_settings_are_checked():
    with pytest.raises(ValueError, match="ranking.blocks"):
        ranking_settings({"blocks": ["csf"]})
    with pytest.raises(ValueError, match="one orientation"):
        ranking_settings({"metric_groups": {"mixed": ["augrc", "auroc"]}})
    assert ranking_settings({"schemes": {"covariate": "failure"}})["schemes"]["semantic"] == "correct_vs_ood"


def test_analyses_of_the_demo_config_cover_mcd_only_where_it_exists():
    config = load_config(REPO / "config/config.yaml")
    cells = analyses(config)
    groups = len(ranking_settings(config.get("ranking"))["metric_groups"])
    # vgg13: non-MCD and MCD; the demo ViT has no dropout models, so no MCD cells
    assert len(cells) == groups * 3 * len(config["sources"]) * 6
    assert not any(c.mcd and c.backbone == "vit" for c in cells)
    names = [c.name for c in cells]
    assert len(set(names)) == len(names)


def test_written_files_are_complete_and_deterministic(tmp_path):
    table_path = tmp_path / "results.parquet"
    synthetic_results().sample(frac=1.0, random_state=3).to_parquet(table_path, index=False)
    cells = [Analysis("rc", "vgg13", False, "s1", r) for r in ("test", "near", "mid")]
    write_rankings(table_path, None, cells, tmp_path / "a", tmp_path / "a.csv")
    synthetic_results().to_parquet(table_path, index=False)
    write_rankings(table_path, None, cells, tmp_path / "b", tmp_path / "b.csv")
    paths_a, paths_b = output_paths(tmp_path / "a", cells), output_paths(tmp_path / "b", cells)
    for a, b in zip(paths_a["json"] + paths_a["csv"], paths_b["json"] + paths_b["csv"]):
        assert open(a).read() == open(b).read()
    near = json.loads(open(paths_a["json"][1]).read())
    assert near["status"] == "ok" and near["layers"][0]["members"] == ["GEN"]
    frame = pd.read_csv(paths_a["csv"][1])
    assert list(frame["entity"]) == ["GEN", "MSR", "MSR global", "Energy"] and frame["top_clique"].tolist()[0]
    assert pd.read_csv(paths_a["csv"][2]).empty  # skipped: header only
    summary = pd.read_csv(tmp_path / "a.csv")
    assert summary["status"].tolist() == ["ok", "ok", "skipped"]
    assert summary.loc[1, "top_clique"] == "GEN"
