"""Conover's all-pairs post-hoc test for unreplicated blocks, t-distribution form (Conover, 1999;
the test of Claros-Olivares & Brockmeier, App. C).

With rank sums R_j, A₁ = Σ r_ij², S² = (A₁ − kN(k+1)²/4)/(k−1), T₂ = Σ_j (R_j − N(k+1)/2)²/S²,
A = S²·2N(k−1)/((N−1)(k−1)), B = 1 − T₂/(N(k−1)):
t_ij = |R_i − R_j| / √(A·B) and p_ij = 2·P[t_{(N−1)(k−1)} > t_ij].
This is exactly ``scikit_posthocs.posthoc_conover_friedman``, which is what we call (a test checks it
against the formula). Orientation as everywhere in :mod:`csfbench.stats`: lower value = better.

Multiplicity (``p_adjust``): ``"none"`` (the **default**) returns the unadjusted p-values; it is what
Claros-Olivares & Brockmeier's code ran and the only mode that reproduces its published cliques (Figure 2, Table 6).
``"holm"`` applies Holm's step-down correction over the k(k−1)/2 pairs, which is what the paper's
text says it did.  (The standard error printed in the paper's App. C is Nemenyi's; with it the
published cliques do not come out either.)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

P_ADJUST_METHODS = ("none", "holm")
DEFAULT_P_ADJUST = "none"


def conover_friedman(values: np.ndarray, entities: Sequence[str], p_adjust: str = DEFAULT_P_ADJUST,
                     higher_is_better: bool = False) -> pd.DataFrame:
    """Symmetric entity × entity matrix of Conover p-values (diagonal 1) for a blocks × entities matrix.

    Degenerate cases, where A·B = 0 (every block ranks the entities identically, or ties them all) and
    the formula divides by zero: a pair with equal rank sums gets p = 1 (t = 0), any other pair p = 0.
    """
    if p_adjust not in P_ADJUST_METHODS:
        raise ValueError(f"p_adjust must be one of {P_ADJUST_METHODS}, got {p_adjust!r}")
    values = np.asarray(values, dtype=float)
    entities = list(entities)
    if values.ndim != 2 or values.shape[1] != len(entities):
        raise ValueError(f"expected a blocks × {len(entities)} matrix, got shape {values.shape}")
    import scikit_posthocs as sp  # imported here: it pulls in matplotlib and seaborn

    oriented = -values if higher_is_better else values
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = sp.posthoc_conover_friedman(oriented, p_adjust=None if p_adjust == "none" else p_adjust)
    pvalues = raw.to_numpy(dtype=float, copy=True)
    ranks = pd.DataFrame(oriented).rank(axis=1, method="average").to_numpy()
    rank_sums = ranks.sum(axis=0)
    equal = np.isclose(rank_sums[:, None], rank_sums[None, :], rtol=0.0, atol=1e-9)
    undefined = ~np.isfinite(pvalues)
    pvalues[undefined & equal] = 1.0
    pvalues[undefined & ~equal] = 0.0
    np.fill_diagonal(pvalues, 1.0)
    return pd.DataFrame(pvalues, index=entities, columns=entities)
