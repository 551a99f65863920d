"""Jobs of ``rules/geometry.smk``: the neural-collapse record of one model and the NC table of a source."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from csfbench.atomic import atomic_path
from csfbench.geometry.nc_records import model_nc_records, nc_table, read_records
from csfbench.report.tables import write_table
from csfbench.specs import ModelSpec
from csfbench.workflow.paths import table_view


def write_model_nc(spec: ModelSpec, train_h5: str | Path, fit_files: Mapping[str, str | Path], out_csv: str | Path,
                   normalizer: str = "authors", variance: float | None = None) -> pd.DataFrame:
    """:func:`model_nc_records` written atomically to ``out_csv``."""
    records = model_nc_records(spec, train_h5, fit_files, normalizer, variance)
    with atomic_path(out_csv) as tmp:
        records.to_csv(tmp, index=False)
    return records


def write_nc_table(record_files: list[str | Path], out_csv: str | Path, out_tex: str | Path,
                   source: str) -> pd.DataFrame:
    """Aggregate the NC records of one source into its table (CSV, LaTeX with 4 decimals and the report's view)."""
    records = read_records(record_files)
    sources = sorted(set(records["source"]))
    if sources != [source]:
        raise ValueError(f"NC records of source(s) {sources} given for the table of {source!r}")
    table = nc_table(records)
    write_table(table, out_csv, out_tex, table_view(out_csv), f"Neural-collapse metrics of the training features "
                f"({source}); lower = more collapse.", float_format="%.4f")
    return table
