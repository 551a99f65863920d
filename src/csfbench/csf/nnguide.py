"""NNGuide, nearest-neighbour guided energy (Park et al., 2023; Claros-Olivares & Brockmeier, App. A.3.6).

Bank: per class, ``n_c = floor((N / C) · α)`` training rows drawn without replacement (capped at the
class size), each stored as ``b_i = h_i / ||h_i|| · LSE(z_i)``.  Score:
``LSE(z) · mean of the top-k of (h / ||h||) · b_i`` over the bank.  LSE is taken without temperature.
Both factors grow for in-distribution inputs (energy-like), so the product is returned as is.
α (the bank's sampling ratio) and k (the neighbour count) are separate hyper-parameters, as in Park et
al. and the authors' code; the paper's App. A.3.6 ties them as k = ⌊αN⌋.
Shapes: ``features`` N×D, ``logits`` N×C, bank M×D.

Precision: the similarities (an N×M product of unit vectors with the energy-scaled bank, the
dominant cost) and their top-k selection run in float32, pytorch-ood's precision, so the bank is
built in float64 and stored in float32; the top-k mean, the LSE (of float32 exponentials,
:func:`csfbench.csf.logit_scores.energy`) and the product are float64. A
similarity is a cosine (|·| <= 1) times a bank energy, so float32 gives a relative error of about
1e-7 per similarity, far below any difference that changes a ranking of real scores, and makes the
GEMM and the partition cheaper (docs/benchmarks.md).
"""
from __future__ import annotations

import numpy as np

from csfbench.csf import torch_kernels
from csfbench.csf.blocks import map_row_blocks, rows_or_array, take_rows, unit_rows
from csfbench.csf.device import to_host, torch_device
from csfbench.csf.distance_scores import check_labels
from csfbench.csf.logit_scores import energy
from csfbench.csf.neighbours import descending, searched

#: the authors' ``np.random.seed(12345)`` (github.com/cesar-claros/ood_systematic)
NNGUIDE_SEED = 12345


def nnguide_bank(features: np.ndarray, logits: np.ndarray, labels: np.ndarray, n_classes: int,
                 alpha: float, seed: int = NNGUIDE_SEED) -> np.ndarray:
    """The energy-scaled bank of unit training features, M×D float32 (rows grouped by class),
    computed in float64 and rounded once to the precision the similarities use (module docstring),
    so that scoring reads it without a conversion per call and ``fit.h5`` holds half the bytes.

    The draw is ``np.random.RandomState(seed).choice(indices_of_class_c, n_c, replace=False)`` for
    c = 0..C-1 in order, skipping classes without samples, which reproduces the authors' sequence of
    draws after ``np.random.seed(seed)``.  Raises ValueError when ``n_c`` rounds down to 0.
    """
    features = rows_or_array(features)  # an array or a row source (the bank's rows are read in one pass)
    labels = check_labels(labels, len(features), n_classes)
    per_class = int(len(labels) / n_classes * alpha)
    if per_class < 1:
        raise ValueError(f"NNGuide bank: floor(N/C * alpha) = floor({len(labels)}/{n_classes} * {alpha}) = 0")
    rng = np.random.RandomState(seed)
    chosen = []
    for k in range(n_classes):
        members = np.flatnonzero(labels == k)
        if len(members):
            chosen.append(rng.choice(members, size=min(per_class, len(members)), replace=False))
    index = np.concatenate(chosen)
    energies = energy(take_rows(rows_or_array(logits), index))  # LSE(z): the energy score at T = 1
    chosen_rows = take_rows(features, index)  # the M chosen rows, in their own dtype
    bank = np.empty((len(index), features.shape[1]), dtype=np.float32)

    def block(rows):  # float64 temporaries of one block only, rounded once into the bank
        np.multiply(unit_rows(chosen_rows[rows]), energies[rows, None], out=bank[rows], casting="same_kind")

    map_row_blocks(block, len(index), features.shape[1])
    return bank


def nnguide_score(features: np.ndarray, logits: np.ndarray, bank: np.ndarray, k: int) -> np.ndarray:
    """NNGuide confidence ``LSE(z) · mean(top-k_i (h/||h||) · b_i)``, shape (N,).

    ``k`` is capped at the bank size M; similarities are computed in row blocks (on several threads)
    of at most :data:`~csfbench.csf.blocks.MAX_BLOCK_ENTRIES` entries.  Inside
    :func:`csfbench.csf.neighbours.shared_search` the bank is searched once for the reach and every k reads
    its top-k mean from the kept cumulative sums.
    """
    features = np.asarray(features)
    if k < 1:
        raise ValueError(f"NNGuide k must be >= 1, got {k}")
    n_bank = len(bank)
    k = min(k, n_bank)
    sums = searched(bank, features, k, n_bank, lambda count, keep: _top_sums(features, bank, count, keep))
    guidance = sums[:, k - 1] / k if sums.shape[1] > 1 else sums[:, 0] / k
    return energy(logits) * guidance  # LSE(z): the energy score at T = 1


def _top_sums(features: np.ndarray, bank: np.ndarray, count: int, keep: bool) -> np.ndarray:
    """Sums of each query row's largest similarities to the bank, float64: the cumulative sums of the
    ``count`` largest in descending order (N × count) when ``keep``, else the sum of the ``count`` largest
    (N × 1).  On a torch device the similarities and their top ``count`` run there
    (:func:`csfbench.csf.torch_kernels.top_products`, each similarity within 1e-5 × the bank row's norm of
    numpy's) and the float64 sums too."""
    bank = np.asarray(bank, dtype=np.float32)
    sums = np.empty((len(features), count if keep else 1))
    if torch_device() is not None:  # the torch path (docs/methods.md §5.16)
        for rows, top in torch_kernels.top_products(bank, lambda rows: unit_rows(features[rows], np.float32),
                                                    len(features), count):
            top = top.double()
            sums[rows] = to_host(top.cumsum(dim=1) if keep else top.sum(dim=1, keepdim=True))
        return sums
    bank_t = bank.T
    n_bank = bank_t.shape[1]

    def block(rows):
        similarities = unit_rows(features[rows], np.float32) @ bank_t
        similarities.partition(n_bank - count, axis=1)  # in place: np.partition would first copy the block
        top = similarities[:, n_bank - count:]
        if keep:
            np.cumsum(descending(top), axis=1, dtype=np.float64, out=sums[rows])
        else:
            np.sum(top, axis=1, dtype=np.float64, out=sums[rows, 0])

    map_row_blocks(block, len(features), max(n_bank, features.shape[1]))
    return sums
