"""Deep ensembles in the selection and the rankings: their own validation selection, their entities beside the
single models' in the cells, and each ensemble ranked beside its members."""
from __future__ import annotations

import pandas as pd

from csfbench.aggregate.cells import Analysis
from csfbench.aggregate.ensemble_ranking import rank_ensembles
from csfbench.aggregate.ranking import rank_results, selected_ranked_rows
from csfbench.aggregate.selection import select_configurations

from tests.helpers.results_synthetic import synthetic_results
from tests.unit.aggregate.test_ranking import _ranking

GAIN = 0.5  # the ensemble's test values are its run-1 member's minus this (lower AUGRC / AURC = better)


def _with_ensembles() -> pd.DataFrame:
    """The synthetic results (ConfidNet only) and an ensemble of runs 1-2 of both its dropout configurations, whose
    validation prefers dropout 0 for every CSF (the single models prefer dropout 1 but for Energy)."""
    table = synthetic_results()
    table = table[table["paradigm"] == "confidnet"]
    ensemble = table[table["run"] == 1].assign(run=0, members="1-2")
    val = ensemble["split"] == "val"
    ensemble.loc[val, "value"] = ensemble.loc[val, "dropout"].map({0: 0.1, 1: 0.2})
    ensemble.loc[~val, "value"] -= GAIN
    native = ensemble[ensemble["csf"] == "MSR"].assign(csf="Ensemble MSR")
    native = native[native["variant"] == "none"]
    native.loc[native["split"] != "val", "value"] -= 0.1
    return pd.concat([table, ensemble, native], ignore_index=True)


def test_an_ensemble_is_selected_on_its_own_validation_rows():
    chosen = select_configurations(_with_ensembles())
    chosen = chosen[~chosen["mcd"]]  # the MC-dropout variants exist for dropout 1 only
    singles, ensembles = chosen[~chosen["ensemble"]], chosen[chosen["ensemble"]]
    assert set(singles.loc[singles["csf"] == "GEN", "dropout"]) == {1}
    assert set(ensembles.loc[ensembles["csf"] == "GEN", "dropout"]) == {0}
    assert set(ensembles["csf"]) == {"GEN", "MSR", "Energy", "Ensemble MSR"}


def test_ensemble_entities_are_ranked_beside_the_single_models():
    settings = _ranking(metric_groups={"rc": ["augrc", "aurc"]})
    rows = selected_ranked_rows(_with_ensembles(), settings)
    ensemble = rows[rows["members"].notna()]
    assert set(ensemble.loc[~ensemble["mcd"], "dropout"]) == {0}  # its own selection
    assert set(ensemble["entity"]) == {"GEN (member mean)", "MSR (member mean)", "MSR global (member mean)",
                                       "Energy (member mean)", "Ensemble MSR"}
    assert set(rows.loc[rows["members"].isna(), "entity"]) == {"GEN", "MSR", "MSR global", "Energy"}
    (result,) = rank_results(_with_ensembles(), [Analysis("rc", "vgg13", False, "s1", "near")], settings)
    assert result["status"] == "ok" and len(result["mean_ranks"]) == 9
    assert list(result["mean_ranks"])[0] == "Ensemble MSR"  # the best value in every block
    # with run among the block columns an ensemble (run 0) has no block of its own: its rows are left out
    by_run = _ranking(metric_groups={"rc": ["augrc", "aurc"]}, blocks=["dataset", "paradigm", "metric", "run"])
    assert selected_ranked_rows(_with_ensembles(), by_run)["members"].isna().all()


def test_each_ensemble_is_ranked_beside_its_members():
    settings = _ranking(metric_groups={"augrc": ["augrc"], "aurc": ["aurc"]})
    frame = rank_ensembles(_with_ensembles(), settings)
    ok = frame[frame["status"] == "ok"]
    # one ensemble per dropout configuration × regimes test, near, far × the two groups
    assert set(zip(ok["dropout"], ok["members"])) == {(0, "1-2"), (1, "1-2")}
    assert set(ok["regime"]) == {"test", "near", "far"} and set(ok["group"]) == {"augrc", "aurc"}
    assert set(ok["entity"]) == {"run 1", "run 2", "ensemble"}
    best = ok[ok["mean_rank"] == ok.groupby(["dropout", "group", "regime"])["mean_rank"].transform("min")]
    assert set(best["entity"]) == {"ensemble"} and best["top_clique"].all()
    # blocks: the MCD flag × the 4 CSF variants the members have (the ensemble's own CSFs are not blocks): dropout
    # 1 has MCD rows, dropout 0 none
    blocks = ok.drop_duplicates(["dropout", "group", "regime"]).set_index(["dropout", "group", "regime"])["n_blocks"]
    assert set(blocks.xs(1, level="dropout")) == {8} and set(blocks.xs(0, level="dropout")) == {4}


def test_a_metric_group_without_ensemble_rows_is_not_ranked():
    """The ensembles have no conformal rows: a group of conformal metrics has no ensemble ranking."""
    table = _with_ensembles()
    table = pd.concat([table, table[table["members"].isna() & (table["metric"] == "augrc")].assign(
        metric="auroc@mc_search@0.05", scheme="conformal")], ignore_index=True)
    frame = rank_ensembles(table, _ranking(metric_groups={"augrc": ["augrc"], "conformal": ["auroc@mc_search@0.05"]}))
    assert set(frame["group"]) == {"augrc"}


def test_no_ensemble_no_rows():
    assert rank_ensembles(synthetic_results(), _ranking(metric_groups={"augrc": ["augrc"]})).empty
