"""Score-level analyses of Yang, Zhang & Russakovsky (ICLR 2024): false rejection at a transferred
threshold (Table 2), the random-network check (§4.2, Fig. 4) and the score densities (Figs. 6–9), on
fixtures with known answers."""
import numpy as np
import pytest
from scipy.stats import gaussian_kde

from csfbench.analysis import densities, frr, sanity


# ---------------------------------------------------------------- false rejection


def test_transferred_threshold_and_frr_hand_values():
    semantic = np.arange(100.0)  # quantile 0.75 (linear) = 74.25
    assert frr.transferred_threshold(semantic, 0.75) == pytest.approx(74.25)
    assert np.count_nonzero(semantic < 74.25) == 75  # 75 % of the semantic set rejected
    conf = [70.0, 74.25, 80.0, 10.0, 99.0]
    correct = [1, 1, 1, 0, 0]  # only the correct ones count; 74.25 is not below τ
    assert frr.false_rejection_rate(conf, correct, semantic) == pytest.approx(1 / 3)
    assert frr.false_rejection_rate(conf, correct, semantic, q=0.0) == 0.0
    assert frr.false_rejection_rate(conf, correct, semantic, q=1.0) == 1.0  # τ = 99
    assert frr.transferred_threshold(semantic, 0.75, method="lower") == 74.0


def test_frr_table_and_errors():
    sets = {"IN-1K": ({"MSP": np.array([0.9, 0.2, 0.6]), "Energy": np.array([5.0, 1.0, 2.0])}, np.array([1, 1, 0])),
            "IN-C": ({"MSP": np.array([0.1, 0.3]), "Energy": np.array([0.5, 4.0])}, np.array([1, 1]))}
    semantic = {"MSP": np.array([0.1, 0.2, 0.3, 0.4, 0.5]), "Energy": np.array([1.0, 2.0, 3.0, 4.0, 5.0])}
    table = frr.frr_table(sets, semantic, q=0.5)
    assert tuple(table.columns) == frr.FRR_COLUMNS
    table = table.set_index(["csf", "set"])
    assert table.loc[("MSP", "IN-1K"), "threshold"] == pytest.approx(0.3)
    assert table.loc[("MSP", "IN-1K"), "frr"] == pytest.approx(0.5)   # 0.2 < 0.3, 0.9 not
    assert table.loc[("MSP", "IN-C"), "frr"] == pytest.approx(0.5)    # 0.1 < 0.3
    assert table.loc[("Energy", "IN-1K"), "frr"] == pytest.approx(0.5)  # τ = 3: 1 < 3
    assert table.loc[("Energy", "IN-C"), "frr"] == pytest.approx(0.5)
    assert table.loc[("Energy", "IN-1K"), "n_correct"] == 2
    with pytest.raises(ValueError, match="no correct sample"):
        frr.false_rejection_rate([0.1], [0], [0.2])
    with pytest.raises(ValueError, match="q must"):
        frr.transferred_threshold([0.1], 1.5)
    with pytest.raises(ValueError, match="empty"):
        frr.transferred_threshold([], 0.5)
    with pytest.raises(ValueError, match="lacks scores"):
        frr.frr_table({"IN-1K": ({"MSP": np.ones(2)}, np.ones(2))}, {"ViM": np.ones(3)})


# ---------------------------------------------------------------- random network


def test_random_network_check_known_answers():
    id_scores = {"MSP": np.array([1.0, 2.0, 3.0, 4.0]), "Energy": np.array([1.0, 1.0, 1.0, 1.0])}
    shift = {"blur": {"MSP": np.array([0.0, 0.5]), "Energy": np.array([1.0, 1.0])},
             "noise": {"MSP": np.array([5.0, 6.0]), "Energy": np.array([0.0, 2.0])},
             "same": {"MSP": np.array([1.0, 2.0, 3.0, 4.0]), "Energy": np.array([1.0])}}
    table = sanity.random_network_check(id_scores, shift).set_index(["csf", "shift_set"])
    assert table.loc[("MSP", "blur"), "auroc"] == 1.0 and table.loc[("MSP", "blur"), "deviation"] == 0.5
    assert table.loc[("MSP", "noise"), "auroc"] == 0.0 and table.loc[("MSP", "noise"), "signed"] == -0.5
    assert table.loc[("MSP", "same"), "deviation"] == pytest.approx(0.0)
    assert table.loc[("Energy", "blur"), "auroc"] == 0.5  # all ties
    assert table.loc[("Energy", "noise"), "auroc"] == 0.5  # one above, one below
    assert table.loc[("Energy", "same"), "n_shift"] == 1 and table.loc[("MSP", "blur"), "n_id"] == 4
    with pytest.raises(ValueError, match="lacks scores"):
        sanity.random_network_check(id_scores, {"blur": {"MSP": np.ones(2)}})


# ---------------------------------------------------------------- densities


def test_score_densities_histogram_and_kde():
    rng = np.random.default_rng(0)
    groups = {**densities.split_by_correctness(rng.normal(1, 1, 300), rng.random(300) < 0.7, "IN-C"),
              "IN-OOD": rng.normal(-1, 0.5, 200), "single": np.array([0.3]), "empty": np.array([])}
    result = densities.score_densities(groups, bins=20, grid_points=64)
    pooled = np.concatenate([v for v in groups.values()])
    edges = np.linspace(pooled.min(), pooled.max(), 21)
    for name, values in groups.items():
        hist = result.histogram[result.histogram.group == name]
        counts, _ = np.histogram(values, bins=edges)
        np.testing.assert_array_equal(hist["count"], counts)
        np.testing.assert_allclose(hist["bin_left"], edges[:-1])
        if values.size:
            assert (hist["density"] * (hist["bin_right"] - hist["bin_left"])).sum() == pytest.approx(1.0)
        kde = result.kde[result.kde.group == name]
        assert len(kde) == 64
        if values.size >= 2:
            np.testing.assert_allclose(kde["density"], gaussian_kde(values)(kde["x"].to_numpy()), rtol=1e-12)
        else:
            assert kde["density"].isna().all()
    summary = result.summary.set_index("group")
    assert summary.loc["IN-C correct", "n"] + summary.loc["IN-C incorrect", "n"] == 300
    assert summary.loc["IN-OOD", "mean"] == pytest.approx(groups["IN-OOD"].mean())
    assert np.isnan(summary.loc["single", "std"])
    grid = result.kde["x"].unique()
    span = pooled.max() - pooled.min()
    assert grid.min() == pytest.approx(pooled.min() - 0.05 * span)
    assert grid.max() == pytest.approx(pooled.max() + 0.05 * span)


def test_score_densities_fixed_range_and_errors():
    result = densities.score_densities({"a": [0.0, 0.5, 1.0]}, bins=2, value_range=(0.0, 1.0))
    np.testing.assert_array_equal(result.histogram["count"], [1, 2])  # last bin closed at 1
    np.testing.assert_allclose(result.histogram["density"], [2 / 3, 4 / 3])
    with pytest.raises(ValueError, match="at least one group"):
        densities.score_densities({})
    with pytest.raises(ValueError, match="every group is empty"):
        densities.score_densities({"a": []})
    with pytest.raises(ValueError, match="0/1"):
        densities.split_by_correctness([0.1, 0.2], [1, 2], "x")
