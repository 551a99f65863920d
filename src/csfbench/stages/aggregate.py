"""Job of ``rules/aggregate.smk``: the results table and the validation-selected configurations."""
from __future__ import annotations

import logging
from pathlib import Path

from csfbench.aggregate.results_table import write_results_table
from csfbench.aggregate.selection import select_configurations
from csfbench.atomic import atomic_path

log = logging.getLogger(__name__)


def aggregate_results(metric_files: list[str], out_table: str | Path, out_selection: str | Path,
                      regime_files: list[str] = ()) -> None:
    """Merge the metric rows into ``results.parquet`` (with the proximity stage's resolved regimes) and write
    the validation-selected configurations."""
    table = write_results_table(metric_files, out_table, regime_files)
    chosen = select_configurations(table)
    with atomic_path(out_selection) as tmp:
        chosen.to_csv(tmp, index=False)
    log.info("results table: %d rows from %d files; %d selected configurations", len(table), len(metric_files),
             len(chosen))
