"""End-to-end ranking of a long-format table: Friedman → Conover → cliques → layers
(Claros-Olivares & Brockmeier, §4.2, App. C).

:func:`rank_table` returns a JSON-ready dict with the keys ``friedman`` {statistic, pvalue} (Q and its
χ²(k−1) p-value), ``iman_davenport`` {statistic, pvalue} (F_F and its F(k−1, (k−1)(N−1)) p-value),
``omnibus`` {test, alpha, df, rejected, gate, posthoc_applied}, ``mean_ranks`` {entity: mean rank, 1..k
scale, 1 = best}, ``pvalues`` {entity: {entity: p}}, ``cliques`` (every maximal clique of the
indifference graph, ranked), ``layers`` [{members, mean_rank}] (best first), ``alpha``, ``p_adjust``,
``n_blocks`` (complete blocks used), ``dropped_blocks`` and ``higher_is_better``. Lower value = better
unless ``higher_is_better``. Entities are ordered by mean rank then name everywhere; the result does not
depend on the row order of the table. Non-finite statistics (degenerate data) are written as ``null``.

**Omnibus gate.** The omnibus test is the Iman–Davenport F at the same ``alpha`` as the indifference
graph; ``omnibus.rejected`` is ``p_F < alpha`` (an infinite F, every block ranking the entities alike,
has p = 0 and rejects) and is recorded in every result. With ``omnibus_gate=False`` (the default) the
post-hoc step runs whatever the omnibus p-value, as Claros-Olivares & Brockmeier's code did and as
their published cliques need. With ``omnibus_gate=True`` (the protocol the paper's text states, App. C: pairwise
comparisons only once the null of equal average ranks is rejected) and an omnibus test that does not
reject, every entity is indifferent to every other: ``cliques`` is one clique of all entities,
``layers`` is one layer of all entities whose ``mean_rank`` is the mean of their mean ranks, (k+1)/2,
and ``omnibus.posthoc_applied`` is false. The Conover p-values are still computed and reported in
``pvalues`` then, for transparency, but decide nothing.

The default ``p_adjust`` is ``"none"`` because only it reproduces the paper's published cliques (see
:mod:`csfbench.stats.posthoc`).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd

from csfbench.stats.cliques import greedy_layers, maximal_cliques, rank_cliques
from csfbench.stats.friedman import friedman_test, mean_ranks
from csfbench.stats.posthoc import DEFAULT_P_ADJUST, P_ADJUST_METHODS, conover_friedman
from csfbench.stats.table import StatsInputError, block_matrix


def rank_table(table: pd.DataFrame, blocks: Sequence[str], entity: str, value: str, *, alpha: float = 0.05,
               p_adjust: str = DEFAULT_P_ADJUST, higher_is_better: bool = False,
               omnibus_gate: bool = False) -> dict[str, Any]:
    """Rank the entities of a long-format table over complete blocks (see the module docstring)."""
    _check_options(alpha, p_adjust)
    matrix = block_matrix(table, blocks, entity, value)
    result = rank_blocks(matrix.values, alpha=alpha, p_adjust=p_adjust, higher_is_better=higher_is_better,
                         omnibus_gate=omnibus_gate)
    result["dropped_blocks"] = matrix.dropped
    return result


def rank_blocks(values: pd.DataFrame, *, alpha: float = 0.05, p_adjust: str = DEFAULT_P_ADJUST,
                higher_is_better: bool = False, omnibus_gate: bool = False) -> dict[str, Any]:
    """The same analysis on a complete blocks × entities DataFrame (columns = entity names)."""
    _check_options(alpha, p_adjust)
    order = sorted(range(values.shape[1]), key=lambda j: str(values.columns[j]))
    names = [str(values.columns[j]) for j in order]
    matrix = values.to_numpy(dtype=float)[:, order]
    friedman = friedman_test(matrix, higher_is_better)
    if math.isnan(friedman.statistic):
        raise StatsInputError("every block ties all entities: there is nothing to rank")
    ranks = dict(zip(names, (float(r) for r in mean_ranks(matrix, higher_is_better))))
    best_first = sorted(names, key=lambda name: (ranks[name], name))
    pvalues = conover_friedman(matrix, names, p_adjust, higher_is_better).loc[best_first, best_first]
    n, k = matrix.shape
    rejected = bool(friedman.iman_davenport_pvalue < alpha)  # an infinite F has p = 0 and rejects
    posthoc_applied = rejected or not omnibus_gate
    if posthoc_applied:
        cliques = maximal_cliques(pvalues, alpha, ranks)
    else:  # gated: no difference is shown, so every entity is indifferent to every other
        cliques = rank_cliques([best_first], ranks)
    return {
        "friedman": {"statistic": _finite(friedman.statistic), "pvalue": _finite(friedman.pvalue)},
        "iman_davenport": {"statistic": _finite(friedman.iman_davenport),
                           "pvalue": _finite(friedman.iman_davenport_pvalue)},
        "omnibus": {"test": "iman_davenport", "alpha": float(alpha), "df": [k - 1, (k - 1) * (n - 1)],
                    "rejected": rejected, "gate": bool(omnibus_gate), "posthoc_applied": posthoc_applied},
        "mean_ranks": {name: ranks[name] for name in best_first},
        "pvalues": {a: dict(zip(best_first, map(_finite, row))) for a, row in zip(best_first, pvalues.to_numpy())},
        "cliques": [list(c.members) for c in cliques],
        "layers": [{"members": list(c.members), "mean_rank": c.mean_rank} for c in greedy_layers(cliques)],
        "alpha": float(alpha),
        "p_adjust": p_adjust,
        "n_blocks": int(matrix.shape[0]),
        "dropped_blocks": [],
        "higher_is_better": bool(higher_is_better),
    }


def format_summary(result: dict[str, Any]) -> str:
    """A short human-readable summary of a :func:`rank_table` result."""
    fr, idf = result["friedman"], result["iman_davenport"]
    k = len(result["mean_ranks"])
    orientation = "higher" if result["higher_is_better"] else "lower"
    lines = [
        f"{k} entities over {result['n_blocks']} complete blocks ({len(result['dropped_blocks'])} dropped); "
        f"{orientation} value = better",
        f"Friedman chi2 = {_fmt(fr['statistic'], '.3f')} (p = {_fmt(fr['pvalue'], '.4g')}); "
        f"Iman-Davenport F = {_fmt(idf['statistic'], '.3f')} (p = {_fmt(idf['pvalue'], '.4g')})",
        _omnibus_line(result["omnibus"]),
        f"Conover post-hoc, p_adjust = {result['p_adjust']}, alpha = {result['alpha']:g}: "
        f"{len(result['cliques'])} maximal cliques, {len(result['layers'])} layers",
    ]
    for i, layer in enumerate(result["layers"], 1):
        lines.append(f"  layer {i}: mean rank {layer['mean_rank']:.3f}: {', '.join(layer['members'])}")
    layered = {m for layer in result["layers"] for m in layer["members"]}
    unlayered = [name for name in result["mean_ranks"] if name not in layered]
    if unlayered:
        lines.append(f"  in no layer: {', '.join(unlayered)}")
    lines.append("mean ranks (1 = best): " + ", ".join(f"{n} {r:.3f}" for n, r in result["mean_ranks"].items()))
    return "\n".join(lines)


def _omnibus_line(omnibus: dict[str, Any]) -> str:
    verdict = "rejects" if omnibus["rejected"] else "does not reject"
    line = f"omnibus test (Iman-Davenport) {verdict} equal mean ranks at alpha = {omnibus['alpha']:g}; "
    if not omnibus["posthoc_applied"]:
        return line + "gate on: post-hoc not applied, every entity indifferent (one layer)"
    return line + ("gate on: post-hoc applied" if omnibus["gate"] else "gate off: post-hoc applied regardless")


def _check_options(alpha: float, p_adjust: str) -> None:
    if not 0.0 < alpha < 1.0:
        raise StatsInputError(f"alpha must be in (0, 1); got {alpha}")
    if p_adjust not in P_ADJUST_METHODS:
        raise StatsInputError(f"p_adjust must be one of {list(P_ADJUST_METHODS)}; got {p_adjust!r}")


def _finite(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)
