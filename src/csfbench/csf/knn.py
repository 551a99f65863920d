"""KNN: distance to the k-th nearest L2-normalised training feature (Sun, Ming, Zhu & Li,
"Out-of-Distribution Detection with Deep Nearest Neighbors", ICML 2022, arXiv 2204.06507, §3).

Score: ``−‖ĥ − b_(k)‖₂`` with ĥ = h/‖h‖₂ and b_(k) the k-th nearest of the normalised training
features (the bank), a float64 array (N,) in [−2, 0], higher = more in-distribution.  The paper and
pytorch-ood use this Euclidean distance; OpenOOD (faiss ``IndexFlatL2``) and ImageNet-OOD (Yang, Zhang
& Russakovsky, ICLR 2024, arXiv 2310.01755) negate its square, which ranks identically.  An all-zero
feature stays the zero vector (at distance 1 from every unit vector), as in pytorch-ood.

Exact search, blocked: ‖q − b‖² = ‖q‖² − 2 (q·b − ‖b‖²/2), so the k nearest are the k largest
``q·b − ‖b‖²/2``; the bank stores [b, −‖b‖²/2] and each query block [q, 1], one matrix product gives
those values, an in-place :meth:`numpy.ndarray.partition` finds the k-th largest per row, and only
query blocks × the bank are ever held (row blocks on several threads,
:func:`csfbench.csf.blocks.map_row_blocks`, within its memory budget).  The product and the selection
run in float32, as in faiss and NNGuide (:mod:`csfbench.csf.nnguide`): a unit-vector similarity then
has an absolute error of about 1e-6, so a distance d carries about 1e-6/d; the square root and the
sign are float64.  This blocked numpy search measured faster than faiss-cpu's exact ``IndexFlatL2`` on
two cores (``benchmarks/posthoc_methods.py``, docs/benchmarks.md), so faiss is not a dependency.

Hyper-parameter grid: ICONIC-444 (Krumpl, Avenhaus & Possegger, arXiv 2601.10802) Table 7,
:data:`KNN_GRID`; ImageNet-OOD uses k = 500.
"""
from __future__ import annotations

import threading

import numpy as np

from csfbench.csf.blocks import map_row_blocks, unit_rows

KNN_GRID = {"k": (50, 100, 200, 500, 1000)}


def knn_fit(features: np.ndarray) -> dict[str, np.ndarray]:
    """The search bank ``{"bank": N_train×(D+1) float32}``: the unit training rows and −‖b‖²/2
    (−1/2, or 0 for an all-zero row) in the last column."""
    features = np.asarray(features)
    if features.ndim != 2 or not len(features):
        raise ValueError(f"expected non-empty N×D training features, got shape {features.shape}")
    bank = np.empty((len(features), features.shape[1] + 1), dtype=np.float32)

    def block(rows: slice) -> None:
        unit = unit_rows(features[rows], np.float32)
        bank[rows, :-1] = unit
        bank[rows, -1] = -0.5 * np.einsum("ij,ij->i", unit, unit, dtype=np.float64)

    map_row_blocks(block, len(features), features.shape[1])
    return {"bank": bank}


def knn_score(state: dict[str, np.ndarray], features: np.ndarray, k: int) -> np.ndarray:
    """KNN confidence ``−‖ĥ − b_(k)‖₂``, shape (N,); ``1 <= k <=`` the bank size."""
    bank_t = np.asarray(state["bank"], dtype=np.float32).T
    dim, n_bank = bank_t.shape[0] - 1, bank_t.shape[1]
    features = np.asarray(features)
    if features.ndim != 2 or features.shape[1] != dim:
        raise ValueError(f"expected N×{dim} features, got shape {features.shape}")
    if not 1 <= k <= n_bank:
        raise ValueError(f"KNN k must lie in [1, {n_bank}] (the bank size), got {k}")
    scores = np.empty(len(features))
    buffers = threading.local()  # one similarity block per thread, reused: fresh pages cost ~5 % of the time

    def block(rows: slice) -> None:
        n_rows = rows.stop - rows.start
        if getattr(buffers, "values", None) is None or len(buffers.values) < n_rows:
            buffers.values = np.empty((n_rows, n_bank), dtype=np.float32)
        query = np.ones((n_rows, dim + 1), dtype=np.float32)
        query[:, :-1] = unit_rows(features[rows], np.float32)
        square = np.einsum("ij,ij->i", query[:, :-1], query[:, :-1], dtype=np.float64)
        values = np.matmul(query, bank_t, out=buffers.values[:n_rows])
        values.partition(n_bank - k, axis=1)  # in place: np.partition would first copy the block
        square -= 2.0 * values[:, n_bank - k]
        scores[rows] = -np.sqrt(np.maximum(square, 0.0))

    # the block's widest temporary is float32: half the float64 entries the budget counts
    map_row_blocks(block, len(features), max(n_bank, dim + 1) // 2)
    return scores
