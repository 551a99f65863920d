"""Feature-shaping detectors: ReAct, ASH-P, ASH-B, ASH-S, SCALE and DICE.

Each one reshapes the stored pooled penultimate activation h (ReAct, ASH, SCALE) or sparsifies the
head (DICE), applies the head, z' = W h' + b, and scores z' with the energy ``log Σ_c exp(z'_c)`` at
temperature 1 (:func:`csfbench.csf.logit_scores.energy`).  Every score is a float64 array (N,) in logit
units, oriented as a **confidence**: higher = more in-distribution.

* **ReAct** — Sun, Guo & Li, "ReAct: Out-of-distribution Detection With Rectified Activations",
  NeurIPS 2021, arXiv 2111.12797, §3: h' = min(h, c), with c the p-th percentile of the training
  activations, one scalar over every unit of every training row (as in the authors' code, OpenOOD
  and pytorch-ood).  OpenOOD takes the percentile over the ID *validation* activations; the caller
  chooses the rows given to :func:`react_fit`.
* **ASH** — Djurisic, Bozanic, Ashok & Liu, "Extremely Simple Activation Shaping for
  Out-of-Distribution Detection", ICLR 2023, arXiv 2209.09858 (its method section): per row, the
  k = D − round(D·p/100) largest units are kept and the others set to 0.  ASH-P leaves the kept units
  as they are; ASH-B sets each kept unit to s1/k (s1 = Σ_j h_j, so the row sum is preserved); ASH-S
  multiplies the kept units by exp(s1/s2) (s2 = the sum of the kept units).
* **SCALE** — Xu, Chen, Franchi & Yao, "Scaling for Training Time and Post-hoc Out-of-distribution
  Detection Enhancement", ICLR 2024, arXiv 2310.00227 (its post-hoc rule): the whole, unpruned h
  times exp(s1/s2), s1 and s2 as for ASH-S.
* **DICE** — Sun & Li, "DICE: Leveraging Sparsification for Out-of-Distribution Detection", ECCV 2022,
  arXiv 2111.09805, §3: contributions V = W ⊙ h̄ (h̄ = the mean training feature, broadcast over the C
  rows of W); every weight whose contribution is not above the p-th percentile of the C·D entries of
  V is zeroed, so the top (100 − p) % are kept.

**Where they act, as OpenOOD v1.5 applies them** (the code ICONIC-444 extends): on the pooled
penultimate activation, i.e. the input of the final linear layer, which is what csfbench stores as
``features`` — ReAct clips it (``forward_threshold`` of the ResNets and of the ViT), ASH and SCALE
reshape it as a B×D×1×1 tensor (``ASHNet``/``ScaleNet``: for a ResNet that is the avg-pooled
``feature_list[-1]``), and DICE masks the head applied to it.  The methods were designed for
non-negative (post-ReLU) activations.  For signed activations, such as a ViT's pre-logits (the
layer-normed class token), the formulas are applied unchanged, as OpenOOD applies them to its ViT
(ReAct clips from above only, SCALE uses the signed sums s1, s2); OpenOOD's ``ASHNet`` needs a
``return_feature_list`` its ViT lacks, and csfbench runs ASH on the signed vector with the same
formulas.  With signed units s2 may be near 0 or negative, so exp(s1/s2) may overflow and give a
non-finite score for that row; for non-negative units s1/s2 <= D/k, and a row whose kept units sum to
0 (an all-zero row) is shaped to itself (the factor is taken as 1 there instead of exp(0/0)).

Ties at the k-th largest unit are broken as :func:`numpy.argpartition` breaks them (as unspecified as
``torch.topk``'s); only ASH-B depends on which tied units are kept.

Hyper-parameter grids: ICONIC-444 (Krumpl, Avenhaus & Possegger, arXiv 2601.10802) Table 7, in
percent, as :data:`REACT_GRID`, :data:`ASH_GRID` (ASH-S, ASH-B; also used for ASH-P, which ICONIC-444
does not evaluate), :data:`SCALE_GRID` and :data:`DICE_GRID`.

Shapes: ``features`` N×D (float32 or float64), ``head_weight`` C×D, ``head_bias`` (C,).  The shaping and
the head run in row blocks on several threads (:func:`csfbench.csf.blocks.map_row_blocks`), in float32
for float32 features (the precision of the stored features and of the network's own head, and the one
pytorch-ood computes in) and in float64 otherwise; sums, factors and the energy are float64 (the energy's
exponentials and, where the row allows it, their sum float32, :func:`csfbench.csf.logit_scores.energy`).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from csfbench.csf.blocks import column_mean, map_row_blocks, row_blocks, rows_or_array
from csfbench.csf.logit_scores import energy

REACT_GRID = {"percentile": (70, 80, 85, 90, 95, 99)}
ASH_GRID = {"percentile": (65, 70, 75, 80, 85, 90, 95)}
SCALE_GRID = {"percentile": (65, 70, 75, 80, 85, 90, 95)}
DICE_GRID = {"percentile": (10, 30, 50, 70, 90)}

#: the ASH variants of :func:`ash_score`
ASH_VARIANTS = ("p", "b", "s")
#: about this many entries are sampled to bracket a percentile (:func:`percentile_of_all`)
PERCENTILE_SAMPLE = 1 << 18


def _features(features: np.ndarray) -> np.ndarray:
    features = rows_or_array(features)
    if features.ndim != 2:
        raise ValueError(f"expected N×D features, got shape {features.shape}")
    return features


def _check_percentile(percentile: float) -> float:
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile must lie in [0, 100], got {percentile}")
    return float(percentile)


def _head_energy(features: np.ndarray, head_weight: np.ndarray, head_bias: np.ndarray,
                 shape: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """``energy(shape(h) Wᵀ + b)``: ``shape`` maps an n×D block of the working precision (which it may
    overwrite) to the shaped block of that precision; None applies the head to h itself.

    The working precision is float32 for float32 features and float64 otherwise: the shaping and the
    head run in the precision the network's own head ran in (and pytorch-ood runs them in), half the
    work of float64 (docs/benchmarks.md); the energy (float64, of float32 exponentials,
    :func:`~csfbench.csf.logit_scores.energy`) is the same either way.
    """
    features = _features(features)
    dtype = np.float32 if features.dtype == np.float32 else np.float64
    weight_t = np.asarray(head_weight, dtype=dtype).T
    bias = np.asarray(head_bias, dtype=dtype)
    if weight_t.shape[0] != features.shape[1] or bias.shape != (weight_t.shape[1],):
        raise ValueError(f"head W {weight_t.T.shape}, b {bias.shape} do not fit {features.shape[1]}-d features")
    logits = np.empty((len(features), weight_t.shape[1]), dtype)

    def block(rows: slice) -> None:
        h = features[rows].astype(dtype)
        np.matmul(h if shape is None else shape(h), weight_t, out=logits[rows])
        logits[rows] += bias

    map_row_blocks(block, len(features), max(weight_t.shape))
    return energy(logits)


def percentile_of_all(x: np.ndarray, percentile: float) -> float:
    """``np.percentile(x, percentile)`` over all (finite) entries of ``x``, linear interpolation
    between the order statistics at ⌊p⌋ and ⌊p⌋ + 1, p = percentile/100 · (n − 1), partitioning only
    the entries of a bracket around them instead of all n.

    The bracket is read off a strided sample of :data:`PERCENTILE_SAMPLE` entries, ±4 standard
    deviations of a sample quantile wide; one pass counts the entries below it and collects those
    inside.  When the two order statistics are not inside (a skewed sample, or ties at the bracket's
    ends), each is found by :func:`_order_statistic`.  Either way the result is exact.  ``x`` is read in
    row blocks (an N×D array or a row source): the memory is the sample's and the bracket's, about
    n / √(sample size) entries (entries equal to either end of the bracket are counted, not kept).
    """
    x = rows_or_array(x)
    width = int(np.prod(x.shape[1:], dtype=np.int64))
    n = len(x) * width
    position = _check_percentile(percentile) / 100.0 * (n - 1)
    ranks = [int(position), min(int(position) + 1, n - 1)]
    step = max(1, n // PERCENTILE_SAMPLE)

    def flat_blocks():  # (first flat index, the block's entries raveled)
        for rows in row_blocks(len(x), width):
            yield rows.start * width, np.ravel(x[rows])

    # the entries at flat positions 0, step, 2 step, ... (copies: a view would keep its whole block alive)
    sample = np.concatenate([flat[(-first) % step::step].copy() for first, flat in flat_blocks()])
    fraction, last = position / max(n - 1, 1), len(sample) - 1
    spread = 4.0 * np.sqrt(len(sample) * fraction * (1.0 - fraction)) + 1.0
    bracket = [int(np.clip(np.floor(fraction * last - spread), 0, last)),
               int(np.clip(np.ceil(fraction * last + spread), 0, last))]
    low, high = np.partition(sample, bracket)[bracket]
    # the entries below the bracket are counted, those at its ends counted (ties, e.g. the zeros of ReLU
    # activations, can be most of the entries), only those strictly inside kept
    below, at_low, at_high, inside = 0, 0, 0, []
    for _, flat in flat_blocks():
        below += int(np.count_nonzero(flat < low))
        at_low += int(np.count_nonzero(flat == low))
        at_high += int(np.count_nonzero(flat == high)) if high != low else 0
        inside.append(flat[(flat > low) & (flat < high)])
    inside = np.concatenate(inside)
    # the sorted entries from rank `below` on: at_low copies of low, the inside ones, at_high copies of high
    ends = (below, below + at_low, below + at_low + len(inside), below + at_low + len(inside) + at_high)
    if ends[0] <= ranks[0] and ranks[1] < ends[3]:
        values = []
        for r in ranks:
            if r < ends[1]:
                values.append(low)
            elif r < ends[2]:
                values.append(np.partition(inside, r - ends[1])[r - ends[1]])
            else:
                values.append(high)
        a, b = values
    else:
        a, b = (_order_statistic(lambda: (flat for _, flat in flat_blocks()), r) for r in ranks)
    a, b, t = float(a), float(b), position - ranks[0]
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1.0 - t)  # numpy's lerp


#: bits of the key that one pass of :func:`_order_statistic` resolves (a histogram of 2^16 bins)
RADIX_BITS = 16


def _order_statistic(blocks: Callable, rank: int) -> float:
    """The ``rank``-th smallest (from 0) of the finite float entries of the blocks that ``blocks()`` yields (1-D
    float32 or float64 arrays, the same on every call), exactly, in memory independent of their number: a
    radix selection on the entries' order-preserving unsigned keys, :data:`RADIX_BITS` bits per pass over the
    blocks (2 passes for float32, 4 for float64), each pass a histogram of the keys that share the bits found
    so far.  −0.0 sorts before 0.0 (equal values)."""
    first = next(iter(blocks()))
    bits = first.dtype.itemsize * 8
    unsigned = np.dtype(f"u{first.dtype.itemsize}")
    sign = np.array(1, dtype=unsigned) << np.array(bits - 1, dtype=unsigned)

    def keys(flat: np.ndarray) -> np.ndarray:  # negative floats: all bits flipped; others: the sign bit set
        u = np.ascontiguousarray(flat).view(unsigned)
        return np.where(u & sign, ~u, u | sign)

    prefix, remaining = 0, int(rank)
    for shift in range(bits - RADIX_BITS, -1, -RADIX_BITS):
        counts = np.zeros(1 << RADIX_BITS, dtype=np.int64)
        for flat in blocks():
            k = keys(flat)
            if shift + RADIX_BITS < bits:
                k = k[(k >> np.array(shift + RADIX_BITS, dtype=unsigned)) == prefix]
            counts += np.bincount(((k >> np.array(shift, dtype=unsigned)) & ((1 << RADIX_BITS) - 1)).astype(np.intp),
                                  minlength=1 << RADIX_BITS)
        below = np.cumsum(counts)
        digit = int(np.searchsorted(below, remaining, side="right"))
        remaining -= int(below[digit - 1]) if digit else 0
        prefix = (prefix << RADIX_BITS) | digit
    key = np.array(prefix, dtype=unsigned)
    u = key ^ sign if key & sign else ~key
    return float(u.view(first.dtype))


def react_fit(features: np.ndarray, percentile: float) -> dict[str, np.ndarray]:
    """ReAct's clip threshold c: the ``percentile``-th percentile (in percent, linear interpolation) of
    all entries of ``features`` (the training activations; :func:`percentile_of_all`), as a 0-d
    float64 array ``{"threshold"}``."""
    return {"threshold": np.asarray(percentile_of_all(_features(features), percentile), dtype=np.float64)}


def react_score(state: dict[str, np.ndarray], features: np.ndarray, head_weight: np.ndarray,
                head_bias: np.ndarray) -> np.ndarray:
    """ReAct confidence ``LSE(W min(h, c) + b)``, shape (N,)."""
    threshold = float(state["threshold"])
    return _head_energy(features, head_weight, head_bias, lambda h: np.minimum(h, threshold, out=h))


def _kept_count(dim: int, percentile: float) -> int:
    """k = D − round(D·p/100), the units ASH and SCALE keep (at least 1)."""
    kept = dim - int(np.round(dim * _check_percentile(percentile) / 100.0))
    if kept < 1:
        raise ValueError(f"percentile {percentile} keeps no unit of {dim}")
    return kept


def top_mask(h: np.ndarray, kept: int) -> np.ndarray:
    """Boolean N×D mask of exactly ``kept`` largest entries of every row of ``h`` (1 <= kept <= D); among
    entries equal to a row's ``kept``-th largest value, the first ones by column index are kept.

    The threshold comes from ``np.partition`` on the values, then one comparison marks the entries above it:
    twice as fast as an ``argpartition`` and a scatter of its int64 indices (docs/benchmarks.md).  Only rows
    with several entries at the threshold take a cumulative count to pick the first of them.
    """
    dim = h.shape[1]
    threshold = np.partition(h, dim - kept, axis=1)[:, dim - kept, None]
    mask = h > threshold
    at = h == threshold
    missing = kept - np.count_nonzero(mask, axis=1)  # >= 1: the threshold entry itself belongs to the top
    tied = np.flatnonzero(np.count_nonzero(at, axis=1) > missing)
    if len(tied):
        at[tied] &= np.cumsum(at[tied], axis=1) <= missing[tied, None]
    return np.logical_or(mask, at, out=mask)


def _shaper(rule: str, dim: int, percentile: float) -> Callable[[np.ndarray], np.ndarray]:
    """The shaping of one block by ``rule`` (ASH's ``p``, ``b``, ``s`` or ``scale``), in the block's own
    precision; the sums s1 and s2 and the factor exp(s1/s2) are taken in float64."""
    kept = _kept_count(dim, percentile)

    def shape(h: np.ndarray) -> np.ndarray:
        mask = top_mask(h, kept)
        total = h.sum(axis=1, dtype=np.float64)
        if rule == "b":
            return np.multiply(mask, (total / kept)[:, None], out=h)
        pruned = np.multiply(h, mask, out=h) if rule in ("p", "s") else h * mask
        if rule == "p":
            return pruned
        kept_sum = pruned.sum(axis=1, dtype=np.float64)
        ratio = np.divide(total, kept_sum, out=np.zeros_like(total), where=kept_sum != 0)
        return np.multiply(pruned if rule == "s" else h, np.exp(ratio)[:, None], out=h)

    return shape


def ash_score(features: np.ndarray, head_weight: np.ndarray, head_bias: np.ndarray, percentile: float,
              variant: str) -> np.ndarray:
    """ASH confidence ``LSE(W ash(h) + b)``, shape (N,); ``variant`` ``"p"``, ``"b"`` or ``"s"``
    (ASH-P, ASH-B, ASH-S); ``percentile`` in percent (the pruned share of units)."""
    if variant not in ASH_VARIANTS:
        raise ValueError(f"ASH variant must be one of {ASH_VARIANTS}, got {variant!r}")
    features = _features(features)
    return _head_energy(features, head_weight, head_bias, _shaper(variant, features.shape[1], percentile))


def scale_score(features: np.ndarray, head_weight: np.ndarray, head_bias: np.ndarray,
                percentile: float) -> np.ndarray:
    """SCALE confidence ``LSE(W h exp(s1/s2) + b)``, shape (N,); ``percentile`` in percent."""
    features = _features(features)
    return _head_energy(features, head_weight, head_bias, _shaper("scale", features.shape[1], percentile))


def dice_fit(features: np.ndarray, head_weight: np.ndarray, percentile: float) -> dict[str, np.ndarray]:
    """DICE's sparsified head ``{"weight": C×D}``: W where W ⊙ h̄ exceeds its ``percentile``-th
    percentile (in percent), 0 elsewhere; h̄ = the float64 mean of ``features`` (the training rows)."""
    weight = np.asarray(head_weight, dtype=np.float64)
    contribution = weight * column_mean(_features(features))
    threshold = np.percentile(contribution, _check_percentile(percentile))
    return {"weight": np.where(contribution > threshold, weight, 0.0)}


def dice_score(state: dict[str, np.ndarray], features: np.ndarray, head_bias: np.ndarray) -> np.ndarray:
    """DICE confidence ``LSE(W_masked h + b)``, shape (N,)."""
    return _head_energy(features, state["weight"], head_bias)
