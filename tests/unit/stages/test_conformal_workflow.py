"""The conformal stage's pieces: band files, conformal metric rows, the config checks, the results-table merge,
selection and ranking on conformal metrics, the report tables (the end-to-end run is in tests/workflow)."""
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from csfbench.aggregate.cells import Analysis, ranking_settings
from csfbench.aggregate.ranking import rank_results, selected_ranked_rows
from csfbench.aggregate.results_table import merge_metric_files
from csfbench.aggregate.selection import selected_rows
from csfbench.metrics import higher_is_better
from csfbench.errors import ConfigError
from csfbench.evaluation import (BOOTSTRAP_COLUMNS, COLUMNS, CONFORMAL_COLUMNS, base_metric, conformal_metric,
                                 conformal_rows)
from csfbench.metrics import fpr_at_tpr
from csfbench.metrics.conformal import (band_metrics, conformal_auroc, conformal_fpr_at_tpr, correction_band,
                                       read_band, write_band)
from csfbench.report.conformal import band_widths, conformal_table, prediction_set_table
from csfbench.workflow.settings import validate_config
from csfbench.specs import EvalSet
from csfbench.stages.conformal import calibration_indices

from tests.helpers.demo_config import demo_config


def _spec():
    from types import SimpleNamespace
    return SimpleNamespace(source="demo10", backbone="vgg13", paradigm="dg", dropout=0, reward=2.2, run=1,
                           member_runs=None)


def test_band_metrics_agree_with_the_public_functions_and_scikit_learn():
    rng = np.random.default_rng(0)
    id_scores, ood_scores = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 250)
    id_scores[:20] = np.round(id_scores[:20], 1)  # ties
    band = correction_band(300, 0.05, "dkwm")
    got = band_metrics(id_scores, ood_scores, band, tprs=(0.95, 0.99))
    labels = np.r_[np.ones(300), np.zeros(250)]
    assert got["auroc"][0] == pytest.approx(roc_auc_score(labels, np.r_[id_scores, ood_scores]), abs=1e-12)
    assert got["auroc"][1] == pytest.approx(conformal_auroc(id_scores, ood_scores, 0.05, "dkwm"), abs=1e-15)
    residual = np.r_[np.zeros(300), np.ones(250)]
    for tpr in (0.95, 0.99):
        classical, conformal = got[f"fpr@{tpr:g}"]
        assert classical == fpr_at_tpr(np.r_[id_scores, ood_scores], residual, tpr, positive="failure")
        assert conformal == conformal_fpr_at_tpr(id_scores, ood_scores, 0.05, "dkwm", tpr)
        assert conformal >= classical
    with pytest.raises(ValueError, match="band has shape"):
        band_metrics(id_scores, ood_scores, band[:-1])


def test_conformal_rows_name_their_band_and_bound_the_classical_values():
    rng = np.random.default_rng(1)
    cal = {"det": {("MSR", "none"): rng.random(50), ("MLS", "global"): rng.normal(size=50)}}
    shifted = {"det": {("MSR", "none"): rng.random(80) * 0.8, ("MLS", "global"): rng.normal(-0.5, 1, 80)}}
    bands = {("dkwm", 0.05): correction_band(50, 0.05, "dkwm"), ("simes", 0.1): correction_band(50, 0.1, "simes")}
    protocols = {(False, "MSR", "none"): "none", (False, "MLS", "global"): "bayes"}
    rows = conformal_rows(_spec(), EvalSet("near", "semantic", "near"), cal, shifted, bands, (0.95, 0.99), "test",
                          protocols)
    assert list(rows.columns) == COLUMNS + CONFORMAL_COLUMNS
    # per variant: 3 classical metrics once, and 3 corrected metrics per band
    assert len(rows) == 2 * (3 + 3 * 2)
    assert set(rows["metric"]) == {"auroc", "fpr95_failure_positive", "fpr99_failure_positive"} | {
        conformal_metric(b, m, d) for b in ("auroc", "fpr95_failure_positive", "fpr99_failure_positive")
        for m, d in bands}
    assert set(rows.loc[rows["metric"] == "auroc", "conformal_method"]) == {"none"}
    assert rows.loc[rows["conformal_method"] == "none", "delta"].isna().all()
    assert set(rows["n_cal"]) == {50} and set(rows["scheme"]) == {"conformal"}
    assert dict(zip(rows["csf"], rows["tuning_protocol"])) == {"MSR": "none", "MLS": "bayes"}
    assert rows[["n_mc", "band_seed"]].isna().all().all()  # closed-form bands: no simulation
    simulated = conformal_rows(_spec(), EvalSet("near", "semantic", "near"), cal, shifted,
                               {**bands, ("mc_search", 0.05): correction_band(50, 0.05, "mc_search", n_mc=200, seed=3)},
                               (0.95,), "test", protocols, simulation=(200, 3))
    mc = simulated["conformal_method"] == "mc_search"
    assert mc.any() and (simulated.loc[mc, "n_mc"] == 200).all() and (simulated.loc[mc, "band_seed"] == 3).all()
    assert simulated.loc[~mc, ["n_mc", "band_seed"]].isna().all().all()
    values = rows.set_index(["csf", "metric"])["value"]
    for csf in ("MSR", "MLS"):
        for m, d in bands:
            assert values[(csf, conformal_metric("auroc", m, d))] <= values[(csf, "auroc")]
            assert values[(csf, conformal_metric("fpr95_failure_positive", m, d))] >= values[(csf, "fpr95_failure_positive")]


def test_metric_names_and_orientation():
    assert conformal_metric("auroc", "mc_gamma0", 0.05) == "auroc@mc_gamma0@0.05"
    assert base_metric("fpr95_failure_positive@dkwm@0.1") == "fpr95_failure_positive"
    assert base_metric("augrc") == "augrc"
    assert higher_is_better("auroc@dkwm@0.05") and not higher_is_better("fpr99_failure_positive@simes@0.05")


def test_band_files_round_trip_and_reject_another_n(tmp_path):
    path = tmp_path / "bands" / "b.npy"
    write_band(40, 0.05, "mc_gamma0", 100, 0, path)
    np.testing.assert_array_equal(read_band(path, 40), correction_band(40, 0.05, "mc_gamma0"))
    with pytest.raises(ValueError, match="not a correction band for n = 41"):
        read_band(path, 41)


def test_calibration_indices_are_seeded_and_checked():
    a = calibration_indices(100, 30, 0)
    assert len(set(a)) == 30 and (np.diff(a) > 0).all() and a.max() < 100
    np.testing.assert_array_equal(a, calibration_indices(100, 30, 0))
    assert not np.array_equal(a, calibration_indices(100, 30, 1))
    with pytest.raises(ConfigError, match="conformal/calibration/n_cal"):
        calibration_indices(100, 100, 0)


def test_config_defaults_and_checks():
    config = validate_config(demo_config(None))
    assert set(config["conformal"]) >= {"enabled", "delta", "methods", "calibration", "prediction_sets"}
    bad = demo_config(None)
    bad["conformal"] = {"calibration": {"split": "val"}}
    with pytest.raises(ConfigError, match="conformal/calibration/split.*fitted or tuned on the ID validation"):
        validate_config(bad)
    small = demo_config(None)
    small["conformal"] = {"methods": ["dkwm", "asymptotic"], "calibration": {"n_cal": 10}}
    with pytest.raises(ConfigError, match=r"conformal/calibration/n_cal.*\['asymptotic'\]"):
        validate_config(small)
    small["conformal"]["methods"] = ["dkwm", "simes"]
    small["ranking"] = {"metric_groups": {"augrc": ["augrc"]}}  # the demo's groups rank an mc_search metric
    validate_config(small)  # finite-sample bands take any n
    with pytest.raises(ConfigError, match="conformal/methods"):
        validate_config({**demo_config(None), "conformal": {"methods": ["bonferroni"]}})


def _table(rng, with_conformal=True):
    """A results table of two paradigms × two dropout configurations × three CSFs: validation rows of auroc and
    conformal rows on one semantic set."""
    rows = []
    for paradigm in ("dg", "devries"):
        for dropout in (0, 1):
            for csf, quality in (("A", 0.9), ("B", 0.7), ("C", 0.5)):
                common = dict(source="s", backbone="vgg13", paradigm=paradigm, dropout=dropout, reward=0.0, run=1,
                              mcd=False, csf=csf, variant="none", tuning_protocol="none", regime="near")
                rows.append({**common, "dataset": "val", "shift_type": "id", "scheme": "misclf", "split": "val",
                             "metric": "auroc", "value": quality + 0.05 * dropout})
                if with_conformal:
                    for metric, shift in (("auroc", 0.0), ("auroc@dkwm@0.05", -0.2)):
                        rows.append({**common, "dataset": "near", "shift_type": "semantic", "scheme": "conformal",
                                     "split": "test", "metric": metric,
                                     "value": quality + shift + 0.01 * dropout + rng.normal(0, 0.001)})
    return pd.DataFrame(rows, columns=COLUMNS)  # every metric-row column (the sets' group keys null)


def test_conformal_rows_follow_the_selection_of_their_base_metric():
    table = _table(np.random.default_rng(2))
    chosen = selected_rows(table)
    conformal = chosen[chosen["metric"] == "auroc@dkwm@0.05"]
    assert len(conformal) == 6 and set(conformal["dropout"]) == {1}  # dropout 1 has the higher validation AUROC


def test_rankings_run_on_a_conformal_metric_group():
    table = _table(np.random.default_rng(3))
    settings = ranking_settings({"alpha": 0.05, "p_adjust": "none", "omnibus_gate": False, "incomplete": "drop_csfs",
                                 "blocks": ["dataset", "paradigm", "metric"],
                                 "metric_groups": {"conformal_auroc": ["auroc@dkwm@0.05"]},
                                 "schemes": {"id": "misclf", "semantic": "correct_vs_ood", "covariate": "misclf",
                                             "adversarial": "misclf"}, "stability": {"n_replicates": 0}})
    (result,) = rank_results(table, [Analysis("conformal_auroc", "vgg13", False, "s", "near")], settings)
    assert result["status"] == "ok" and result["scheme"] == "conformal"
    ranks = result["mean_ranks"]
    assert ranks["A"] < ranks["B"] < ranks["C"]  # higher AUROC = better rank


def test_a_conformal_group_ranks_the_conformal_rows_and_a_classical_group_its_scheme():
    table = _table(np.random.default_rng(3))
    base = {"alpha": 0.05, "p_adjust": "none", "omnibus_gate": False, "incomplete": "drop_csfs",
            "blocks": ["dataset", "paradigm", "metric"],
            "schemes": {"id": "misclf", "semantic": "correct_vs_ood", "covariate": "misclf", "adversarial": "misclf"},
            "stability": {"n_replicates": 0}}
    settings = ranking_settings({**base, "metric_groups": {"c": ["auroc@dkwm@0.05"], "a": ["auroc"]}})
    rows = selected_ranked_rows(table, settings)
    assert set(rows.loc[rows["metric"] == "auroc@dkwm@0.05", "scheme"]) == {"conformal"}
    assert set(rows.loc[rows["metric"] == "auroc", "scheme"]) <= {"correct_vs_ood"}
    # a group mixing both kinds is a config error (tests/unit/aggregate/test_ranking.py)


def test_merge_fills_the_conformal_columns_of_older_metric_files(tmp_path):
    table = _table(np.random.default_rng(4))
    classical = table[table["scheme"] != "conformal"][COLUMNS]
    conformal = table[table["scheme"] == "conformal"].assign(delta=0.05, conformal_method="dkwm", n_cal=40,
                                                              calibration="test")
    classical.to_parquet(tmp_path / "a.parquet", index=False)
    conformal.to_parquet(tmp_path / "b.parquet", index=False)
    merged = merge_metric_files([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert list(merged.columns) == COLUMNS + CONFORMAL_COLUMNS + BOOTSTRAP_COLUMNS
    assert merged.loc[merged["scheme"] == "misclf", CONFORMAL_COLUMNS].isna().all().all()
    # neither file has the bootstrap columns: no intervals
    assert (merged["n_boot"] == 0).all() and merged[["ci_low", "ci_high", "ci_level"]].isna().all().all()
    assert (merged.loc[merged["scheme"] == "conformal", "n_cal"] == 40).all()


def test_report_tables_have_the_papers_shapes():
    table = _table(np.random.default_rng(5))
    table = table.assign(metric=table["metric"].replace({"auroc@dkwm@0.05": "auroc@dkwm@0.05"}))
    fpr = table[table["scheme"] == "conformal"].assign(
        metric=lambda f: f["metric"].str.replace("auroc", "fpr95_failure_positive"), value=0.3)
    wide = conformal_table(pd.concat([table, fpr]), "s", "dkwm", 0.05)
    assert list(wide.columns) == ["near auroc", "near auroc_sd", "near auroc conformal", "near auroc conformal_sd",
                                  "near fpr95", "near fpr95_sd", "near fpr95 conformal", "near fpr95 conformal_sd",
                                  "n_models"]
    assert list(wide.index) == ["A", "B", "C"]
    expected = table[(table["metric"] == "auroc") & (table["scheme"] == "conformal") & (table["csf"] == "A")]["value"]
    assert wide.loc["A", "near auroc"] == pytest.approx(expected.mean())
    sets = pd.DataFrame({"score": ["knn", "knn", "softmax", "softmax"], "alpha": [0.05, 0.05, 0.05, 0.05],
                         "method": ["lac", "aps", "lac", "aps"], "size": [2.0, 3.0, 1.0, 1.5],
                         "size_std": [0.0, 0.3, 0.0, 0.1], "coverage": [0.95, 0.97, 0.96, 0.98]})
    other = sets.assign(size=sets["size"] + 1, size_std=[0.0, 0.4, 0.0, 0.1])
    wide2 = prediction_set_table([sets, other])
    # Table 2's "mean ± std": size, then (APS/RAPS only, LAC is deterministic) its std over the draws of U,
    # pooled over the models as the root mean square, then coverage
    assert list(wide2.columns) == ["alpha=0.05 aps size", "alpha=0.05 aps size_sd", "alpha=0.05 aps size std",
                                   "alpha=0.05 aps coverage", "alpha=0.05 aps coverage_sd", "alpha=0.05 lac size",
                                   "alpha=0.05 lac size_sd", "alpha=0.05 lac coverage", "alpha=0.05 lac coverage_sd",
                                   "n_models"]
    assert wide2.loc["knn", "alpha=0.05 lac size_sd"] == pytest.approx(np.std([2.0, 3.0], ddof=1))
    assert (wide2["n_models"] == 2).all()
    assert wide2.loc["knn", "alpha=0.05 lac size"] == pytest.approx(2.5)
    assert wide2.loc["knn", "alpha=0.05 aps size"] == pytest.approx(3.5)
    assert wide2.loc["knn", "alpha=0.05 aps size std"] == pytest.approx(np.sqrt((0.3 ** 2 + 0.4 ** 2) / 2))  # 0.3536
    assert wide2.loc["softmax", "alpha=0.05 aps size std"] == pytest.approx(0.1)
    assert wide2.loc["softmax", "alpha=0.05 aps coverage"] == pytest.approx(0.98)


def test_band_widths_read_the_given_bands_and_shrink_with_n():
    bands = {(m, n): correction_band(n, 0.05, m) for m in ("dkwm", "mc_gamma0") for n in (5000, 50, 500)}
    widths = band_widths(bands)
    assert list(widths["n"]) == [50, 500, 5000] * 2 and list(widths["method"]) == ["dkwm"] * 3 + ["mc_gamma0"] * 3
    for _, part in widths.groupby("method"):
        assert (np.diff(part["width"].to_numpy()) < 0).all() and (part["width"] > 0).all()
    dkwm = widths[widths["method"] == "dkwm"].set_index("n")["width"]
    # DKWM lifts every FPR by ε = sqrt(log(2/δ)/(2n)): at n = 500, k = 25, b_26 − 25/500 = 1/500 + ε
    assert dkwm[500] == pytest.approx(1 / 500 + np.sqrt(np.log(2 / 0.05) / 1000), abs=1e-12)
    # the widths are those of the bands passed in (the workflow's band files), not recomputed
    widths = band_widths({("dkwm", 100): np.linspace(0.5, 1.0, 100)})
    assert widths["width"].tolist() == pytest.approx([np.linspace(0.5, 1.0, 100)[5] - 0.05])
    with pytest.raises(ValueError, match="band of dkwm for n = 100 has shape"):
        band_widths({("dkwm", 100): np.linspace(0.5, 1.0, 99)})


def test_ranking_groups_may_name_the_configured_conformal_metrics():
    config = demo_config(None)
    config["conformal"] = {"enabled": True, "methods": ["dkwm"], "delta": [0.05]}
    config["ranking"] = {"metric_groups": {"augrc": ["augrc"], "conformal_auroc": ["auroc@dkwm@0.05"]}}
    validate_config(config)
    config["ranking"]["metric_groups"]["conformal_auroc"] = ["auroc@simes@0.05"]  # a band the config lacks
    with pytest.raises(ConfigError, match="ranking/metric_groups/conformal_auroc.*did you mean 'auroc@dkwm@0.05'"):
        validate_config(config, "test")
