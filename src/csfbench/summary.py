"""A readable summary of what a workflow run produced under ``results/``."""
from __future__ import annotations

from pathlib import Path

import h5py
import pandas as pd


def _test_accuracy(path: Path) -> float | None:
    with h5py.File(path, "r", locking=False) as fh:
        correct = fh["correct"][()]
    return float(correct.mean()) if len(correct) else None


def summarize(results: Path) -> str:
    """Models with their final validation and test accuracy, and their feature and metric files."""
    rows = []
    for history in sorted((results / "models").glob("*/*/history.csv")):
        source, model = history.parent.parent.name, history.parent.name
        if source == "pretrain":
            continue
        hist = pd.read_csv(history)
        feature_dir = results / "features" / source / model
        files = sorted(feature_dir.glob("*.h5"))
        test = feature_dir / "test.h5"
        rows.append({"source": source, "model": model, "epochs": len(hist),
                     "val_acc": round(float(hist["val_acc"].iloc[-1]), 4),
                     "test_acc": round(_test_accuracy(test), 4) if test.is_file() else None,
                     "feature_files": len(files),
                     "MB": round(sum(f.stat().st_size for f in files) / 2**20, 2),
                     "metric_files": len(list((results / "metrics" / source / model).glob("*.parquet")))})
    if not rows:
        return f"no trained models under {results}/models"
    table = pd.DataFrame(rows)
    lines = [table.to_string(index=False), "",
             f"{len(table)} models, {int(table['feature_files'].sum())} feature files "
             f"({table['MB'].sum():.1f} MB) under {results.resolve() / 'features'}",
             f"{int(table['metric_files'].sum())} metric files (one per model and CSF fit group, "
             f"covering every evaluation set) under {results.resolve() / 'metrics'}"]
    report = results / "report.html"
    if report.is_file():
        lines.append(f"report: {report.resolve()}")
    return "\n".join(lines)
