"""KNN (csfbench.csf.knn): hand-computed distances, zero rows, blocking, orientation, one shared search for
a grid of k (and NNGuide's), and agreement
with pytorch-ood 0.4.0's KNN (scikit-learn's exact search) and with faiss-cpu's exact ``IndexFlatL2``
(squared distances: ours = −sqrt(theirs))."""
from __future__ import annotations

import math

import numpy as np
import pytest

from csfbench.csf import blocks, knn, nnguide
from csfbench.csf.knn import KNN_GRID, _merge, knn_fit, knn_score
from csfbench.csf.neighbours import shared_search
from csfbench.csf.nnguide import nnguide_bank, nnguide_score

from tests.helpers.posthoc_data import FLOAT32, agree, gaussian_outputs, outlier, pytorch_ood, separation


@pytest.fixture(scope="module")
def data():
    return gaussian_outputs()


def test_knn_by_hand():
    state = knn_fit(np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]))  # unit: e1, e2, (e1 + e2)/√2
    # from e1: distances 0, √2 and √(2 − √2), and from the zero row 1 to every unit vector
    queries = np.array([[3.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(knn_score(state, queries, 1), [0.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(knn_score(state, queries, 2), [-math.sqrt(2 - math.sqrt(2)), -1.0], atol=1e-6)
    np.testing.assert_allclose(knn_score(state, queries, 3), [-math.sqrt(2), -1.0], atol=1e-6)


def test_an_all_zero_training_row_is_the_zero_vector():
    state = knn_fit(np.array([[0.0, 0.0], [1.0, 0.0]]))
    np.testing.assert_allclose(knn_score(state, np.array([[0.0, 5.0]]), 1), [-1.0], atol=1e-6)


def test_k_must_fit_the_bank():
    state = knn_fit(np.ones((3, 2)))
    for k in (0, 4):
        with pytest.raises(ValueError, match="bank size"):
            knn_score(state, np.ones((1, 2)), k)


def test_blocks_do_not_change_the_scores_beyond_float32_rounding(data, monkeypatch):
    state = knn_fit(data["train"])
    whole = knn_score(state, data["test"], 7)
    monkeypatch.setattr(blocks, "MAX_BLOCK_ENTRIES", 5 * len(data["train"]))  # a few rows per block
    # the float32 product rounds differently for other block shapes: equal within its ~1e-6 error
    np.testing.assert_allclose(knn_score(state, data["test"], 7), whole, rtol=0, atol=2e-6)


@pytest.mark.parametrize("k", [1, 7, 50, 100])
def test_bank_chunks_give_the_search_of_the_whole_bank(data, monkeypatch, k):
    # a bank stored class by class with every row twice: ties at every distance, and the first chunk
    # holds the candidates of few classes unless the chunks interleave
    rows = np.repeat(data["train"][np.argsort(data["y_train"], kind="stable")], 2, axis=0)
    state = knn_fit(rows)
    whole = knn_score(state, data["test"], k)  # 1,200 bank rows: one chunk
    merges = []
    monkeypatch.setattr(knn, "_merge", lambda *args: merges.append(1) or _merge(*args))
    monkeypatch.setattr(knn, "BANK_CHUNK_ROWS", 100)
    monkeypatch.setattr(knn, "BANK_CHUNK_PER_K", 1)  # 12 chunks of 100 rows
    chunked = knn_score(state, data["test"], k)
    assert merges  # the threshold merges ran
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=2e-6)
    unit, query = (x / np.linalg.norm(x, axis=1, keepdims=True)
                   for x in (rows.astype(np.float64), data["test"].astype(np.float64)))
    squared = np.sum(query**2, axis=1)[:, None] + np.sum(unit**2, axis=1)[None, :] - 2 * query @ unit.T
    exact = -np.sqrt(np.maximum(np.sort(squared, axis=1)[:, k - 1], 0.0))  # float64, the whole bank at once
    np.testing.assert_allclose(chunked, exact, rtol=0, atol=1e-5)


def test_orientation(data):
    assert separation(knn_score(knn_fit(data["train"]), data["test"], 10)) > 0.95


def test_grid_is_iconic_table_7():
    assert KNN_GRID == {"k": (50, 100, 200, 500, 1000)}


@pytest.mark.parametrize("k", [1, 10, 50])
def test_agrees_with_pytorch_ood(data, k):
    import torch

    detector = pytorch_ood().KNN(None, k=k)
    detector.fit_features(torch.tensor(data["train"]), torch.tensor(data["y_train"]))
    theirs = outlier(detector.predict_features(torch.tensor(data["test"])))
    agree(knn_score(knn_fit(data["train"]), data["test"], k), theirs, FLOAT32)


def test_agrees_with_faiss(data):
    faiss = pytest.importorskip("faiss", reason="faiss-cpu (test extra) is not installed")

    def unit(x):
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    index = faiss.IndexFlatL2(data["train"].shape[1])
    index.add(unit(data["train"]))
    squared, _ = index.search(unit(data["test"]), 50)
    agree(knn_score(knn_fit(data["train"]), data["test"], 50), -np.sqrt(squared[:, -1]), FLOAT32)


@pytest.mark.parametrize("chunked", [False, True])
def test_a_shared_search_scores_every_k_of_the_grid_from_one_search(data, monkeypatch, chunked):
    """Inside shared_search(reach) the bank is searched once per (bank, queries) for the reach, and every
    k ≤ reach reads its column: equal to a search for that k alone (within the float32 product's rounding,
    since the chunks differ with k), also across bank chunks."""
    if chunked:
        monkeypatch.setattr(knn, "BANK_CHUNK_ROWS", 50)
        monkeypatch.setattr(knn, "BANK_CHUNK_PER_K", 1)
    state = knn_fit(data["train"])
    ks = (1, 2, 10, 50, 100)
    alone = {k: knn_score(state, data["test"], k) for k in ks}
    searches = []
    search = knn._search
    monkeypatch.setattr(knn, "_search", lambda *args: searches.append(args[2]) or search(*args))
    with shared_search(max(ks)):
        shared = {k: knn_score(state, data["test"], k) for k in ks}
        again = knn_score(state, data["test"], 10)
        assert searches == [100]  # one search, for the reach
        knn_score(state, data["test"][:5], 3)  # other queries: a search of their own
        assert searches == [100, 100]
        knn_score(state, data["test"], 150)  # above the reach: searched afresh, and kept
        knn_score(state, data["test"], 120)
        assert searches == [100, 100, 150]
    for k in ks:
        np.testing.assert_allclose(shared[k], alone[k], rtol=0, atol=2e-6)
    np.testing.assert_array_equal(again, shared[10])
    knn_score(state, data["test"], 10)  # outside: nothing kept, a search for k alone
    assert searches[-1] == 10


def test_a_shared_nnguide_search_gives_each_k_its_top_k_mean(data, monkeypatch):
    bank = nnguide_bank(data["train"], data["z_train"], data["y_train"], data["z_train"].shape[1], 0.5)
    ks = (1, 5, 20, 60)
    alone = {k: nnguide_score(data["test"], data["z_test"], bank, k) for k in ks}
    searches = []
    top_sums = nnguide._top_sums
    monkeypatch.setattr(nnguide, "_top_sums", lambda *args: searches.append(args[2]) or top_sums(*args))
    with shared_search(max(ks)):
        shared = {k: nnguide_score(data["test"], data["z_test"], bank, k) for k in ks}
    assert searches == [60]
    for k in ks:  # the same float32 similarities; only the float64 sums' order differs
        np.testing.assert_allclose(shared[k], alone[k], rtol=1e-12)
    with pytest.raises(ValueError, match="reach >= 1"):
        with shared_search(0):
            pass


def test_a_shared_search_keeps_the_current_banks_searches_only(data, monkeypatch):
    first, second = knn_fit(data["train"]), knn_fit(data["train"][::-1].copy())
    searches = []
    search = knn._search
    monkeypatch.setattr(knn, "_search", lambda *args: searches.append(args[0] is first["bank"]) or search(*args))
    with shared_search(20):
        knn_score(first, data["test"], 5)
        knn_score(second, data["test"], 5)  # a new bank (a refit): the first bank's search is dropped ...
        knn_score(first, data["test"], 5)  # ... so the first bank is searched again
    assert searches == [True, False, True]
