"""The NC and proximity rules inside a micro workflow run, and the regimes in results.parquet."""
import numpy as np
import pandas as pd
import pytest

from csfbench.workflow.grid import Grid
from csfbench.workflow.settings import load_config
from csfbench.geometry.neural_collapse import METRICS, REGIMES

from tests.helpers.micro_run import MICRO, SHARES_MICRO_RUN, finished_micro_run

pytestmark = [pytest.mark.workflow, SHARES_MICRO_RUN]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return finished_micro_run(tmp_path_factory)[0] / "results"


def test_every_model_has_an_nc_record_and_the_source_an_nc_table(run):
    config = load_config(MICRO)
    models = [m for _, m in Grid(config).iter_models()]
    for model in models:
        records = pd.read_csv(run / f"geometry/demo10/{model}/nc.csv")
        assert len(records) == len(REGIMES) * len(METRICS) and set(records["model"]) == {str(model)}
        assert np.isfinite(records["value"]).all() and (records["value"] >= 0).all()
        assert (run / f"logs/geometry/demo10/{model}/nc.log").is_file()
        assert (run / f"benchmarks/geometry/demo10/{model}/nc.tsv").is_file()
    table = pd.read_csv(run / "tables/nc_demo10.csv")
    # one row per (backbone, dropout) of the grid and regime, averaging that cell's models
    cells = pd.Series([(m.backbone, m.dropout) for m in models]).value_counts().sort_index()
    assert list(zip(table["backbone"], table["dropout"], table["regime"])) == \
        [(b, d, r) for b, d in cells.index for r in REGIMES]
    assert table["n_models"].tolist() == [n for n in cells for _ in REGIMES]
    assert table["n_models"].sum() == len(REGIMES) * len(models)
    assert "\\begin{tabular}" in (run / "tables/nc_demo10.tex").read_text()


def test_proximity_tables_regimes_and_the_results_table_agree(run):
    table = pd.read_csv(run / "tables/proximity_demo10.csv").set_index("dataset")
    assert table.index.tolist() == ["test", "near", "noise"]
    assert table[["mmd", "fd", "centroid_distance"]].notna().all().all()
    assert table["text_alignment"].isna().all()  # the demo's ViT has no text tower
    # generated "near" images are closer to the source than uniform noise
    assert table.loc["near", "fd"] < table.loc["noise", "fd"] and table.loc["test", "fd"] < table.loc["near", "fd"]
    regimes = pd.read_csv(run / "proximity/demo10/regimes.csv")
    assert regimes["dataset"].tolist() == ["near", "noise"] and set(regimes["decided_by"]) == {"static"}
    results = pd.read_parquet(run / "results.parquet")
    got = results[results.shift_type == "semantic"].groupby("dataset")["regime"].unique()
    assert {k: list(v) for k, v in got.items()} == {r.dataset: [r.regime] for r in regimes.itertuples()}
