"""Logit- and probability-based confidence scores (Claros-Olivares & Brockmeier, App. A.3.2–A.3.4) and MCD mutual
information.

Shapes: ``logits`` and ``probs`` are N×C (``probs`` rows sum to 1, e.g. ``softmax(logits, T)``);
MCD ``pass_probs`` are N×T×C.  Every score is a float64 array of shape (N,), oriented as a
**confidence**: higher = more in-distribution / more likely correct (the entropy-type
uncertainties and the energy are negated).  Inputs may be float32 or float64; the arithmetic is
float64, except the exponentials behind MSP and the energy: float32 terms, added up in float64 for MSP
(:func:`_shifted_exp_sums`) and, where the row allows it, in float32 without a shift for the energy
(:func:`_unshifted_log_sums`).
Scores are unitless except MLS and Energy, which are in logit units divided by / times T.

The row-wise kernels (softmax, MSP, PE, energy) run in row blocks on several threads
(:func:`csfbench.csf.blocks.map_row_blocks`), each block converted by its first ufunc (to float64,
or to float32 for MSP and the energy), so no N×C copy of the input is made; MSR and MLS take row
maxima with :func:`row_max`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from csfbench.csf.blocks import map_row_blocks

#: the ε inside the logarithms of PE, REN and PCE, as in the authors' code (machine epsilon of float64)
EPS = np.finfo(np.float64).eps


def _matrix(x: np.ndarray) -> np.ndarray:
    """``x`` as an N×C array of its own dtype (ValueError for any other rank)."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"expected an N×C array, got shape {x.shape}")
    return x


def as_rows(x: np.ndarray) -> np.ndarray:
    """``x`` as a float64 N×C array, e.g. logits (ValueError for any other rank)."""
    return _matrix(x).astype(np.float64, copy=False)


def _row_map(kernel: Callable[[np.ndarray, np.ndarray], None], x: np.ndarray, out_width: int | None) -> np.ndarray:
    """Apply ``kernel(x_block, out_block)`` over row blocks of ``x`` (reduced over its last axis: any
    leading shape is flattened into rows).  The float64 output has the leading shape of ``x``, plus
    a last axis of ``out_width`` when that is not None."""
    x = np.asarray(x)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"expected rows of C >= 1 classes, got shape {x.shape}")
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty((len(flat),) if out_width is None else (len(flat), out_width))
    map_row_blocks(lambda rows: kernel(flat[rows], out[rows]), len(flat), flat.shape[1])
    return out.reshape(x.shape[:-1] if out_width is None else x.shape[:-1] + (out_width,))


def row_max(x: np.ndarray) -> np.ndarray:
    """Row maxima ``max_k x_k`` of an N×C array (C >= 1) as float64 (N,); a NaN in a row gives NaN.

    One ``np.maximum.reduceat`` over the flat rows, on one thread: numpy reduces a short last axis
    (``np.max(x, axis=1)``) row by row through its general reduction machinery, which reduceat's
    segment loop beats even on one thread (reduceat holds the GIL, so it is not split into threaded
    blocks; docs/benchmarks.md).
    """
    x = _matrix(x)
    n_rows, width = x.shape
    if width < 1:
        raise ValueError(f"expected an N×C array with C >= 1 columns, got shape {x.shape}")
    out = np.empty(n_rows)
    if n_rows:
        np.maximum.reduceat(x.reshape(-1), np.arange(0, x.size, width), out=out)
    return out


#: terms whose shifted log is below this are set to 0 without taking the exponential: glibc's ``exp``
#: takes a slow path (about 4× the time) for results in and below float64's subnormal range (from
#: e^-708), which widely spread logits (ASH-S and SCALE scale whole rows) reach for most entries.  Such
#: a term is below e^-700 ≈ 1e-304 of its row's largest (which is 1), far below the rounding of any
#: sum, probability or score built from it.
LOG_FLOOR = -700.0
#: the same floor for float32 terms: numpy's float32 ``exp`` is up to 14× slower for results below
#: float32's normal range (from e^-87.3).  A term raised to e^-87 ≈ 1.6e-38 changes a sum of at least
#: 1 (the shift form) or 2^-60 (:data:`UNSHIFTED_SUM_MIN`) by at most C·1.6e-38 or C·1.9e-20 relative.
#: Shifted logits (or, unshifted, z/T) below the floor are raised to it.
LOG_FLOOR_FLOAT32 = -87.0


def _raise_to_float32_floor(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``x`` (float32) with its entries below :data:`LOG_FLOOR_FLOAT32` raised to it, written into
    ``out`` (which may be ``x``) only when the block has such entries; returns the array to read.
    ``fmin`` ignores NaN, so a block with a NaN row still gets the floor."""
    if x.size and np.fmin.reduce(x, axis=None) < LOG_FLOOR_FLOAT32:
        return np.maximum(x, LOG_FLOOR_FLOAT32, out=out)
    return x


def _shifted_exp(z: np.ndarray, temperature: float, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``exp(z / T - m_i)`` of a block into ``out`` (float64), with ``m_i`` the row's maximum of z/T;
    returns the shifts ``m`` (in units of z/T) and the row sums of ``out`` (>= 1), both (n,) float64.

    Every row's largest term is exactly 1, so no term overflows and no sum underflows whatever the
    spread between rows; the row maxima come from :func:`row_max` (one pass, cheaper than ``exp``).
    Terms below e^:data:`LOG_FLOOR` are set to 0 (only blocks that have such terms pay for the mask).
    The row sums are one BLAS matrix-vector product per block; numpy takes a one-row block's product
    as a dot product (BLAS ``ddot``), which can round a wide row's sum (e.g. C = 1000) one ulp
    differently (a per-row ``np.add.reduce`` would not, at 1.3–2× the cost of the product).
    Kernels that need only the row sums take :func:`_shifted_exp_sums`.
    """
    if temperature == 1.0:
        shifts = row_max(z)
        np.subtract(z, shifts[:, None], out=out, dtype=np.float64)
    else:
        np.multiply(z, 1.0 / temperature, out=out, dtype=np.float64)
        shifts = row_max(out)
        out -= shifts[:, None]
    if out.size and out.min() < LOG_FLOOR:
        np.putmask(out, out < LOG_FLOOR, -np.inf)  # exp(-inf) = 0 takes the fast path
    np.exp(out, out=out)
    sums = out @ np.ones(out.shape[1])  # BLAS gemv: row sums in one pass
    return shifts, sums


def _shifted_exp_sums(z: np.ndarray, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """The shifts and row sums of :func:`_shifted_exp` for a block of logits, both (n,) float64, from
    float32 terms (MSP and the energy need no more than the sums).

    The logits are rounded to float32, shifted by their row maximum and divided by T in float32, and
    exponentiated by numpy's float32 ``exp``, which is vectorised with AVX2 where its float64 ``exp``
    is a scalar loop without AVX-512 (about 1.5 against 6 ns per value on the 2-core AVX2 host of
    docs/benchmarks.md).  The sums are float64, so MSP resolves a confident row's 1 − MSP to
    float64's 1e-16 where a float32 sum would round MSP to 1 below 6e-8.

    Precision, with d = z/T − m a term's shifted logit: for float32 logits (what networks output and
    feature files store) a term's relative error is about 2^-24 (|d| + 3.5) at T = 1 and
    2^-24 (3|d| + 3.5) otherwise, at most 2.4e-6 and 7e-6 for the terms the float64 sum can see
    (d > −37).  Logits given as float64 are rounded to float32 first, which adds about
    2^-24 (|z/T| + |m|) to d's error: ≤ 1e-5 relative for logits within ±50 at T = 1, where the
    workflow's logits are float32 already.
    Shifted logits are floored at :data:`LOG_FLOOR_FLOAT32`.  A row whose float32 maximum is not
    finite (a NaN, +inf, all −inf, or a logit beyond float32's range) takes the float64 route on its
    own, so no row's score depends on the rows beside it (up to the one-row blocks of
    :func:`_shifted_exp`'s row sums).
    """
    terms = np.empty(z.shape, np.float32)
    # overflow: a logit beyond float32's range rounds to ±inf (its row's maximum is then not finite), a
    # spread beyond it to -inf (floored below)
    with np.errstate(over="ignore"):
        np.copyto(terms, z, casting="same_kind")
        maxima = terms.max(axis=1)  # numpy's reduction releases the GIL for the other block threads; reduceat does not
        wide = ~np.isfinite(maxima)
        any_wide = wide.any()
        if any_wide:
            terms[wide] = maxima[wide] = 0.0  # placeholders: these rows come from the float64 route below
        terms -= maxima[:, None]
        if temperature != 1.0:
            terms *= np.float32(1.0 / temperature)
    np.exp(_raise_to_float32_floor(terms, terms), out=terms)
    shifts = maxima.astype(np.float64) / temperature
    sums = terms @ np.ones(terms.shape[1])  # float64: BLAS gemv of the widened terms
    if any_wide:
        shifts[wide], sums[wide] = _shifted_exp(z[wide], temperature, np.empty((np.count_nonzero(wide), z.shape[1])))
    return shifts, sums


#: the one-pass log-sum (:func:`_unshifted_log_sums`) keeps a row whose float32 sum of unshifted terms
#: lies in [2^-60, float32's largest]: its largest term is then a normal float32 (above 2^-60 / C), and
#: the terms raised to e^:data:`LOG_FLOOR_FLOAT32` add at most C·1.6e-38 / 2^-60 = C·1.9e-20 to it.
UNSHIFTED_SUM_MIN = 2.0**-60


def _unshifted_log_sums(z: np.ndarray, temperature: float, out: np.ndarray) -> np.ndarray:
    """``log sum_k exp(z_k / T)`` of a block of logits into ``out`` (float64) for the rows where no
    shift is needed; returns those rows' mask (n,) bool.  The other rows of ``out`` are left as they are.

    The energy without its row maxima, which cost numpy as much as the ``exp`` of the whole row (it
    reduces a short last axis row by row): the terms ``exp(z/T)`` are taken as they are, in float32,
    into a new C-ordered array, and each row is added up by ``einsum`` in float32.  ``einsum`` adds a
    row the same way wherever it lies, so a row's result depends on that row alone, bit for bit,
    whatever the row blocks, the thread count or the input's memory layout (a BLAS matrix-vector
    product is 3× faster but rounds a row differently with the block and the layout).

    Kept are the rows whose sum is finite and at least :data:`UNSHIFTED_SUM_MIN`: every z_k/T below
    about 88 − log C and the largest above about −41.  There the log-sum's absolute error is at most
    about 2^-24 (max|z/T| + C + 2): z/T is rounded to float32 once (exactly at T = 1 for float32
    logits), float32's ``exp`` is within 1 ulp, and the sum adds at most C·2^-24 relative (much less
    in practice).  Rows with a NaN or an infinite logit, a logit beyond float32's range, or a level
    outside those bounds are not kept.
    """
    terms = np.empty(z.shape, np.float32)  # C-ordered, whatever the layout of z; z itself is only read
    x = terms  # z/T in float32
    # z/T, a term or a sum beyond float32's range becomes inf: a row that is not kept
    with np.errstate(over="ignore"):
        if temperature != 1.0:  # the product in float64, so that z/T is rounded once
            np.multiply(z, 1.0 / temperature, out=terms, dtype=np.float64, casting="same_kind")
        elif z.dtype != np.float32:
            np.copyto(terms, z, casting="same_kind")  # a third cheaper than the product by 1
        else:
            x = z
        np.exp(_raise_to_float32_floor(x, terms), out=terms)
        sums = np.einsum("ij->i", terms)
    done = np.isfinite(sums) & (sums >= UNSHIFTED_SUM_MIN)
    np.log(sums, out=out, where=done, dtype=np.float64)
    return done


def _top_m(probs: np.ndarray, m: int) -> np.ndarray:
    """The ``m`` largest probabilities of each row, N×m (unordered; 1 <= m <= C)."""
    probs = as_rows(probs)
    n_classes = probs.shape[1]
    if not 1 <= m <= n_classes:
        raise ValueError(f"M must be an integer in [1, {n_classes}], got {m}")
    return np.partition(probs, n_classes - m, axis=1)[:, n_classes - m:]


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Numerically stable ``softmax(logits / temperature)`` over the last (class) axis.

    N×C → N×C probabilities; an N×T×C stack of dropout passes gives per-pass probabilities.
    """
    def block(z, probs):
        _, total = _shifted_exp(z, temperature, probs)
        probs *= np.reciprocal(total, out=total)[:, None]  # one division per row, not per entry

    return _row_map(block, logits, np.shape(logits)[-1])


def max_softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """``max_k softmax(z / T)_k`` of N×C logits, (N,) in [1/C, 1]: the reciprocal of the row sum of
    the shifted exponentials (the largest is exactly 1), without normalising every entry.  The terms
    are float32, summed in float64 (:func:`_shifted_exp_sums`): equal to ``msr(softmax(z, T))``
    within their error (about 1e-6 relative), with 1 − MSP resolved to float64's 1e-16."""
    def block(z, out):
        _, sums = _shifted_exp_sums(z, temperature)
        np.reciprocal(sums, out=out)

    return _row_map(block, _matrix(logits), None)


def msr(probs: np.ndarray) -> np.ndarray:
    """Maximum softmax response ``max_k p_k`` (Hendrycks & Gimpel, 2016), in [1/C, 1]."""
    return row_max(probs)


def mls(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Maximum logit score ``max_k z_k / T`` (Hendrycks et al., 2019)."""
    out = row_max(logits)
    out /= temperature
    return out


def pe(probs: np.ndarray) -> np.ndarray:
    """Negative predictive entropy ``sum_k p_k log(p_k + eps)`` (Ovadia et al., 2019), in nats, <= 0.

    Reduces over the last axis, so an N×T×C stack gives the N×T per-pass values.
    """
    def block(p, out):
        terms = np.add(p, EPS, dtype=np.float64)
        np.log(terms, out=terms)
        np.einsum("ij,ij->i", p, terms, out=out)

    return _row_map(block, probs, None)


def gen(probs: np.ndarray, m: int, gamma: float) -> np.ndarray:
    """Negative generalized entropy ``-sum_{j<=M} (p_(j) (1 - p_(j)))^gamma`` over the M largest p
    (Liu et al., 2023)."""
    if gamma <= 0:
        raise ValueError(f"GEN gamma must be > 0, got {gamma}")
    top = _top_m(probs, m)
    return -np.sum((top * (1.0 - top)) ** gamma, axis=1)


def ren(probs: np.ndarray, m: int, gamma: float) -> np.ndarray:
    """Negative truncated Rényi entropy, the authors' code form: ``-gamma/(1-gamma) log(||p_(1:M)||_gamma + eps)``.

    ``||x||_gamma = (sum x^gamma)^(1/gamma)``; the log of (norm + eps) is evaluated in log space
    (``logaddexp``) because the norm itself overflows float64 for small gamma.  gamma in (0, 1).
    """
    if not 0 < gamma < 1:
        raise ValueError(f"REN gamma must lie in (0, 1), got {gamma}")
    top = _top_m(probs, m)
    log_norm = np.log(np.sum(top**gamma, axis=1)) / gamma
    return -gamma / (1.0 - gamma) * np.logaddexp(log_norm, np.log(EPS))


def ge(probs: np.ndarray) -> np.ndarray:
    """Negative guessing entropy ``-sum_k k p_(k)``, p sorted descending, k = 1..C (Massey, 1994), in [-(C+1)/2, -1]."""
    probs = -np.sort(-as_rows(probs), axis=1)
    return -(probs @ np.arange(1, probs.shape[1] + 1, dtype=np.float64))


def pce(probs: np.ndarray) -> np.ndarray:
    """Negative collision entropy ``log(sum_k p_k^2 + eps)`` (Granese et al., 2021), in nats, <= 0."""
    probs = as_rows(probs)
    return np.log(np.sum(probs**2, axis=1) + EPS)


def energy(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Negative energy ``T * logsumexp(z / T)`` (Liu et al., 2020; the paper's App. A.3.2 defines
    Energy as −T·LSE, higher = more uncertain), in logit units; ±inf for a row whose largest logit is
    ±inf, NaN for a row with a NaN.

    One pass where the row allows it (:func:`_unshifted_log_sums`: float32 terms and sums, absolute
    error at most about T·2^-24·(max|z/T| + C + 2)); the other rows take the shift form
    ``m + T log S`` with S the float64 sum of float32 terms (:func:`_shifted_exp_sums`).  Either
    way a row's score depends on that row alone, bit for bit (the shift form up to the one-row
    blocks of :func:`_shifted_exp`'s row sums).
    """
    def block(z, out):
        done = _unshifted_log_sums(z, temperature, out)
        if not done.all():
            rest = ~done
            with np.errstate(invalid="ignore"):  # an infinite maximum: inf − inf in the shift form
                shifts, sums = _shifted_exp_sums(z[rest], temperature)
            values = np.log(sums) + shifts
            np.copyto(values, shifts, where=np.isinf(shifts))  # LSE = m when m = ±inf
            out[rest] = values
        out *= temperature

    return _row_map(block, _matrix(logits), None)


def mutual_information(pass_probs: np.ndarray) -> np.ndarray:
    """Negative MCD mutual information (confidence), from N×T×C per-pass softmax probabilities.

    ``MI = H(mean_t p_t) - mean_t H(p_t)`` (nats, >= 0 up to the eps of :func:`pe`); returns ``-MI``.
    The passes are visited one at a time, so float64 temporaries stay N×C.
    """
    pass_probs = np.asarray(pass_probs)
    if pass_probs.ndim != 3:
        raise ValueError(f"expected N×T×C pass probabilities, got shape {pass_probs.shape}")
    n_passes = pass_probs.shape[1]
    mean_pass_pe = sum(pe(pass_probs[:, t]) for t in range(n_passes)) / n_passes
    return pe(pass_probs.mean(axis=1, dtype=np.float64)) - mean_pass_pe
