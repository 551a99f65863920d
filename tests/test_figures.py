"""Figures and tables of spec 000 §8 on small synthetic results: values hand-checked, files written."""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd
import pytest
from pylatexenc.latexwalker import LatexEnvironmentNode, LatexWalker

from csfbench.aggregate.ranking import Analysis, rank_results, ranking_settings
from csfbench.aggregate.selection import select_configurations
from csfbench.report.figures import (
    parse_variant,
    rc_curves,
    top_clique_membership,
    write_rc_curves,
    write_top_clique_map,
)
from csfbench.report.tables import (
    best_metric_table,
    clique_layer_table,
    selected_configuration_table,
    write_table,
)
from results_synthetic import synthetic_results


def test_best_metric_table_values_are_hand_checked():
    best = best_metric_table(synthetic_results()).set_index("dataset")
    # GEN (base 0.01) on confidnet (factor 1) at its selected dropout 1: 0.01 + mean run 0.0015 (+0.1/dataset)
    assert best.loc["test", "best"] == pytest.approx(11.5)
    assert best.loc["o_near", "best"] == pytest.approx(111.5) and best.loc["o_far", "best"] == pytest.approx(211.5)
    assert best.loc["test", "best_mcd"] == pytest.approx(6.5)  # MCD rows are 0.005 lower
    assert set(best["csf"]) == {"GEN"} and set(best["paradigm"]) == {"confidnet"}
    assert set(best["csf_mcd"]) == {"GEN"} and set(best["paradigm_mcd"]) == {"confidnet"}
    assert best.loc["o_far", "regime"] == "far" and best.loc["test", "regime"] == "test"


def test_best_metric_table_without_mcd_rows_leaves_the_mcd_columns_empty():
    table = synthetic_results()
    best = best_metric_table(table[~table.mcd])
    assert best["best_mcd"].isna().all() and len(best) == 3
    with pytest.raises(ValueError, match="no selected test rows of metric 'auroc'"):
        best_metric_table(table, metric="auroc")


def test_selected_dropout_table_marks_energy_dropout_0_and_missing_variants():
    selection = select_configurations(synthetic_results())
    table = selected_configuration_table(selection, "dropout")
    assert table.loc[("vgg13", "s1", "Energy"), ("dg", "none")] == "0"
    assert table.loc[("vgg13", "s1", "GEN"), ("confidnet", "none")] == "1"
    assert table.loc[("vgg13", "s1", "MSR"), ("dg", "global")] == "1"
    assert table.loc[("vgg13", "s1", "GEN"), ("dg", "global")] == "-"  # GEN has no global variant here
    reward = selected_configuration_table(selection, "reward", paradigms=["dg"])
    assert set(reward.columns.get_level_values("paradigm")) == {"dg"}
    assert reward.loc[("vgg13", "s1", "MSR"), ("dg", "none")] == "2.2"


def _latex_rows(tex: str) -> list[list[str]]:
    """Body rows of the first tabular, after checking that the document parses strictly."""
    nodes, _, _ = LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()
    tables = [n for n in nodes if isinstance(n, LatexEnvironmentNode) and n.environmentname == "table"]
    assert len(tables) == 1
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0]
    lines = [line.strip() for line in body.split(r"\\")]
    return [line.split("&") for line in lines if line and not line.startswith(r"\cline")]


def test_tables_are_written_as_csv_and_parsable_latex(tmp_path):
    selection = select_configurations(synthetic_results())
    for name, frame in {"dropout": selected_configuration_table(selection, "dropout"),
                        "best": best_metric_table(synthetic_results())}.items():
        write_table(frame, tmp_path / f"{name}.csv", tmp_path / f"{name}.tex", "A caption with & and _ {50%}.")
        rows = _latex_rows((tmp_path / f"{name}.tex").read_text())
        n_columns = frame.shape[1] + (frame.index.nlevels if name == "dropout" else 0)
        assert len(rows) == len(frame) and all(len(r) == n_columns for r in rows)
        back = pd.read_csv(tmp_path / f"{name}.csv", header=[0, 1] if name == "dropout" else 0)
        assert len(back) == len(frame) + (1 if name == "dropout" else 0)  # the column-name row of the levels
    assert r"A caption with \& and \_ \{50\%\}." in (tmp_path / "best.tex").read_text()


def _ranked():
    table = pd.concat([synthetic_results(source="s1"), synthetic_results(source="s2")])
    table = table[~((table.source == "s2") & (table.dataset == "o_far"))]  # s2 has no far set
    cells = [Analysis("rc", "vgg13", False, s, r) for s in ("s1", "s2") for r in ("test", "near", "mid", "far")]
    return rank_results(table, cells, ranking_settings(None))


def test_top_clique_membership_and_layer_table():
    results = _ranked()
    membership = top_clique_membership(results, ["s1", "s2"])
    # regimes ordered test, near, far (no cell has a mid set); sources in the given order inside a regime
    assert list(membership.columns) == ["s1→test", "s2→test", "s1→near", "s2→near", "s1→far", "s2→far"]
    assert membership.attrs["skipped"] == ["s2→far"]
    assert membership.loc["GEN"].tolist() == [True] * 5 + [False] and membership.sum().sum() == 5
    layers = clique_layer_table(results)
    assert len(layers) == 5 * 4  # every ranked cell separates its 4 variants into 4 singleton layers
    first = layers[(layers.layer == 1)]
    assert set(first["members"]) == {"GEN"} and (first["mean_rank"] == 1.0).all()


def test_top_clique_map_files_are_written(tmp_path):
    import json

    paths = []
    for i, result in enumerate(_ranked()):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(result))
    out = {k: tmp_path / f"map.{k}" for k in ("csv", "png", "pdf")}
    write_top_clique_map(paths, ["s1", "s2"], "vgg13", "rc", out["csv"], out["png"], out["pdf"])
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out["png"].stat().st_size > 5000
    assert out["pdf"].read_bytes()[:5] == b"%PDF-" and out["pdf"].stat().st_size > 1000
    assert pd.read_csv(out["csv"], index_col=0).loc["GEN"].sum() == 5


def _write_scores(path, correct, scores):
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as fh:
        fh.create_dataset("labels", data=np.zeros(len(correct), dtype=np.int64))
        fh.create_dataset("det/pred", data=np.zeros(len(correct), dtype=np.int64))
        fh.create_dataset("det/correct", data=np.asarray(correct, dtype=bool))
        for (name, variant), conf in scores.items():
            fh.create_dataset(f"det/{name}/{variant}", data=np.asarray(conf, dtype=np.float64))


def test_rc_curves_reproduce_the_spec_oracle_areas(tmp_path):
    # spec 000 §4.1 case A: [0.9, 0.8, 0.7, 0.6, 0.5] -> residuals [0, 0, 1, 0, 1]: AURC 0.15667, AUGRC 0.12
    conf = [0.9, 0.8, 0.7, 0.6, 0.5]
    _write_scores(tmp_path / "none/test.h5", [1, 1, 0, 1, 0], {("MSR", "none"): conf})
    _write_scores(tmp_path / "none/ood.h5", [0, 0], {("MSR", "none"): [0.85, 0.1]})
    _write_scores(tmp_path / "class/test.h5", [1, 1, 0, 1, 0], {("KPCA RecError", "class_pred"): conf[::-1]})
    _write_scores(tmp_path / "class/ood.h5", [0, 0], {("KPCA RecError", "class_pred"): [0.2, 0.3]})
    curves = rc_curves(tmp_path, {"test": "misclf", "ood": "correct_vs_ood"}, ["MSR"])
    area = {kind: -np.trapezoid(part["risk"], part["coverage"])
            for kind, part in curves[curves.dataset == "test"].groupby("kind")}
    assert area["selective"] == pytest.approx(0.1566667, abs=1e-6) and area["generalized"] == pytest.approx(0.12)
    ood = curves[(curves.dataset == "ood") & (curves.kind == "generalized")]
    # correct ID (0.9, 0.8, 0.6) vs OOD (0.85, 0.1): 5 samples, coverage 1 -> 0
    assert ood["coverage"].iloc[0] == 1.0 and ood["risk"].iloc[0] == pytest.approx(2 / 5)
    with pytest.raises(ValueError, match="'Energy' is not in"):
        rc_curves(tmp_path, {"test": "misclf"}, ["Energy"])
    out = {k: tmp_path / f"rc.{k}" for k in ("csv", "png", "pdf")}
    write_rc_curves(tmp_path, {"test": "id", "ood": "semantic"}, ["MSR", "KPCA RecError class_pred"], None, "t",
                    out["csv"], out["png"], out["pdf"])
    assert set(pd.read_csv(out["csv"])["csf"]) == {"MSR", "KPCA RecError class_pred"}
    assert out["png"].stat().st_size > 5000 and out["pdf"].read_bytes()[:5] == b"%PDF-"


def test_parse_variant():
    assert parse_variant("KPCA RecError class_pred") == ("KPCA RecError", "class_pred")
    assert parse_variant("MSR") == ("MSR", "none") and parse_variant("PCA RecError") == ("PCA RecError", "none")
    assert parse_variant("Energy global") == ("Energy", "global")
