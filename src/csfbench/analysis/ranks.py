"""Percentile ranks of scores and the analyses built on them (Yang, Zhang & Russakovsky, "ImageNet-OOD:
Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024): the rank comparison of two
CSFs by outcome group (Fig. 5: MSP vs Max-Logit over ImageNet-1K val ∪ ImageNet-OOD) and the
selection of the samples with the largest rank gap between two CSFs (Figs. 12–13: MSP vs ViM
and MSP vs ASH-B, 12 images).

Two CSFs' raw scores live on different scales; their percentile ranks within one pool of samples do
not.  A percentile rank is in [0, 100], higher = scored as more in-distribution than more of the
pool (ties share the mean rank).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from csfbench.metrics._inputs import MetricInputError, finite_1d

GROUPS = ("correct_id", "incorrect_id", "ood")
DIRECTIONS = ("a_over_b", "b_over_a", "absolute")


def percentile_ranks(scores) -> np.ndarray:
    """Percentile rank of every score within ``scores``, in [0, 100]:
    ``100·(#{s_j < s_i} + ½·#{s_j = s_i}) / n`` (the tie itself included), i.e.
    ``scipy.stats.percentileofscore(scores, s_i, kind="mean")`` for each i; the ranks average 50."""
    values = finite_1d(scores, "scores")
    if values.size == 0:
        raise MetricInputError("percentile_ranks needs at least one score")
    return 100.0 * (rankdata(values, method="average") - 0.5) / values.size


#: the columns of :attr:`RankComparison.summary`
RANK_SUMMARY_COLUMNS = ("group", "csf", "n", "mean_rank", "median_rank")


@dataclass(frozen=True)
class RankComparison:
    """``samples``: one row per (sample, CSF) with ``group`` (correct_id / incorrect_id / ood),
    ``index`` (the row within its set: ID rows first, then OOD rows, each from 0), ``csf`` and
    ``rank`` (percentile in the pooled ID ∪ OOD set); ``histogram``: per (group, csf, bin) the
    ``count`` and ``density`` (fraction of the group per rank unit, integrating to 1 over [0, 100]);
    ``summary``: per (group, csf) ``n``, ``mean_rank`` and ``median_rank``."""

    samples: pd.DataFrame
    histogram: pd.DataFrame
    summary: pd.DataFrame


def rank_comparison(id_scores: Mapping[str, np.ndarray], id_correct, ood_scores: Mapping[str, np.ndarray],
                    bins: int = 20) -> RankComparison:
    """Percentile ranks of each CSF's scores in the pool ID ∪ OOD of one model, split by outcome group.

    ``id_scores[csf]``, ``ood_scores[csf]``: confidences (higher = more ID) on the ID-role set and the
    OOD set, for the same CSFs (Fig. 5: MSP and Max-Logit); ``id_correct``: the ID-role set's
    correctness.  ``bins`` equal-width rank bins over [0, 100] for the histograms.  The paper's
    reading: MSP ranks correct ID slightly higher, Max-Logit ranks incorrect ID higher, OOD about
    alike.
    """
    if set(id_scores) != set(ood_scores) or not id_scores:
        raise ValueError(f"id_scores and ood_scores must name the same CSFs, got {sorted(id_scores)} and "
                         f"{sorted(ood_scores)}")
    if int(bins) != bins or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    correct = finite_1d(id_correct, "id_correct")
    if not np.all((correct == 0) | (correct == 1)):
        raise MetricInputError("id_correct must hold only 0/1 or booleans")
    edges = np.linspace(0.0, 100.0, int(bins) + 1)
    samples, histogram, summary = [], [], []
    for csf in id_scores:
        id_conf = finite_1d(id_scores[csf], f"id_scores[{csf!r}]")
        ood_conf = finite_1d(ood_scores[csf], f"ood_scores[{csf!r}]")
        if id_conf.size != correct.size:
            raise MetricInputError(f"length mismatch: id_scores[{csf!r}] has {id_conf.size} values, id_correct "
                                   f"has {correct.size}")
        ranks = percentile_ranks(np.concatenate([id_conf, ood_conf]))
        groups = np.concatenate([np.where(correct == 1, GROUPS[0], GROUPS[1]), np.full(ood_conf.size, GROUPS[2])])
        index = np.concatenate([np.arange(id_conf.size), np.arange(ood_conf.size)])
        samples.append(pd.DataFrame({"group": groups, "index": index, "csf": csf, "rank": ranks}))
        for group in GROUPS:
            values = ranks[groups == group]
            counts, _ = np.histogram(values, bins=edges)
            width = np.diff(edges)
            density = counts / (values.size * width) if values.size else np.full(counts.size, np.nan)
            histogram.append(pd.DataFrame({"group": group, "csf": csf, "bin_left": edges[:-1],
                                           "bin_right": edges[1:], "count": counts, "density": density}))
            summary.append({"group": group, "csf": csf, "n": int(values.size),
                            "mean_rank": float(values.mean()) if values.size else np.nan,
                            "median_rank": float(np.median(values)) if values.size else np.nan})
    return RankComparison(pd.concat(samples, ignore_index=True), pd.concat(histogram, ignore_index=True),
                          pd.DataFrame(summary))


#: the columns of :func:`rank_gap_selection`'s rows
RANK_GAP_COLUMNS = ("set", "position", "index", "sample_id", "score_a", "score_b", "rank_a", "rank_b", "gap")


def rank_gap_selection(scores_a, scores_b, set_labels, sample_ids=None, k: int = 12, rank_within: str = "pool",
                       direction: str = "a_over_b") -> pd.DataFrame:
    """The ``k`` samples per set with the largest rank gap between two CSFs (one model).

    ``scores_a``, ``scores_b``: the two CSFs' confidences (higher = more ID) for the same samples, all
    sets together; ``set_labels``: each sample's set name; ``sample_ids``: each sample's id (e.g. the
    feature store's ``sample_id``, to trace thumbnails), default the row index.  Ranks
    (:func:`percentile_ranks`) are taken over all given samples (``rank_within="pool"``) or within
    each set (``"set"``).  ``direction``: ``"a_over_b"`` ranks by ``rank_a − rank_b`` (scored high
    by A, low by B: Figs. 12–13 with A = MSP), ``"b_over_a"`` by the opposite, ``"absolute"`` by
    ``|rank_a − rank_b|``; equal gaps keep the input order.  A set with fewer than k samples gives
    all of them.  Returns one row per selected sample: ``set``, ``position`` (1 = largest gap),
    ``index`` (row in the inputs), ``sample_id``, ``score_a``, ``score_b``, ``rank_a``, ``rank_b``,
    ``gap`` (in rank points, by ``direction``).
    """
    a = finite_1d(scores_a, "scores_a")
    b = finite_1d(scores_b, "scores_b")
    labels = np.asarray(set_labels)
    if not a.size == b.size == labels.size or labels.ndim != 1:
        raise MetricInputError(f"scores_a, scores_b and set_labels must be 1-D of one length, got {a.size}, "
                               f"{b.size} and shape {labels.shape}")
    ids = np.arange(a.size) if sample_ids is None else np.asarray(sample_ids)
    if ids.shape != (a.size,):
        raise MetricInputError(f"sample_ids must hold {a.size} values, got shape {ids.shape}")
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if rank_within not in ("pool", "set"):
        raise ValueError(f"rank_within must be 'pool' or 'set', got {rank_within!r}")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    names = list(dict.fromkeys(labels.tolist()))  # sets in order of first appearance
    rank_a, rank_b = np.empty(a.size), np.empty(a.size)
    if rank_within == "pool":
        rank_a[:], rank_b[:] = percentile_ranks(a), percentile_ranks(b)
    else:
        for name in names:
            rows = labels == name
            rank_a[rows], rank_b[rows] = percentile_ranks(a[rows]), percentile_ranks(b[rows])
    diff = rank_a - rank_b
    gap = diff if direction == "a_over_b" else -diff if direction == "b_over_a" else np.abs(diff)
    frames = []
    for name in names:
        rows = np.flatnonzero(labels == name)
        chosen = rows[np.argsort(-gap[rows], kind="stable")[: int(k)]]
        frames.append(pd.DataFrame({"set": name, "position": np.arange(1, chosen.size + 1), "index": chosen,
                                    "sample_id": ids[chosen], "score_a": a[chosen], "score_b": b[chosen],
                                    "rank_a": rank_a[chosen], "rank_b": rank_b[chosen], "gap": gap[chosen]}))
    return pd.concat(frames, ignore_index=True)
