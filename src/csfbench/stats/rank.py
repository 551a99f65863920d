"""End-to-end ranking of a long-format table: Friedman → Conover → cliques → layers (spec 000 §5).

:func:`rank_table` returns a JSON-ready dict with the keys ``friedman`` {statistic, pvalue} (Q and its
χ² p-value), ``iman_davenport`` {statistic, pvalue}, ``mean_ranks`` {entity: mean rank, 1..k scale,
1 = best}, ``pvalues`` {entity: {entity: p}}, ``cliques`` (every maximal clique of the indifference
graph, ranked), ``layers`` [{members, mean_rank}] (best first), ``alpha``, ``p_adjust``, ``n_blocks``
(complete blocks used), ``dropped_blocks`` and ``higher_is_better``. Lower value = better unless
``higher_is_better``. Entities are ordered by mean rank then name everywhere; the result does not depend
on the row order of the table. Non-finite statistics (degenerate data) are written as ``null``.

The post-hoc step runs whatever the Friedman p-value (as in the seed paper's code); the default
``p_adjust`` is ``"none"`` because only it reproduces the paper's published cliques (see
:mod:`csfbench.stats.posthoc`).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd

from csfbench.stats.cliques import greedy_layers, maximal_cliques
from csfbench.stats.friedman import friedman_test, mean_ranks
from csfbench.stats.posthoc import DEFAULT_P_ADJUST, P_ADJUST_METHODS, conover_friedman
from csfbench.stats.table import StatsInputError, block_matrix


def rank_table(table: pd.DataFrame, blocks: Sequence[str], entity: str, value: str, *, alpha: float = 0.05,
               p_adjust: str = DEFAULT_P_ADJUST, higher_is_better: bool = False) -> dict[str, Any]:
    """Rank the entities of a long-format table over complete blocks (see the module docstring)."""
    _check_options(alpha, p_adjust)
    matrix = block_matrix(table, blocks, entity, value)
    result = rank_blocks(matrix.values, alpha=alpha, p_adjust=p_adjust, higher_is_better=higher_is_better)
    result["dropped_blocks"] = matrix.dropped
    return result


def rank_blocks(values: pd.DataFrame, *, alpha: float = 0.05, p_adjust: str = DEFAULT_P_ADJUST,
                higher_is_better: bool = False) -> dict[str, Any]:
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
    cliques = maximal_cliques(pvalues, alpha, ranks)
    return {
        "friedman": {"statistic": _finite(friedman.statistic), "pvalue": _finite(friedman.pvalue)},
        "iman_davenport": {"statistic": _finite(friedman.iman_davenport),
                           "pvalue": _finite(friedman.iman_davenport_pvalue)},
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
