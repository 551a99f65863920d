"""A feature file's ``pred`` and ``correct`` against its logits and labels, as the extraction writes them.

:func:`csfbench.features.extract.extract_features` writes ``pred`` = the argmax of the first C logits (Deep
Gamblers' abstention output excluded), taken by ``torch.argmax``, which returns the first of tied maxima, so a
tie goes to the lowest class index; and ``correct`` = ``pred == label`` where the label is not -1 (unlabelled
samples are never correct).  With ``logit_mask: restrict`` the argmax is over the evaluation set's
``label_space`` only, which the file does not record: a file whose ``pred`` differs from the full argmax is
accepted when ``pred`` does not take every class and each ``pred`` is a maximal logit among the classes ``pred``
takes (a subset of that label space), ties then being decided by the label space's order, which the file does
not record either.
"""
from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from csfbench.errors import FeatureFileError

ROW_BLOCK = 65536  # rows per read of an unchunked dataset


class _Mismatches:
    """Rows where a check fails: their count and a description of the first."""

    def __init__(self):
        self.count, self.first = 0, ""

    def add(self, start: int, failed: np.ndarray, describe) -> None:
        if failed.any():
            i = int(np.flatnonzero(failed)[0])
            if not self.count:
                self.first = f"row {start + i}: {describe(i)}"
            self.count += int(failed.sum())

    def message(self, path: Path, dataset: str, expected: str) -> str:
        return f"{path}: dataset '{dataset}': expected {expected}, found {self.count} row(s) that differ " \
               f"(first at {self.first})"


def check_predictions(path: str | Path) -> tuple[int, ...] | None:
    """Check ``pred`` and ``correct`` of the feature file at ``path`` (see the module docstring); return None when
    ``pred`` is the argmax over all C classes, else the classes it takes (a restricted label space).

    Raises :class:`FeatureFileError` naming the file, the dataset, how many rows differ and the first of them
    with its values.  Call it on a file that :func:`csfbench.features.store.validate_feature_file` accepted
    (shapes, finite logits, labels in range).  Logits are read in row blocks: memory stays bounded."""
    path = Path(path)
    full, restricted, correct_rows = _Mismatches(), _Mismatches(), _Mismatches()
    try:
        with h5py.File(path, "r", locking=False) as fh:
            n_classes = int(fh.attrs["n_classes"])
            pred_all = fh["pred"][()]
            outside = (pred_all < 0) | (pred_all >= n_classes)
            if outside.any():
                row = int(np.flatnonzero(outside)[0])
                raise FeatureFileError(f"{path}: dataset 'pred': expected class indices in [0, {n_classes}), found "
                                       f"{int(outside.sum())} outside (first at row {row}: pred {pred_all[row]})")
            taken = np.unique(pred_all)
            step = fh["logits"].chunks[0] if fh["logits"].chunks else ROW_BLOCK
            for start in range(0, len(pred_all), step):
                logits = fh["logits"][start:start + step, :n_classes]
                labels, correct = fh["labels"][start:start + step], fh["correct"][start:start + step].astype(bool)
                pred = pred_all[start:start + step]
                argmax = logits.argmax(1)  # numpy's argmax, like torch's, returns the first of tied maxima
                full.add(start, pred != argmax, lambda i: f"pred {pred[i]}, argmax {argmax[i]}")
                best = logits[:, taken].max(1)
                restricted.add(start, logits[np.arange(len(pred)), pred] < best,
                               lambda i: f"pred {pred[i]}, argmax {argmax[i]}")
                correct_rows.add(start, correct != ((pred == labels) & (labels >= 0)),
                                 lambda i: f"correct {correct[i]}, pred {pred[i]}, label {labels[i]}")
    except (OSError, KeyError, RuntimeError) as err:  # h5py's errors for truncated or corrupt content
        raise FeatureFileError(f"{path}: not a readable HDF5 feature file ({type(err).__name__}: {err})") from err
    problems = []
    if full.count and (restricted.count or len(taken) == n_classes):  # pred takes every class: none is masked
        problems.append(full.message(path, "pred", f"the argmax of the first {n_classes} logits (ties: the lowest "
                                     "class), or a maximal logit among the classes pred takes (logit_mask: restrict)"))
    if correct_rows.count:
        problems.append(correct_rows.message(path, "correct", "pred == label (false where the label is -1)"))
    if problems:
        raise FeatureFileError("; ".join(problems))
    return tuple(int(c) for c in taken) if full.count else None
