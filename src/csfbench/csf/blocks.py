"""Row blocks, their execution on threads, and row normalisation shared by the CSF kernels.

Memory is bounded by the block, not N.  The block budget (:data:`MAX_BLOCK_ENTRIES`, :data:`MAX_BLOCK_ROWS`) is
the setting ``csf.block_mib``, applied by :func:`block_budget`.  A kernel reads its rows as ``x[rows]`` for the
slices of :func:`row_blocks` / :func:`map_row_blocks`, so ``x`` may be an array or a :class:`RowSource`, rows
read from a file block by block (:class:`csfbench.csf.inputs.FileRows`): the fit of a statistic that is a sum
over rows (means, covariances, Gram matrices, logit statistics, summed in float64) then never holds the N rows.
:func:`column_sum`, :func:`take_rows` and :func:`row_argmax` are such passes.

:func:`map_row_blocks` runs a per-block kernel on as many
threads as BLAS may use (``threadpoolctl`` limits apply, so a one-thread BLAS setting gives a
serial run): numpy's ufuncs, reductions and BLAS calls release the GIL, so row blocks of the
elementwise work that numpy would run on one core spread over all of them.  Kernels built on it
call BLAS/LAPACK only single-threaded (inside the blocks, or through :func:`single_threaded_blas`):
OpenBLAS's own threads keep spinning on their cores for a while after a multi-threaded call and
would slow the block threads down.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, contextmanager
from functools import cache

import numpy as np

#: at most this many rows per block ...
MAX_BLOCK_ROWS = 4096
#: ... and at most this many float64 entries in a block's widest temporary (128 MiB: ``csf.block_mib``'s
#: default; :func:`block_budget` sets both for a fit or a scoring run)
MAX_BLOCK_ENTRIES = 1 << 24
#: the block budget's default, MiB (:data:`MAX_BLOCK_ENTRIES` float64 entries)
DEFAULT_BLOCK_MIB = 128
#: threaded blocks: at least this many rows (the Python overhead per block stays small against its work) ...
MIN_THREAD_BLOCK_ROWS = 256
#: ... and, above that, this many blocks per thread, so that a thread slowed by other load leaves its
#: share to the others
BLOCKS_PER_THREAD = 4


class RowSource:
    """N rows (``shape`` = (N, ...)) that are read block by block, never whole: ``source[a:b]`` returns the rows
    a..b-1 as an array of ``dtype`` (a slice of step 1 only), ``storage_dtype`` is the dtype they are stored in.

    ``np.asarray(source)`` is a TypeError: a kernel that would read every row at once is refused rather than
    silently holding N rows.  Subclasses implement :meth:`read`."""

    shape: tuple[int, ...]
    dtype: np.dtype
    storage_dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def read(self, start: int, stop: int) -> np.ndarray:
        raise NotImplementedError

    def __getitem__(self, key) -> np.ndarray:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError(f"{self!r}: rows are read by slices of step 1 (row blocks), not by {key!r}")
        start, stop, _ = key.indices(len(self))
        return self.read(start, max(start, stop))

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"{self!r} is read in row blocks ({self.shape[0]} rows), not whole: this computation "
                        "is not bounded by the block budget (csf.block_mib)")


def is_row_source(x) -> bool:
    """Whether ``x`` is read in row blocks (:class:`RowSource`) rather than held in memory."""
    return isinstance(x, RowSource)


def rows_or_array(x, dtype=None):
    """``x`` itself when it is a :class:`RowSource`, else ``np.asarray(x, dtype)``."""
    return x if is_row_source(x) else np.asarray(x, dtype=dtype)


@contextmanager
def block_budget(mib: float | None = None, max_rows: int | None = None) -> Iterator[None]:
    """A context in which blocks hold at most ``mib`` MiB of float64 entries in their widest temporary
    (:data:`MAX_BLOCK_ENTRIES`, the setting ``csf.block_mib``) and at most ``max_rows`` rows
    (:data:`MAX_BLOCK_ROWS`); None keeps the current value.  Process-wide (the block threads read it too)."""
    global MAX_BLOCK_ENTRIES, MAX_BLOCK_ROWS
    if mib is not None and not mib > 0:
        raise ValueError(f"block budget must be > 0 MiB, got {mib}")
    if max_rows is not None and max_rows < 1:
        raise ValueError(f"block rows must be >= 1, got {max_rows}")
    saved = MAX_BLOCK_ENTRIES, MAX_BLOCK_ROWS
    if mib is not None:
        MAX_BLOCK_ENTRIES = max(1, int(mib * (1 << 20)) // 8)
    if max_rows is not None:
        MAX_BLOCK_ROWS = int(max_rows)
    try:
        yield
    finally:
        MAX_BLOCK_ENTRIES, MAX_BLOCK_ROWS = saved


def row_blocks(n_rows: int, row_width: int = 1) -> Iterator[slice]:
    """Consecutive slices covering ``range(n_rows)``, sized so that a block's ``rows × row_width``
    temporary stays within :data:`MAX_BLOCK_ENTRIES` (at least one row per block)."""
    size = max(1, min(MAX_BLOCK_ROWS, MAX_BLOCK_ENTRIES // max(row_width, 1)))
    for start in range(0, n_rows, size):
        yield slice(start, min(start + size, n_rows))


@cache
def _blas():
    """The BLAS libraries loaded in the process (threadpoolctl), looked up once."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def thread_count() -> int:
    """The number of threads BLAS may use now (at least 1): the threads :func:`map_row_blocks` uses."""
    return max([lib.num_threads for lib in _blas().lib_controllers] + [1])


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="csf-blocks")


def map_row_blocks(kernel: Callable[[slice], None], n_rows: int, row_width: int = 1,
                   block_rows: int | None = None) -> None:
    """Call ``kernel(rows)`` once for every slice of a cover of ``range(n_rows)``; the kernel stores
    its own results (e.g. into ``out[rows]`` of an array the caller allocated).

    ``block_rows`` (>= 1) fixes the slices to ``[0, block_rows), [block_rows, 2 block_rows), ...``
    whatever the thread count (for kernels whose rounding depends on the block bounds), taken by as
    many threads as described next; by default the slices are sized as follows.

    With T = the current BLAS thread count > 1 the slices are taken by T threads (the caller's among
    them) while BLAS is limited to one thread, so a kernel's matrix products run one per thread
    instead of competing for the same cores; blocks then hold at most ``MAX_BLOCK_ENTRIES / T``
    entries of ``row_width`` per row (the temporaries of all threads together stay in the
    :func:`row_blocks` budget), and at most ``n_rows / (BLOCKS_PER_THREAD · T)`` rows unless that
    is below :data:`MIN_THREAD_BLOCK_ROWS`.  With T = 1 the kernel runs on :func:`row_blocks`.
    Kernels of different blocks must not write to the same memory.
    """
    if block_rows is not None and block_rows < 1:
        raise ValueError(f"block_rows must be >= 1, got {block_rows}")
    threads = thread_count()
    if block_rows is None and (threads <= 1 or n_rows <= MIN_THREAD_BLOCK_ROWS):
        for rows in row_blocks(n_rows, row_width):
            kernel(rows)
        return
    if block_rows is None:
        block_rows = max(1, min(MAX_BLOCK_ROWS, MAX_BLOCK_ENTRIES // (max(row_width, 1) * threads),
                                max(MIN_THREAD_BLOCK_ROWS, -(-n_rows // (BLOCKS_PER_THREAD * threads)))))
    slices = [slice(start, min(start + block_rows, n_rows)) for start in range(0, n_rows, block_rows)]
    pending = iter(slices)

    def drain() -> None:
        # next() on a list iterator is atomic under the GIL, so every slice goes to exactly one thread
        for rows in pending:
            kernel(rows)

    with single_threaded_blas():
        helpers = [_pool().submit(drain) for _ in range(min(threads, len(slices)) - 1)]
        try:
            drain()
        finally:
            # a helper that has not started by now would find no slice left (or, after an error, must
            # not start): cancelled, it is not waited for; the others finish before BLAS threads are
            # restored, whatever happened
            for helper in helpers:
                helper.cancel()
            wait(helpers)
        for helper in helpers:
            if not helper.cancelled():
                helper.result()  # a helper's error propagates


def sum_row_blocks(term: Callable[[slice], np.ndarray], n_rows: int, row_width: int = 1,
                   block_rows: int | None = None) -> np.ndarray:
    """``sum over the blocks of term(rows)`` (float64 arrays of one shape; n_rows >= 1), for the
    blocks of :func:`map_row_blocks` (``block_rows`` as there), added in row order whatever the
    threads' timing, so the rounding is the same in every run with the same thread count, or in
    every run at all with fixed ``block_rows``."""
    pending: dict[int, tuple[int, np.ndarray]] = {}
    total: list = [0, None]  # start of the next block to add, running sum
    lock = threading.Lock()

    def block(rows: slice) -> None:
        part = term(rows)
        with lock:
            pending[rows.start] = (rows.stop, part)
            while total[0] in pending:  # blocks finished out of order wait here for their predecessors
                total[0], part = pending.pop(total[0])
                total[1] = part if total[1] is None else np.add(total[1], part, out=total[1])

    map_row_blocks(block, n_rows, row_width, block_rows)
    return total[1]


def single_threaded_blas() -> AbstractContextManager:
    """A context in which BLAS/LAPACK run on one thread (for the small factorisations of the kernels)."""
    return _blas().limit(limits=1)


def unit_rows(x: np.ndarray, dtype: type = np.float64, out: np.ndarray | None = None) -> np.ndarray:
    """Rows of ``x`` divided by their L2 norm (computed in float64), as ``dtype`` (float64 or
    float32); an all-zero row stays zero.

    float64: the float64 quotient, written to ``out`` (an N×D float64 array, possibly a view) when
    given.  Other inputs are widened into it first: numpy's mixed-precision ufuncs cast every entry
    and are slower.  float32: ``x`` (rounded to float32) times the float32 reciprocal of the
    norm, in float32 (two roundings of 2^-24 each; cheaper than a mixed-precision division)
    while every reciprocal is a normal float32; otherwise the float64 quotient, rounded.
    """
    x = np.asarray(x)
    if dtype == np.float32:
        norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))
        inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        nonzero, limits = inverse[norms > 0], np.finfo(np.float32)
        # a norm <= 1/tiny also bounds every entry inside the float32 range (float64 input is rounded)
        if np.all((nonzero >= limits.tiny) & (nonzero <= limits.max)):
            return np.multiply(x, inverse.astype(np.float32)[:, None], dtype=np.float32)
        return np.divide(x, norms[:, None], out=np.zeros(x.shape, np.float32), where=norms[:, None] > 0,
                         dtype=np.float64)
    out = np.empty(x.shape) if out is None else out
    if x.dtype != np.float64:
        np.copyto(out, x)
        x = out
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    return np.divide(x, np.maximum(norms, np.finfo(np.float64).tiny)[:, None], out=out)


def column_sum(x, dtype=np.float64) -> np.ndarray:
    """The float64 sum over the rows of ``x`` (N×D array or :class:`RowSource`, N >= 1), one pass over its
    row blocks added in row order (:func:`sum_row_blocks`)."""
    return sum_row_blocks(lambda rows: np.sum(x[rows], axis=0, dtype=dtype), len(x), x.shape[1])


def column_mean(x) -> np.ndarray:
    """The float64 mean of the rows of ``x`` (:func:`column_sum` / N)."""
    if not len(x):
        raise ValueError("mean of zero rows")
    return column_sum(x) / len(x)


def row_argmax(x) -> np.ndarray:
    """``argmax`` of every row of ``x`` (N×C array or :class:`RowSource`), int64 (N,), in row blocks."""
    out = np.empty(len(x), dtype=np.int64)

    def block(rows: slice) -> None:
        out[rows] = np.argmax(x[rows], axis=1)

    map_row_blocks(block, len(x), x.shape[1])
    return out


def take_rows(x, index: np.ndarray) -> np.ndarray:
    """``x[index]`` for an integer ``index`` (any order, repeats allowed): fancy indexing of an array, or one
    pass over the row blocks of a :class:`RowSource` (sequential reads, each block's wanted rows scattered to
    their places), whose memory is the result's plus one block."""
    index = np.asarray(index, dtype=np.int64)
    if not is_row_source(x):
        return np.asarray(x)[index]
    if len(index) and (index.min() < 0 or index.max() >= len(x)):
        raise IndexError(f"row index outside [0, {len(x)})")
    out = np.empty((len(index),) + tuple(x.shape[1:]), dtype=x.dtype)
    order = np.argsort(index, kind="stable")
    wanted = index[order]
    for rows in row_blocks(len(x), int(np.prod(x.shape[1:], dtype=np.int64))):
        lo, hi = np.searchsorted(wanted, [rows.start, rows.stop])
        if hi > lo:
            out[order[lo:hi]] = x[rows][wanted[lo:hi] - rows.start]
    return out
