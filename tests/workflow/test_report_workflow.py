"""The ranking, figure and table rules inside the shared micro workflow run."""
import json

import pandas as pd
import pytest
from pylatexenc.latexwalker import LatexWalker

from csfbench.aggregate.cells import Analysis, analyses
from csfbench.workflow.jobs import Jobs
from csfbench.workflow.settings import load_config

from tests.helpers.micro_run import MICRO, SHARES_MICRO_RUN, finished_micro_run

pytestmark = [pytest.mark.workflow, SHARES_MICRO_RUN]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The results folder of the shared micro run (the micro config's rule all includes these rules)."""
    workdir, _ = finished_micro_run(tmp_path_factory)
    return workdir / "results"


def test_every_analysis_is_ranked_or_skipped_with_a_reason(run):
    cells = analyses(config := load_config(MICRO))
    summary = pd.read_csv(run / "tables/rankings/summary.csv")
    assert len(summary) == len(cells)
    for cell in cells:
        result = json.loads((run / f"tables/rankings/{cell.name}.json").read_text())
        assert Analysis(**result["analysis"]) == cell
        if result["status"] == "ok":
            assert result["layers"][0]["members"] and result["n_blocks"] >= 2
        else:
            assert result["reason"]
    ok = {(r.group, r.backbone, r.mcd, r.regime) for r in summary.itertuples() if r.status == "ok"}
    # two VGG-13 paradigms × one set × AUGRC and AURC: the rc group ranks every regime the micro config has
    expected = {"test", "near", "far"} | ({"covariate", "adversarial"} if config.get("shifts") else set())
    assert {("rc", "vgg13", False, regime) for regime in expected} <= ok
    assert ("rc", "vgg13", False, "mid") not in ok  # the micro config has no mid set
    skipped = summary[summary.status == "skipped"]
    assert skipped["reason"].str.len().gt(0).all()
    # the omnibus test of every ranked analysis is in the summary (gate off by default: post-hoc always applied)
    ranked = summary[summary.status == "ok"]
    assert ranked[["friedman_chi2", "friedman_p", "iman_davenport_f", "iman_davenport_p"]].notna().all().all()
    assert set(ranked["omnibus_rejected"]) <= {True, False} and not ranked["omnibus_gate"].any()
    assert ranked["posthoc_applied"].all()


def test_cells_of_a_metric_with_replicates_record_their_clique_stability(run):
    # the micro config draws 20 replicates of AUGRC only (evaluation.bootstrap): its augrc cells have a stability
    # on all 20 (the schema's 100, capped at n_boot), the rc cells, which also rank AURC, say why they have none
    stability = pd.read_csv(run / "tables/rankings/clique_stability.csv")
    assert len(stability) and set(stability["group"]) == {"augrc"} and (stability["n_replicates"] == 20).all()
    assert stability["top_clique_share"].between(0, 1).all()
    for cell in analyses(load_config(MICRO)):
        result = json.loads((run / f"tables/rankings/{cell.name}.json").read_text())
        if result["status"] != "ok":
            assert result["stability"]["reason"] == "the cell was not ranked"
        elif cell.group == "augrc":
            share = result["stability"]["top_clique_share"]
            assert result["stability"]["status"] == "ok" and set(share) == set(result["mean_ranks"])
            # every ranked replicate has a top clique: the shares add up to at least the share of ranked replicates
            ranked = 1 - result["stability"]["n_tied"] / 20
            assert sum(share.values()) >= ranked - 1e-9 and ranked > 0, share
        else:
            assert result["stability"]["status"] == "skipped" and "['aurc']" in result["stability"]["reason"]


def test_the_run_writes_its_reproduction_certificate(run):
    # the micro run has none of the paper's data: its data-free targets are reproduced, the others not run
    certificate = pd.read_csv(run / "tables/reproduction.csv")
    free = certificate[certificate["needs"].str.startswith("nothing")]
    assert len(free) >= 14 and (free["verdict"] == "reproduced").all()
    rest = certificate.drop(free.index)
    assert len(rest) and rest["verdict"].str.startswith("not run: needs source 'cifar10'").any()
    # the rule passes the run's NC tables: the micro run has its own source's, not Table 7's sources'
    nc = rest[rest["target"].str.startswith("cb-t7")]
    assert len(nc) == 144 and nc["verdict"].str.startswith("not run: needs the neural-collapse table of source").all()
    assert (run / "tables/reproduction.html").stat().st_size > 1000


def test_figures_and_tables_are_written(run):
    config = load_config(MICRO)
    for backbone in config["backbones"]:
        assert (run / f"figures/top_cliques_{backbone}.png").stat().st_size > 5000
        assert (run / f"figures/top_cliques_{backbone}.pdf").read_bytes()[:5] == b"%PDF-"
    assert (run / "figures/rc_curves_demo10.png").stat().st_size > 5000
    for name in ("clique_layers", "table2_best", "table8_selected_dropout", "table10_selected_reward"):
        tex = (run / f"tables/{name}.tex").read_text()
        LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()
        assert len(pd.read_csv(run / f"tables/{name}.csv")) > 0
    best = pd.read_csv(run / "tables/table2_best.csv")
    assert {"test", "near", "noise"} <= set(best["dataset"])
    vgg = best[best.backbone == "vgg13"]
    assert vgg["best_mcd"].notna().all() and best[best.backbone == "vit"]["best_mcd"].isna().all()
    # Figure 2 analogue: the Conover p-values of the figures.heatmap analysis (default: the clique map's
    # group, first backbone, non-MCD, first source, ID test set), as the ranking JSON has them
    assert (run / "figures/conover_heatmap.png").stat().st_size > 5000
    assert (run / "figures/conover_heatmap.pdf").read_bytes()[:5] == b"%PDF-"
    cell = Jobs(config).heatmap_analysis()
    assert cell == Analysis("rc", "vgg13", False, "demo10", "test")
    result = json.loads((run / f"tables/rankings/{cell.name}.json").read_text())
    matrix = pd.read_csv(run / "tables/conover_heatmap.csv", index_col=0)
    assert result["status"] == "ok" and list(matrix.index) == list(result["mean_ranks"])
    order = list(result["mean_ranks"])
    expected = pd.DataFrame(result["pvalues"]).T.loc[order, order].astype(float)
    pd.testing.assert_frame_equal(matrix, expected, check_names=False, rtol=1e-12)
    curves = pd.read_csv(run / "tables/rc_curves_demo10.csv")
    model = Jobs(config).rc_model("demo10")
    assert set(curves["csf"]) == set(config["figures"]["rc_curves"]["csfs"])
    assert set(curves["dataset"]) == set(Jobs(config).eval_datasets("demo10", model)) - {"train", "val"}
