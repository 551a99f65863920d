"""The files of one report table as the stages write them: the CSV, its LaTeX twin beside it (``.tex``) and
the report's view (:func:`csfbench.workflow.paths.table_view`), through :func:`csfbench.report.tables.write_table`."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from csfbench.report.tables import write_table
from csfbench.workflow.paths import table_view


def write_report_table(frame: pd.DataFrame, csv_path: str | Path, caption: str, **options) -> None:
    """:func:`write_table` of ``frame`` to ``csv_path`` and its ``.tex`` and view paths; ``options``: write_table's."""
    write_table(frame, csv_path, Path(csv_path).with_suffix(".tex"), table_view(str(csv_path)), caption, **options)
