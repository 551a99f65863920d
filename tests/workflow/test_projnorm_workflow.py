"""The shift study in the workflow on the micro config: corruption and adversarial sets as datasets of the
study model (features, CSF metrics), ProjNorm jobs, the evaluation's tables, figure and metric rows."""
import json

import numpy as np
import pandas as pd
import pytest

from csfbench.workflow import paths
from csfbench.workflow.grid import Grid, generated_set_folder
from csfbench.evaluation import COLUMNS
from csfbench.features.store import validate_feature_file
from csfbench.workflow.settings import load_config

from tests.helpers.micro_run import MICRO, SHARES_MICRO_RUN, finished_micro_run, snakemake

pytestmark = [pytest.mark.workflow, SHARES_MICRO_RUN]
SOURCE, MODEL = "demo10", "vgg13_dg_do1_rew2.2_run1"
TARGETS = [f"results/tables/projnorm/{SOURCE}_{name}" for name in ("correlations.csv", "stress.csv")] + [
    f"results/figures/projnorm/{SOURCE}_scatter.png",
    paths.metrics(SOURCE, MODEL, "none"),  # the `none` group's rows of every set, pgd-eps8 and corrupt-contrast-5 too
    paths.scores(SOURCE, MODEL, "none"),
]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir, _ = finished_micro_run(tmp_path_factory)  # the micro config carries the shift study
    return workdir / "results"


def test_generated_sets_are_datasets_of_the_study_model(study):
    config = load_config(MICRO)
    clean = np.load(study / "data/demo/demo10/test/images.npy")[config["sources"][SOURCE]["val_size"]:]
    adversarial = np.load(study / f"data/adversarial/{SOURCE}/{MODEL}/pgd-eps8/test/images.npy")
    assert adversarial.shape == clean.shape and 0 < np.abs(adversarial.astype(int) - clean).max() <= 8
    corrupted = np.load(study / f"data/shifts/{SOURCE}/corrupt-contrast-5/test/images.npy")
    assert corrupted.shape == clean.shape and not np.array_equal(corrupted, clean)
    for dataset, shift_type in (("pgd-eps8", "adversarial"), ("corrupt-contrast-5", "covariate")):
        attrs = validate_feature_file(study / f"features/{SOURCE}/{MODEL}/{dataset}.h5",
                                      expect={"model": MODEL, "dataset": dataset})
        assert attrs["shift_type"] == shift_type
        table = pd.read_parquet(study.parent / paths.metrics(SOURCE, MODEL, "none"))
        rows = table[table["dataset"] == dataset]
        assert len(rows) and set(rows["shift_type"]) == {shift_type} and "misclf" in set(rows["scheme"])


def test_projnorm_results_tables_and_rows(study):
    config = load_config(MICRO)
    sets = Grid(config).projnorm_sets(SOURCE, MODEL)
    for dataset in sets:
        result = json.loads((study / f"projnorm/{SOURCE}/{MODEL}/{dataset}.json").read_text())
        assert result["projnorm"] > 0 and result["n"] == 100
        assert result["agree_partner"] == "vgg13_dg_do1_rew2.2_run2" and 0 <= result["agree_score"] <= 1
    per_set = pd.read_csv(study / f"tables/projnorm/{SOURCE}_per_set.csv")
    assert per_set["dataset"].tolist() == sets
    assert per_set["test_error"].between(0, 1).all() and per_set["ProjNorm"].gt(0).all()
    corr = pd.read_csv(study / f"tables/projnorm/{SOURCE}_correlations.csv")
    assert set(corr["predictor"]) == {"ConfScore", "Entropy", "ATC", "AgreeScore", "ProjNorm"}
    assert (corr["n_sets"] == 3).all()
    stress = pd.read_csv(study / f"tables/projnorm/{SOURCE}_stress.csv")
    assert stress["eps"].tolist() == [0, 8] and stress["attack"].tolist() == ["clean", "pgd"]
    assert (study / f"figures/projnorm/{SOURCE}_scatter.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = pd.read_parquet(study / f"tables/projnorm/{SOURCE}_rows.parquet")
    assert list(rows.columns) == COLUMNS and set(rows["scheme"]) == {"error_prediction"}
    assert rows["value"].notna().all()
    results = pd.read_parquet(study / "results.parquet")  # merged by the aggregation like every metric file
    merged = results[results["scheme"] == "error_prediction"]
    assert len(merged) == len(rows) and set(merged["csf"]) == set(rows["csf"])


def test_projnorm_jobs_are_complete(study):
    proc = snakemake("-n", "--configfile", MICRO, "--cores", 1, *TARGETS, workdir=study.parent)  # targets last
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    assert (study / f"benchmarks/projnorm/{SOURCE}/{MODEL}/pgd-eps8.tsv").is_file()
