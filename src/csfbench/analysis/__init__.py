"""Analyses over stored scores: what a confidence scoring function (CSF) separates, and from what.

Library functions for the analyses of Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering Modern
Out-of-Distribution Detection Algorithms" (ICLR 2024: Tables 1–4, Figs. 3–13, App. C and E) and the
result tables of Krumpl, Avenhaus & Possegger, "ICONIC-444" (arXiv 2601.10802, 2026, Tables 4 and
10).  They take plain arrays and DataFrames and know nothing of configuration or file layout.

Conventions shared by every module: ``confidence`` arrays are 1-D, higher = more in-distribution
(more likely a success); ``correct`` marks correct predictions (bool or 0/1); AUROC values are
fractions in [0, 1] with the ID-role set as the positive class (ties count ½), so 0.5 is chance.

* :mod:`~csfbench.analysis.decomposition` — A_co, A_io, A_ci and the identities linking them to
  new-class and failure AUROC (App. E, Table 4), checked per cell.
* :mod:`~csfbench.analysis.distance` — distance-controlled AUROC (§4.2, Fig. 3 left, Fig. 10):
  exact nearest-neighbour distances, equal-count bins, per-bin AUROC, OLS with standard errors.
* :mod:`~csfbench.analysis.sanity` — the random-network check (§4.2, Fig. 4; App. F, Fig. 11).
* :mod:`~csfbench.analysis.ranks` — percentile ranks, the two-CSF rank comparison (Fig. 5)
  and the rank-gap gallery selection (Figs. 12–13).
* :mod:`~csfbench.analysis.densities` — score histograms and KDEs split by correctness (Figs. 6–9).
* :mod:`~csfbench.analysis.frr` — false rejection at a threshold transferred from a semantic set
  (Table 2).
* :mod:`~csfbench.analysis.iconic` — ICONIC-444's category tables with their "Average" column.
"""
from csfbench.analysis.decomposition import (
    Decomposition,
    IdentityError,
    check_identities,
    check_identity_table,
    conditional_auroc_table,
    decompose,
    decomposition_table,
    failure_pooled_from_parts,
    failure_weighted_from_parts,
    newclass_from_parts,
)
from csfbench.analysis.densities import ScoreDensities, score_densities, split_by_correctness
from csfbench.analysis.distance import (
    FIT_COLUMNS,
    OLSFit,
    auroc_against,
    binned_auroc,
    confidence_band,
    distance_controlled_auroc,
    equal_count_bins,
    intervals_overlap,
    nearest_neighbour_distance,
    ols_fit,
    overlap_table,
)
from csfbench.analysis.frr import FRR_COLUMNS, false_rejection_rate, frr_table, transferred_threshold
from csfbench.analysis.iconic import (
    AVERAGE,
    POOLED,
    category_metrics,
    iconic_summary,
    iconic_table,
)
from csfbench.analysis.ranks import (RANK_GAP_COLUMNS, RANK_SUMMARY_COLUMNS, RankComparison, percentile_ranks,
                                     rank_comparison, rank_gap_selection)
from csfbench.analysis.sanity import random_network_check

__all__ = [
    "AVERAGE", "FIT_COLUMNS", "FRR_COLUMNS", "POOLED", "RANK_GAP_COLUMNS", "RANK_SUMMARY_COLUMNS", "Decomposition",
    "IdentityError", "OLSFit", "RankComparison", "ScoreDensities",
    "auroc_against", "binned_auroc", "category_metrics", "check_identities", "check_identity_table",
    "conditional_auroc_table", "confidence_band", "decompose", "decomposition_table", "distance_controlled_auroc",
    "equal_count_bins", "failure_pooled_from_parts", "failure_weighted_from_parts", "false_rejection_rate",
    "frr_table", "iconic_summary", "iconic_table", "intervals_overlap", "nearest_neighbour_distance",
    "newclass_from_parts", "ols_fit", "overlap_table", "percentile_ranks", "random_network_check",
    "rank_comparison", "rank_gap_selection", "score_densities", "split_by_correctness", "transferred_threshold",
]
