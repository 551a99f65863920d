"""The torch path of the blocked CSF kernels, on the device of :func:`csfbench.csf.device.compute_device`
(docs/methods.md §5.16).  The numpy kernels dispatch here when a torch device is active; torch itself is
reached only through :mod:`csfbench.csf.device` (imported when a device is made active).

Blocks are :func:`csfbench.csf.blocks.row_blocks` of the block budget (``csf.block_mib``), run one after the
other on the device (no host threads); rows are read on the host (an array or a
:class:`~csfbench.csf.blocks.RowSource`) and sent block by block in their own dtype, fitted arrays once
(:func:`~csfbench.csf.device.resident`).  Sums over blocks are float64 on the device, added in row order.

Tolerances against the numpy kernels (tested on torch's CPU device, and on CUDA where one is visible):

- :func:`top_products` (KNN, NNGuide): float32 products as in numpy, in another summation order: each value
  within 1e-5 absolute of numpy's for unit-norm queries against unit-norm (KNN) or energy-scaled (NNGuide,
  relative to the bank row's norm) bank rows; a KNN squared distance therefore within 2e-5, a distance d
  within about 1e-5/d.
- :func:`grouped_sums`, :func:`scatter`, :func:`maha_scores`: float64, within 1e-9 relative to the magnitude
  of the terms summed (the numpy scatter of ViM and NeCo is float32 about block centres:
  :func:`csfbench.csf.subspace_scores.scatter_about`: within 1e-5 of its largest diagonal entry).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from csfbench.csf import blocks
from csfbench.csf.device import resident, to_device, to_host, torch_device, torch_module


def top_products(bank: np.ndarray, queries: Callable[[slice], np.ndarray], n_rows: int,
                 count: int) -> Iterator[tuple[slice, object]]:
    """For consecutive query blocks ``rows`` covering ``range(n_rows)``: (rows, the ``count`` largest values of
    each row of ``queries(rows) @ bank.T`` in descending order, an n × count float32 tensor on the device).

    ``bank`` (M × W, float16 or float32, M >= count) is resident on the device in its own dtype and multiplied
    in contiguous chunks of at least ``count`` rows, each widened to float32 (the products are float32, as in
    the numpy kernels); ``queries(rows)`` is the float32 n × W query block.  Each chunk's ``torch.topk`` is
    merged with the running top ``count`` by another ``topk`` of the two, so the device holds one chunk's
    products (n × chunk float32, within :data:`~csfbench.csf.blocks.MAX_BLOCK_ENTRIES` entries) and one widened
    chunk (likewise) at a time besides the bank: about the block budget ``csf.block_mib``.
    """
    torch = torch_module()
    stored = resident(bank)
    n_bank, width = stored.shape
    chunk = max(count, min(n_bank, blocks.MAX_BLOCK_ENTRIES // width))
    for rows in blocks.row_blocks(n_rows, chunk):
        query = to_device(queries(rows))
        top = None
        for start in range(0, n_bank, chunk):
            part = stored[start:start + chunk]
            best = torch.topk(query @ part.to(torch.float32).T, min(count, len(part)), dim=1, sorted=False).values
            top = best if top is None else torch.topk(torch.cat((top, best), dim=1), count, dim=1,
                                                      sorted=False).values
        yield rows, torch.sort(top, dim=1, descending=True).values


def grouped_sums(features, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """:func:`csfbench.csf.distance_scores.grouped_sums` on the device: per group the float64 sum of its rows
    of ``features`` (N×D) and their count, ``n_groups × (D + 1)``.  A block's sums are the product of its
    one-hot group matrix (n_groups × rows, float64) with its rows, deterministic (no atomic adds), added in
    row order; the counts are counted on the host."""
    torch = torch_module()
    groups = np.asarray(groups, dtype=np.int64)
    totals = torch.zeros((n_groups, features.shape[1]), dtype=torch.float64, device=torch_device())
    for rows in blocks.row_blocks(len(groups), max(features.shape[1], n_groups)):
        x = to_device(features[rows]).to(torch.float64)
        one_hot = torch.zeros((n_groups, len(x)), dtype=torch.float64, device=torch_device())
        one_hot[to_device(groups[rows]), torch.arange(len(x), device=torch_device())] = 1.0
        totals += one_hot @ x
    return np.column_stack((to_host(totals), np.bincount(groups, minlength=n_groups)))


def scatter(features, centres: np.ndarray, index: np.ndarray | None = None) -> np.ndarray:
    """Σ_i (h_i − c_i)(h_i − c_i)ᵀ over the rows h_i of ``features`` (N×D, array or row source), c_i =
    ``centres[index[i]]`` (``centres`` K×D; without ``index``, ``centres[0]`` for every row): D×D float64,
    exactly symmetric.  The centred block and its product are float64 on the device, added in row order."""
    torch = torch_module()
    centres = to_device(np.asarray(centres, dtype=np.float64))
    total = torch.zeros((features.shape[1],) * 2, dtype=torch.float64, device=torch_device())
    for rows in blocks.row_blocks(len(features), features.shape[1]):
        centred = to_device(features[rows]).to(torch.float64)
        centred -= centres[0] if index is None else centres[to_device(np.asarray(index[rows], dtype=np.int64))]
        total += centred.T @ centred
    return to_host((total + total.T) / 2)


def maha_scores(features: np.ndarray, means: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """:func:`csfbench.csf.distance_scores.maha_score` on the device: ``max_k −(h − μ_k)ᵀ P (h − μ_k)`` per row
    of ``features`` (N×D), float64 (N,), <= 0, higher = more in-distribution; evaluated as there,
    ``−hᵀPh + max_k (2 hᵀPμ_k − μ_kᵀPμ_k)``, in float64 row blocks; ``means`` (C×D) and ``precision`` (D×D)
    float64, resident."""
    torch = torch_module()
    means, precision = resident(means), resident(precision)
    means_p = means @ precision
    means_quad = torch.sum(means_p * means, dim=1)
    scores = np.empty(len(features))
    for rows in blocks.row_blocks(len(features), max(features.shape[1], len(means))):
        h = to_device(features[rows]).to(torch.float64)
        h_quad = torch.sum((h @ precision) * h, dim=1)
        scores[rows] = to_host(torch.max(2.0 * (h @ means_p.T) - means_quad, dim=1).values - h_quad)
    return scores
