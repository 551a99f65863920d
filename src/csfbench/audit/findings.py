"""What a check of the self-audit reports (:class:`Finding`), the thresholds it reports at (:class:`Thresholds`),
and the audit table (:func:`findings_frame`)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Iterable, Mapping

import pandas as pd

#: how serious a finding is: ``warning`` = a result may be wrong or unusable as it stands, ``info`` = worth
#: knowing when reading the results (often expected), in the order the table lists them
SEVERITIES = ("warning", "info")
COLUMNS = ["check", "severity", "subject", "value", "threshold", "cause", "remedy"]


@dataclass(frozen=True)
class Finding:
    """One finding: the ``check`` that made it, its ``severity`` (:data:`SEVERITIES`), its ``subject`` (the
    model, CSF variant, evaluation set or ranking cell concerned), the measured ``value`` and the ``threshold``
    it was held against (numbers in the units the cause names; NaN where a check measures none), the ``cause``
    in plain words and the ``remedy``, what to change."""

    check: str
    severity: str
    subject: str
    value: float
    threshold: float
    cause: str
    remedy: str

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding of {self.check}: severity must be one of {SEVERITIES}, got {self.severity!r}")


@dataclass(frozen=True)
class Thresholds:
    """The thresholds of the checks: the config's ``audit`` section (each key's meaning, unit and default in
    config/schema.yaml).  AUROC, accuracy and interval widths are fractions; counts are counts."""

    auroc_floor: float
    edge_fraction: float
    max_neighbour_fraction: float
    min_mcd_passes: int
    max_interval_width: float
    min_blocks: int
    chance_factor: float
    equivalence_tolerance: float
    full_set_fraction: float

    @classmethod
    def from_settings(cls, section: Mapping) -> "Thresholds":
        """From the complete ``audit`` section of a validated config; ValueError naming missing or unknown keys."""
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in section]
        unknown = sorted(set(section) - set(names))
        if missing or unknown:
            raise ValueError(f"audit settings: missing {missing}, unknown {unknown}; pass the audit section of a "
                             "config validated by csfbench.workflow.settings.validate_config (it fills in the "
                             "schema's defaults)")
        kinds = {"int": int, "float": float}  # the annotations, as strings (postponed evaluation)
        return cls(**{f.name: kinds[f.type](section[f.name]) for f in fields(cls)})


def is_number(value) -> bool:
    """Whether ``value`` is a finite number (not None, NaN or NA)."""
    return value is not None and not pd.isna(value) and math.isfinite(float(value))


def sort_key(finding: Finding, order: Mapping[str, int]) -> tuple:
    """A total order of findings: the check's place in ``order``, then severity, subject, value and cause."""
    value = finding.value if is_number(finding.value) else math.inf
    return (order.get(finding.check, len(order)), SEVERITIES.index(finding.severity), finding.subject, value,
            finding.cause)


def findings_frame(findings: Iterable[Finding]) -> pd.DataFrame:
    """The audit table: one row per finding (:data:`COLUMNS`), in the order given; no row when none was found."""
    return pd.DataFrame([asdict(f) for f in findings], columns=COLUMNS).astype({"value": float, "threshold": float})
