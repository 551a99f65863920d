"""ICONIC-444's logit-only methods at temperature 1 and ODIN without input perturbation, composed from
the kernels of :mod:`csfbench.csf.logit_scores`, with their hyper-parameter grids (ICONIC-444,
Krumpl, Avenhaus & Possegger, arXiv 2601.10802, Table 7).

* **MSP** (Hendrycks & Gimpel, "A Baseline for Detecting Misclassified and Out-of-Distribution Examples
  in Neural Networks", ICLR 2017, arXiv 1610.02136) = ``max_softmax(z)`` (``msr(softmax(z))`` to the
  precision of its float32 exponentials, :func:`~csfbench.csf.logit_scores._shifted_exp_sums`), and
  **EBO** (Liu, Wang, Owens & Li, "Energy-based Out-of-distribution Detection", NeurIPS 2020,
  arXiv 2010.03759) = ``energy(z)``, both at T = 1; no hyper-parameter.
* **ODIN** (Liang, Li & Srikant, "Enhancing The Reliability of Out-of-distribution Image Detection in
  Neural Networks", ICLR 2018, arXiv 1706.02690, §3) with input-perturbation magnitude ε = 0: the
  maximum softmax probability at temperature T, :func:`odin`, in [1/C, 1].  ICONIC-444's grid is
  T ∈ :data:`ODIN_GRID` × ε ∈ {0, 0.0007, 0.0014, 0.0028}; only ε = 0 can be computed from stored
  outputs (ε > 0 needs the input gradient, hence the network).
* **GEN** (Liu, Lochman & Zach, "GEN: Pushing the Limits of Softmax-Based Out-of-Distribution
  Detection", CVPR 2023) = ``gen(softmax(z), M, γ)`` on :data:`GEN_GRID`, whose M values above the
  number of classes C are dropped (:func:`gen_grid`).

Scores are float64 arrays (N,), higher = more in-distribution.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.logit_scores import max_softmax

ODIN_GRID = {"temperature": (1, 10, 100, 1000)}
GEN_GRID = {"gamma": (0.01, 0.1, 0.5, 1, 2, 5, 10), "m": (2, 4, 5, 10, 15, 20, 25, 50, 100, 200, 300)}


def gen_grid(n_classes: int) -> dict[str, tuple]:
    """ICONIC-444's GEN grid for a C-class model: every M <= C (M = 1..C is GEN's valid range)."""
    return {"gamma": GEN_GRID["gamma"], "m": tuple(m for m in GEN_GRID["m"] if m <= n_classes)}


def odin(logits: np.ndarray, temperature: float) -> np.ndarray:
    """ODIN confidence at ε = 0: ``max_c softmax(z / T)_c``, shape (N,)."""
    if temperature <= 0:
        raise ValueError(f"ODIN temperature must be > 0, got {temperature}")
    return max_softmax(logits, temperature)
