"""One neighbour search for every neighbour count a hyper-parameter search probes.

KNN (the k-th nearest bank row, :mod:`csfbench.csf.knn`) and NNGuide (the mean of the k largest
similarities, :mod:`csfbench.csf.nnguide`) depend on their count k only through each query row's largest
similarities to the bank.  A search for the largest count the tuning can ask for (``reach``: the top of the
grid, or of the clipped search range) therefore holds every smaller count's answer: KNN's k-th largest is
column k − 1 of the row's values sorted in descending order, NNGuide's top-k mean their cumulative sum at k − 1
divided by k.  Inside :func:`shared_search` the scores run that search once per (bank, queries) pair and keep
it; every later probe on the same pair reads its count from the kept values, so a grid of five counts or a
Bayesian search of twenty probes costs one search of the largest count plus a sort of its candidates, not one
search per probe.  Outside it (scoring with the tuned k) nothing is kept and a search is for k alone.

The pair is recognised by identity (the same bank and query arrays, kept alive by the memo), so the caller
reuses the fitted state across probes that differ only in their counts (:mod:`csfbench.csf.engine`, which
enters the context only when the search varies no parameter of the fit); a count above the kept reach is
searched afresh and replaces the kept values, and a new bank drops the old bank's.  Memory: the kept values
are ``n_queries × reach`` (float32 for KNN's values, float64 for NNGuide's cumulative sums) per pair of the
current bank, e.g. 5,000 validation rows × 1,000 × 4 B = 20 MB for KNN's default search.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

import numpy as np

T = TypeVar("T")

#: within :func:`shared_search`: {"reach": int, "kept": {(id(bank), id(queries)): (bank, queries, count, result)}}
_MEMO: ContextVar[dict | None] = ContextVar("neighbour_memo", default=None)


@contextmanager
def shared_search(reach: int) -> Iterator[None]:
    """A context in which a neighbour search is run for at least ``reach`` neighbours (≥ 1) once per (bank,
    queries) pair and reused by every smaller count; the kept values are dropped on exit."""
    if reach < 1:
        raise ValueError(f"a shared neighbour search needs a reach >= 1, got {reach}")
    token = _MEMO.set({"reach": int(reach), "kept": {}})
    try:
        yield
    finally:
        _MEMO.reset(token)


def searched(bank: np.ndarray, queries: np.ndarray, k: int, n_bank: int,
             search: Callable[[int, bool], T]) -> T:
    """``search(count, keep)`` for k ≤ count ≤ ``n_bank``.  Outside :func:`shared_search`: count = k and
    ``keep`` False (the caller reads count k alone).  Inside it: count = max(k, reach) capped at ``n_bank`` and
    ``keep`` True (the result must answer every count up to ``count``), searched once per (``bank``,
    ``queries``) and reused while its count is at least k."""
    memo = _MEMO.get()
    if memo is None:
        return search(k, False)
    key = (id(bank), id(queries))
    kept = memo["kept"].get(key)
    if kept is not None and kept[0] is bank and kept[1] is queries and kept[2] >= k:
        return kept[3]
    count = min(max(k, memo["reach"]), n_bank)
    result = search(count, True)
    # a new bank (another fit) makes the kept searches of the old one useless: only the current bank's are kept
    memo["kept"] = {key_: kept_ for key_, kept_ in memo["kept"].items() if kept_[0] is bank}
    memo["kept"][key] = (bank, queries, count, result)
    return result


def descending(values: np.ndarray) -> np.ndarray:
    """Each row of ``values`` sorted in descending order (a new array of the same dtype)."""
    return np.flip(np.sort(values, axis=1), axis=1)
