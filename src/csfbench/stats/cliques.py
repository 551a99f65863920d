"""Indifference graph, maximal cliques and greedy layering (Claros-Olivares & Brockmeier,
App. C; the ranking and layering follow the authors' ``stats_eval.py``,
github.com/cesar-claros/ood_systematic).

Two entities are *indifferent* (joined by an edge) iff their post-hoc p-value is ≥ α (NaN = no edge,
no self-loops). Every maximal clique, singletons included, is enumerated with ``networkx.find_cliques``
(Bron–Kerbosch with pivoting). Cliques are ranked by (best member rank ↑, mean member rank ↑, size ↓,
then member names) using the mean ranks on the 1..k scale (1 = best, lower value = better), and walked
greedily: a clique becomes the next layer iff it shares no member with an earlier layer.
Members are always listed by mean rank, then name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import networkx as nx
import numpy as np
import pandas as pd


@dataclass(frozen=True)
class RankedClique:
    """A clique with its members (best first), its best and mean member rank, and its size."""

    members: tuple[str, ...]
    best_rank: float
    mean_rank: float

    @property
    def size(self) -> int:
        return len(self.members)


def indifference_graph(pvalues: pd.DataFrame, alpha: float) -> nx.Graph:
    """Graph on the entities of a symmetric p-value matrix with an edge where p ≥ α (both directions)."""
    names = [str(name) for name in pvalues.index]
    p = pvalues.to_numpy(dtype=float)
    linked = np.nan_to_num(p, nan=-1.0) >= alpha
    linked &= linked.T
    graph = nx.Graph()
    graph.add_nodes_from(names)
    rows, cols = np.nonzero(np.triu(linked, 1))
    graph.add_edges_from((names[i], names[j]) for i, j in zip(rows, cols))
    return graph


def rank_cliques(cliques: Iterable[Iterable[str]], mean_ranks: Mapping[str, float]) -> list[RankedClique]:
    """Rank cliques by (best_rank ↑, mean_rank ↑, size ↓, member names), members sorted best first."""
    ranked = []
    for clique in cliques:
        members = tuple(sorted(clique, key=lambda name: (mean_ranks[name], name)))
        ranks = [mean_ranks[name] for name in members]
        ranked.append(RankedClique(members, float(min(ranks)), float(np.mean(ranks))))
    return sorted(ranked, key=lambda c: (c.best_rank, c.mean_rank, -c.size, c.members))


def maximal_cliques(pvalues: pd.DataFrame, alpha: float, mean_ranks: Mapping[str, float]) -> list[RankedClique]:
    """All maximal cliques of the indifference graph at α, ranked as in :func:`rank_cliques`."""
    return rank_cliques(nx.find_cliques(indifference_graph(pvalues, alpha)), mean_ranks)


def greedy_layers(ranked: Iterable[RankedClique]) -> list[RankedClique]:
    """Walk ranked cliques in order; keep each one that is disjoint from every clique kept before it."""
    layers, used = [], set()
    for clique in ranked:
        if used.isdisjoint(clique.members):
            layers.append(clique)
            used.update(clique.members)
    return layers
