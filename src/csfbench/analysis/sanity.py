"""The random-network sanity check (Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering Modern
Out-of-Distribution Detection Algorithms", ICLR 2024, §4.2, Fig. 4 and App. F, Fig. 11).

An untrained (randomly initialised) network has learned no semantics, so to it every input is
equally foreign: a CSF computed on it should not separate the ID set from any shifted set, and the
AUROC of ID (positive) against the shifted set should be about 0.5.  A value far from 0.5 means the
CSF reacts to low-level statistics of the inputs (the paper: blurred images scored as more OOD,
AUROC > 0.5; noise and renditions as more ID, AUROC < 0.5; ImageNet-OOD about 0.5).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from csfbench.analysis.distance import auroc_against


def random_network_check(id_scores: Mapping[str, np.ndarray],
                         shift_scores: Mapping[str, Mapping[str, np.ndarray]]) -> pd.DataFrame:
    """|AUROC − 0.5| per (CSF, shifted set) for one (random) network.

    ``id_scores[csf]``: the CSF's confidences (higher = more ID) on the ID set;
    ``shift_scores[set_name][csf]``: on each shifted set (every CSF of ``id_scores``).  Returns one
    row per (csf, shift_set) with ``auroc`` (ID positive, ties ½, the ``shiftdetect`` scheme),
    ``signed`` = auroc − 0.5 (> 0: the shifted set scored lower, i.e. flagged as OOD; < 0: scored
    as more ID than the ID set), ``deviation`` = |auroc − 0.5| in [0, 0.5] (0 = the sane value),
    ``n_id`` and ``n_shift``.  Several seeds or architectures: call once per network and concatenate.
    """
    rows = []
    for name, scores in shift_scores.items():
        missing = sorted(set(id_scores) - set(scores))
        if missing:
            raise ValueError(f"shifted set {name!r} lacks scores of CSF(s) {missing}")
        for csf, id_conf in id_scores.items():
            value = auroc_against(id_conf, scores[csf])
            rows.append({"csf": csf, "shift_set": name, "auroc": value, "signed": value - 0.5,
                         "deviation": abs(value - 0.5), "n_id": int(np.size(id_conf)),
                         "n_shift": int(np.size(scores[csf]))})
    return pd.DataFrame(rows, columns=["csf", "shift_set", "auroc", "signed", "deviation", "n_id", "n_shift"])
