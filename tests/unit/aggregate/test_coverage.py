"""Every evaluation set lands in some ranking cell, and the coverage table says which, or why not: a semantic
set without a regime is ranked under ``semantic``; a set whose cell was skipped, whose rows lack the cell's
metric or whose blocks were all dropped is listed with that reason."""
from __future__ import annotations

import pandas as pd

from csfbench.aggregate.cells import Analysis, REGIMES, ranking_settings
from csfbench.aggregate.coverage import COLUMNS, coverage_lines, evaluation_sets, set_coverage
from csfbench.aggregate.ranking import rank_cells, selected_ranked_rows
from csfbench.workflow.settings import load_yaml, validate_config

from tests.helpers.repo import REPO
from tests.helpers.results_synthetic import synthetic_results


def _settings(**override) -> dict:
    config = load_yaml(REPO / "config/config.yaml")
    config["ranking"] = override
    config["figures"]["clique_map_group"] = next(iter(override.get("metric_groups", {"augrc": None})))
    return ranking_settings(validate_config(config)["ranking"])


def _coverage(table: pd.DataFrame, settings: dict, groups=("rc",)) -> tuple[pd.DataFrame, list[dict]]:
    cells = [Analysis(g, "vgg13", mcd, "s1", r) for g in groups for mcd in (False, True) for r in REGIMES]
    rows = selected_ranked_rows(table, settings)
    results = rank_cells(rows, cells, settings)
    return set_coverage(table, rows, results), results


def _without_regime(table: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """``table`` with ``dataset`` a semantic set that has no near/mid/far regime (what `csfbench init` writes)."""
    return table.assign(regime=table["regime"].where(table["dataset"] != dataset, "semantic"))


def test_a_semantic_set_without_a_regime_is_ranked_under_semantic():
    settings = _settings()
    coverage, results = _coverage(_without_regime(synthetic_results(), "o_far"), settings)
    far = coverage[coverage["dataset"] == "o_far"]
    assert set(far["regime"]) == {"semantic"}
    assert far["ranked"].all() and len(far) == 2  # the non-MCD and the MCD cell of group rc
    semantic = [r for r in results if r["analysis"]["regime"] == "semantic"]
    assert all(r["status"] == "ok" and r["scheme"] == "correct_vs_ood" for r in semantic)
    assert not any(r["status"] == "ok" for r in results if r["analysis"]["regime"] == "far")


def test_every_set_with_test_rows_is_listed_and_val_is_not():
    coverage, _ = _coverage(synthetic_results(), _settings())
    assert list(coverage.columns) == COLUMNS
    assert sorted(set(coverage["dataset"])) == ["o_far", "o_near", "test"]
    assert list(evaluation_sets(synthetic_results())["dataset"]) == ["o_far", "o_near", "test"]
    assert coverage["ranked"].all() and coverage["reason"].isna().all()
    test = coverage[coverage["dataset"] == "test"]
    assert set(test["regime"]) == {"test"} and set(test["mcd"]) == {False, True}


def test_a_set_whose_cell_is_skipped_says_why():
    table = synthetic_results()
    one_paradigm = table[(table["paradigm"] == "dg") | (table["dataset"] != "o_near")]
    settings = _settings(blocks=["dataset", "paradigm"])
    coverage, _ = _coverage(one_paradigm, settings)
    near = coverage[coverage["dataset"] == "o_near"]
    assert not near["ranked"].any()
    assert near["reason"].str.startswith("cell skipped: ranking needs at least 2 complete blocks").all()
    lines = coverage_lines(coverage)
    assert "s1/o_near (semantic, regime near): ranked in 0 of 2 cell(s)" in lines
    assert any(line.startswith("  not ranked in rc/vgg13 MCD: cell skipped") for line in lines)


def test_a_set_without_rows_of_the_cells_metric_says_so():
    table = synthetic_results()
    no_aurc = table[~((table["dataset"] == "o_far") & (table["metric"] == "aurc"))]
    settings = _settings(metric_groups={"rc": ["aurc"], "gr": ["augrc"]})
    coverage, _ = _coverage(no_aurc, settings, groups=("rc", "gr"))
    far = coverage[coverage["dataset"] == "o_far"].set_index(["group", "mcd"])
    assert far.loc[("gr", False), "ranked"] and far.loc[("gr", True), "ranked"]
    assert not far.loc[("rc", False), "ranked"]
    assert far.loc[("rc", False), "reason"] == ("no selected test rows of ['aurc'] in scheme "
                                                  "'correct_vs_ood' for this set")


def _without_gen_on_far() -> pd.DataFrame:
    """Both semantic sets in one cell (neither has a regime); GEN has no value on o_far."""
    table = _without_regime(_without_regime(synthetic_results(), "o_far"), "o_near")
    return table[~((table["dataset"] == "o_far") & (table["csf"] == "GEN"))]


def test_a_set_whose_blocks_are_all_dropped_is_not_ranked():
    # drop_blocks: o_far's blocks are incomplete and dropped while o_near's still rank the cell
    coverage, _ = _coverage(_without_gen_on_far(), _settings(incomplete="drop_blocks"))
    far = coverage[coverage["dataset"] == "o_far"]
    near = coverage[coverage["dataset"] == "o_near"]
    assert near["ranked"].all()
    assert not far["ranked"].any()
    assert far["reason"].str.startswith("every block of this set was dropped as incomplete").all()
    assert (far["reason"].str.contains("4 dropped block(s) in the cell (ranking.incomplete: drop_blocks;",
                                       regex=False)).all()


def test_a_set_lacking_a_csf_is_ranked_when_the_csf_is_dropped():
    # the default (drop_csfs) drops GEN and keeps o_far's 4 blocks (2 paradigms × 2 metrics) in both cells
    coverage, results = _coverage(_without_gen_on_far(), _settings())
    assert coverage["ranked"].all() and coverage["reason"].isna().all()
    semantic = [r for r in results if r["analysis"]["regime"] == "semantic"]
    assert len(semantic) == 2 and all(r["status"] == "ok" and r["dropped_blocks"] == [] for r in semantic)
    missing = ["o_far/confidnet/augrc", "o_far/confidnet/aurc", "o_far/dg/augrc", "o_far/dg/aurc"]
    assert all(r["dropped_entities"] == [{"entity": "GEN", "n_blocks_missing": 4, "missing_from": missing}]
               and r["n_blocks"] == 8 for r in semantic)


def test_a_regime_no_cell_takes_gets_one_row_saying_so():
    table, settings = synthetic_results(), _settings()
    rows = selected_ranked_rows(table, settings)
    only_test = rank_cells(rows, [Analysis("rc", "vgg13", False, "s1", "test")], settings)
    coverage = set_coverage(table, rows, only_test)
    near = coverage[coverage["dataset"] == "o_near"]
    assert len(near) == 1 and not near["ranked"].iloc[0] and pd.isna(near["group"].iloc[0])
    assert near["reason"].iloc[0].startswith("no ranking cell of source 's1' takes regime 'near'")


def test_rows_of_other_stages_are_no_evaluation_set():
    table = synthetic_results()
    projnorm = table[table["dataset"] == "test"].head(1).assign(dataset="covariate_sets", scheme="projnorm",
                                                                  shift_type="covariate", metric="r2")
    coverage, _ = _coverage(pd.concat([table, projnorm], ignore_index=True), _settings())
    assert "covariate_sets" not in set(coverage["dataset"])


def test_a_backbone_that_does_not_evaluate_the_set_is_named():
    table, settings = synthetic_results(), _settings()
    vit = table[table["dataset"] != "o_near"].assign(backbone="vit")  # the ViT models do not see o_near
    table = pd.concat([table, vit], ignore_index=True)
    cells = [Analysis("rc", b, False, "s1", r) for b in ("vgg13", "vit") for r in REGIMES]
    rows = selected_ranked_rows(table, settings)
    coverage = set_coverage(table, rows, rank_cells(rows, cells, settings))
    near = coverage[coverage["dataset"] == "o_near"].set_index("backbone")
    assert near.loc["vgg13", "ranked"] and not near.loc["vit", "ranked"]
    assert near.loc["vit", "reason"] == "no model of this backbone (and MCD flag) is evaluated on this set"
