"""Small inputs of the audit's checks, each built to trip one check (or to stay clean)."""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from csfbench.audit import AuditInputs, Thresholds
from csfbench.workflow.settings import load_config

from tests.helpers.repo import REPO

MODEL = "vgg13_dg_do1_rew2.2_run1"


@functools.cache
def micro_config() -> dict:
    """The validated micro config of the workflow tests (the schema's defaults filled in)."""
    return load_config(REPO / "tests/config/micro.yaml")


def thresholds(**override) -> Thresholds:
    """The schema's default thresholds (the micro config sets none), ``override`` replacing some."""
    return Thresholds.from_settings({**micro_config()["audit"], **override})


def result_row(dataset="near", scheme="correct_vs_ood", metric="auroc", value=0.7, ci=None, **extra) -> dict:
    """One results row of the ID test split's OOD comparison; ``ci``: (ci_low, ci_high, n_boot, ci_level)."""
    low, high, n_boot, level = ci if ci is not None else (np.nan, np.nan, np.nan, np.nan)
    row = {"source": "s1", "model": MODEL, "backbone": "vgg13", "paradigm": "dg", "dropout": 1, "reward": 2.2,
           "run": 1, "mcd": False, "csf": "MSR", "variant": "none", "dataset": dataset, "id_set": "test",
           "shift_type": "semantic", "scheme": scheme, "split": "test", "metric": metric, "value": value,
           "ci_low": low, "ci_high": high, "n_boot": n_boot, "ci_level": level}
    return {**row, **extra}


def results(*rows: dict) -> AuditInputs:
    return AuditInputs(results=pd.DataFrame(list(rows)))


def key(findings) -> list[tuple]:
    """The identifying fields of findings, in order: (check, severity, subject, value, threshold)."""
    return [(f.check, f.severity, f.subject, round(f.value, 9), round(f.threshold, 9)) for f in findings]
