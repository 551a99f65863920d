"""A small synthetic results table (the results table's metric rows, ``csfbench.evaluation.COLUMNS``) with
hand-checkable selections and ranks.

Test-split value of a row (a fraction, as stored): ``BASE[entity] * PARADIGM_FACTOR[paradigm]
+ 0.001 * run + 0.1 * (dataset index: test 0, near 1, far 2) + 0.05 * (dropout == 0)``, minus 0.005
for MC-dropout rows (dropout-1 models only). Validation (``val``/``misclf``): 0.1 for the preferred
dropout flag and 0.2 for the other, where Energy prefers dropout 0 and every other CSF dropout 1, so the
validation-based model selection picks dropout 0 for Energy and dropout 1 otherwise (MCD variants exist
for dropout 1 only).
"""
from __future__ import annotations

import pandas as pd

from csfbench.evaluation import COLUMNS

ENTITIES = {("GEN", "none"): 0.01, ("MSR", "none"): 0.02, ("MSR", "global"): 0.03, ("Energy", "none"): 0.04}
PARADIGM_FACTOR = {"confidnet": 1.0, "dg": 1.5}
OOD = {"test": ("id", "test", 0), "o_near": ("semantic", "near", 1), "o_far": ("semantic", "far", 2)}
RUNS = (1, 2)


def test_value(csf, projection, paradigm, run, dataset, dropout, mcd):
    value = ENTITIES[(csf, projection)] * PARADIGM_FACTOR[paradigm] + 0.001 * run + 0.1 * OOD[dataset][2]
    return value + 0.05 * (dropout == 0) - 0.005 * mcd


def synthetic_results(source="s1", backbone="vgg13", metrics=("augrc", "aurc")) -> pd.DataFrame:
    rows = []
    for (csf, projection) in ENTITIES:
        for paradigm in PARADIGM_FACTOR:
            for dropout in (0, 1):
                for run in RUNS:
                    for mcd in ((False, True) if dropout == 1 else (False,)):
                        base = {"source": source, "backbone": backbone, "paradigm": paradigm, "dropout": dropout,
                                "reward": 2.2, "run": run, "mcd": mcd, "csf": csf, "variant": projection}
                        preferred = 0 if csf == "Energy" else 1
                        for metric in metrics:
                            rows.append({**base, "dataset": "val", "shift_type": "id", "regime": "val",
                                         "scheme": "misclf", "split": "val", "metric": metric,
                                         "value": 0.1 if dropout == preferred else 0.2})
                            for dataset, (shift, regime, _) in OOD.items():
                                scheme = "misclf" if shift == "id" else "correct_vs_ood"
                                value = test_value(csf, projection, paradigm, run, dataset, dropout, mcd)
                                rows.append({**base, "dataset": dataset, "shift_type": shift, "regime": regime,
                                             "scheme": scheme, "split": "test", "metric": metric, "value": value})
                                if shift != "id":  # a scheme the ranking must ignore
                                    rows.append({**base, "dataset": dataset, "shift_type": shift, "regime": regime,
                                                 "scheme": "newclass", "split": "test", "metric": metric,
                                                 "value": 1.0 - value})
    return pd.DataFrame(rows, columns=COLUMNS)
