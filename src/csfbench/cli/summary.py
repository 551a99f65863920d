"""A readable summary of what a workflow run produced under ``results/``.

A result file that cannot be read (a truncated feature file, a history without ``val_acc``) does not
end the summary: its values are left empty and a line ``unreadable: PATH: reason`` names it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from csfbench.aggregate.coverage import COLUMNS as COVERAGE_COLUMNS, coverage_lines
from csfbench.errors import CsfbenchError
from csfbench.features.store import read_features
from csfbench.workflow import paths
from csfbench.workflow.ids import EnsembleId


#: the history of a classifier evaluated without training (csfbench.stages.train.materialise)
UNTRAINED_HISTORY = ["stage", "epoch", "parameters", "weights"]


def _read_history(path: Path) -> pd.DataFrame:
    """The per-epoch training history, with at least one epoch and a ``val_acc`` column, or the one-row
    history of a classifier evaluated without training (:data:`UNTRAINED_HISTORY`)."""
    try:
        hist = pd.read_csv(path)
    except (OSError, ValueError) as err:  # parser, empty-file and decoding errors are ValueErrors
        raise CsfbenchError(f"{path}: not a readable CSV training history ({err})") from err
    untrained = list(hist.columns) == UNTRAINED_HISTORY and len(hist) == 1
    if not untrained and ("val_acc" not in hist.columns or hist.empty):
        raise CsfbenchError(f"{path}: expected a 'val_acc' column and at least one epoch, "
                            f"found columns {list(hist.columns)} and {len(hist)} rows")
    return hist


def _test_accuracy(path: Path) -> float | None:
    arrays, _ = read_features(path, keys=("correct",))
    if "correct" not in arrays:
        raise CsfbenchError(f"{path}: no dataset 'correct'")
    correct = arrays["correct"]
    return round(float(correct.mean()), 4) if len(correct) else None


def _attempt(read: Callable[[Path], object], path: Path, unreadable: list[str]):
    """``read(path)``, or None with the reason appended to ``unreadable`` when the file cannot be read."""
    try:
        return read(path)
    except CsfbenchError as err:
        unreadable.append(f"unreadable: {err}")
        return None


def _model_row(results: Path, history: Path, unreadable: list[str]) -> dict:
    source, model = history.parent.parent.name, history.parent.name
    hist = _attempt(_read_history, history, unreadable)
    feature_dir = results / "features" / source / model
    files = sorted(feature_dir.glob("*.h5"))
    test = feature_dir / "test.h5"
    trained = hist is not None and "val_acc" in hist  # a classifier evaluated without training has no epochs
    return {"source": source, "model": model, "epochs": None if hist is None else len(hist) if trained else 0,
            "val_acc": round(float(hist["val_acc"].iloc[-1]), 4) if trained else None,
            "test_acc": _attempt(_test_accuracy, test, unreadable) if test.is_file() else None,
            "feature_files": len(files),
            "MB": round(sum(f.stat().st_size for f in files) / 2**20, 2),
            "metric_files": len(list((results / "metrics" / source / model).glob("*.parquet")))}


def _coverage_lines(results: Path, unreadable: list[str]) -> list[str]:
    """Per evaluation set, the ranking cells it entered and why it did not enter the others (the ranking
    stage's coverage table, :func:`csfbench.aggregate.coverage.set_coverage`); none before that stage ran."""
    path = results / Path(paths.ranked_sets()).relative_to(paths.RESULTS)
    if not path.is_file():
        return []
    try:
        coverage = pd.read_csv(path)
        missing = [c for c in COVERAGE_COLUMNS if c not in coverage.columns]
        if missing:
            raise ValueError(f"missing column(s) {missing}")
    except (OSError, ValueError) as err:
        unreadable.append(f"unreadable: {path}: not a ranking coverage table ({err})")
        return []
    return ["", f"rankings: what every evaluation set entered ({path.resolve()})", *coverage_lines(coverage)]


def _is_ensemble(name: str) -> bool:
    try:
        EnsembleId.parse(name)
    except ValueError:
        return False
    return True


def summarize(results: Path) -> tuple[str, list[str]]:
    """Models with their final validation and test accuracy, their feature and metric files, and the
    ranking cells every evaluation set entered.

    Returns the text and its ``unreadable: ...`` lines (also part of the text), one per file that
    could not be read."""
    unreadable: list[str] = []
    rows = [_model_row(results, history, unreadable)
            for history in sorted((results / "models").glob("*/*/history.csv"))
            if history.parent.parent.name != "pretrain"]
    if not rows:
        return f"no trained models under {results}/models", unreadable
    table = pd.DataFrame(rows)
    lines = [table.to_string(index=False), "",
             f"{len(table)} models, {int(table['feature_files'].sum())} feature files "
             f"({table['MB'].sum():.1f} MB) under {results.resolve() / 'features'}",
             f"{int(table['metric_files'].sum())} metric files (one per model and CSF fit group, and the "
             f"conformal rows, covering every evaluation set) under {results.resolve() / 'metrics'}"]
    ensembles = [folder for folder in sorted((results / "metrics").glob("*/*")) if _is_ensemble(folder.name)]
    if ensembles:
        lines.append(f"{len(ensembles)} deep ensemble(s) ({', '.join(f.name for f in ensembles)}), "
                     f"{sum(len(list(f.glob('*.parquet'))) for f in ensembles)} metric files (one per scorer slot)")
    lines += _coverage_lines(results, unreadable)
    report = results / "report.html"
    if report.is_file():
        lines.append(f"report: {report.resolve()}")
    return "\n".join(lines + unreadable), unreadable
