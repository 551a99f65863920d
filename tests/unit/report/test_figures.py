"""Figures and tables of Claros-Olivares & Brockmeier (Figures 1-2, Tables 2, 6, 8, 10) on small synthetic
results: values hand-checked, files written."""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd
import pytest
from csfbench.errors import ConfigError
from pylatexenc.latexwalker import LatexEnvironmentNode, LatexWalker

from csfbench.aggregate.cells import Analysis, ranking_settings
from csfbench.aggregate.ranking import rank_results, run_analysis
from csfbench.aggregate.selection import select_configurations
from csfbench.csf.projection import parse_variant
from csfbench.report.figures import figure_settings, rc_curves, top_clique_membership
from csfbench.report.spread import spread_pairs
from csfbench.workflow.jobs import HEATMAP_FILES, Jobs
from csfbench.stages.figures import write_conover_heatmap, write_rc_curves, write_top_clique_map
from csfbench.report.tables import (
    best_metric_table,
    clique_layer_table,
    selected_configuration_table,
    write_table,
)
from csfbench.workflow.settings import load_yaml, validate_config

from tests.helpers.repo import REPO
from tests.helpers.results_synthetic import synthetic_results



def _section(name: str, **override) -> dict:
    """A complete config section: ``override`` with the schema's defaults filled in by validate_config."""
    config = load_yaml(REPO / "config/config.yaml")
    config[name] = override
    return validate_config(config)[name]


def _ranking(**override) -> dict:
    return _section("ranking", **override)


def test_best_metric_table_values_are_hand_checked():
    best = best_metric_table(synthetic_results(), "augrc", _ranking()).set_index("dataset")
    # GEN (base 0.01) on confidnet (factor 1) at its selected dropout 1: 0.01 + mean run 0.0015 (+0.1/dataset)
    assert best.loc["test", "best"] == pytest.approx(11.5)
    assert best.loc["o_near", "best"] == pytest.approx(111.5) and best.loc["o_far", "best"] == pytest.approx(211.5)
    assert best.loc["test", "best_mcd"] == pytest.approx(6.5)  # MCD rows are 0.005 lower
    assert set(best["csf"]) == {"GEN"} and set(best["paradigm"]) == {"confidnet"}
    assert set(best["csf_mcd"]) == {"GEN"} and set(best["paradigm_mcd"]) == {"confidnet"}
    assert best.loc["o_far", "regime"] == "far" and best.loc["test", "regime"] == "test"


def test_best_metric_table_shows_the_spread_over_runs_and_a_single_runs_interval():
    table = synthetic_results()
    best = best_metric_table(table, "augrc", _ranking()).set_index("dataset")
    assert list(best.columns[3:12]) == ["best", "best_sd", "n_runs", "ci_low", "ci_high", "ci_level", "n_boot",
                                        "paradigm", "csf"]
    assert list(best.columns[12:]) == ["best_mcd", "best_mcd_sd", "n_runs_mcd", "ci_low_mcd", "ci_high_mcd",
                                       "ci_level_mcd", "n_boot_mcd", "paradigm_mcd", "csf_mcd"]
    # GEN/confidnet, dropout 1: runs 1 and 2 give 0.011 and 0.012 on the ID test set -> ×1000: 11, 12
    assert best.loc["test", "best"] == pytest.approx(11.5)
    assert best.loc["test", "best_sd"] == pytest.approx(np.sqrt(((11 - 11.5) ** 2 + (12 - 11.5) ** 2) / 1))
    assert best.loc["test", "n_runs"] == 2 and best.loc["test", "n_runs_mcd"] == 2
    # results without interval columns (older runs): the table still forms, the intervals are empty
    assert best[["ci_low", "ci_high", "ci_level", "n_boot"]].isna().all().all()
    # with intervals: several runs give no interval (their mean of bounds is not one), a single run gives its own
    interval = table.assign(ci_low=table["value"] - 0.001, ci_high=table["value"] + 0.002, n_boot=200, ci_level=0.9)
    several = best_metric_table(interval, "augrc", _ranking())
    assert several[["ci_low", "ci_high", "n_boot", "ci_level"]].isna().all().all()
    single = best_metric_table(interval[interval["run"] == 2], "augrc", _ranking()).set_index("dataset")
    assert single.loc["test", "n_runs"] == 1 and np.isnan(single.loc["test", "best_sd"])  # one run: no spread
    assert single.loc["test", "best"] == pytest.approx(12.0)
    assert single.loc["test", "ci_low"] == pytest.approx(11.0) and single.loc["test", "ci_high"] == pytest.approx(14.0)
    assert single.loc["test", "n_boot"] == 200 and single.loc["test", "ci_level"] == 0.9
    assert single.loc["test", "ci_low_mcd"] == pytest.approx(6.0)  # the MCD row is 0.005 lower


def test_best_metric_table_without_mcd_rows_leaves_the_mcd_columns_empty():
    table = synthetic_results()
    best = best_metric_table(table[~table.mcd], "augrc", _ranking())
    assert best["best_mcd"].isna().all() and len(best) == 3
    with pytest.raises(ValueError, match="no selected test rows of metric 'auroc'"):
        best_metric_table(table, "auroc", _ranking())


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
                        "best": best_metric_table(synthetic_results(), "augrc", _ranking())}.items():
        write_table(frame, tmp_path / f"{name}.csv", tmp_path / f"{name}.tex", tmp_path / f"{name}.html",
                    "A caption with & and _ {50%}.")
        rows = _latex_rows((tmp_path / f"{name}.tex").read_text())
        # the LaTeX prints each mean and its deviation as one "mean ± sd" cell
        n_columns = (frame.shape[1] + (frame.index.nlevels if name == "dropout" else 0)
                     - len(spread_pairs(frame.columns)))
        assert len(rows) == len(frame) and all(len(r) == n_columns for r in rows)
        back = pd.read_csv(tmp_path / f"{name}.csv", header=[0, 1] if name == "dropout" else 0)
        assert len(back) == len(frame) + (1 if name == "dropout" else 0)  # the column-name row of the levels
    best_tex = (tmp_path / "best.tex").read_text()
    assert r"A caption with \& and \_ \{50\%\}." in best_tex
    assert r"11.500 $\pm$ 0.707" in best_tex  # GEN on the ID test set: runs 11 and 12 (×1000)
    assert r"6.500 $\pm$ 0.707" in best_tex and "best\\_sd" not in best_tex  # and with MCD: 6 and 7


def _ranked():
    table = pd.concat([synthetic_results(source="s1"), synthetic_results(source="s2")])
    table = table[~((table.source == "s2") & (table.dataset == "o_far"))]  # s2 has no far set
    cells = [Analysis("rc", "vgg13", False, s, r) for s in ("s1", "s2") for r in ("test", "near", "mid", "far")]
    return rank_results(table, cells, ranking_settings(_ranking()))


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


def test_the_top_clique_map_reads_the_clique_stability(tmp_path):
    from csfbench.report.figures import plot_top_clique_map

    results = _ranked()
    assert all(r["stability"]["status"] == "skipped" for r in results)  # the synthetic table keeps no replicates
    assert top_clique_membership(results, ["s1", "s2"]).attrs["share"].isna().all().all()
    ok = next(r for r in results if r["status"] == "ok" and r["analysis"]["source"] == "s1")
    ok["stability"] = {"status": "ok", "top_clique_share": {"GEN": 0.75, "MSR": 0.6}}
    membership = top_clique_membership(results, ["s1", "s2"])
    column = f"s1→{ok['analysis']['regime']}"
    share = membership.attrs["share"]
    assert share.loc["GEN", column] == 0.75 and share.loc["MSR", column] == 0.6
    assert share.drop(columns=column).isna().all().all() and np.isnan(share.loc["Energy", column])
    figure = plot_top_clique_map(membership, "t")
    axis = figure.axes[0]
    assert "dot area: share of bootstrap replicates" in axis.get_title()
    # the member GEN's dot is scaled by its share; MSR, outside the clique but in it on 60 %, gets a ring
    sizes = [c.get_sizes().tolist() for c in axis.collections]
    assert [0.75 * 30] in sizes and [0.6 * 30] in sizes


def test_every_cell_regime_has_a_colour_in_the_top_clique_map():
    from csfbench.aggregate.cells import REGIMES
    from csfbench.report.figures import REGIME_COLOURS

    assert set(REGIME_COLOURS) == set(REGIMES)


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


def _write_scores(path, dataset, correct, scores):
    """One evaluation set of a fit group's scores file (``{fit_group}.h5``: ``{dataset}/det/...``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "a") as fh:
        fh.create_dataset(f"{dataset}/labels", data=np.zeros(len(correct), dtype=np.int64))
        fh.create_dataset(f"{dataset}/det/pred", data=np.zeros(len(correct), dtype=np.int64))
        fh.create_dataset(f"{dataset}/det/correct", data=np.asarray(correct, dtype=bool))
        for (name, variant), conf in scores.items():
            fh.create_dataset(f"{dataset}/det/{name}/{variant}", data=np.asarray(conf, dtype=np.float64))


def test_rc_curves_reproduce_the_spec_oracle_areas(tmp_path):
    # hand-computed: [0.9, 0.8, 0.7, 0.6, 0.5] -> residuals [0, 0, 1, 0, 1]: AURC 0.15667, AUGRC 0.12
    conf = [0.9, 0.8, 0.7, 0.6, 0.5]
    _write_scores(tmp_path / "none.h5", "test", [1, 1, 0, 1, 0], {("MSR", "none"): conf})
    _write_scores(tmp_path / "none.h5", "ood", [0, 0], {("MSR", "none"): [0.85, 0.1]})
    _write_scores(tmp_path / "class.h5", "test", [1, 1, 0, 1, 0], {("KPCA RecError", "class_pred"): conf[::-1]})
    _write_scores(tmp_path / "class.h5", "ood", [0, 0], {("KPCA RecError", "class_pred"): [0.2, 0.3]})
    files = [tmp_path / "none.h5", tmp_path / "class.h5"]
    curves = rc_curves(files, {"test": "misclf", "ood": "correct_vs_ood"}, ["MSR"])
    area = {kind: -np.trapezoid(part["risk"], part["coverage"])
            for kind, part in curves[curves.dataset == "test"].groupby("kind")}
    assert area["selective"] == pytest.approx(0.1566667, abs=1e-6) and area["generalized"] == pytest.approx(0.12)
    ood = curves[(curves.dataset == "ood") & (curves.kind == "generalized")]
    # correct ID (0.9, 0.8, 0.6) vs OOD (0.85, 0.1): 5 samples, coverage 1 -> 0
    assert ood["coverage"].iloc[0] == 1.0 and ood["risk"].iloc[0] == pytest.approx(2 / 5)
    with pytest.raises(ValueError, match="'Energy' is not in"):
        rc_curves(files, {"test": "misclf"}, ["Energy"])
    out = {k: tmp_path / f"rc.{k}" for k in ("csv", "png", "pdf")}
    write_rc_curves(files, {"test": "id", "ood": "semantic"}, ["MSR", "KPCA RecError class_pred"], _ranking(), "t",
                    out["csv"], out["png"], out["pdf"])
    assert set(pd.read_csv(out["csv"])["csf"]) == {"MSR", "KPCA RecError class_pred"}
    assert out["png"].stat().st_size > 5000 and out["pdf"].read_bytes()[:5] == b"%PDF-"


def test_rc_curves_read_a_network_pass_csf_from_the_network_scores_file(tmp_path):
    conf = [0.9, 0.8, 0.7, 0.6, 0.5]
    _write_scores(tmp_path / "none.h5", "test", [1, 1, 0, 1, 0], {("MSR", "none"): conf})
    _write_scores(tmp_path / "network.h5", "test", [1, 1, 0, 1, 0], {("GRAM", "none"): conf[::-1]})
    curves = rc_curves([tmp_path / "none.h5", tmp_path / "network.h5"], {"test": "misclf"}, ["MSR", "GRAM"])
    first = curves[(curves.kind == "generalized")].groupby("csf")["risk"].first()
    assert first["GRAM"] == first["MSR"] == pytest.approx(2 / 5)  # both start at full coverage
    with pytest.raises(ValueError, match="'RankFeat' is not in"):
        rc_curves([tmp_path / "none.h5", tmp_path / "network.h5"], {"test": "misclf"}, ["RankFeat"])


def test_parse_variant():
    assert parse_variant("KPCA RecError class_pred") == ("KPCA RecError", "class_pred")
    assert parse_variant("MSR") == ("MSR", "none") and parse_variant("PCA RecError") == ("PCA RecError", "none")
    assert parse_variant("Energy global") == ("Energy", "global")


# --- Figure 2 analogue: the Conover p-value heatmap of one ranking analysis -------------------------

def _random_cell(seed: int = 5, n_datasets: int = 4, k: int = 7) -> pd.DataFrame:
    """Rows of one ranking cell (blocks dataset x paradigm x metric, 2 runs averaged) with random values."""
    rng = np.random.default_rng(seed)
    shift = np.linspace(0.0, 0.02, k)
    return pd.DataFrame([{"dataset": f"d{d}", "paradigm": p, "metric": "augrc", "run": run, "entity": f"CSF{j}",
                          "value": 0.1 + shift[j] + 0.01 * rng.normal()}
                         for d in range(n_datasets) for p in ("confidnet", "dg") for run in (1, 2)
                         for j in range(k)])


@pytest.mark.parametrize("p_adjust", ["none", "holm"])
def test_conover_heatmap_matrix_is_scikit_posthocs_conover_of_the_cell(tmp_path, p_adjust):
    import json

    import scikit_posthocs as sp

    rows = _random_cell()
    cell = Analysis("augrc", "vgg13", False, "s1", "test")
    result = run_analysis(rows, cell, ranking_settings(_ranking(p_adjust=p_adjust)))
    assert result["status"] == "ok"
    (tmp_path / "cell.json").write_text(json.dumps(result))
    out = {k: tmp_path / f"heatmap.{k}" for k in ("csv", "png", "pdf")}
    written = write_conover_heatmap(tmp_path / "cell.json", out["csv"], out["png"], out["pdf"])
    matrix = pd.read_csv(out["csv"], index_col=0)
    # independent reference: the blocks x entities matrix of run means, scikit-posthocs' Conover-Friedman
    blocks = rows.groupby(["dataset", "paradigm", "metric", "entity"])["value"].mean().unstack("entity")
    reference = sp.posthoc_conover_friedman(blocks.to_numpy(), p_adjust=None if p_adjust == "none" else "holm")
    reference.index = reference.columns = blocks.columns
    order = list(result["mean_ranks"])  # best first
    assert list(matrix.index) == list(matrix.columns) == order
    assert order == list(blocks.rank(axis=1).mean().sort_values(kind="stable").index)
    np.testing.assert_allclose(matrix.to_numpy(), reference.loc[order, order].to_numpy(), rtol=1e-12, atol=1e-15)
    assert (matrix.to_numpy() < 0.05).any() and (matrix.to_numpy() >= 0.05).sum() > len(order)  # not degenerate
    pd.testing.assert_frame_equal(written, matrix, check_names=False)
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out["png"].stat().st_size > 5000
    assert out["pdf"].read_bytes()[:5] == b"%PDF-"


def test_conover_heatmap_of_a_skipped_or_gated_analysis(tmp_path):
    import json

    cell = Analysis("augrc", "vgg13", False, "s1", "mid")
    skipped = run_analysis(None, cell, ranking_settings(_ranking()))
    (tmp_path / "skipped.json").write_text(json.dumps(skipped))
    out = {k: tmp_path / f"skipped.{k}" for k in ("csv", "png", "pdf")}
    assert write_conover_heatmap(tmp_path / "skipped.json", out["csv"], out["png"], out["pdf"]).empty
    assert pd.read_csv(out["csv"]).empty and out["pdf"].read_bytes()[:5] == b"%PDF-"
    # a gated cell (the omnibus test does not reject): the Conover p-values are still drawn
    rows = _random_cell(seed=1, n_datasets=1, k=4).assign(value=lambda t: 0.1 + 0.01 * np.random.default_rng(2)
                                                          .normal(size=len(t)))
    gated = run_analysis(rows, cell, ranking_settings(_ranking(omnibus_gate=True)))
    assert gated["omnibus"]["rejected"] is False and gated["omnibus"]["posthoc_applied"] is False
    (tmp_path / "gated.json").write_text(json.dumps(gated))
    out = {k: tmp_path / f"gated.{k}" for k in ("csv", "png", "pdf")}
    matrix = write_conover_heatmap(tmp_path / "gated.json", out["csv"], out["png"], out["pdf"])
    assert matrix.shape == (4, 4) and out["png"].stat().st_size > 5000


def _demo_config(**heatmap) -> dict:
    config = load_yaml(REPO / "config/config.yaml")
    config.setdefault("figures", {})["heatmap"] = heatmap
    return validate_config(config)


def test_heatmap_analysis_defaults_to_the_first_column_of_the_top_clique_map():
    config = _demo_config()
    # schema default: clique map group, first backbone, non-MCD, first source, ID test set
    assert config["figures"]["heatmap"] == {"group": None, "backbone": None, "mcd": False, "source": None,
                                            "regime": "test"}
    first_backbone, first_source = next(iter(config["backbones"])), next(iter(config["sources"]))
    # (the demo maps the augrc group, the paper's Figure 2 cell: AUGRC alone)
    assert Jobs(config).heatmap_analysis() == Analysis("augrc", first_backbone, False, first_source, "test")
    assert Jobs(config).heatmap_input() == f"results/tables/rankings/augrc/{first_backbone}_det_{first_source}_test.json"
    assert Jobs(_demo_config(group="rc")).heatmap_analysis().name == f"rc/{first_backbone}_det_{first_source}_test"
    chosen = _demo_config(group="aurc", backbone="vgg13", mcd=True, source="demo10", regime="near")
    assert Jobs(chosen).heatmap_analysis().name == "aurc/vgg13_mcd_demo10_near"
    with pytest.raises(ConfigError, match=r"'figures/heatmap'.*found 'augrc/vit_mcd_"):
        _demo_config(backbone="vit", mcd=True)  # the demo ViT has no MC-dropout models
    with pytest.raises(ConfigError, match="'figures/heatmap'.*found 'nope/"):
        _demo_config(group="nope")
    assert list(HEATMAP_FILES.values()) == [
        "results/figures/conover_heatmap.png", "results/figures/conover_heatmap.pdf",
        "results/tables/conover_heatmap.csv"]


def test_figure_settings_take_the_complete_section():
    section = _section("figures")
    assert figure_settings(section) == section and section["clique_map_group"] == "rc"
    with pytest.raises(ValueError, match=r"figures: missing setting\(s\) \['clique_map_group'"):
        figure_settings({})
