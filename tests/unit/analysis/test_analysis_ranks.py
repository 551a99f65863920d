"""Percentile ranks, the two-CSF rank comparison (Yang, Zhang & Russakovsky, ICLR 2024, Fig. 5)
and the rank-gap gallery selection (Figs. 12–13), on fixtures with known answers."""
import numpy as np
import pytest
from scipy.stats import percentileofscore

from csfbench.analysis import ranks


def test_percentile_ranks_hand_values_and_scipy():
    np.testing.assert_allclose(ranks.percentile_ranks([1.0, 2.0, 2.0, 3.0]), [12.5, 50.0, 50.0, 87.5])
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 7, 60) / 7
    want = [percentileofscore(scores, s, kind="mean") for s in scores]
    np.testing.assert_allclose(ranks.percentile_ranks(scores), want, rtol=1e-12)
    assert ranks.percentile_ranks(scores).mean() == pytest.approx(50.0)
    with pytest.raises(ValueError, match="at least one"):
        ranks.percentile_ranks([])


def test_rank_comparison_known_answer():
    # pool [3, 2, 1, 0] for A: ranks 87.5, 62.5, 37.5, 12.5; B reverses the ID part
    id_scores = {"A": [3.0, 2.0, 1.0], "B": [1.0, 2.0, 3.0]}
    ood_scores = {"A": [0.0], "B": [0.0]}
    result = ranks.rank_comparison(id_scores, [1, 1, 0], ood_scores, bins=4)
    assert tuple(result.summary.columns) == ranks.RANK_SUMMARY_COLUMNS
    a = result.samples[result.samples.csf == "A"]
    np.testing.assert_allclose(a["rank"], [87.5, 62.5, 37.5, 12.5])
    assert list(a["group"]) == ["correct_id", "correct_id", "incorrect_id", "ood"]
    assert list(a["index"]) == [0, 1, 2, 0]
    summary = result.summary.set_index(["group", "csf"])
    assert summary.loc[("correct_id", "A"), "mean_rank"] == pytest.approx(75.0)
    assert summary.loc[("correct_id", "B"), "mean_rank"] == pytest.approx(50.0)
    assert summary.loc[("incorrect_id", "B"), "mean_rank"] == pytest.approx(87.5)
    assert summary.loc[("ood", "B"), "n"] == 1
    hist = result.histogram
    a_correct = hist[(hist.group == "correct_id") & (hist.csf == "A")]
    np.testing.assert_array_equal(a_correct["count"], [0, 0, 1, 1])
    # densities integrate to 1 over [0, 100]
    for _, part in hist.groupby(["group", "csf"]):
        assert (part["density"] * (part["bin_right"] - part["bin_left"])).sum() == pytest.approx(1.0)


def test_rank_comparison_errors():
    with pytest.raises(ValueError, match="same CSFs"):
        ranks.rank_comparison({"A": [1.0]}, [1], {"B": [0.0]})
    with pytest.raises(ValueError, match="length mismatch"):
        ranks.rank_comparison({"A": [1.0, 2.0]}, [1], {"A": [0.0]})
    with pytest.raises(ValueError, match="0/1"):
        ranks.rank_comparison({"A": [1.0]}, [2], {"A": [0.0]})


def test_rank_gap_selection_known_answer():
    a = [1.0, 2.0, 3.0, 4.0]
    b = [4.0, 3.0, 2.0, 1.0]
    sets = ["x", "x", "y", "y"]
    ids = ["s0", "s1", "s2", "s3"]
    # pool ranks: a 12.5 37.5 62.5 87.5, b reversed: gaps -75, -25, 25, 75
    top = ranks.rank_gap_selection(a, b, sets, ids, k=1)
    assert tuple(top.columns) == ranks.RANK_GAP_COLUMNS
    assert list(top["set"]) == ["x", "y"] and list(top["index"]) == [1, 3] and list(top["sample_id"]) == ["s1", "s3"]
    np.testing.assert_allclose(top["gap"], [-25.0, 75.0])
    np.testing.assert_allclose(top["rank_a"], [37.5, 87.5])
    other = ranks.rank_gap_selection(a, b, sets, ids, k=1, direction="b_over_a")
    assert list(other["index"]) == [0, 2]
    both = ranks.rank_gap_selection(a, b, sets, k=5, direction="absolute")  # k beyond the set size: all
    assert list(both["index"]) == [0, 1, 3, 2] and list(both["position"]) == [1, 2, 1, 2]
    assert list(both["sample_id"]) == [0, 1, 3, 2]
    within = ranks.rank_gap_selection(a, b, sets, k=1, rank_within="set")
    np.testing.assert_allclose(within["gap"], [50.0, 50.0])  # within x: a 25 75, b 75 25
    assert list(within["index"]) == [1, 3]


def test_rank_gap_selection_ties_keep_input_order_and_errors():
    top = ranks.rank_gap_selection([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], ["s"] * 3, k=2)
    assert list(top["index"]) == [0, 1]
    with pytest.raises(ValueError, match="one length"):
        ranks.rank_gap_selection([1.0], [1.0, 2.0], ["s"])
    with pytest.raises(ValueError, match="direction"):
        ranks.rank_gap_selection([1.0], [1.0], ["s"], direction="up")
    with pytest.raises(ValueError, match="k must"):
        ranks.rank_gap_selection([1.0], [1.0], ["s"], k=0)
