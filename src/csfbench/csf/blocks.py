"""Row blocks and row normalisation shared by the CSF kernels (memory bounded by the block, not N)."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: at most this many rows per block ...
MAX_BLOCK_ROWS = 4096
#: ... and at most this many float64 entries in a block's widest temporary (128 MiB)
MAX_BLOCK_ENTRIES = 1 << 24


def row_blocks(n_rows: int, row_width: int = 1) -> Iterator[slice]:
    """Consecutive slices covering ``range(n_rows)``, sized so that a block's ``rows × row_width``
    temporary stays within :data:`MAX_BLOCK_ENTRIES` (at least one row per block)."""
    size = max(1, min(MAX_BLOCK_ROWS, MAX_BLOCK_ENTRIES // max(row_width, 1)))
    for start in range(0, n_rows, size):
        yield slice(start, min(start + size, n_rows))


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` divided by their L2 norm (float64); an all-zero row stays zero."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, np.finfo(np.float64).tiny)
