"""Checks of the results rows: OOD AUROCs below chance (:func:`ood_auroc_below_floor`) and bootstrap intervals too
wide to rank on (:func:`wide_intervals`).

The rows are those of the results table (:data:`csfbench.evaluation.COLUMNS`, with ``model``); the interval
columns (:data:`csfbench.evaluation.BOOTSTRAP_COLUMNS`: the bootstrap interval of
:mod:`csfbench.metrics.bootstrap`, in the metric's units, at level ``ci_level`` from ``n_boot`` replicates) are
NaN, or absent, where none was computed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from csfbench.audit.findings import Finding, Thresholds, is_number
from csfbench.audit.records import AuditInputs
from csfbench.evaluation import with_interval_columns

#: the schemes whose AUROC separates an OOD set from the ID test split (ID = positive; 0.5 = chance)
OOD_SCHEMES = ("correct_vs_ood", "newclass")


def _ood_aurocs(frame: pd.DataFrame) -> pd.Series:
    """The test-split AUROC rows of the OOD schemes with the ID test split in the ID role."""
    id_test = frame["id_set"].isna() | (frame["id_set"] == "test")
    return (frame["split"] == "test") & frame["scheme"].isin(OOD_SCHEMES) & (frame["metric"] == "auroc") & id_test


def _with_interval(frame: pd.DataFrame) -> pd.Series:
    return np.isfinite(frame["ci_low"].astype(float)) & np.isfinite(frame["ci_high"].astype(float))


def results_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a results table that the checks of this module read (with the interval columns,
    :data:`csfbench.evaluation.BOOTSTRAP_COLUMNS`)."""
    table = with_interval_columns(table)
    return table[_ood_aurocs(table) | _with_interval(table)]


def _subject(row) -> str:
    mode = "mcd" if row.mcd else "det"
    return (f"{row.source}/{row.model} · {row.csf} [{row.variant}] · {mode} · {row.dataset} "
            f"({row.scheme}, {row.metric})")


def _interval(row) -> str:
    """``the 95 % bootstrap interval [0.412, 0.468] (1000 replicates)``, as far as the row records it."""
    level = f"{row.ci_level:.0%} " if is_number(row.ci_level) else ""
    replicates = f" ({int(row.n_boot)} bootstrap replicates)" if is_number(row.n_boot) else ""
    return f"the {level}bootstrap interval [{row.ci_low:.3f}, {row.ci_high:.3f}]{replicates}"


def ood_auroc_below_floor(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """OOD AUROCs (test split, :data:`OOD_SCHEMES`) whose interval lies wholly below ``auroc_floor``: its upper
    end ``ci_high`` below the floor, or the point value where the row has no interval.  Value: that upper end
    (or the point value), a fraction; threshold: the floor."""
    frame = with_interval_columns(inputs.results)
    floor = thresholds.auroc_floor
    findings = []
    for row in frame[_ood_aurocs(frame)].itertuples(index=False):
        bounded = is_number(row.ci_high) and is_number(row.ci_low)
        value = float(row.ci_high if bounded else row.value)
        if value >= floor:
            continue
        if bounded:
            measured = f"{_interval(row)} of the OOD AUROC (point value {row.value:.3f}) lies wholly below {floor:g}"
        else:
            measured = (f"the OOD AUROC is {row.value:.3f}, below {floor:g} (no interval: the row has no bootstrap "
                        "interval, so its point value is compared)")
        findings.append(Finding(
            "ood_auroc_below_floor", "warning", _subject(row), value, floor,
            f"{measured}: the detector gives this set's samples more confidence than the ID test samples, worse "
            "than a random score.",
            "Check that the CSF's confidence is oriented as csfbench expects (higher = more in-distribution) for "
            "this model, and whether this set is closer to the training data than its shift type and regime say; "
            "report a detector that is below chance on a set rather than ranking it as an ordinary loss."))
    return findings


def wide_intervals(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """Rows whose bootstrap interval is wider than ``max_interval_width`` (ci_high − ci_low, in the metric's
    stored units).  Value: the width; threshold: the maximum width."""
    frame = with_interval_columns(inputs.results)
    frame = frame[_with_interval(frame)]
    widest = thresholds.max_interval_width
    findings = []
    for row in frame.itertuples(index=False):
        width = float(row.ci_high - row.ci_low)
        if width <= widest:
            continue
        calibration = f", {int(row.n_cal)} calibration samples" if is_number(getattr(row, "n_cal", None)) else ""
        findings.append(Finding(
            "wide_interval", "warning", _subject(row), width, widest,
            f"{_interval(row)}{calibration} is {width:.3f} wide, more than {widest:g}: the value is too uncertain to "
            "tell this CSF apart from those ranked near it.",
            "Evaluate on a larger set (the width shrinks about as one over the square root of its size) or read the "
            "rankings that involve this row as unresolved; more bootstrap replicates (n_boot) make the interval's "
            "ends more precise, not the interval narrower."))
    return findings
