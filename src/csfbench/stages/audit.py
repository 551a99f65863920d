"""Job of ``rules/audit.smk``: the self-audit of a run (:mod:`csfbench.audit`) into ``tables/audit.csv``, its
LaTeX twin and its report view."""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from csfbench.aggregate.cells import ranking_settings
from csfbench.aggregate.ranking import selected_ranked_rows
from csfbench.audit import AuditInputs, Thresholds, findings_frame, run_checks
from csfbench.audit.readers import read_accuracy, read_cells, read_csf_fit, read_network_fit
from csfbench.audit.result_checks import results_rows
from csfbench.stages.report_tables import write_report_table
from csfbench.workflow.ids import model_name

log = logging.getLogger(__name__)

#: the columns of a results or prediction-set row that name its model (:func:`csfbench.workflow.ids.model_name`;
#: ``members``, an ensemble's member runs, only in results rows)
MODEL_KEYS = ["backbone", "paradigm", "dropout", "reward", "run"]
CAPTION = "Self-audit of the run: every finding, its cause and what to change"
EMPTY = "Nothing was found: every check of the self-audit passed (docs/methods.md, Self-audit)."


def with_models(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (rows with :data:`MODEL_KEYS`, and ``members`` where it has it) with a ``model`` column, the model
    or ensemble id of each row."""
    if frame.empty:
        return frame.assign(model=pd.Series(dtype=str))
    columns = MODEL_KEYS + (["members"] if "members" in frame.columns else [])
    keys = frame[columns].drop_duplicates()
    names = [model_name(str(b), str(p), d, r, run, members[0] if members else None)
             for b, p, d, r, run, *members in keys.itertuples(index=False)]
    return frame.merge(keys.assign(model=names), on=columns, how="left", validate="many_to_one")


def _prediction_sets(paths: Iterable[str | Path]) -> pd.DataFrame:
    frames = [pd.read_parquet(path) for path in paths]
    return with_models(pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()


def write_audit(results_table: str | Path, fit_files: list[str | Path], network_fit_files: list[str | Path],
                ranking_files: list[str | Path], feature_files: list[str | Path],
                prediction_set_files: list[str | Path], audit_section: Mapping, ranking_section: Mapping,
                n_classes: Mapping[str, int], mcd_passes: Mapping[str, int], out_csv: str | Path) -> pd.DataFrame:
    """Run every check of :mod:`csfbench.audit` on a run's files and write the audit table (one row per finding,
    sorted; one line saying nothing was found when there is none); return it.

    ``audit_section`` and ``ranking_section``: the validated config's ``audit`` and ``ranking`` sections;
    ``n_classes``: {source: number of classes}; ``mcd_passes``: {backbone: MC-dropout passes} of the backbones
    whose models run MC dropout; the files: the results table, the CSF and network-pass fit files, the ranking
    JSONs, the feature files of the scored sets and the prediction-set tables."""
    thresholds = Thresholds.from_settings(audit_section)
    table = pd.read_parquet(results_table)
    ranked = selected_ranked_rows(table, ranking_settings(dict(ranking_section)))
    inputs = AuditInputs(
        results=with_models(results_rows(table)),
        fits=[r for path in fit_files for r in read_csf_fit(path, n_classes)]
        + [r for path in network_fit_files for r in read_network_fit(path)],
        cells=read_cells(ranking_files, ranked),
        accuracies=[a for a in map(read_accuracy, feature_files) if a is not None],
        prediction_sets=_prediction_sets(prediction_set_files),
        n_classes=dict(n_classes), mcd_passes=dict(mcd_passes))
    del table, ranked
    frame = findings_frame(run_checks(inputs, thresholds))
    write_report_table(frame, out_csv, CAPTION, empty_reason=EMPTY)
    counts = Counter(zip(frame["check"], frame["severity"]))
    for (check, severity), n in sorted(counts.items()):
        log.info("%s: %d %s finding(s)", check, n, severity)
    log.info("audit: %d finding(s) in %s", len(frame), out_csv)
    return frame
