"""Statistics of rankings (Claros-Olivares & Brockmeier, §4.2, App. C): Friedman / Iman–Davenport, Conover post-hoc,
cliques, layers.

Orientation: lower value = better unless ``higher_is_better``; rank 1 = best. Entry points:
:func:`rank_table` (long-format table → JSON-ready dict), :func:`rank_blocks` (blocks × entities
matrix → same dict) and :func:`format_summary`.
"""
from csfbench.stats.cliques import RankedClique, greedy_layers, indifference_graph, maximal_cliques, rank_cliques
from csfbench.stats.friedman import FriedmanResult, friedman_test, mean_ranks, within_block_ranks
from csfbench.stats.posthoc import DEFAULT_P_ADJUST, P_ADJUST_METHODS, conover_friedman
from csfbench.stats.rank import format_summary, rank_blocks, rank_table
from csfbench.stats.table import BlockMatrix, IncompleteBlocksWarning, StatsInputError, block_matrix, read_table

__all__ = [
    "BlockMatrix", "DEFAULT_P_ADJUST", "FriedmanResult", "IncompleteBlocksWarning", "P_ADJUST_METHODS",
    "RankedClique", "StatsInputError", "block_matrix", "conover_friedman", "format_summary", "friedman_test",
    "greedy_layers", "indifference_graph", "maximal_cliques", "mean_ranks", "rank_blocks", "rank_cliques",
    "rank_table", "read_table", "within_block_ranks",
]
