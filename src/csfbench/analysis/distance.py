"""Distance-controlled AUROC (Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering Modern
Out-of-Distribution Detection Algorithms", ICLR 2024, §4.2, Fig. 3 left, Fig. 10 and App. C).

Does a CSF separate a shifted set from the ID set better than another shifted set *at the same
distance* from the ID data?  The recipe, per query set (a shifted set: covariate such as
ImageNet-R, or semantic such as ImageNet-OOD):

1. ``d`` = Euclidean distance of every query sample to its nearest neighbour in the ID *reference*
   features (all of ImageNet-1K val in an encoder's space; the paper uses a PASS-trained MoCo-v2
   ResNet-50, exact ``torch.cdist``): :func:`nearest_neighbour_distance`, in the encoder's units.
2. Sort the query set by ``d`` and split it into 100 chunks of equal count (``np.array_split``:
   sizes differ by at most one, the larger chunks first): :func:`equal_count_bins`.  Only the
   query set is binned.
3. Per chunk k: ``x_k`` = the chunk's mean distance, ``y_k`` = AUROC of *all* ID-role scores
   (positives, not binned) against the chunk's scores (negatives) — the ``shiftdetect`` scheme,
   ties ½: :func:`binned_auroc`.
4. OLS ``y = slope·x + intercept`` on the chunk points, with the classical standard errors
   (:func:`ols_fit`; the 95 % mean-response band of the figure: :func:`confidence_band`).
5. Two fits differ "significantly" in a parameter when the ±2·SE intervals do not overlap
   (App. C compares the intercepts of ImageNet-R and ImageNet-OOD for one CSF):
   :func:`intervals_overlap`, :func:`overlap_table`.

:func:`distance_controlled_auroc` runs steps 2–4 for several CSFs and query sets sharing the
distances.  AUROC values are fractions in [0, 1] (ID positive; higher = the CSF scores ID higher);
slopes are AUROC per distance unit.
"""
from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from csfbench.csf.blocks import map_row_blocks, unit_rows
from csfbench.metrics._inputs import MetricInputError, UndefinedMetricError, finite_1d

DEFAULT_BINS = 100
PARAMETERS = ("slope", "intercept")


# ---------------------------------------------------------------- nearest-neighbour distances


def _features(x, name: str, dim: int | None = None) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty N × D array, got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name}: dimension {arr.shape[1]} does not match the reference's {dim}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    return arr


def nearest_neighbour_distance(query, reference, normalize: bool = False,
                               return_index: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Euclidean distance of every ``query`` row to its nearest ``reference`` row (exact search).

    ``query`` (N × D) and ``reference`` (M × D) are feature arrays (float32 or float64; finite values
    assumed); with ``normalize`` every row is first scaled to unit L2 norm (an all-zero row stays
    zero), otherwise the raw features are used, as in Yang et al.'s notebook.  Returns the float64
    distances (N,), in the features' units, and with ``return_index`` also the int64 index of the
    nearest reference row (for galleries of query images next to their nearest ID image).

    Search: both sides are centred on the reference mean (distances do not change; the float32 dot
    products lose less to cancellation), the reference is held once as a float32 bank
    ``[r, −‖r‖²/2]`` and each block of queries ``[q, 1]`` is multiplied with it, so the row maximum
    of one float32 matrix product picks the nearest neighbour; only query blocks × the reference are
    ever held (:func:`csfbench.csf.blocks.map_row_blocks`, on as many threads as BLAS may use).  The
    returned distance is then recomputed in float64 from the chosen pair of input rows, so it is
    exact for that neighbour; the choice itself can differ from the float64 nearest only between
    neighbours whose squared distances agree to float32 rounding (~1e-7 relative to the squared
    centred norms), and the distance returned then exceeds the true minimum by at most that.  (csfbench.csf.knn's search
    is the same blocked product on unit rows but returns the k-th distance only, no index.)
    Memory: about 4·M·(D + 1) bytes for the bank plus the blocks' float32 products (≤ 64 MiB
    per thread).
    """
    reference = _features(reference, "reference")
    query = _features(query, "query", reference.shape[1])
    n_ref, dim = reference.shape

    def rows64(x: np.ndarray) -> np.ndarray:  # the rows the returned distance is computed from
        return unit_rows(x, np.float64) if normalize else np.asarray(x, dtype=np.float64)

    # the centre: the mean of the (unit) reference rows, summed in float64 block by block
    total = np.zeros(dim)
    for start in range(0, n_ref, 4096):
        total += rows64(reference[start:start + 4096]).sum(axis=0)
    center64 = total / n_ref
    center32 = center64.astype(np.float32)

    def centred(x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The (unit) rows of ``x`` minus the centre, into the float32 ``out``: subtracted in float32
        for float32 input (no precision to keep), in float64 otherwise."""
        if x.dtype == np.float32:
            return np.subtract(unit_rows(x, np.float32) if normalize else x, center32, out=out)
        np.copyto(out, rows64(x) - center64, casting="same_kind")
        return out

    bank = np.empty((n_ref, dim + 1), dtype=np.float32)

    def fill(rows: slice) -> None:
        r = centred(reference[rows], bank[rows, :-1])
        bank[rows, -1] = -0.5 * np.einsum("ij,ij->i", r, r, dtype=np.float64)

    map_row_blocks(fill, n_ref, dim + 1)
    bank_t = bank.T
    distance = np.empty(len(query))
    index = np.empty(len(query), dtype=np.int64)
    buffers = threading.local()  # one product block per thread, reused

    def search(rows: slice) -> None:
        n_rows = rows.stop - rows.start
        if getattr(buffers, "values", None) is None or len(buffers.values) < n_rows:
            buffers.values = np.empty((n_rows, n_ref), dtype=np.float32)
        extended = np.ones((n_rows, dim + 1), dtype=np.float32)
        centred(query[rows], extended[:, :-1])
        values = np.matmul(extended, bank_t, out=buffers.values[:n_rows])
        nearest = np.argmax(values, axis=1)
        index[rows] = nearest
        diff = rows64(query[rows]) - rows64(reference[nearest])
        distance[rows] = np.sqrt(np.einsum("ij,ij->i", diff, diff))

    # the widest temporary is the float32 product: half the float64 entries the budget counts
    map_row_blocks(search, len(query), max(n_ref, 2 * (dim + 1)) // 2)
    return (distance, index) if return_index else distance


# ---------------------------------------------------------------- bins and per-bin AUROC


def equal_count_bins(distance, n_bins: int = DEFAULT_BINS) -> np.ndarray:
    """Bin label (0 … n_bins − 1, increasing with distance) of every sample: the samples sorted by
    ``distance`` (stable, so ties keep their input order) and split into ``n_bins`` chunks of equal
    count with ``np.array_split`` (the first ``len % n_bins`` chunks hold one more sample)."""
    d = finite_1d(distance, "distance")
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if d.size < n_bins:
        raise ValueError(f"{d.size} samples cannot fill {n_bins} equal-count bins")
    labels = np.empty(d.size, dtype=np.int64)
    for k, chunk in enumerate(np.array_split(np.argsort(d, kind="stable"), int(n_bins))):
        labels[chunk] = k
    return labels


def _credit(positive_sorted: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """Per negative: the fraction of positives scored above it, ties counting ½."""
    below_or_equal = np.searchsorted(positive_sorted, negative, side="right")
    below = np.searchsorted(positive_sorted, negative, side="left")
    n = positive_sorted.size
    return ((n - below_or_equal) + 0.5 * (below_or_equal - below)) / n


def auroc_against(positive_confidence, negative_confidence) -> float:
    """AUROC of ``positive_confidence`` (e.g. the ID-role set) against ``negative_confidence``
    (a shifted set), in [0, 1], ties ½ — the Mann–Whitney count, equal to
    :func:`csfbench.metrics.auroc` on the ``shiftdetect`` set (tested against scikit-learn)."""
    pos = finite_1d(positive_confidence, "positive_confidence")
    neg = finite_1d(negative_confidence, "negative_confidence")
    if pos.size == 0 or neg.size == 0:
        raise UndefinedMetricError(f"AUROC needs positives and negatives, got {pos.size} and {neg.size}")
    return float(_credit(np.sort(pos), neg).mean())


def binned_auroc(id_confidence, query_confidence, query_distance, n_bins: int = DEFAULT_BINS) -> pd.DataFrame:
    """Per distance bin of the query set: AUROC of all ``id_confidence`` (positives) against the bin's
    ``query_confidence`` (negatives), in [0, 1].

    Returns one row per bin: ``bin`` (0 = nearest), ``n`` (query samples), ``distance_mean`` (the
    regression's x), ``distance_min``, ``distance_max`` (the distances' units) and ``auroc``.
    """
    pos = finite_1d(id_confidence, "id_confidence")
    conf = finite_1d(query_confidence, "query_confidence")
    dist = finite_1d(query_distance, "query_distance")
    if conf.size != dist.size:
        raise MetricInputError(f"length mismatch: query_confidence has {conf.size} values, query_distance "
                               f"has {dist.size}")
    if pos.size == 0:
        raise UndefinedMetricError("binned_auroc needs ID-role scores (the positives), got none")
    labels = equal_count_bins(dist, n_bins)
    counts = np.bincount(labels, minlength=n_bins)
    credit = _credit(np.sort(pos), conf)
    low, high = np.full(n_bins, np.inf), np.full(n_bins, -np.inf)
    np.minimum.at(low, labels, dist)
    np.maximum.at(high, labels, dist)
    frame = pd.DataFrame({"bin": np.arange(n_bins), "n": counts,
                          "distance_mean": np.bincount(labels, weights=dist, minlength=n_bins) / counts,
                          "distance_min": low, "distance_max": high,
                          "auroc": np.bincount(labels, weights=credit, minlength=n_bins) / counts})
    return frame


# ---------------------------------------------------------------- OLS


@dataclass(frozen=True)
class OLSFit:
    """OLS ``y = slope·x + intercept`` with classical (homoscedastic) standard errors.

    ``sigma`` = √(SSR / (n − 2)), ``x_mean`` and ``sxx`` = Σ(x − x̄)² are kept for the confidence
    band; ``r_squared`` is the coefficient of determination.  Units: slope in y per x unit.
    """

    slope: float
    intercept: float
    slope_se: float
    intercept_se: float
    n: int
    sigma: float
    x_mean: float
    sxx: float
    r_squared: float

    def interval(self, parameter: str = "intercept", k: float = 2.0) -> tuple[float, float]:
        """``estimate ± k·SE`` of ``parameter`` (``slope`` or ``intercept``)."""
        if parameter not in PARAMETERS:
            raise ValueError(f"parameter must be one of {PARAMETERS}, got {parameter!r}")
        estimate, se = getattr(self, parameter), getattr(self, f"{parameter}_se")
        return estimate - k * se, estimate + k * se


def ols_fit(x, y) -> OLSFit:
    """Ordinary least squares of ``y`` on ``x`` with an intercept (n ≥ 3 points, x not constant).

    ``slope_se = σ/√Sxx`` and ``intercept_se = σ·√(1/n + x̄²/Sxx)`` with σ² = SSR/(n − 2): the
    standard errors of statsmodels' OLS ``bse`` and scipy's ``linregress`` (tested against both).
    """
    xs = finite_1d(x, "x")
    ys = finite_1d(y, "y")
    if xs.size != ys.size:
        raise MetricInputError(f"length mismatch: x has {xs.size} values, y has {ys.size}")
    if xs.size < 3:
        raise ValueError(f"OLS with standard errors needs at least 3 points, got {xs.size}")
    x_mean, y_mean = xs.mean(), ys.mean()
    dx = xs - x_mean
    sxx = float(dx @ dx)
    if sxx <= 0:
        raise ValueError("OLS is undefined: every x is the same")
    slope = float(dx @ (ys - y_mean) / sxx)
    intercept = float(y_mean - slope * x_mean)
    resid = ys - (intercept + slope * xs)
    ssr = float(resid @ resid)
    sst = float((ys - y_mean) @ (ys - y_mean))
    sigma = math.sqrt(ssr / (xs.size - 2))
    return OLSFit(slope=slope, intercept=intercept, slope_se=sigma / math.sqrt(sxx),
                  intercept_se=sigma * math.sqrt(1.0 / xs.size + x_mean ** 2 / sxx), n=int(xs.size), sigma=sigma,
                  x_mean=float(x_mean), sxx=sxx, r_squared=1.0 - ssr / sst if sst > 0 else math.nan)


def confidence_band(fit: OLSFit, x, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` of the ``level`` confidence band of the fitted mean at ``x``:
    ``ŷ ± t_{(1+level)/2, n−2} · σ·√(1/n + (x − x̄)²/Sxx)`` (statsmodels' ``mean_ci_*``)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    xs = np.asarray(x, dtype=np.float64)
    fitted = fit.intercept + fit.slope * xs
    half = stats.t.ppf(0.5 + level / 2, fit.n - 2) * fit.sigma * np.sqrt(1.0 / fit.n + (xs - fit.x_mean) ** 2 / fit.sxx)
    return fitted - half, fitted + half


def intervals_overlap(fit_a: OLSFit, fit_b: OLSFit, parameter: str = "intercept", k: float = 2.0) -> bool:
    """Whether the ``±k·SE`` intervals of ``parameter`` of two fits overlap (touching counts).

    Yang et al. (App. C) call two intercepts different when their ±2·SE intervals do not overlap.
    """
    lo_a, hi_a = fit_a.interval(parameter, k)
    lo_b, hi_b = fit_b.interval(parameter, k)
    return bool(lo_a <= hi_b and lo_b <= hi_a)


# ---------------------------------------------------------------- the whole analysis


#: the columns of :func:`distance_controlled_auroc`'s fits, one row per (query set, CSF)
FIT_COLUMNS = ("query_set", "csf", "slope", "slope_se", "intercept", "intercept_se", "n_bins", "sigma", "r_squared")


def distance_controlled_auroc(id_scores: Mapping[str, np.ndarray],
                              queries: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]],
                              n_bins: int = DEFAULT_BINS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Binned AUROC and its OLS fit for every (query set, CSF).

    ``id_scores[csf]``: the CSF's confidences on the whole ID-role set (the positives of every bin);
    ``queries[name] = (distance, {csf: confidence})``: a query set's nearest-neighbour distances
    (:func:`nearest_neighbour_distance`) and its confidences per CSF (the CSFs of ``id_scores``).
    Returns ``(bins, fits)``: ``bins`` has the columns ``query_set, csf`` and those of
    :func:`binned_auroc`; ``fits`` one row per (query set, CSF) with ``slope, slope_se, intercept,
    intercept_se, n_bins, sigma, r_squared`` of the regression of ``auroc`` on ``distance_mean``.
    """
    bins, fits = [], []
    for name, (distance, scores) in queries.items():
        missing = sorted(set(id_scores) - set(scores))
        if missing:
            raise ValueError(f"query set {name!r} lacks scores of CSF(s) {missing}")
        for csf, id_conf in id_scores.items():
            frame = binned_auroc(id_conf, scores[csf], distance, n_bins)
            fit = ols_fit(frame["distance_mean"], frame["auroc"])
            bins.append(frame.assign(query_set=name, csf=csf))
            fits.append({"query_set": name, "csf": csf, "slope": fit.slope, "slope_se": fit.slope_se,
                         "intercept": fit.intercept, "intercept_se": fit.intercept_se, "n_bins": fit.n,
                         "sigma": fit.sigma, "r_squared": fit.r_squared})
    bins_frame = pd.concat(bins, ignore_index=True) if bins else pd.DataFrame()
    if len(bins_frame):
        bins_frame = bins_frame[["query_set", "csf", *[c for c in bins_frame.columns if c not in ("query_set", "csf")]]]
    return bins_frame, pd.DataFrame(fits) if fits else pd.DataFrame(columns=list(FIT_COLUMNS))


def overlap_table(fits: pd.DataFrame, compare: str = "query_set", within: str = "csf",
                  parameter: str = "intercept", k: float = 2.0) -> pd.DataFrame:
    """The ±k·SE overlap flag of ``parameter`` for every pair of rows of ``fits`` that share
    ``within`` and differ in ``compare``.

    The default pairs the query sets of each CSF (Yang et al.'s App. C: ImageNet-R vs
    ImageNet-OOD intercepts per detector); ``compare="csf", within="query_set"`` pairs the CSFs of
    each query set instead.  ``fits`` as returned by :func:`distance_controlled_auroc`.  Columns:
    ``within``, ``a``, ``b``, ``parameter``, ``estimate_a, se_a, estimate_b, se_b``, ``overlap``
    (bool; False = the two differ by this criterion).
    """
    if parameter not in PARAMETERS:
        raise ValueError(f"parameter must be one of {PARAMETERS}, got {parameter!r}")
    rows = []
    for key, group in fits.groupby(within, sort=False):
        records = group.to_dict("records")
        for first, second in itertools.combinations(records, 2):
            est_a, se_a = first[parameter], first[f"{parameter}_se"]
            est_b, se_b = second[parameter], second[f"{parameter}_se"]
            overlap = bool(est_a - k * se_a <= est_b + k * se_b and est_b - k * se_b <= est_a + k * se_a)
            rows.append({within: key, "a": first[compare], "b": second[compare], "parameter": parameter,
                         "estimate_a": est_a, "se_a": se_a, "estimate_b": est_b, "se_b": se_b, "overlap": overlap})
    return pd.DataFrame(rows, columns=[within, "a", "b", "parameter", "estimate_a", "se_a", "estimate_b", "se_b",
                                       "overlap"])
