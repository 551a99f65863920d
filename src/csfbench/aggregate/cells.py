"""The ranking analysis's cells and settings, without its statistics: which cells (metric group × backbone ×
MCD flag × source × regime) a config declares, their files, and the check of the ``ranking`` section.  It
imports no statistics (scipy), because the workflow layer asks it while the DAG is built;
:mod:`csfbench.aggregate.ranking` ranks the cells' rows."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from csfbench.evaluation import base_metric

#: the cell regimes: the ID test set, the semantic regimes (``semantic``: a semantic set with neither a
#: configured nor a computed near/mid/far regime), the covariate and the adversarial sets
REGIMES = ("test", "near", "mid", "far", "semantic", "covariate", "adversarial")
SETTINGS = ("alpha", "p_adjust", "omnibus_gate", "incomplete", "blocks", "metric_groups", "schemes", "stability")
SHIFT_TYPE = {"test": "id", "near": "semantic", "mid": "semantic", "far": "semantic", "semantic": "semantic",
              "covariate": "covariate", "adversarial": "adversarial"}


@dataclass(frozen=True)
class Analysis:
    """One ranking cell; ``name`` is its file stem relative to the rankings folder."""

    group: str
    backbone: str
    mcd: bool
    source: str
    regime: str

    @property
    def name(self) -> str:
        return f"{self.group}/{self.backbone}_{'mcd' if self.mcd else 'det'}_{self.source}_{self.regime}"


def cell_regimes(rows: pd.DataFrame) -> np.ndarray:
    """The cell regime of each metric row: its dataset for the ID sets (``test``), its ``regime`` for a
    semantic set, its shift type otherwise."""
    regime = rows["regime"].astype(str).where(rows["shift_type"] == "semantic", rows["shift_type"].astype(str))
    return regime.where(rows["shift_type"] != "id", rows["dataset"].astype(str)).to_numpy()


def ranking_settings(section: dict) -> dict[str, Any]:
    """The config's complete ``ranking`` section, as :func:`csfbench.workflow.settings.validate_config` checks
    and completes it from ``config/schema.yaml`` (known block columns, one orientation and one kind of metric
    per group, a scheme for every shift type); ValueError when a setting is missing (an unvalidated section)."""
    missing = [key for key in SETTINGS if key not in (section or {})]
    if missing:
        raise ValueError(f"ranking: missing setting(s) {missing}; pass the ranking section of a config "
                         "validated by csfbench.workflow.settings.validate_config (it fills in the schema's defaults)")
    return dict(section)


def analyses(config: dict) -> list[Analysis]:
    """Every analysis of a workflow config: groups × backbones × MCD flags × sources × :data:`REGIMES`.

    The MCD flag is declared for a backbone that has dropout models and MC-dropout passes; a backbone's
    ``sources``, when given, are the only sources it has cells for.
    """
    settings = ranking_settings(config["ranking"])
    out = []
    for group in settings["metric_groups"]:
        for backbone, spec in config["backbones"].items():
            flags = [False] + ([True] if 1 in spec["dropout"] and spec.get("mcd_samples", 0) > 0 else [])
            sources = [s for s in config["sources"] if spec.get("sources") is None or s in spec["sources"]]
            for mcd in flags:
                out.extend(Analysis(group, backbone, mcd, source, regime) for source in sources for regime in REGIMES)
    return out


def output_paths(out_dir: str | Path, cells: Iterable[Analysis]) -> dict[str, list[str]]:
    """The JSON and CSV file of every analysis under ``out_dir`` (the rule declares exactly these)."""
    cells = list(cells)
    return {ext: [f"{out_dir}/{a.name}.{ext}" for a in cells] for ext in ("json", "csv")}


def is_conformal(metric: str) -> bool:
    return base_metric(metric) != metric
