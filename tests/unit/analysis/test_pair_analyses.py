"""The pair analyses' job pieces: which pairs a scores file yields, the pair grid, the settings checks."""
import math

import pandas as pd
import pytest

from csfbench.errors import ConfigError
from csfbench.report.analyses import pair_grid
from csfbench.workflow.settings import validate_config
from csfbench.workflow.settings import load_yaml
from csfbench.stages.analyses import PAIR_SCHEMES, pairs_of
from csfbench.workflow.sections import AnalysisPair

from tests.helpers.demo_config import demo_config
from tests.helpers.repo import REPO

SETS = {"train": {"shift_type": "id"}, "val": {"shift_type": "id"}, "test": {"shift_type": "id"},
        "near": {"shift_type": "semantic"}, "noise": {"shift_type": "semantic"},
        "corrupt-fog-3": {"shift_type": "covariate"}, "pgd-eps8": {"shift_type": "adversarial"}}


def test_pairs_are_the_id_split_and_covariate_sets_against_semantic_sets_plus_explicit_ones():
    assert pairs_of(SETS, (), True) == [("test", "near"), ("test", "noise"), ("corrupt-fog-3", "near"),
                                        ("corrupt-fog-3", "noise")]
    explicit = (AnalysisPair("test", "corrupt-fog-3", None), AnalysisPair("test", "missing", None),
                AnalysisPair("test", "near", None))
    assert pairs_of(SETS, explicit, False) == [("test", "corrupt-fog-3"), ("test", "near")]
    assert pairs_of(SETS, explicit, True)[:2] == [("test", "corrupt-fog-3"), ("test", "near")]  # no duplicates
    assert len(pairs_of(SETS, explicit, True)) == 5


def test_pair_grid_is_the_mean_over_models_with_the_change_against_the_reference():
    cells = pd.DataFrame({"model": ["a", "b", "a", "b"], "csf": ["MSR", "MSR", "MLS", "MLS"],
                          "id_set": ["test"] * 4, "ood_set": ["near"] * 4, "newclass": [0.6, 0.8, 0.9, 0.7]})
    grid = pair_grid(cells, "MSR")
    assert list(grid.columns) == ["test / near", "test / near_sd", "test / near Δ", "test / near Δ_sd", "n_models"]
    assert grid.loc["MLS", "test / near"] == pytest.approx(0.8)
    # ddof 1 over the models' 0.9 and 0.7: sqrt(0.1² + 0.1²)
    assert grid.loc["MLS", "test / near_sd"] == pytest.approx(math.sqrt(0.02))
    assert grid.loc["MLS", "test / near Δ"] == pytest.approx(0.1) and grid.loc["MSR", "test / near Δ"] == 0
    # the change is paired per model: 0.9 − 0.6 = 0.3 and 0.7 − 0.8 = −0.1, deviation sqrt(0.2² + 0.2²)
    assert grid.loc["MLS", "test / near Δ_sd"] == pytest.approx(math.sqrt(0.08))
    assert grid.loc["MSR", "test / near Δ_sd"] == 0 and grid["n_models"].tolist() == [2, 2]
    # no reference, no change columns
    assert list(pair_grid(cells, "Energy").columns) == ["test / near", "test / near_sd", "n_models"]
    # one model: no deviation (NaN, not 0); a model without the reference drops out of the change only
    three = pd.concat([cells, pd.DataFrame({"model": ["c"], "csf": ["Energy"], "id_set": ["test"],
                                            "ood_set": ["near"], "newclass": [0.55]})])
    single = pair_grid(three, "MSR").loc["Energy"]
    assert single["test / near"] == 0.55 and math.isnan(single["test / near_sd"]) and single["n_models"] == 1
    assert math.isnan(single["test / near Δ"])


def test_settings_name_csfs_and_catalogue_sets():
    config = demo_config(None)
    config["analyses"] = {"enabled": True, "reference_csf": "MSP@T1", "pairs": [{"id": "test", "ood": "near"}]}
    validate_config(config)
    config["analyses"]["reference_csf"] = "MSPP"
    with pytest.raises(ConfigError, match="analyses/reference_csf"):
        validate_config(config)
    config["analyses"] = {"pairs": [{"id": "val", "ood": "near"}]}
    with pytest.raises(ConfigError, match="analyses/pairs/0/id"):
        validate_config(config)
    config["analyses"] = {"pairs": [{"id": "test", "ood": "near", "schemes": ["misclf"]}]}
    with pytest.raises(ConfigError, match="analyses/pairs/0/schemes"):
        validate_config(config)


def test_the_schema_offers_exactly_the_pair_schemes_the_job_writes():
    defaults = validate_config(demo_config(None))["analyses"]
    assert tuple(defaults["schemes"]) == PAIR_SCHEMES
    schema = load_yaml(REPO / "config" / "schema.yaml")
    assert tuple(schema["definitions"]["pair_schemes"]["items"]["enum"]) == PAIR_SCHEMES


def test_conditional_table_splits_the_change_by_id_outcome():
    from csfbench.report.analyses import conditional_table

    cells = pd.DataFrame({"model": "m", "id_set": "test", "ood_set": "near", "csf": ["MSR", "MLS"],
                          "a_co": [0.869, 0.85], "a_io": [0.547, 0.65], "a_ci": [0.864, 0.82],
                          "accuracy": 0.7613, "newclass": [0.7921, 0.8023]})
    table = conditional_table(cells, "MSR").set_index("csf")
    assert table.loc["MLS", "delta_from_correct"] == pytest.approx(0.7613 * (0.85 - 0.869))
    assert table.loc["MLS", "delta_from_incorrect"] == pytest.approx(0.2387 * (0.65 - 0.547))
    assert table.loc["MSR", ["delta_newclass", "delta_from_correct", "delta_from_incorrect"]].tolist() == [0, 0, 0]
    assert conditional_table(cells, "Energy").empty
