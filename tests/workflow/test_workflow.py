"""Snakemake end to end on the micro config, dry run of the paper grid, fail-fast on missing data, lint."""
import dataclasses
import json
import re
import subprocess
import time

import h5py
import numpy as np
import pandas as pd
import pytest
import yaml

from csfbench.workflow import paths
from csfbench.csf.registry import variants_for
from csfbench.csf.store import read_scores
from csfbench.evaluation import BOOTSTRAP_COLUMNS, COLUMNS, CONFORMAL_COLUMNS, REPLICATE_COLUMN
from csfbench.features.store import validate_feature_file
from csfbench.metrics import metric_names, metric_spec
from csfbench.provenance import weights_files
from csfbench.csf.projection import NETWORK_SCORER
from csfbench.workflow.grid import Grid
from csfbench.workflow.jobs import Jobs
from csfbench.workflow.settings import load_config

from tests.helpers.micro_run import MICRO, SHARES_MICRO_RUN, finished_micro_run, snakemake
from tests.helpers.repo import REPO, venv_bin
from tests.helpers.workflow_runs import scheduled_jobs, write_config

pytestmark = [pytest.mark.workflow, SHARES_MICRO_RUN]


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory):
    workdir, seconds = finished_micro_run(tmp_path_factory)  # one run shared with the other workflow tests
    return workdir, seconds, None


def test_micro_config_runs_end_to_end_through_metrics(micro_run):
    workdir, seconds, _ = micro_run
    config = load_config(MICRO)
    expected = [workdir / paths.features(s, str(m), d) for s, m in Grid(config).iter_models()
                for d in Grid(config).eval_datasets(s)]
    assert len(expected) == 20
    for path in expected:
        attrs = validate_feature_file(path, expect={"model": path.parent.name, "dataset": path.stem})
        assert attrs["git_commit"] and attrs["config_hash"]
    for source, model in Grid(config).iter_models():
        assert (workdir / paths.checkpoint(source, str(model))).is_file()
        assert (workdir / paths.log("train", f"{source}/{model}")).read_text().count("epoch") >= 1
        assert (workdir / paths.benchmark("train", f"{source}/{model}")).is_file()
    assert (workdir / "results/pretrained/vit_demo.safetensors").is_file()
    assert not list(workdir.glob("results/**/.*.tmp-*"))  # no temporary leftovers
    print(f"micro workflow: {seconds:.0f} s")


def test_every_model_group_and_set_has_fit_scores_and_metric_rows(micro_run):
    workdir, _, _ = micro_run
    config = load_config(MICRO)
    for source, model in Grid(config).iter_models():
        backbone = model.backbone
        n_variants = 0
        for group in config["csf"]["groups"]:
            with h5py.File(workdir / paths.csf_fit(source, str(model), group), "r") as fh:
                n_variants += sum(len(fh[f"det/csf/{name}"]) for name in fh["det/csf"])
                assert ("mcd" in fh) == (backbone == "vgg13" and model.dropout == 1)  # MC dropout inputs
        assert n_variants == len(variants_for(backbone))  # 83 for VGG-13, 82 for the ViT
        for group in config["csf"]["groups"]:
            # one metrics file and one scores file per (model, fit group), covering every scored set
            table = pd.read_parquet(workdir / paths.metrics(source, str(model), group))
            # the micro config keeps 20 replicates of its ranked AUGRC rows for the clique stability, in no other row
            assert list(table.columns) == COLUMNS + BOOTSTRAP_COLUMNS + [REPLICATE_COLUMN]
            kept = table[table[REPLICATE_COLUMN].notna()]
            assert len(kept) and set(kept["metric"]) == {"augrc"} and (kept[REPLICATE_COLUMN].map(len) == 20).all()
            assert len(kept) == ((table["metric"] == "augrc") & (table["n_boot"] > 0)).sum()
            assert set(table["dataset"]) == set(Grid(config).scored_datasets(source, model))
            for dataset in ("val", "test", "near", "noise"):
                rows = table[table["dataset"] == dataset]
                scores, attrs = read_scores(workdir / paths.scores(source, str(model), group), dataset)
                assert attrs["dataset"] == dataset and attrs["group"] == group and "det" in scores
                assert rows["value"].notna().all() and len(rows) > 0
                schemes = set(rows["scheme"])
                assert schemes == ({"misclf"} if dataset in ("val", "test") else
                                   {"correct_vs_ood", "newclass", "failure"})
                assert set(rows["split"]) == {"val" if dataset == "val" else "test"}
                aurc = rows[rows.metric == "aurc"]["value"]
                assert ((aurc >= 0) & (aurc <= 1)).all()
    results = pd.read_parquet(workdir / "results/results.parquet")
    assert list(results.columns) == COLUMNS + CONFORMAL_COLUMNS + BOOTSTRAP_COLUMNS
    assert results["source"].unique().tolist() == ["demo10"]
    # micro.yaml's bootstrap: an interval around every test-split AUGRC row of a scheme with both classes, none
    # elsewhere (validation rows, other metrics, the conformal rows)
    boot = config["evaluation"]["bootstrap"]
    chosen = (results["split"] == "test") & (results["metric"] == "augrc") & results["conformal_method"].isna()
    inside = results[chosen & (results["n_boot"] > 0)]
    assert len(inside) > 0.9 * chosen.sum() and (inside["n_boot"] == boot["n_boot"]).all()
    assert ((0 <= inside["ci_low"]) & (inside["ci_low"] <= inside["ci_high"]) & (inside["ci_high"] <= 1)).all()
    # a percentile interval need not hold its point estimate, but nearly always does
    holds = (inside["ci_low"] <= inside["value"] + 1e-12) & (inside["value"] <= inside["ci_high"] + 1e-12)
    assert holds.mean() > 0.75, holds.mean()
    assert (inside["ci_level"] == boot["level"]).all()
    assert (results.loc[~chosen, "n_boot"] == 0).all() and results.loc[~chosen, "ci_low"].isna().all()
    # micro.yaml's evaluation section: every preset's names, each in the schemes it applies to
    by_metric = results[results["conformal_method"].isna()].groupby("metric")["scheme"].agg(set)
    evaluation = config["evaluation"]
    for name in metric_names(evaluation["conventions"], evaluation["metrics"]):
        spec = metric_spec(name)
        expected = set(spec.schemes) & {"failure"} if spec.schemes else (
            {"misclf"} if "labels" in spec.needs else {"misclf", "correct_vs_ood", "newclass", "failure"})
        assert by_metric.get(name, set()) >= expected, (name, by_metric.get(name))
    selected = pd.read_csv(workdir / "results/tables/selected_configurations.csv")
    assert len(selected) > 0 and set(selected["dropout"]) <= {1, 0}


def test_network_pass_csfs_join_the_scores_metrics_and_results(micro_run):
    """ODIN-IP, GRAM and RankFeat (rules/network_csf.smk): a fit, a scores and a metrics file per model in the
    fit-group slot `network`, in the other groups' format, and their rows in the results table and the rankings."""
    workdir, _, _ = micro_run
    config = load_config(MICRO)
    names = set(config["network_csf"]["methods"])
    assert names == {"ODIN-IP", "GRAM", "RankFeat"}
    for source, model in Grid(config).iter_models():
        assert (workdir / paths.network_fit(source, str(model))).is_file()
        table = pd.read_parquet(workdir / paths.metrics(source, str(model), NETWORK_SCORER))
        assert list(table.columns) == COLUMNS + BOOTSTRAP_COLUMNS + [REPLICATE_COLUMN] and set(table["csf"]) == names
        assert set(table["dataset"]) == set(Grid(config).scored_datasets(source, model))
        assert set(table["variant"]) == {"none"} and not table["mcd"].any()
        assert dict(zip(table["csf"], table["tuning_protocol"])) == {"ODIN-IP": "id_grid", "GRAM": "none",
                                                                      "RankFeat": "none"}
        scores, attrs = read_scores(workdir / paths.scores(source, str(model), NETWORK_SCORER), "near")
        assert attrs["group"] == NETWORK_SCORER and set(scores) == {"det"}
        assert {csf for csf, _ in scores["det"]["scores"]} == names
        # correctness is the feature file's, as in every other group's scores file
        other, _ = read_scores(workdir / paths.scores(source, str(model), "none"), "test")
        mine, _ = read_scores(workdir / paths.scores(source, str(model), NETWORK_SCORER), "test")
        assert (other["det"]["correct"] == mine["det"]["correct"]).all()
    results = pd.read_parquet(workdir / "results/results.parquet")
    assert names <= set(results["csf"])
    ranked = [json.loads(path.read_text()) for path in (workdir / paths.rankings_dir()).glob("*/*.json")]
    ranked = [result["mean_ranks"] for result in ranked if result["status"] == "ok" and not result["analysis"]["mcd"]]
    assert ranked and all(names <= set(mean_ranks) for mean_ranks in ranked)  # ranked like every other CSF


def test_conformal_stage_writes_bands_rows_prediction_sets_and_report_files(micro_run):
    """rules/conformal.smk: one band file per (n, delta, method), scheme `conformal` rows of every CSF variant
    and shifted set in the results table (conformal FPR >= classical, AUROC <=), prediction sets per model and
    the report's figure and tables."""
    workdir, _, _ = micro_run
    config = load_config(MICRO)
    settings = config["conformal"]
    n_cal = settings["calibration"]["n_cal"]
    for method in settings["methods"]:
        band = np.load(workdir / paths.conformal_band(n_cal, settings["delta"][0], method, settings["n_mc"],
                                                      settings["seed"]))
        assert band.shape == (n_cal,) and (np.diff(band) >= 0).all()
        for n in settings["figure"]["band_sizes"]:  # the report's band-width panel reads cached bands too
            assert np.load(workdir / paths.conformal_band(n, settings["delta"][0], method, settings["n_mc"],
                                                          settings["seed"])).shape == (n,)
    results = pd.read_parquet(workdir / "results/results.parquet")
    rows = results[results["scheme"] == "conformal"]
    assert set(rows["calibration"]) == {"test"} and set(rows["n_cal"]) == {n_cal}
    assert results.loc[results["scheme"] != "conformal", "conformal_method"].isna().all()
    for source, model in Grid(config).iter_models():
        identity = pd.Series({"source": source, **dataclasses.asdict(model)})
        of_model = (results[identity.index] == identity).all(axis=1)  # this run's rows, not the ensemble's
        mine = results[of_model & (results["scheme"] == "conformal")]
        shifted = {d for d in Grid(config).scored_datasets(source, model) if d not in ("val", "test")}
        assert set(mine["dataset"]) == shifted
        # the same run's CSF variants (an ensemble, run 0, is not in the conformal stage)
        other = results[of_model & (results["scheme"] == "newclass")]
        assert set(zip(mine["csf"], mine["variant"])) == set(zip(other["csf"], other["variant"]))
        key = ["mcd", "csf", "variant", "dataset"]
        for base in ("auroc", "fpr95_failure_positive", "fpr99_failure_positive"):
            classical = mine[mine["metric"] == base].set_index(key)["value"]
            for method in settings["methods"]:
                corrected = mine[mine["metric"] == f"{base}@{method}@0.05"].set_index(key)["value"]
                assert len(corrected) == len(classical) > 0
                worse = corrected.loc[classical.index] - classical
                assert ((worse <= 1e-12) if base == "auroc" else (worse >= -1e-12)).all()
        table = pd.read_parquet(workdir / paths.prediction_sets(source, str(model)))
        assert set(table["score"]) == set(settings["prediction_sets"]["scores"])
        assert table["coverage"].between(0, 1).all() and (table["size"] >= 1).all()
    for source in config["sources"]:
        assert (workdir / paths.figure(f"conformal_{source}.png")).stat().st_size > 10_000
        table1 = pd.read_csv(workdir / paths.table(f"conformal_table1_{source}.csv"), index_col=0)
        assert "MSR" in table1.index and "near auroc conformal" in table1.columns
        assert (table1["near auroc conformal"] <= table1["near auroc"] + 1e-12).all()
        table2 = pd.read_csv(workdir / paths.table(f"conformal_table2_{source}.csv"), index_col=0)
        assert set(table2.index) == set(settings["prediction_sets"]["scores"])
        assert {"alpha=0.05 aps size std", "alpha=0.05 raps size std"} <= set(table2.columns)  # Table 2's mean ± std
        assert "alpha=0.05 lac size std" not in table2.columns and (table2["alpha=0.05 aps size std"] >= 0).all()


def test_pair_analyses_check_every_cell_and_write_their_tables(micro_run):
    """rules/analyses.smk on the micro run: every (model, CSF, pair) cell with its identities holding, the pair
    grid (ID test split and each covariate set against each semantic set), the false-rejection rows, the
    cliques over (model, pair) blocks (JSON and table), the distance-controlled AUROC of semantic and covariate
    sets, the rank comparison, the gallery, ICONIC-444's category tables and a figure for each."""
    workdir, _, _ = micro_run
    config = load_config(MICRO)
    cells = pd.read_csv(workdir / paths.analysis_table("decomposition", "demo10"))
    covariate = sorted(Grid(config).corruption_sets("demo10"))
    pairs = {(i, o) for i in ["test", *covariate] for o in ("near", "noise")}
    study = {str(m) for s, m in Grid(config).study_models()}
    for model, part in cells.groupby("model"):
        expected = pairs if model in study else {(i, o) for i, o in pairs if i == "test"}
        assert set(zip(part["id_set"], part["ood_set"])) == expected, model
    defined = cells.dropna(subset=["a_co", "a_io", "a_ci"])
    assert len(defined) and np.allclose(defined["newclass"], defined["newclass_from_parts"], atol=1e-9)
    # the pairs' rows in the results table, the ID-role set in `id_set` and the OOD-role set in `dataset`
    results = pd.read_parquet(workdir / paths.results_table())
    new = results[results["scheme"].isin(["incorrect_vs_ood", "failure_pooled", "shiftdetect", "frr_at_q"])]
    assert set(zip(new["id_set"], new["dataset"])) == pairs
    assert set(results.loc[results["scheme"].isin(["correct_vs_ood", "newclass"]) & results["dataset"].isin(
        ["near", "noise"]), "id_set"]) == {"test", *covariate}
    shifted = cells[cells["id_set"] == covariate[0]].set_index(["csf", "ood_set"])["newclass"].dropna()
    rows = results[(results["id_set"] == covariate[0]) & (results["scheme"] == "newclass")]
    assert len(shifted) and np.allclose(rows.set_index(["csf", "dataset"])["value"].loc[shifted.index], shifted,
                                        atol=1e-5)
    assert np.allclose(defined["failure"], defined["failure_from_parts"], atol=1e-9)
    grid_table = pd.read_csv(workdir / paths.analysis_table("pair_grid", "demo10"), index_col=0)
    assert {"test / near", f"{covariate[0]} / noise", "test / near Δ"} <= set(grid_table.columns)
    assert grid_table.loc["MSR", "test / near Δ"] == 0.0
    conditional = pd.read_csv(workdir / paths.analysis_table("conditional", "demo10")).dropna()
    assert len(conditional) and np.allclose(conditional["delta_newclass"],
                                            conditional["delta_from_correct"] + conditional["delta_from_incorrect"],
                                            atol=1e-5)
    frr = pd.read_csv(workdir / paths.analysis_table("frr", "demo10"))
    assert set(frr["semantic_set"]) == {"near", "noise"} and frr["frr"].between(0, 1).all()
    assert set(frr["q"]) == {config["analyses"]["frr_quantile"]}
    rankings = json.loads((workdir / paths.pair_rankings("demo10")).read_text())
    assert rankings["status"] == "ok" and "MSR" in rankings["mean_ranks"]
    ranked = pd.read_csv(workdir / paths.analysis_table("pair_rankings", "demo10"))
    assert list(ranked["csf"]) == list(rankings["mean_ranks"]) and (ranked["layer"].dropna() >= 1).all()
    assert ranked["cliques"].notna().all()  # every CSF is in a maximal clique, not always in a greedy layer
    for name in ("pairs", "decomposition", "conditional", "frr", "pair_rankings"):
        assert (workdir / paths.figure(f"{name}_demo10.png")).stat().st_size > 10_000, name
    # the distance-controlled AUROC over the embeddings of the semantic sets (proximity stage) and, for the
    # model of the shift study, of the corruption sets (rule covariate_embed)
    fits = pd.read_csv(workdir / paths.analysis_table("distance", "demo10"))
    for model, part in fits.groupby("model"):
        extra = set(covariate) if model in study else set()
        assert set(part["query_set"]) == {"near", "noise"} | extra, model
    assert (fits["n_bins"] == 100).all()
    assert (fits["slope_se"] > 0).all() and fits["r_squared"].between(0, 1).all()
    overlaps = pd.read_csv(workdir / paths.analysis_table("distance_overlap", "demo10"))
    n_sets = fits.groupby(["model", "csf"])["query_set"].nunique()
    assert len(overlaps) == (n_sets * (n_sets - 1) // 2).sum() and overlaps["overlap"].isin([True, False]).all()
    assert (workdir / paths.figure("distance_demo10.png")).stat().st_size > 10_000
    ranks = pd.read_csv(workdir / paths.analysis_table("ranks", "demo10"))
    assert set(ranks["csf"]) == {"MSR", "MLS"} and set(ranks["ood_set"]) == {"near", "noise"}
    assert set(ranks["group"]) == {"correct_id", "incorrect_id", "ood"} and ranks["mean_rank"].between(0, 100).all()
    assert (workdir / paths.figure("scores_demo10.png")).stat().st_size > 10_000
    picked = pd.read_csv(workdir / paths.analysis_table("gallery", "demo10"))
    k = config["analyses"]["gallery_k"]
    assert picked.groupby("set").size().to_dict() == {"test": k, "near": k, "noise": k}
    assert (picked["gap"].diff()[picked["position"] > 1] <= 1e-9).all()  # largest gap first within a set
    assert (workdir / paths.figure("gallery_demo10.png")).stat().st_size > 10_000
    # ICONIC-444's category tables: near (its one set), far (noise), covariate (the corruption sets), Average
    categories = pd.read_csv(workdir / paths.category_table("averaged"), index_col=0)
    for column in ("near auroc mean", "far fpr99_failure_positive std", "covariate (averaged) auroc mean",
                   "Average auroc mean", "Average auroc std"):
        assert column in categories.columns, column
    means = categories[["near auroc mean", "far auroc mean", "covariate (averaged) auroc mean"]]
    assert np.allclose(categories["Average auroc mean"], means.mean(axis=1), atol=1e-5)  # the CSV keeps 6 digits
    assert np.allclose(categories["Average auroc std"], means.std(axis=1, ddof=1), atol=1e-5)
    pooled = pd.read_csv(workdir / paths.category_table("pooled"), index_col=0)
    assert {"covariate (pooled) auroc mean", "Average auroc std"} <= set(pooled.columns)
    assert (workdir / paths.figure("categories.png")).stat().st_size > 10_000


def test_adding_an_ood_set_schedules_only_its_own_jobs(micro_run, tmp_path):
    workdir, _, _ = micro_run
    config = yaml.safe_load(MICRO.read_text())
    config["sources"]["demo10"]["ood"]["digits"] = {"shift_type": "semantic", "regime": "mid"}
    extended = write_config(config, tmp_path / "extended.yaml")
    # the new set is read and its features extracted per model; each model's scoring jobs (one per fit group,
    # over every evaluation set) rerun: 4 models × 3 fit groups, and its network-pass scoring job, and the ensemble's
    # 5 slots; no model is retrained and no CSF is refitted, because fits see only the train and val splits; the
    # source's proximity embeddings and regimes are redone (one job each per source), the NC records are not
    assert scheduled_jobs(workdir, extended) == {
        "index_dataset": 1, "extract_features": 4, "score_csf": 12, "score_ensemble": 5, "aggregate_results": 1,
        "all": 1, "network_csf": 4, "conformal_metrics": 4, "conformal_report": 1, "pair_analyses": 1,
        "category_tables": 1,
        "proximity_embed": 1, "proximity_regimes": 1,
        # rankings, figures and tables downstream of the results table (rc_curves: the curves' model has the set)
        "rank_csfs": 1, "conover_heatmap": 1, "top_clique_map": 2, "clique_layer_table": 1, "best_metric_table": 1,
        "selected_configuration_tables": 1, "rc_curves": 1,
        # the self-audit reads the results table and the new set's feature files; the certificate the table
        "audit": 1, "reproduction_certificate": 1}


def test_summary_lists_models_and_files(micro_run):
    workdir, _, _ = micro_run
    proc = subprocess.run([venv_bin("csfbench"), "summary", "--results", str(workdir / "results")],
                          capture_output=True, text=True, check=True)
    # the ViT's two runs (the ensemble's members); + the shift study (micro.yaml `shifts`): the AgreeScore partner
    # (run 2) and the dg model's 3 corruption and 1 adversarial sets, each extracted; their scores and metric rows
    # are in the dg model's files
    assert "5 models, 24 feature files" in proc.stdout
    # 4 models × (3 fit groups + the network-pass CSFs' group + the conformal rows): one file per model and group
    assert re.search(r"^20 metric files", proc.stdout, re.M)
    # the ensemble: its own CSFs' slot, the three fit groups' and the network-pass CSFs' member means
    assert "1 deep ensemble(s) (vit_ce_do0_rew0_ens1-2), 5 metric files" in proc.stdout
    assert "vgg13_dg_do1_rew2.2_run1" in proc.stdout
    # per evaluation set with test rows, the ranking cells it entered: every set of the run is listed, and
    # each is ranked somewhere
    # (the sets with test rows of the CSF schemes; ProjNorm's rows pool the covariate sets as `covariate_sets`)
    table = pd.read_parquet(workdir / "results/results.parquet", columns=["source", "dataset", "split", "scheme"])
    csf_rows = (table["split"] == "test") & table["scheme"].isin(
        ["misclf", "correct_vs_ood", "newclass", "failure", "conformal"])
    sets = {(s, d) for s, d in table.loc[csf_rows, ["source", "dataset"]].itertuples(index=False)}
    listed = re.findall(r"^(\S+)/(\S+) \(\w+, regime \S+\): ranked in (\d+) of (\d+) cell\(s\)$", proc.stdout, re.M)
    assert {(s, d) for s, d, _, _ in listed} == sets
    assert all(int(n) >= 1 for _, _, n, _ in listed), proc.stdout


def test_the_ensemble_is_scored_from_its_members_files_and_ranked_beside_them(micro_run):
    """The micro config's ensemble of its ViT's two runs: a scores and a metrics file per slot (its own CSFs, the
    member means of each fit group and of the network-pass CSFs), its rows in the results table (run 0, members
    1-2), its CSFs as entities of the ViT's ranking cells, and its ranking beside its members."""
    workdir, _, _ = micro_run
    grid = Jobs(load_config(MICRO))
    ((source, ensemble),) = grid.iter_ensembles()
    assert str(ensemble) == "vit_ce_do0_rew0_ens1-2"
    for scorer in grid.ensemble_scorers:
        scores, attrs = read_scores(workdir / paths.scores(source, str(ensemble), scorer), "test")
        assert attrs["model"] == str(ensemble) and json.loads(attrs["members"]) == [str(m) for m in ensemble.members]
    table = pd.read_parquet(workdir / "results/results.parquet")
    rows = table[table["members"].notna()]
    assert set(rows["members"]) == {"1-2"} and set(rows["run"]) == {0} and set(rows["backbone"]) == {"vit"}
    assert {"Ensemble MSR", "Mutual Information", "Variation Ratio", "MSR", "KNN"} <= set(rows["csf"])
    assert table.loc[table["members"].isna() & (table["backbone"] == "vit"), "run"].isin([1, 2]).all()
    # the ensemble's CSFs are entities of the ViT cells (its only paradigm: every block has them)
    test_cell = json.loads((workdir / "results/tables/rankings/rc/vit_det_demo10_test.json").read_text())
    assert test_cell["status"] == "ok" and {"Ensemble MSR", "MSR (member mean)"} <= set(test_cell["mean_ranks"])
    ranked = pd.read_csv(workdir / paths.ensemble_ranking())
    ranked = ranked[ranked["status"] == "ok"]
    assert len(ranked) and set(ranked["entity"]) == {"run 1", "run 2", "ensemble"}
    assert {"test", "near", "far"} <= set(ranked["regime"])


def test_rerun_has_nothing_to_do(micro_run):
    workdir, _, _ = micro_run
    proc = snakemake("-n", "--cores", 1, "--configfile", MICRO, workdir=workdir)
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr


def test_paper_dry_run_without_data_reports_the_job_count(tmp_path):
    t0 = time.time()
    proc = snakemake("-n", "--quiet", "rules", "--configfile", REPO / "config/paper.yaml", workdir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    total = int(re.search(r"^total\s+(\d+)", out, re.M).group(1))
    config = load_config(REPO / "config/paper.yaml")
    n_models = len(list(Grid(config).iter_models()))
    n_features = sum(len(Grid(config).eval_datasets(s, m)) for s, m in Grid(config).iter_models())
    n_groups = len(config["csf"]["groups"])
    n_fits = n_models * n_groups
    n_scores = n_models * n_groups  # score_csf: one job per (model, fit group) over every set but the training split
    # the shift study's own jobs: corrupt_set per source and set, adversarial_set, projnorm_reference and
    # projnorm_shift per model and set, projnorm_evaluate per source (AgreeScore partners are in the grid)
    study = Grid(config).study_models()
    study_sources = {s for s, _ in study}
    total -= (sum(len(Grid(config).corruption_sets(s)) for s in study_sources) + len(study_sources)
              + sum(len(Grid(config).adversarial_sets(s, m)) + len(Grid(config).projnorm_sets(s, m)) + 1 for s, m in study))
    # neural collapse (nc_metrics per model, nc_table per source) and proximity (embed + regimes per source)
    total -= n_models + 3 * len(config["sources"])
    # rankings, figures and tables: rank_csfs, clique_layer_table, best_metric_table and
    # selected_configuration_tables and conover_heatmap once, top_clique_map per backbone, rc_curves per source
    total -= 5 + len(config["backbones"]) + len(config["sources"])
    # the record of the pretrained weights files the models load (weights_provenance: the ViT's), once
    total -= 1 if weights_files(config) else 0
    # the self-audit and the reproduction certificate, once each
    total -= 2
    # the deep ensembles (one per configuration of each backbone), one job per (ensemble, scorer slot)
    n_ensembles = len(list(Grid(config).iter_ensembles()))
    assert n_ensembles == sum(len(Grid(config).model_ids(s)) for s in config["sources"]) // 5
    total -= n_ensembles * len(Jobs(config).ensemble_scorers)
    # all + index + train + extract + fit + score + aggregate
    assert total == 1 + len(config["datasets"]) + n_models + n_features + n_fits + n_scores + 1
    print(f"paper grid: {total} jobs, dry run {time.time() - t0:.1f} s")


def test_paper_run_without_data_fails_fast_with_the_dataset_message(tmp_path):
    t0 = time.time()
    proc = snakemake("--cores", 1, "--configfile", REPO / "config/paper.yaml", workdir=tmp_path, timeout=300)
    elapsed = time.time() - t0
    assert proc.returncode != 0
    logs = "".join(p.read_text() for p in tmp_path.glob("results/logs/data/index_*.log"))
    assert re.search(r"dataset '[a-z0-9-]+': ", logs), logs[-2000:]
    assert "path tried: data/" in logs and "expected layout" in logs
    assert elapsed < 120
    assert not list(tmp_path.glob("results/data/index/*.json"))


@pytest.mark.parametrize("name", ["imagenet", "openood"])
def test_imagenet_scale_configs_dry_run_without_data_and_fail_fast_with_the_dataset_message(name, tmp_path):
    """config/imagenet.yaml (pretrained and random torchvision classifiers, ImageNet-1K and its shifts) and
    config/openood.yaml (OpenOOD v1.5's image lists): a dry run without data or weights schedules every model's
    jobs; a run stops at the first dataset it cannot read, naming the dataset, the path and the layout."""
    config_file = REPO / f"config/{name}.yaml"
    proc = snakemake("-n", "--quiet", "rules", "--configfile", config_file, workdir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    config = load_config(config_file)
    models = list(Grid(config).iter_models())
    assert int(re.search(r"^train\s+(\d+)", out, re.M).group(1)) == len(models)
    features = sum(len(Grid(config).eval_datasets(s, m)) for s, m in models)
    # the pretrained classifiers' files are written by the rule whose outputs Snakemake can cache between studies
    shared = sum(len(Grid(config).eval_datasets(s, m)) for s, m in models if m.paradigm == "pretrained")
    assert int(re.search(r"^extract_features\s+(\d+)", out, re.M).group(1)) == features - shared
    assert int(re.search(r"^extract_pretrained_features\s+(\d+)", out, re.M).group(1)) == shared > 0
    paradigms = {m.paradigm for _, m in models}
    assert paradigms >= ({"pretrained", "random"} if name == "imagenet" else {"pretrained", "dg"})
    proc = snakemake("--cores", 1, "--configfile", config_file, workdir=tmp_path, timeout=300)
    assert proc.returncode != 0
    logs = "".join(p.read_text() for p in tmp_path.glob("results/logs/data/index_*.log"))
    assert re.search(r"dataset '[a-z0-9.-]+': ", logs) and "path tried: data" in logs and "expected layout" in logs, \
        logs[-2000:]
    assert not list(tmp_path.glob("results/data/index/*.json"))


def test_invalid_config_fails_before_the_dag_with_key_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(MICRO.read_text().replace("n_classes: 10", "n_classes: ten", 1))
    proc = snakemake("-n", "--configfile", bad, workdir=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "sources/demo10/n_classes" in out and "'ten'" in out, out[-2000:]


def test_lint_is_clean(tmp_path):
    proc = snakemake("--lint", "--configfile", MICRO, workdir=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
