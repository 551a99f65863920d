"""Job of ``rules/reproduction.smk``: the run's reproduction certificate (:func:`csfbench.reproduction.certify`)."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from csfbench.reproduction import RunResults, certify, verdict_counts
from csfbench.stages.report_tables import write_report_table

log = logging.getLogger(__name__)


def read_run(results_table: str | Path, ranking: dict, nc_tables: Mapping[str, str | Path]) -> RunResults:
    """A finished run's results for the data targets: its results table, its ``ranking`` section and its
    neural-collapse tables ({source: CSV})."""
    return RunResults(pd.read_parquet(results_table), ranking,
                      {source: pd.read_csv(path) for source, path in nc_tables.items()})


def write_certificate(results_table: str | Path, ranking: dict, nc_tables: Mapping[str, str | Path],
                      out_csv: str | Path) -> pd.DataFrame:
    """Recompute every target on the run's results (:func:`read_run`) and write the certificate and its report
    view; log the count of each verdict."""
    certificate = certify(read_run(results_table, ranking, nc_tables))
    write_report_table(certificate, out_csv, "Reproduction certificate: every published value csfbench recomputes, "
                       "from the paper's published inputs or from this run, with its tolerance and verdict")
    for verdict, count in verdict_counts(certificate).items():
        log.info("%d target(s) %s", count, verdict)
    return certificate
