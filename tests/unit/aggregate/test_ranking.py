"""Ranking analysis on the results table (Claros-Olivares & Brockmeier, §4.2 and App. C, after the
validation-based selection): cells, blocks, skip reasons, the omnibus gate, files."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from csfbench.errors import ConfigError
from csfbench.aggregate.cells import REGIMES, Analysis, analyses, output_paths, ranking_settings
from csfbench.aggregate.ranking import rank_results, ranked_rows, ranking_frame, run_analysis, summary_row
from csfbench.aggregate.selection import selected_rows
from csfbench.workflow.settings import load_config, load_yaml, validate_config
from csfbench.stages.ranking import write_rankings
from csfbench.stats import rank_table

from tests.helpers.repo import REPO
from tests.helpers.results_synthetic import synthetic_results



def _ranking(**override) -> dict:
    """A complete ``ranking`` section: ``override`` with the schema's defaults filled in by validate_config."""
    config = load_yaml(REPO / "config/config.yaml")
    config["ranking"] = override
    config["figures"]["clique_map_group"] = next(iter(override.get("metric_groups", {"augrc": None})))
    return validate_config(config)["ranking"]


def _result(results, **key):
    matches = [r for r in results if all(r["analysis"][k] == v for k, v in key.items())]
    assert len(matches) == 1, key
    return matches[0]


def test_blocks_are_dataset_paradigm_metric_with_runs_averaged():
    settings = ranking_settings(_ranking())
    results = rank_results(synthetic_results(), [Analysis("rc", "vgg13", False, "s1", "near")], settings)
    (result,) = results
    assert result["status"] == "ok"
    # one near dataset × 2 paradigms × 2 metrics; runs averaged into one block value
    assert result["n_blocks"] == 4 and result["dropped_blocks"] == [] and result["dropped_entities"] == []
    # every block ranks GEN < MSR < MSR global < Energy (Energy's selected dropout-0 rows add 0.05)
    assert list(result["mean_ranks"]) == ["GEN", "MSR", "MSR global", "Energy"]
    assert list(result["mean_ranks"].values()) == [1.0, 2.0, 3.0, 4.0]
    assert result["layers"][0]["members"] == ["GEN"]
    assert result["scheme"] == "correct_vs_ood" and result["metrics"] == ["augrc", "aurc"]


def test_cell_values_match_an_independent_pivot_of_the_selected_rows():
    table = synthetic_results()
    settings = ranking_settings(_ranking(blocks=["dataset", "paradigm", "metric", "run"]))
    (result,) = rank_results(table, [Analysis("augrc", "vgg13", True, "s1", "far")], settings)
    sel = selected_rows(table)
    rows = sel[(sel.mcd) & (sel.dataset == "o_far") & (sel.scheme == "correct_vs_ood") & (sel.metric == "augrc")]
    rows = rows.assign(entity=rows.csf + rows.variant.map(lambda p: "" if p == "none" else f" {p}"))
    expected = rank_table(rows, ["dataset", "paradigm", "metric", "run"], "entity", "value")
    assert result["n_blocks"] == 4  # 2 paradigms × 2 runs: run is a block column here
    assert result["mean_ranks"] == expected["mean_ranks"] and result["pvalues"] == expected["pvalues"]
    # MCD rows exist only for dropout 1, so every MCD variant (Energy too) competes at dropout 1
    assert set(rows["dropout"]) == {1}


def test_regimes_and_schemes_select_the_right_rows():
    rows = ranked_rows(selected_rows(synthetic_results()), ranking_settings(_ranking()))
    assert set(zip(rows["dataset"], rows["cell_regime"], rows["scheme"])) == {
        ("test", "test", "misclf"), ("o_near", "near", "correct_vs_ood"), ("o_far", "far", "correct_vs_ood")}
    assert set(rows["entity"]) == {"GEN", "MSR", "MSR global", "Energy"}


def test_degenerate_cells_are_skipped_with_a_reason():
    table = synthetic_results()
    settings = ranking_settings(_ranking())
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
    single = table[(table.csf == "MSR") & (table.variant == "none")]
    (skipped,) = rank_results(single, cells[2:], settings)
    assert "at least 2 entities" in skipped["reason"]
    assert run_analysis(None, cells[0], settings)["status"] == "skipped"
    (skipped,) = rank_results(table[table.metric == "aurc"], [Analysis("augrc", "vgg13", False, "s1", "test")],
                              settings)
    assert skipped["status"] == "skipped" and "no selected rows" in skipped["reason"]


def test_incomplete_blocks_are_dropped_and_listed_under_drop_blocks():
    table = synthetic_results()
    table = table[~((table.csf == "GEN") & (table.paradigm == "dg") & (table.dataset == "o_near"))]
    cell = Analysis("rc", "vgg13", False, "s1", "near")
    (result,) = rank_results(table, [cell], ranking_settings(_ranking(incomplete="drop_blocks")))
    assert result["n_blocks"] == 2 and len(result["dropped_blocks"]) == 2
    assert all(d["missing"] == ["GEN"] and d["block"]["paradigm"] == "dg" for d in result["dropped_blocks"])
    assert result["dropped_entities"] == [] and list(result["mean_ranks"]) == ["GEN", "MSR", "MSR global", "Energy"]
    # the default keeps the 4 blocks (o_near × 2 paradigms × 2 metrics) and drops GEN instead
    (default,) = rank_results(table, [cell], ranking_settings(_ranking()))
    assert default["n_blocks"] == 4 and default["dropped_blocks"] == []
    assert default["dropped_entities"] == [{"entity": "GEN", "n_blocks_missing": 2,
                                            "missing_from": ["o_near/dg/augrc", "o_near/dg/aurc"]}]
    assert list(default["mean_ranks"]) == ["MSR", "MSR global", "Energy"]


# CSF variants × blocks (dataset, paradigm; metric augrc): Confidence exists only for the confidnet models,
# as for the real DeVries/ConfidNet vs cross-entropy split; values are the metric values (lower = better)
CONFIDENCE_VALUES = {("d0", "confidnet"): {"Confidence": 0.01, "MSR": 0.02, "GEN": 0.03},
                     ("d1", "confidnet"): {"Confidence": 0.01, "GEN": 0.02, "MSR": 0.03},
                     ("d0", "ce"): {"MSR": 0.02, "GEN": 0.03},
                     ("d1", "ce"): {"MSR": 0.02, "GEN": 0.03}}
CE_CELL = Analysis("augrc", "vgg13", False, "s1", "near")


def _confidence_rows(values=CONFIDENCE_VALUES) -> pd.DataFrame:
    """Two runs per block value (±0.001, so the block mean is the value)."""
    return pd.DataFrame([{"dataset": dataset, "paradigm": paradigm, "metric": "augrc", "run": run,
                          "entity": entity, "value": value + 0.001 * sign}
                         for (dataset, paradigm), entities in values.items() for entity, value in entities.items()
                         for run, sign in ((1, -1), (2, 1))])


def test_by_default_a_csf_missing_from_some_blocks_is_dropped_and_every_block_kept(caplog):
    with caplog.at_level("INFO", logger="csfbench.aggregate.ranking"):
        result = run_analysis(_confidence_rows(), CE_CELL, _ranking())
    assert result["status"] == "ok" and result["incomplete"] == "drop_csfs"
    # 4 blocks of MSR and GEN: MSR ranks 1, 2, 1, 1 (mean 1.25), GEN 2, 1, 2, 2 (mean 1.75);
    # Q = 12N/(k(k+1)) Σ R̄² − 3N(k+1) = 8 (1.25² + 1.75²) − 36 = 1, F_F = (N−1)Q / (N(k−1) − Q) = 3 / 3 = 1
    assert result["n_blocks"] == 4 and result["mean_ranks"] == {"MSR": 1.25, "GEN": 1.75}
    assert result["friedman"]["statistic"] == pytest.approx(1.0)
    assert result["iman_davenport"]["statistic"] == pytest.approx(1.0)
    assert result["dropped_blocks"] == []
    assert result["dropped_entities"] == [{"entity": "Confidence", "n_blocks_missing": 2,
                                           "missing_from": ["d0/ce/augrc", "d1/ce/augrc"]}]
    left_out = ("dropped 1 of 3 CSF variant(s) missing from some of the 4 blocks: Confidence (2 blocks); "
                "every block kept (ranking.incomplete: drop_csfs)")
    assert result["left_out"] == left_out
    assert caplog.messages == [f"{CE_CELL.name}: {left_out}"]
    row = summary_row(result)
    assert (row["n_entities"], row["n_blocks"], row["n_dropped_blocks"]) == (2, 4, 0)
    assert row["n_dropped_entities"] == 1 and row["dropped_entities"] == "Confidence"
    assert json.loads(json.dumps(result)) == result  # JSON-ready


def test_drop_blocks_keeps_every_csf_and_drops_the_blocks_lacking_one():
    result = run_analysis(_confidence_rows(), CE_CELL, _ranking(incomplete="drop_blocks"))
    assert result["status"] == "ok" and result["incomplete"] == "drop_blocks"
    # the 2 confidnet blocks: Confidence ranks 1, 1; MSR 2, 3; GEN 3, 2 → Q = 12·2/12 (1 + 2·2.5²) − 24 = 3
    assert result["n_blocks"] == 2 and result["mean_ranks"] == {"Confidence": 1.0, "GEN": 2.5, "MSR": 2.5}
    assert result["friedman"]["statistic"] == pytest.approx(3.0)
    assert result["dropped_entities"] == []
    assert result["dropped_blocks"] == [
        {"block": {"dataset": "d0", "paradigm": "ce", "metric": "augrc"}, "missing": ["Confidence"]},
        {"block": {"dataset": "d1", "paradigm": "ce", "metric": "augrc"}, "missing": ["Confidence"]}]
    assert result["left_out"] == ("dropped 2 of 4 blocks lacking a CSF variant: Confidence (2 blocks); every CSF "
                                  "variant kept (ranking.incomplete: drop_blocks)")
    row = summary_row(result)
    assert (row["n_entities"], row["n_blocks"], row["n_dropped_blocks"]) == (3, 2, 2)
    assert row["n_dropped_entities"] == 0 and row["dropped_entities"] == ""


def test_a_cell_left_with_fewer_than_two_csfs_or_blocks_is_skipped_naming_what_was_dropped():
    # GEN only in the ce blocks, Confidence only in the confidnet blocks: only MSR is in every block
    values = {key: {e: v for e, v in entities.items() if not (e == "GEN" and key[1] == "confidnet")}
              for key, entities in CONFIDENCE_VALUES.items()}
    dropped = run_analysis(_confidence_rows(values), CE_CELL, _ranking())
    assert dropped["status"] == "skipped"
    assert dropped["reason"] == (
        "ranking needs at least 2 CSF variants present in every block; 1 of 3 are ['MSR'] after dropping "
        "Confidence (2 blocks), GEN (2 blocks) missing from some of the 4 blocks of ['dataset', 'paradigm', "
        "'metric'] (ranking.incomplete: drop_csfs; drop_blocks keeps them and drops the incomplete blocks instead)")
    assert [(d["entity"], d["missing_from"]) for d in dropped["dropped_entities"]] == [
        ("Confidence", ["d0/ce/augrc", "d1/ce/augrc"]), ("GEN", ["d0/confidnet/augrc", "d1/confidnet/augrc"])]
    row = summary_row(dropped)
    assert (row["n_entities"], row["n_dropped_entities"], row["dropped_entities"]) == (0, 2, "Confidence; GEN")
    # drop_blocks: every block lacks Confidence or GEN
    blocks = run_analysis(_confidence_rows(values), CE_CELL, _ranking(incomplete="drop_blocks"))
    assert blocks["status"] == "skipped" and len(blocks["dropped_blocks"]) == 4
    assert blocks["reason"] == (
        "ranking needs at least 2 complete blocks (every CSF variant present); 0 of 4 blocks of ['dataset', "
        "'paradigm', 'metric'] remain after dropping those lacking Confidence (2 blocks), GEN (2 blocks) "
        "(ranking.incomplete: drop_blocks; drop_csfs keeps the blocks and drops those CSF variants instead)")
    assert summary_row(blocks)["n_dropped_blocks"] == 4


@pytest.mark.parametrize("mode", ["drop_csfs", "drop_blocks"])
def test_a_complete_cell_records_that_nothing_was_left_out(mode, caplog):
    complete = {key: {**entities, "Confidence": 0.01} for key, entities in CONFIDENCE_VALUES.items()}
    with caplog.at_level("INFO", logger="csfbench.aggregate.ranking"):
        result = run_analysis(_confidence_rows(complete), CE_CELL, _ranking(incomplete=mode))
    assert result["status"] == "ok" and result["n_blocks"] == 4 and len(result["mean_ranks"]) == 3
    assert (result["incomplete"], result["dropped_entities"], result["dropped_blocks"], result["left_out"]) == (
        mode, [], [], None)
    assert caplog.messages == []
    row = summary_row(result)
    assert (row["n_dropped_entities"], row["dropped_entities"], row["n_dropped_blocks"]) == (0, "", 0)
    empty = run_analysis(None, CE_CELL, _ranking(incomplete=mode))
    assert (empty["incomplete"], empty["dropped_entities"], empty["dropped_blocks"], empty["left_out"]) == (
        mode, [], [], None)


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="'ranking/blocks/0': expected one of 'dataset'"):
        _ranking(blocks=["csf"])
    with pytest.raises(ConfigError, match="'ranking/metric_groups/mixed': expected metrics of one orientation"):
        _ranking(metric_groups={"mixed": ["augrc", "auroc"]})
    with pytest.raises(ConfigError, match="'ranking/metric_groups/both': expected only conformal or only classical"):
        _ranking(metric_groups={"both": ["auroc", "auroc@mc_search@0.05"]})
    # the schema fills in the nested defaults (validate_config); ranking_settings merges nothing itself
    assert ranking_settings(_ranking(schemes={"covariate": "failure"}))["schemes"]["semantic"] == "correct_vs_ood"
    with pytest.raises(ValueError, match=r"missing setting\(s\) \['alpha'"):
        ranking_settings({})
    with pytest.raises(ValueError, match="missing setting"):
        ranking_settings(None)


def test_schema_defaults_are_the_paper_compatible_settings():
    defaults = _ranking()
    assert defaults == {"alpha": 0.05, "p_adjust": "none", "omnibus_gate": False, "incomplete": "drop_csfs",
                        "blocks": ["dataset", "paradigm", "metric"],
                        "metric_groups": {"rc": ["augrc", "aurc"], "augrc": ["augrc"], "aurc": ["aurc"]},
                        "schemes": {"id": "misclf", "semantic": "correct_vs_ood", "covariate": "misclf",
                                    "adversarial": "misclf"}, "stability": {"n_replicates": 100}}
    assert ranking_settings(defaults) == defaults


def test_analyses_of_the_demo_config_cover_mcd_only_where_it_exists():
    config = load_config(REPO / "config/config.yaml")
    cells = analyses(config)
    groups = len(ranking_settings(config["ranking"])["metric_groups"])
    # vgg13: non-MCD and MCD on demo10, the demo ViT (no dropout models, so no MCD cells) on demo10;
    # the untrained ViT (vittiny) on pretrain20 only
    assert len(cells) == groups * (2 * 1 + 1 + 1) * len(REGIMES) and len(REGIMES) == 7
    assert {c.source for c in cells if c.backbone == "vittiny"} == {"pretrain20"}
    assert {(c.source, c.mcd) for c in cells if c.backbone == "vgg13"} == {("demo10", False), ("demo10", True)}
    assert not any(c.mcd and c.backbone == "vit" for c in cells)
    names = [c.name for c in cells]
    assert len(set(names)) == len(names)


def test_written_files_are_complete_and_deterministic(tmp_path):
    table_path = tmp_path / "results.parquet"
    synthetic_results().sample(frac=1.0, random_state=3).to_parquet(table_path, index=False)
    cells = [Analysis("rc", "vgg13", False, "s1", r) for r in ("test", "near", "mid")]
    write_rankings(table_path, _ranking(), cells, tmp_path / "a", tmp_path / "a.csv", tmp_path / "a_sets.csv",
                   tmp_path / "a_stability.csv", tmp_path / "a_ensembles.csv")
    synthetic_results().to_parquet(table_path, index=False)
    write_rankings(table_path, _ranking(), cells, tmp_path / "b", tmp_path / "b.csv", tmp_path / "b_sets.csv",
                   tmp_path / "b_stability.csv", tmp_path / "b_ensembles.csv")
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
    # every analysis records the omnibus test in its JSON and in the summary
    for json_path, row in zip(paths_a["json"], summary.itertuples()):
        result = json.loads(open(json_path).read())
        if result["status"] != "ok":
            assert pd.isna(row.omnibus_rejected) and pd.isna(row.iman_davenport_p)
            continue
        assert row.friedman_chi2 == pytest.approx(result["friedman"]["statistic"])
        assert row.iman_davenport_p == pytest.approx(result["iman_davenport"]["pvalue"])
        assert row.omnibus_rejected == result["omnibus"]["rejected"] and row.omnibus_gate == False  # noqa: E712
        assert row.posthoc_applied == True  # noqa: E712
    # the coverage table: o_far's cell (far) is not among these cells, so it is listed as ranked nowhere
    sets = pd.read_csv(tmp_path / "a_sets.csv")
    assert open(tmp_path / "a_sets.csv").read() == open(tmp_path / "b_sets.csv").read()
    far = sets[sets["dataset"] == "o_far"]
    assert len(far) == 1 and not far["ranked"].iloc[0] and "takes regime 'far'" in far["reason"].iloc[0]
    assert sets[sets["dataset"] != "o_far"]["ranked"].all()


# 6 blocks (datasets) x 4 CSF variants whose Iman–Davenport test does not reject at 0.05 (p = 0.1375) while
# one unadjusted Conover pair differs (GEN vs MSR global, p = 0.0443); values are the ranks
GATE_VALUES = {"GEN": [3, 3, 4, 2, 4, 4], "MSR": [1, 1, 3, 4, 2, 1], "MSR global": [2, 2, 1, 3, 1, 2],
               "Energy": [4, 4, 2, 1, 3, 3]}


def _gate_rows() -> pd.DataFrame:
    return pd.DataFrame([{"dataset": f"d{b}", "paradigm": "confidnet", "metric": "augrc", "run": run,
                          "entity": entity, "value": 0.01 * value + 0.0001 * run}
                         for entity, values in GATE_VALUES.items() for b, value in enumerate(values)
                         for run in (1, 2)])


def test_omnibus_statistics_are_recorded_as_scipy_computes_them():
    cell = Analysis("augrc", "vgg13", False, "s1", "near")
    result = run_analysis(_gate_rows(), cell, _ranking())
    matrix = np.array(list(GATE_VALUES.values()), dtype=float).T  # blocks x entities (runs averaged)
    n, k = matrix.shape
    chi2, p_chi2 = stats.friedmanchisquare(*matrix.T)
    f = (n - 1) * chi2 / (n * (k - 1) - chi2)
    assert result["friedman"]["statistic"] == pytest.approx(chi2)
    assert result["friedman"]["pvalue"] == pytest.approx(p_chi2)
    assert result["iman_davenport"]["statistic"] == pytest.approx(f)
    assert result["iman_davenport"]["pvalue"] == pytest.approx(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))
    assert result["omnibus"]["rejected"] is False and result["omnibus"]["df"] == [3, 15]
    row = summary_row(result)
    assert row["friedman_chi2"] == result["friedman"]["statistic"] and row["omnibus_rejected"] is False
    assert row["iman_davenport_f"] == result["iman_davenport"]["statistic"]


def test_omnibus_gate_setting_makes_a_non_rejecting_cell_one_layer():
    cell = Analysis("augrc", "vgg13", False, "s1", "near")
    ungated = run_analysis(_gate_rows(), cell, _ranking())
    gated = run_analysis(_gate_rows(), cell, _ranking(omnibus_gate=True))
    assert ungated["pvalues"]["GEN"]["MSR global"] == pytest.approx(0.044251, abs=1e-6)
    assert [layer["members"] for layer in ungated["layers"]] == [["MSR global", "MSR", "Energy"]]  # GEN: none
    everyone = ["MSR global", "MSR", "Energy", "GEN"]  # by mean rank
    assert gated["omnibus"]["gate"] is True and gated["omnibus"]["posthoc_applied"] is False
    assert gated["cliques"] == [everyone]
    assert [layer["members"] for layer in gated["layers"]] == [everyone]
    assert gated["layers"][0]["mean_rank"] == pytest.approx(2.5)
    frame = ranking_frame(gated)
    assert frame["layer"].tolist() == [1, 1, 1, 1] and frame["top_clique"].all()
    assert summary_row(gated)["top_clique"] == "MSR global; MSR; Energy; GEN"
    assert summary_row(gated)["posthoc_applied"] is False
