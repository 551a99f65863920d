"""The audit job: every check over a run's files, the table, its LaTeX twin and its report view."""
from __future__ import annotations

import pandas as pd

from csfbench.aggregate.cells import Analysis, output_paths, ranking_settings
from csfbench.aggregate.ranking import rank_cells, selected_ranked_rows
from csfbench.atomic import write_json
from csfbench.audit import COLUMNS
from csfbench.stages.audit import EMPTY, write_audit
from csfbench.workflow.paths import table_view

from tests.helpers.results_synthetic import synthetic_results
from tests.unit.audit.builders import MODEL, micro_config
from tests.unit.audit.files import write_csf_fit, write_features, write_network_fit

NEAR = Analysis("rc", "vgg13", False, "s1", "near")


def _run(tmp_path, table: pd.DataFrame, fits=(), network_fits=(), features=(), prediction_sets=(),
         mcd_passes=None) -> pd.DataFrame:
    ranking = micro_config()["ranking"]
    table.to_parquet(tmp_path / "results.parquet")
    (result,) = rank_cells(selected_ranked_rows(table, ranking_settings(ranking)), [NEAR], ranking_settings(ranking))
    (json_path,) = output_paths(tmp_path / "rankings", [NEAR])["json"]
    write_json(result, json_path)
    return write_audit(tmp_path / "results.parquet", list(fits), list(network_fits), [json_path], list(features),
                       list(prediction_sets), micro_config()["audit"], ranking, {"s1": 4}, mcd_passes or {},
                       tmp_path / "tables" / "audit.csv")


def test_the_audit_of_a_run_lists_every_finding_sorted_and_writes_the_table_and_its_view(tmp_path):
    table = synthetic_results()
    low = table.iloc[0].to_dict() | {"paradigm": "dg", "dropout": 1, "run": 1, "csf": "MSR", "variant": "none",
                                     "dataset": "o_near", "shift_type": "semantic", "regime": "near", "split": "test",
                                     "scheme": "correct_vs_ood", "id_set": "test", "metric": "auroc", "value": 0.4}
    table = pd.concat([table, pd.DataFrame([low])], ignore_index=True)
    sets = tmp_path / "prediction_sets.parquet"
    pd.DataFrame([{"source": "s1", "backbone": "vgg13", "paradigm": "dg", "dropout": 1, "reward": 2.2, "run": 1,
                   "score": "gram", "method": "lac", "alpha": a, "size": 4.0, "n_cal": 500}
                  for a in (0.01, 0.05)]).to_parquet(sets)
    frame = _run(tmp_path, table, [write_csf_fit(tmp_path / "fit.h5")], [write_network_fit(tmp_path / "net.h5")],
                 [write_features(tmp_path / "test.h5", "test", [1, 0, 0, 0], [0, 1, 2, 3])], [sets], {"vgg13": 2})
    model, fit = f"s1/{MODEL}", "det, fit group global"
    assert list(zip(frame["check"], frame["severity"], frame["subject"])) == [
        ("ood_auroc_below_floor", "warning", f"{model} · MSR [none] · det · o_near (correct_vs_ood, auroc)"),
        ("tuned_at_edge", "warning", f"{model} · GEN [none] · {fit} · m"),
        ("tuned_at_edge", "warning", f"{model} · KNN [none] · {fit} · k"),
        ("tuned_at_edge", "warning", f"{model} · KNN@grid [none] · {fit} · k"),
        ("tuned_at_edge", "warning", f"{model} · projection [global] · {fit} · variance"),
        ("neighbours_above_fraction", "warning", f"{model} · KNN@grid [none] · {fit} · k"),
        ("few_mcd_passes", "warning", "vgg13"),
        ("few_independent_blocks", "warning", "rc/vgg13_det_s1_near"),
        ("near_chance_accuracy", "warning", f"{model} · test"),
        ("undefined_csf", "warning", f"{model} · ViM [none] · {fit}"),
        ("tuned_to_equivalent", "info", f"{model} · ODIN-IP [none] · det, fit group network"),
        ("full_prediction_sets", "info", f"{model} · gram · lac")]
    written = pd.read_csv(tmp_path / "tables" / "audit.csv")
    assert list(written.columns) == COLUMNS and written["subject"].tolist() == frame["subject"].tolist()
    assert written["cause"].str.len().min() > 40 and written["remedy"].str.len().min() > 20
    view = (tmp_path / "tables" / "audit.html").read_text()
    assert str(tmp_path / "tables" / "audit.html") == table_view(str(tmp_path / "tables" / "audit.csv"))
    assert "GRAM" in view and (tmp_path / "tables" / "audit.tex").is_file()


def test_a_clean_run_writes_a_table_that_says_nothing_was_found(tmp_path):
    table = synthetic_results()
    table = table[table["dataset"] != "o_near"]  # the near cell is skipped: no block to count
    frame = _run(tmp_path, table, features=[write_features(tmp_path / "test.h5", "test", [1, 1, 1, 0], [0, 1, 2, 3])])
    assert frame.empty and list(frame.columns) == COLUMNS
    assert pd.read_csv(tmp_path / "tables" / "audit.csv").empty
    assert EMPTY in (tmp_path / "tables" / "audit.html").read_text()
