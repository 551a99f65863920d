"""The check of the ranked cells: independent blocks counted on the ranked rows, with the omnibus result."""
from __future__ import annotations

import pandas as pd

from csfbench.aggregate.cells import Analysis, ranking_settings
from csfbench.aggregate.ranking import rank_cells, selected_ranked_rows
from csfbench.audit import AuditInputs, CellRecord
from csfbench.audit.ranking_checks import cell_record, few_independent_blocks, independent_blocks

from tests.helpers.results_synthetic import synthetic_results
from tests.unit.audit.builders import key, micro_config, thresholds


def ranked(**ranking) -> tuple[list[dict], pd.DataFrame]:
    """The ranking JSONs of the synthetic table's near cell (group rc: augrc and aurc) and its ranked rows."""
    settings = ranking_settings({**micro_config()["ranking"], **ranking})
    rows = selected_ranked_rows(synthetic_results(), settings)
    cells = [Analysis("rc", "vgg13", False, "s1", "near"), Analysis("rc", "vgg13", False, "s1", "covariate")]
    return rank_cells(rows, cells, settings), rows


def test_blocks_that_differ_only_in_metric_count_once():
    (near, skipped), rows = ranked()
    record = cell_record(near, rows)
    # o_near × (confidnet, dg) × (augrc, aurc): 4 blocks ranked, 2 independent
    assert (record.name, record.n_blocks, record.independent_blocks) == ("rc/vgg13_det_s1_near", 4, 2)
    assert cell_record(skipped, rows) is None  # no covariate rows: skipped, not audited
    (near, _), rows = ranked(blocks=["dataset", "paradigm", "metric", "run"])
    assert (cell_record(near, rows).n_blocks, cell_record(near, rows).independent_blocks) == (8, 4)
    (near, _), rows = ranked(blocks=["metric"])
    assert cell_record(near, rows).independent_blocks == 1


def test_dropped_blocks_are_not_counted():
    blocks = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "metric": ["augrc", "aurc", "augrc", "aurc"]})
    assert independent_blocks(blocks) == 2
    result = {"status": "ok", "analysis": {"group": "rc", "backbone": "vgg13", "mcd": False, "source": "s1",
                                           "regime": "near"},
              "metrics": ["augrc"], "blocks": ["dataset", "metric"], "n_blocks": 1,
              "dropped_blocks": [{"block": {"dataset": "b", "metric": "augrc"}, "missing": ["MSR"]}],
              "friedman": {}, "iman_davenport": {}, "omnibus": {}}
    rows = blocks.assign(backbone="vgg13", mcd=False, source="s1", cell_regime="near")
    assert cell_record(result, rows).independent_blocks == 1


def test_a_cell_with_few_independent_blocks_is_reported_with_its_omnibus_result():
    (near, _), rows = ranked()
    findings = few_independent_blocks(AuditInputs(cells=[cell_record(near, rows)]), thresholds())
    assert key(findings) == [("few_independent_blocks", "warning", "rc/vgg13_det_s1_near", 2.0, 5.0)]
    (finding,) = findings
    assert "4 blocks of dataset × paradigm × metric, but blocks that differ only in metric share" in finding.cause
    friedman = near["friedman"]
    assert f"Friedman chi2 = {friedman['statistic']:.3g} (p = {friedman['pvalue']:.3g})" in finding.cause
    assert "Demšar 2006" in finding.cause and "ranking.omnibus_gate" in finding.remedy


def test_a_cell_with_enough_independent_blocks_is_silent():
    cell = CellRecord("rc/vgg13_det_s1_far", ("dataset", "paradigm", "metric"), 12, 6)
    assert few_independent_blocks(AuditInputs(cells=[cell]), thresholds()) == []
    assert few_independent_blocks(AuditInputs(cells=[cell]), thresholds(min_blocks=7))[0].value == 6.0
