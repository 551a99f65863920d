"""KNN: distance to the k-th nearest L2-normalised training feature (Sun, Ming, Zhu & Li,
"Out-of-Distribution Detection with Deep Nearest Neighbors", ICML 2022, arXiv 2204.06507, §3).

Score: ``−‖ĥ − b_(k)‖₂`` with ĥ = h/‖h‖₂ and b_(k) the k-th nearest of the normalised training
features (the bank), a float64 array (N,) in [−2, 0], higher = more in-distribution.  The paper and
pytorch-ood use this Euclidean distance; OpenOOD (faiss ``IndexFlatL2``) and ImageNet-OOD (Yang, Zhang
& Russakovsky, ICLR 2024, arXiv 2310.01755) negate its square, which ranks identically.  An all-zero
feature stays the zero vector (at distance 1 from every unit vector), as in pytorch-ood.

Exact search, blocked: ‖q − b‖² = ‖q‖² − 2 (q·b − ‖b‖²/2), so the k nearest are the k largest
``q·b − ‖b‖²/2``; the bank stores [b, −‖b‖²/2] and each query block [q, 1], so one matrix product
gives those values.  The product and the selection run in float32, as in faiss and NNGuide
(:mod:`csfbench.csf.nnguide`): a unit-vector similarity then has an absolute error of about 1e-6, so a
distance d carries about 1e-6/d; the square root and the sign are float64.

Memory is bounded by blocks, never N_query × N_train at once: query blocks of at most
:data:`QUERY_BLOCK_ROWS` rows run on several threads (:func:`csfbench.csf.blocks.map_row_blocks`,
within its memory budget), and a large bank is searched in chunks of at least
:data:`BANK_CHUNK_ROWS` rows (and ``BANK_CHUNK_PER_K · k``), interleaved (chunk j holds bank rows
j, j + S, j + 2S, …, so a bank stored class by class gives every chunk a mix of classes).  The k-th
largest value is kept exactly across chunks by a threshold: an in-place partition of the first chunk
gives each query row its k largest values (the candidates) and their minimum τ, a lower bound of the
row's k-th largest over the whole bank; of every further chunk only the values ≥ τ are gathered
(one comparison and one ``flatnonzero`` per chunk), merged with the candidates by a partition of
these few, which raises τ.  Every value above the k-th largest is ≥ τ at any time, so the result is
that of a partition of the whole row.  A bank of fewer than two chunks is one partition per block.

Why this search (``benchmarks/posthoc_methods.py``, docs/benchmarks.md; 2 cores, ``--threads 2``):
against faiss-cpu 1.15.1's exact ``IndexFlatL2`` on 89,000 queries × 50,000 × 512, the plain blocked
search (query blocks of ~335 rows × the whole bank, then a partition of every row, 1.6 ns per value)
took 1.19× faiss's time.  On one thread and 2,500 queries, query blocks of ≤ 2,560 rows against bank
chunks run the float32 product ~18 % faster per flop (166–170 against 140–143 GFLOP/s: BLAS packs
each chunk once for more query rows), and the threshold takes 0.09–0.14 s where the partition took
0.21–0.24 s: 0.85–0.90 s in all against 1.12–1.14 s.  The ratio to faiss measured by the benchmark
is in docs/benchmarks.md; faiss-cpu stays a test/benchmark reference, not a dependency.

On a torch device (``csf.device``, :mod:`csfbench.csf.device`) the same exact search runs there: the bank
resident in its dtype, query blocks within the block budget, ``torch.topk`` per contiguous bank chunk merged
across chunks (:func:`csfbench.csf.torch_kernels.top_products`); each selected value within 1e-5 of the
numpy search's, a squared distance within 2e-5 (docs/methods.md §5.16).

Hyper-parameter grid: ICONIC-444 (Krumpl, Avenhaus & Possegger, arXiv 2601.10802) Table 7,
:data:`KNN_GRID`; ImageNet-OOD uses k = 500.
"""
from __future__ import annotations

import threading

import numpy as np

from csfbench.csf import blocks, torch_kernels
from csfbench.csf.blocks import map_row_blocks, rows_or_array, unit_rows
from csfbench.csf.device import to_host, torch_device
from csfbench.csf.neighbours import descending, searched

KNN_GRID = {"k": (50, 100, 200, 500, 1000)}

#: a bank is searched in chunks of at least this many rows ...
BANK_CHUNK_ROWS = 2048
#: ... and at least this many times k (the merges cost about k per query row and chunk)
BANK_CHUNK_PER_K = 16
#: query rows per block at most (fewer where the memory budget or the thread balance asks for it)
QUERY_BLOCK_ROWS = 2560


def bank_dtype(features) -> np.dtype:
    """The dtype a bank of ``features`` is held in: float16 for features stored in float16
    (``features.feature_dtype``; a row source's ``storage_dtype``), float32 otherwise."""
    stored = getattr(features, "storage_dtype", getattr(features, "dtype", None))
    return np.dtype(np.float16 if stored == np.float16 else np.float32)


def knn_fit(features: np.ndarray) -> dict[str, np.ndarray]:
    """The search bank ``{"bank": N_train×(D+1)}``: the unit training rows and −‖b‖²/2 (−1/2, or 0 for an
    all-zero row) in the last column, in float32, or in float16 for features stored in float16
    (:func:`bank_dtype`: the bank is the one copy of the training rows a fit holds, half the bytes; the
    search converts it to float32 one chunk at a time).  ``features``: an array or a row source."""
    features = rows_or_array(features)
    if features.ndim != 2 or not len(features):
        raise ValueError(f"expected non-empty N×D training features, got shape {features.shape}")
    bank = np.empty((len(features), features.shape[1] + 1), dtype=bank_dtype(features))

    def block(rows: slice) -> None:
        unit = unit_rows(features[rows], np.float32)
        bank[rows, :-1] = unit
        # the norm of the unit row as the bank holds it (rounded to float16 there)
        stored = bank[rows, :-1].astype(np.float32, copy=False)
        bank[rows, -1] = -0.5 * np.einsum("ij,ij->i", stored, stored, dtype=np.float64)

    map_row_blocks(block, len(features), features.shape[1])
    return {"bank": bank}


def knn_score(state: dict[str, np.ndarray], features: np.ndarray, k: int) -> np.ndarray:
    """KNN confidence ``−‖ĥ − b_(k)‖₂``, shape (N,); ``1 <= k <=`` the bank size.  Inside
    :func:`csfbench.csf.neighbours.shared_search` the bank is searched once for the reach and every k reads
    its column of the kept values."""
    n_bank, dim = state["bank"].shape[0], state["bank"].shape[1] - 1
    features = np.asarray(features)
    if features.ndim != 2 or features.shape[1] != dim:
        raise ValueError(f"expected N×{dim} features, got shape {features.shape}")
    if not 1 <= k <= n_bank:
        raise ValueError(f"KNN k must lie in [1, {n_bank}] (the bank size), got {k}")
    square, largest = searched(state["bank"], features, k, n_bank,
                               lambda count, keep: _search(state["bank"], features, count, keep))
    column = k - 1 if largest.shape[1] > 1 else 0
    return -np.sqrt(np.maximum(square - 2.0 * largest[:, column], 0.0))


def _search(bank: np.ndarray, features: np.ndarray, count: int, keep: bool) -> tuple[np.ndarray, np.ndarray]:
    """(‖ĥ‖² per query row, float64 (N,); its largest values of ``ĥ·b − ‖b‖²/2``, float32): the ``count``
    largest in descending order (N × count) when ``keep``, else the count-th largest alone (N × 1).

    On a torch device (:func:`csfbench.csf.device.compute_device`) the products and the selection run there
    (:func:`csfbench.csf.torch_kernels.top_products`): each value within 1e-5 absolute of this numpy search's."""
    bank = np.asarray(bank)
    if bank.dtype not in (np.float16, np.float32):
        bank = bank.astype(np.float32)
    n_bank, dim = bank.shape[0], bank.shape[1] - 1
    square = np.empty(len(features))
    largest = np.empty((len(features), count if keep else 1), dtype=np.float32)
    if torch_device() is not None:  # the torch path (docs/methods.md §5.16)
        for rows, top in torch_kernels.top_products(bank, lambda rows: _query(features, rows, square),
                                                    len(features), count):
            largest[rows] = to_host(top if keep else top[:, -1:])
        return square, largest
    n_chunks = max(1, n_bank // max(BANK_CHUNK_ROWS, BANK_CHUNK_PER_K * count))
    chunks = [bank[j::n_chunks] for j in range(n_chunks)]  # views; BLAS reads the strided rows as they are
    width = len(chunks[0])  # the widest chunk
    buffers = threading.local()  # one value block and one mask per thread, reused: fresh pages cost ~5 %

    def block(rows: slice) -> None:
        n_rows = rows.stop - rows.start
        if getattr(buffers, "values", None) is None or len(buffers.values) < n_rows * width:
            buffers.values = np.empty(n_rows * width, dtype=np.float32)
            buffers.mask = np.empty(n_rows * width, dtype=bool)
        if bank.dtype == np.float16 and getattr(buffers, "chunk", None) is None:
            buffers.chunk = np.empty((width, dim + 1), dtype=np.float32)  # a float16 chunk, widened
        query = _query(features, rows, square)
        candidates = _largest(query, chunks, count, buffers.values, buffers.mask, getattr(buffers, "chunk", None))
        largest[rows] = descending(candidates) if keep else candidates[:, :1]

    # the widest temporaries of a block: its float32 values and their bool mask, 5/8 of a float64 each
    map_row_blocks(block, len(features), block_rows=_block_rows(len(features), -(-5 * max(width, dim + 1) // 8)))
    return square, largest


def _query(features: np.ndarray, rows: slice, square: np.ndarray) -> np.ndarray:
    """The query block [ĥ, 1] of ``features[rows]`` (float32, n × (D + 1)); writes ‖ĥ‖² (float64) into
    ``square[rows]``."""
    query = np.ones((rows.stop - rows.start, features.shape[1] + 1), dtype=np.float32)
    query[:, :-1] = unit_rows(features[rows], np.float32)
    square[rows] = np.einsum("ij,ij->i", query[:, :-1], query[:, :-1], dtype=np.float64)
    return query


def _block_rows(n_rows: int, row_entries: int) -> int:
    """Query rows per block: at most :data:`QUERY_BLOCK_ROWS` and the memory budget of
    :mod:`csfbench.csf.blocks` (``row_entries`` float64 entries per row, on every thread), in a
    multiple of the thread count of equal blocks, so that no thread is left with the last one alone."""
    threads = blocks.thread_count()
    most = max(1, min(QUERY_BLOCK_ROWS, blocks.MAX_BLOCK_ENTRIES // (row_entries * threads)))
    per_thread = -(-max(n_rows, 1) // threads)
    return -(-per_thread // -(-per_thread // most))


def _largest(query: np.ndarray, chunks: list[np.ndarray], k: int, values: np.ndarray,
             mask: np.ndarray, widened: np.ndarray | None = None) -> np.ndarray:
    """The k largest of each row of ``query @ bank.T`` (float32, n × k, in no order but with the k-th
    largest in column 0), the bank given as its interleaved ``chunks`` (chunk 0 the widest, >= k rows);
    ``values``, ``mask``: flat scratch space of at least n × len(chunks[0]) entries; ``widened``: for a
    float16 bank, a float32 buffer of the widest chunk's shape, into which each chunk is converted."""
    def as32(chunk):
        if chunk.dtype == np.float32:
            return chunk
        out = widened[:len(chunk)]
        np.copyto(out, chunk)
        return out

    n_rows = len(query)
    first = np.matmul(query, as32(chunks[0]).T, out=values[:n_rows * len(chunks[0])].reshape(n_rows, -1))
    first.partition(first.shape[1] - k, axis=1)  # in place: np.partition would first copy the block
    candidates = first[:, -k:].copy()  # each row's k largest so far; column 0 the k-th largest
    threshold = candidates[:, 0].copy()
    for chunk in chunks[1:]:
        width = len(chunk)
        block = np.matmul(query, as32(chunk).T, out=values[:n_rows * width].reshape(n_rows, width))
        above = np.flatnonzero(np.greater_equal(block, threshold[:, None],
                                                out=mask[:n_rows * width].reshape(n_rows, width)))
        if len(above):
            _merge(candidates, threshold, above // width, values[above], k)
    return candidates


def _merge(candidates: np.ndarray, threshold: np.ndarray, rows: np.ndarray, new: np.ndarray, k: int) -> None:
    """Merge the values ``new`` of rows ``rows`` (ascending) into each row's k largest ``candidates``
    (n×k) and their minima ``threshold``, in place."""
    counts = np.bincount(rows, minlength=len(candidates))
    hit = np.flatnonzero(counts)
    width = k + int(counts.max())
    merged = np.empty((len(hit), width), dtype=np.float32)
    merged[:, :k] = candidates[hit]
    merged[:, k:] = -np.inf  # the padding of rows with fewer new values: never among a row's k largest
    slot = np.cumsum(counts > 0) - 1  # row -> its row in merged
    first_of_row = np.cumsum(counts) - counts
    merged.reshape(-1)[slot[rows] * width + k + np.arange(len(rows)) - first_of_row[rows]] = new
    merged.partition(width - k, axis=1)
    candidates[hit] = merged[:, width - k:]
    threshold[hit] = merged[:, width - k]
