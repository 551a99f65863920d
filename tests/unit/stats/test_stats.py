"""Statistics pipeline of Claros-Olivares & Brockmeier, *A Systematic Analysis of Out-of-Distribution
Detection Under Representation and Training Paradigm Shifts* (preprint; no year or arXiv id in its text),
§4.2 and App. C: the paper's worked example (App. C.1, Tables 5–6, Figure 2), Conover against the
all-pairs formula of Conover (1999), Friedman against scipy, clique/layer rules, determinism and the
`csfbench rank` CLI."""
import itertools
import json
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from csfbench.stats import (
    DEFAULT_P_ADJUST,
    IncompleteBlocksWarning,
    StatsInputError,
    block_matrix,
    conover_friedman,
    format_summary,
    friedman_test,
    greedy_layers,
    indifference_graph,
    maximal_cliques,
    rank_blocks,
    rank_table,
)

from csfbench.reproduction import load_targets
from tests.helpers.repo import venv_bin

BLOCKS = ["dataset", "paradigm", "metric", "run"]
CSFS = ["Confidence", "GEN", "MSR", "CTM", "fDBD", "Energy"]
# Table 5(a): the (test, confidnet, AUGRC, run 1) block, exact scores (AUGRC x 1000).
TABLE_5A = [4.453, 4.619, 4.737, 5.479, 5.677, 5.811]
# Ranks (columns = CSFS) of 15 blocks = 3 paradigms x 5 runs, from the reproduction targets' published inputs (one copy,
# shipped with csfbench); block 0 is Table 5(a). No ties; rank sums 33, 25, 46, 59, 69, 83 as in Table 5(b).
# Conover and Friedman depend on the ranks only (no ties: A1 = 1365).
_EXAMPLE = load_targets()["published_inputs"]["worked_example"]
assert _EXAMPLE["csfs"] == CSFS
RANKS = _EXAMPLE["ranks"]


def worked_example_table() -> pd.DataFrame:
    """Long-format table consistent with Table 5: one row per (block, CSF), AUGRC x 1000 (lower = better)."""
    rows = []
    for b, ranks in enumerate(RANKS):
        paradigm, run = ["confidnet", "devries", "dg"][b // 5], b % 5 + 1
        for csf, rank, exact in zip(CSFS, ranks, TABLE_5A):
            score = exact if b == 0 else round(4.2 + 0.31 * rank + 0.013 * b, 3)
            rows.append({"dataset": "test", "paradigm": paradigm, "metric": "AUGRC", "run": run,
                         "csf": csf, "score": score})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def example():
    return worked_example_table()


@pytest.fixture(scope="module")
def unadjusted(example):
    return rank_table(example, BLOCKS, "csf", "score", p_adjust="none")


@pytest.fixture(scope="module")
def holm(example):
    return rank_table(example, BLOCKS, "csf", "score", p_adjust="holm")


def as_sets(cliques):
    return {frozenset(c) for c in cliques}


# --- the worked example (Claros-Olivares & Brockmeier, App. C.1) -------------------------------

def test_example_table_is_consistent_with_table_5(example):
    matrix = block_matrix(example, BLOCKS, "csf", "score").values
    assert matrix.shape == (15, 6)
    first = matrix.loc[("test", "confidnet", "AUGRC", 1), CSFS]
    assert list((first.rank() / 6).round(2)) == [0.17, 0.33, 0.5, 0.67, 0.83, 1.0]  # Table 5(a) "Rank"
    ranks = matrix.rank(axis=1)
    assert ranks.sum().to_dict() == {"GEN": 25, "Confidence": 33, "MSR": 46, "CTM": 59, "fDBD": 69, "Energy": 83}
    assert (ranks / 6).mean().round(3).to_dict() == {"GEN": 0.278, "Confidence": 0.367, "MSR": 0.511,
                                                     "CTM": 0.656, "fDBD": 0.767, "Energy": 0.922}
    assert float((ranks**2).to_numpy().sum()) == 1365


def test_worked_example_friedman_and_iman_davenport(unadjusted):
    fr, idf = unadjusted["friedman"], unadjusted["iman_davenport"]
    assert fr["statistic"] == pytest.approx(46.161905, abs=1e-6)   # the paper's "F_F = 46.162" is Q
    assert fr["pvalue"] == pytest.approx(8.418237e-9, rel=1e-6)
    assert round(fr["statistic"], 3) == 46.162 and f"{fr['pvalue']:.3e}" == "8.418e-09"
    assert idf["statistic"] == pytest.approx(22.410172, abs=1e-6)
    assert idf["pvalue"] == pytest.approx(2.4103e-13, rel=1e-4)
    assert unadjusted["n_blocks"] == 15 and unadjusted["dropped_blocks"] == []


def test_worked_example_mean_ranks(unadjusted):
    expected = {"GEN": 1.6666667, "Confidence": 2.2, "MSR": 3.0666667, "CTM": 3.9333333, "fDBD": 4.6,
                "Energy": 5.5333333}
    assert list(unadjusted["mean_ranks"]) == list(expected)  # best first
    assert unadjusted["mean_ranks"] == pytest.approx(expected, abs=1e-6)


def test_worked_example_cliques_and_layers_unadjusted(unadjusted):
    """Figure 2 / Table 6 (p_adjust none), including the clique list sorted by (best rank, mean rank,
    size ↓) that the greedy layering walks."""
    assert unadjusted["p_adjust"] == "none" and unadjusted["alpha"] == 0.05
    assert [set(c) for c in unadjusted["cliques"]] == [
        {"Confidence", "GEN"}, {"Confidence", "MSR"}, {"CTM", "MSR"}, {"CTM", "fDBD"}, {"Energy"}]
    layers = unadjusted["layers"]
    assert [set(layer["members"]) for layer in layers] == [{"Confidence", "GEN"}, {"CTM", "MSR"}, {"Energy"}]
    assert [layer["mean_rank"] for layer in layers] == pytest.approx([1.9333333, 3.5, 5.5333333], abs=1e-6)
    assert [round(layer["mean_rank"], 3) for layer in layers] == [1.933, 3.5, 5.533]
    assert "fDBD" not in {m for layer in layers for m in layer["members"]}
    # members by mean rank, then name
    assert unadjusted["cliques"][0] == ["GEN", "Confidence"] and layers[1]["members"] == ["MSR", "CTM"]


def test_worked_example_ranked_clique_keys():
    matrix = block_matrix(worked_example_table(), BLOCKS, "csf", "score").values
    result = rank_blocks(matrix)
    pvalues = pd.DataFrame(result["pvalues"])
    ranked = maximal_cliques(pvalues, 0.05, result["mean_ranks"])
    keys = [(round(c.best_rank, 3), round(c.mean_rank, 3)) for c in ranked]
    assert keys == [(1.667, 1.933), (2.2, 2.633), (3.067, 3.5), (3.933, 4.267), (5.533, 5.533)]
    assert [c.size for c in ranked] == [2, 2, 2, 2, 1]


def test_worked_example_holm_differs_as_described(unadjusted, holm):
    assert holm["p_adjust"] == "holm"
    assert holm["friedman"] == unadjusted["friedman"] and holm["mean_ranks"] == unadjusted["mean_ranks"]
    assert as_sets(holm["cliques"]) == as_sets(unadjusted["cliques"]) - {frozenset({"Energy"})} | {
        frozenset({"Energy", "fDBD"})}
    assert [set(layer["members"]) for layer in holm["layers"]] == [
        {"Confidence", "GEN"}, {"CTM", "MSR"}, {"Energy", "fDBD"}]
    assert holm["layers"][2]["mean_rank"] == pytest.approx(5.0666667, abs=1e-6)
    # Holm never lowers a p-value
    for a, b in itertools.combinations(CSFS, 2):
        assert holm["pvalues"][a][b] >= unadjusted["pvalues"][a][b] - 1e-15


def test_default_p_adjust_is_none_the_paper_compatible_mode(example, unadjusted):
    assert DEFAULT_P_ADJUST == "none"
    assert rank_table(example, BLOCKS, "csf", "score") == unadjusted


# --- Conover against an independent implementation of the Conover (1999) formula -----------------

def conover_reference(values: np.ndarray) -> np.ndarray:
    """Conover's (1999) all-pairs t statistic for unreplicated blocks, written out directly (lower value =
    better, average ranks for ties)."""
    n, k = values.shape
    ranks = np.vstack([stats.rankdata(row) for row in values])
    rank_sums = ranks.sum(axis=0)
    a1 = (ranks**2).sum()
    s2 = (a1 - k * n * (k + 1) ** 2 / 4) / (k - 1)
    t2 = ((rank_sums - n * (k + 1) / 2) ** 2).sum() / s2
    a = s2 * 2 * n * (k - 1) / (n * k - k - n + 1)
    b = 1 - t2 / (n * (k - 1))
    p = np.ones((k, k))
    for i, j in itertools.permutations(range(k), 2):
        with np.errstate(divide="ignore"):  # a * b = 0 when every block agrees: t = inf, p = 0
            t = abs(rank_sums[i] - rank_sums[j]) / np.sqrt(a * b)
        p[i, j] = 2 * stats.t.sf(t, (n - 1) * (k - 1))
    return p


def holm_reference(p: np.ndarray) -> np.ndarray:
    """Holm step-down over the upper triangle: p~(i) = max_{l<=i} min(1, (m-l+1) p(l))."""
    k = p.shape[0]
    pairs = list(itertools.combinations(range(k), 2))
    raw = np.array([p[i, j] for i, j in pairs])
    order = np.argsort(raw, kind="stable")
    adjusted, running = np.empty_like(raw), 0.0
    for position, idx in enumerate(order):
        running = max(running, min(1.0, (len(raw) - position) * raw[idx]))
        adjusted[idx] = running
    out = np.ones_like(p)
    for (i, j), value in zip(pairs, adjusted):
        out[i, j] = out[j, i] = value
    return out


def conover_cases():
    rng = np.random.default_rng(7)
    yield np.array(RANKS, dtype=float)
    for n, k in [(4, 2), (5, 3), (12, 6), (30, 9)]:
        yield rng.normal(size=(n, k)) + np.linspace(0, 1.5, k)
        yield rng.integers(0, 4, size=(n, k)).astype(float)  # many ties


@pytest.mark.parametrize("values", list(conover_cases()), ids=lambda v: f"{v.shape[0]}x{v.shape[1]}")
def test_conover_matches_conovers_formula(values):
    names = [f"e{j}" for j in range(values.shape[1])]
    reference = conover_reference(values)
    got = conover_friedman(values, names, "none").to_numpy()
    np.testing.assert_allclose(got, reference, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(conover_friedman(values, names, "holm").to_numpy(), holm_reference(reference),
                               rtol=1e-10, atol=1e-14)
    # orientation: negating the values and flipping the orientation changes nothing
    np.testing.assert_allclose(conover_friedman(-values, names, "none", higher_is_better=True).to_numpy(), got)


def test_conover_worked_example_pvalues_decide_the_cliques(unadjusted):
    p = unadjusted["pvalues"]
    assert p["Energy"]["fDBD"] < 0.05 <= p["CTM"]["fDBD"]
    assert p["GEN"]["MSR"] < 0.05 <= p["Confidence"]["MSR"]
    assert all(p[a][a] == 1.0 for a in CSFS)
    assert all(p[a][b] == p[b][a] for a in CSFS for b in CSFS)


@pytest.mark.parametrize("seed", range(4))
def test_friedman_matches_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 5, size=(10 + seed, 3 + seed)).astype(float)
    result = friedman_test(values)
    expected = stats.friedmanchisquare(*values.T)
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-12)
    assert result.pvalue == pytest.approx(expected.pvalue, rel=1e-9)
    n, k = values.shape
    q = result.statistic
    assert result.iman_davenport == pytest.approx((n - 1) * q / (n * (k - 1) - q), rel=1e-12)


def test_friedman_two_entities_and_higher_is_better():
    values = np.array([[1.0, 2.0], [1.0, 3.0], [2.0, 1.0], [0.0, 5.0]])
    result = friedman_test(values)  # no ties: Q = 12N/(k(k+1)) sum(Rbar^2) - 3N(k+1)
    rbar = np.array([1.25, 1.75])
    assert result.statistic == pytest.approx(12 * 4 / 6 * (rbar**2).sum() - 3 * 4 * 3)
    assert friedman_test(-values, higher_is_better=True) == result


def test_perfect_agreement_and_all_ties():
    values = np.tile([1.0, 2.0, 3.0], (4, 1))
    result = rank_blocks(pd.DataFrame(values, columns=["a", "b", "c"]))
    assert result["iman_davenport"] == {"statistic": None, "pvalue": 0.0}  # F is infinite
    assert result["cliques"] == [["a"], ["b"], ["c"]]
    with pytest.raises(StatsInputError, match="ties all entities"):
        rank_blocks(pd.DataFrame(np.ones((3, 3)), columns=["a", "b", "c"]))
    # an infinite F has p = 0: the omnibus test rejects, so the gate changes nothing
    assert result["omnibus"]["rejected"] is True
    gated = rank_blocks(pd.DataFrame(values, columns=["a", "b", "c"]), omnibus_gate=True)
    assert gated["cliques"] == result["cliques"] and gated["omnibus"]["posthoc_applied"] is True


# --- the omnibus test and its gate (the paper, App. C: post-hoc only once Iman–Davenport rejects) ---

# 6 blocks x 4 entities (columns a, b, c, d: ranks 1..4, no ties) where Iman–Davenport does NOT reject at
# 0.05 (F = 2.1429, p = 0.1375) while an unadjusted Conover pair does (a vs c: p = 0.0443).
GATE_RANKS = [[3, 1, 2, 4], [3, 1, 2, 4], [4, 3, 1, 2], [2, 4, 3, 1], [4, 2, 1, 3], [4, 1, 2, 3]]


def _omnibus_reference(values: np.ndarray) -> tuple[float, float, float, float]:
    """Friedman's Q and p from scipy; Iman–Davenport F = (N−1)Q/(N(k−1)−Q) and its F(k−1, (k−1)(N−1))
    p-value, by hand."""
    n, k = values.shape
    q, p_chi2 = stats.friedmanchisquare(*values.T)
    f = (n - 1) * q / (n * (k - 1) - q)
    return float(q), float(p_chi2), float(f), float(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))


def omnibus_cases():
    rng = np.random.default_rng(11)
    yield np.array(GATE_RANKS, dtype=float)
    yield np.array(RANKS, dtype=float)
    for n, k in [(5, 3), (12, 6), (30, 9)]:
        yield rng.normal(size=(n, k)) + np.linspace(0, 0.6, k)
        yield rng.integers(0, 4, size=(n, k)).astype(float)  # ties: scipy's tie-corrected Q


@pytest.mark.parametrize("values", list(omnibus_cases()), ids=lambda v: f"{v.shape[0]}x{v.shape[1]}")
@pytest.mark.parametrize("gate", [False, True])
def test_every_result_records_the_omnibus_test_as_scipy_computes_it(values, gate):
    n, k = values.shape
    q, p_chi2, f, p_f = _omnibus_reference(values)
    result = rank_blocks(pd.DataFrame(values, columns=[f"e{j}" for j in range(k)]), omnibus_gate=gate)
    assert result["friedman"]["statistic"] == pytest.approx(q, rel=1e-12)
    assert result["friedman"]["pvalue"] == pytest.approx(p_chi2, rel=1e-9)
    assert result["iman_davenport"]["statistic"] == pytest.approx(f, rel=1e-12)
    assert result["iman_davenport"]["pvalue"] == pytest.approx(p_f, rel=1e-9)
    assert result["omnibus"] == {"test": "iman_davenport", "alpha": 0.05, "df": [k - 1, (k - 1) * (n - 1)],
                                 "rejected": p_f < 0.05, "gate": gate, "posthoc_applied": p_f < 0.05 or not gate}


def test_omnibus_gate_makes_a_non_rejecting_cell_one_layer_of_every_entity():
    frame = pd.DataFrame(np.array(GATE_RANKS, dtype=float), columns=list("abcd"))
    q, p_chi2, f, p_f = _omnibus_reference(frame.to_numpy())
    assert p_f == pytest.approx(0.137543, abs=1e-6) and f == pytest.approx(2.142857, abs=1e-6)
    assert q == pytest.approx(5.4)
    ungated = rank_blocks(frame)
    gated = rank_blocks(frame, omnibus_gate=True)
    # without the gate (the paper's published cliques) the unadjusted Conover a-c pair splits the cell:
    # cliques {c, b, d} and {b, d, a}; the greedy layering keeps the first, a is in no layer
    assert ungated["pvalues"]["a"]["c"] == pytest.approx(0.044251, abs=1e-6)
    assert ungated["cliques"] == [["c", "b", "d"], ["b", "d", "a"]]
    assert [layer["members"] for layer in ungated["layers"]] == [["c", "b", "d"]]
    assert ungated["omnibus"]["rejected"] is False and ungated["omnibus"]["posthoc_applied"] is True
    # with the gate: Iman–Davenport does not reject, every entity is indifferent: one clique, one layer
    everyone = list(ungated["mean_ranks"])  # best first
    assert gated["omnibus"] == {"test": "iman_davenport", "alpha": 0.05, "df": [3, 15], "rejected": False,
                                "gate": True, "posthoc_applied": False}
    assert gated["cliques"] == [everyone]
    assert gated["layers"] == [{"members": everyone, "mean_rank": pytest.approx(2.5)}]  # (k + 1) / 2
    # the statistics and the (unused) Conover p-values are still reported
    for key in ("friedman", "iman_davenport", "mean_ranks", "pvalues", "n_blocks"):
        assert gated[key] == ungated[key]
    text = format_summary(gated)
    assert "does not reject" in text and "every entity indifferent (one layer)" in text


def test_omnibus_gate_changes_nothing_where_the_test_rejects(example, unadjusted):
    gated = rank_table(example, BLOCKS, "csf", "score", omnibus_gate=True)
    assert unadjusted["omnibus"]["rejected"] is True and gated["omnibus"]["gate"] is True
    assert {k: v for k, v in gated.items() if k != "omnibus"} == {
        k: v for k, v in unadjusted.items() if k != "omnibus"}


# --- indifference graph, cliques, layers -------------------------------------------------------

def test_edge_rule_p_at_least_alpha_and_nan_is_no_edge():
    p = pd.DataFrame([[1.0, 0.05, np.nan], [0.05, 1.0, 0.0499], [np.nan, 0.0499, 1.0]],
                     index=list("abc"), columns=list("abc"))
    graph = indifference_graph(p, 0.05)
    assert sorted(graph.nodes) == ["a", "b", "c"]
    assert sorted(map(sorted, graph.edges)) == [["a", "b"]]
    ranked = maximal_cliques(p, 0.05, {"a": 1.0, "b": 2.0, "c": 3.0})
    assert [c.members for c in ranked] == [("a", "b"), ("c",)]  # singletons are cliques too


def test_clique_ranking_and_greedy_layers():
    names = list("abcde")
    edges = {("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("d", "e")}
    p = pd.DataFrame(0.0, index=names, columns=names)
    for x, y in edges:
        p.loc[x, y] = p.loc[y, x] = 0.5
    ranks = {"a": 1.0, "b": 2.5, "c": 2.0, "d": 4.0, "e": 5.0}
    ranked = maximal_cliques(p, 0.05, ranks)
    assert [c.members for c in ranked] == [("a", "c", "b"), ("c", "d"), ("d", "e")]
    assert [c.members for c in greedy_layers(ranked)] == [("a", "c", "b"), ("d", "e")]
    # equal best and mean rank: the larger clique first, then names
    ties = maximal_cliques(pd.DataFrame([[1, 1, 0], [1, 1, 0], [0, 0, 1]], index=list("xyz"), columns=list("xyz")),
                           0.05, {"x": 1.0, "y": 1.0, "z": 1.0})
    assert [c.members for c in ties] == [("x", "y"), ("z",)]


# --- table → matrix and determinism ------------------------------------------------------------

def test_shuffled_rows_and_columns_give_identical_json(example, unadjusted):
    reference = json.dumps(unadjusted)
    for seed in range(5):
        shuffled = example.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        shuffled = shuffled[list(np.random.default_rng(seed).permutation(shuffled.columns))]
        assert json.dumps(rank_table(shuffled, BLOCKS, "csf", "score")) == reference


def test_higher_is_better_mirrors_lower_is_better(example, unadjusted):
    flipped = example.assign(score=-example["score"])
    result = rank_table(flipped, BLOCKS, "csf", "score", higher_is_better=True)
    assert result["higher_is_better"] is True
    assert {k: v for k, v in result.items() if k != "higher_is_better"} == {
        k: v for k, v in unadjusted.items() if k != "higher_is_better"}


def test_incomplete_blocks_are_dropped_with_a_warning(example):
    table = example.drop(example.index[(example["run"] == 2) & (example["paradigm"] == "dg")
                                       & example["csf"].isin(["GEN", "MSR"])])
    with pytest.warns(IncompleteBlocksWarning, match=r"dropped 1 of 15 blocks as incomplete: dataset=test, "
                                                     r"paradigm=dg, metric=AUGRC, run=2 \(missing GEN, MSR\)"):
        result = rank_table(table, BLOCKS, "csf", "score")
    assert result["n_blocks"] == 14
    assert result["dropped_blocks"] == [{"block": {"dataset": "test", "paradigm": "dg", "metric": "AUGRC", "run": 2},
                                         "missing": ["GEN", "MSR"]}]


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t.drop(columns=["run"]), r"missing column\(s\) \['run'\]; the table has \["),
    (lambda t: pd.concat([t, t.iloc[[3]]]), r"1 duplicate \(block, entity\) pair\(s\): dataset=test, "
                                            r"paradigm=confidnet, metric=AUGRC, run=1, csf=CTM \(rows 3, 90\)"),
    (lambda t: t[t["csf"] == "GEN"], r"at least 2 entities in column 'csf'; found 1: \['GEN'\]"),
    (lambda t: t.assign(score=t["score"].astype(object).where(t.index != 5, "n/a")),
     r"non-numeric value\(s\) in column 'score' at row\(s\) 5 \('n/a'\)"),
    (lambda t: t.assign(score=t["score"].where(t.index != 7)), r"missing \(NaN\) or infinite value\(s\) in "
                                                               r"column 'score' at row\(s\) 7"),
    (lambda t: t.assign(run=t["run"].where(t.index != 2)), r"missing value\(s\) in key column 'run' at row\(s\) 2"),
    (lambda t: t[~(((t["run"] > 1) | (t["paradigm"] != "dg")) & (t["csf"] == "Energy"))],
     r"at least 2 complete blocks \(every entity present\); found 1 of 15 blocks"),
])
def test_bad_tables_get_clear_errors(example, mutate, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteBlocksWarning)
        with pytest.raises(StatsInputError, match=message):
            rank_table(mutate(example), BLOCKS, "csf", "score")


def test_bad_options(example):
    with pytest.raises(StatsInputError, match="p_adjust"):
        rank_table(example, BLOCKS, "csf", "score", p_adjust="bonferroni")
    with pytest.raises(StatsInputError, match="alpha"):
        rank_table(example, BLOCKS, "csf", "score", alpha=1.5)


def test_summary_text(unadjusted):
    text = format_summary(unadjusted)
    assert "Friedman chi2 = 46.162 (p = 8.418e-09)" in text
    assert "Iman-Davenport F = 22.410" in text
    assert "omnibus test (Iman-Davenport) rejects equal mean ranks at alpha = 0.05; gate off" in text
    assert "layer 1: mean rank 1.933: GEN, Confidence" in text
    assert "in no layer: fDBD" in text


# --- the CLI -----------------------------------------------------------------------------------

def cli(*args, cwd=None):
    return subprocess.run([venv_bin("csfbench"), "rank", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_end_to_end(tmp_path, example, unadjusted, suffix):
    table = tmp_path / f"table{suffix}"
    example.to_csv(table, index=False) if suffix == ".csv" else example.to_parquet(table, index=False)
    out = tmp_path / "out" / "rank.json"
    proc = cli("--input", table, "--blocks", "dataset,paradigm", "--blocks", "metric", "--blocks", "run",
               "--entity", "csf", "--value", "score", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == json.loads(json.dumps(unadjusted))
    assert "Friedman chi2 = 46.162" in proc.stdout and "layer 3: mean rank 5.533: Energy" in proc.stdout
    assert proc.stderr == ""


def test_cli_refuses_to_overwrite_its_input_table(tmp_path, example):
    table = tmp_path / "table.csv"
    example.to_csv(table, index=False)
    before = table.read_bytes()
    proc = cli("--input", table, "--blocks", ",".join(BLOCKS), "--entity", "csf", "--value", "score",
               "--output", tmp_path / "." / "table.csv")
    assert proc.returncode == 2 and "--output is the --input table" in proc.stderr
    assert table.read_bytes() == before


def test_summary_of_a_missing_results_folder_is_an_error(tmp_path):
    proc = subprocess.run([venv_bin("csfbench"), "summary", "--results", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no such results folder" in proc.stderr


def test_cli_holm_alpha_and_orientation(tmp_path, example, holm):
    table = tmp_path / "table.csv"
    example.assign(score=-example["score"]).to_csv(table, index=False)
    out = tmp_path / "rank.json"
    proc = cli("--input", table, "--blocks", ",".join(BLOCKS), "--entity", "csf", "--value", "score",
               "--p-adjust", "holm", "--alpha", "0.05", "--higher-is-better", "--output", out)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["higher_is_better"] is True and result["p_adjust"] == "holm"
    assert result["layers"] == holm["layers"]


def test_cli_incomplete_blocks_warn_and_succeed(tmp_path, example):
    table = tmp_path / "table.csv"
    example[~((example["run"] == 3) & (example["csf"] == "fDBD") & (example["paradigm"] == "devries"))].to_csv(
        table, index=False)
    out = tmp_path / "rank.json"
    proc = cli("--input", table, "--blocks", ",".join(BLOCKS), "--entity", "csf", "--value", "score",
               "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ("csfbench: warning: dropped 1 of 15 blocks as incomplete: dataset=test, "
                                   "paradigm=devries, metric=AUGRC, run=3 (missing fDBD)")
    assert json.loads(out.read_text())["n_blocks"] == 14
    assert "14 complete blocks (1 dropped)" in proc.stdout


@pytest.mark.parametrize("case, message", [
    ("missing_column", "missing column(s) ['seed']; the table has ['dataset', 'paradigm', 'metric', 'run', "
                       "'csf', 'score']"),
    ("duplicates", "duplicate (block, entity) pair(s): dataset=test, paradigm=confidnet, metric=AUGRC, run=1, "
                   "csf=Confidence (rows 0, 90)"),
    ("one_entity", "ranking needs at least 2 entities in column 'csf'; found 1: ['GEN']"),
    ("non_numeric", "non-numeric value(s) in column 'score' at row(s) 4 ('oops')"),
    ("too_few_blocks", "ranking needs at least 2 complete blocks"),
    ("bad_format", "unsupported table format '.txt' (expected .csv or .parquet)"),
    ("no_file", "no such file"),
    ("empty_csv", "cannot read the table"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path, example, case, message):
    table, blocks = tmp_path / "table.csv", ",".join(BLOCKS)
    if case == "missing_column":
        blocks += ",seed"
    elif case == "duplicates":
        example = pd.concat([example, example.iloc[[0]]])
    elif case == "one_entity":
        example = example[example["csf"] == "GEN"]
    elif case == "non_numeric":
        example = example.astype({"score": object})
        example.loc[4, "score"] = "oops"
    elif case == "too_few_blocks":
        example = example[example["run"] == 1].assign(paradigm="confidnet")
        example = example.drop_duplicates(["csf"])
    elif case == "bad_format":
        table = tmp_path / "table.txt"
    elif case == "no_file":
        table = tmp_path / "absent.csv"
    if case == "empty_csv":
        table.write_text("")
    elif case != "no_file":
        example.to_csv(table, index=False)
    out = tmp_path / "rank.json"
    proc = cli("--input", table, "--blocks", blocks, "--entity", "csf", "--value", "score", "--output", out)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("csfbench: error: ")
    assert message in lines[0]
    assert not out.exists()


def test_cli_usage_errors_exit_2(tmp_path):
    proc = cli("--input", tmp_path / "t.csv", "--entity", "csf", "--value", "score", "--output", tmp_path / "o.json")
    assert proc.returncode == 2 and "--blocks" in proc.stderr
    proc = cli("--input", tmp_path / "t.csv", "--blocks", "a", "--entity", "csf", "--value", "score",
               "--p-adjust", "bonferroni", "--output", tmp_path / "o.json")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
