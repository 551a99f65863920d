"""One split's model outputs as the CSF engine consumes them, in deterministic or MC-dropout mode.

Shapes: N samples, C classes, D feature dimensions, T dropout passes.  Logits are restricted to the
C class outputs (Deep Gamblers' abstention output is kept separately in ``logits_full``).

Features stay in their storage precision (float32, the feature-file contract): every kernel
computes in float64 (or in its documented float32 products) whatever the input dtype, widening
row blocks, or one evaluation set at a time (Maha, GradNorm), where it needs float64, so a float64
copy held for the whole run would only double the memory of the largest arrays.  Logits are held as float64.

Bounded memory (``lazy=True`` of :func:`load_splits`, ``det`` mode): features and logits are not read at
all but are :class:`FileRows`, read from the feature file one row block at a time by the kernels
(:mod:`csfbench.csf.blocks`); only the labels, predictions and confidences (N values each) are held.
:meth:`SplitData.take` reads a block of rows of a split into memory (scoring an evaluation set block by
block, :func:`split_blocks`).  ``mcd`` inputs are always read whole.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from csfbench.csf.blocks import RowSource, is_row_source, row_argmax, row_blocks
from csfbench.csf.logit_scores import softmax
from csfbench.errors import FeatureFileError
from csfbench.features.store import read_features, validate_feature_file
from csfbench.heads import class_outputs

MODES = ("det", "mcd")


@dataclass
class SplitData:
    """Model outputs on one evaluation set.

    ``pred`` is the model's prediction: argmax of the logits (``det``) or of the mean softmax over
    the dropout passes (``mcd``, as in the authors' code); ``correct`` compares it with ``labels`` (False for
    unlabelled samples, label −1).  ``confidence`` is the paradigm head's output (mean over passes
    in ``mcd``) or None.  ``pass_logits`` (N×T×C) exists in ``mcd`` mode only.
    """

    dataset: str
    mode: str
    features: np.ndarray
    logits: np.ndarray
    logits_full: np.ndarray
    labels: np.ndarray
    pred: np.ndarray
    confidence: np.ndarray | None
    pass_logits: np.ndarray | None = None

    @property
    def correct(self) -> np.ndarray:
        return (self.pred == self.labels) & (self.labels >= 0)

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, rows: slice) -> "SplitData":
        """The rows ``rows`` of this split, in memory (features and logits read from their :class:`FileRows`)."""
        def part(x):
            return None if x is None else x[rows]
        return dataclasses.replace(self, features=part(self.features), logits=part(self.logits),
                                   logits_full=part(self.logits_full), labels=self.labels[rows], pred=self.pred[rows],
                                   confidence=part(self.confidence), pass_logits=part(self.pass_logits))


class FileRows(RowSource):
    """The rows of a 2-D dataset ``name`` of an HDF5 file, read block by block (:class:`~csfbench.csf.blocks.RowSource`)
    as ``dtype``, optionally its first ``columns`` columns only (a model's C class logits)."""

    def __init__(self, path: str | Path, name: str, dtype, columns: int | None = None):
        self.path, self.name = Path(path), name
        self._file = h5py.File(self.path, "r", locking=False)  # held open while the rows are read
        self._data = self._file[name]
        self.columns = self._data.shape[1] if columns is None else int(columns)
        self.shape = (self._data.shape[0], self.columns)
        self.dtype, self.storage_dtype = np.dtype(dtype), self._data.dtype

    def read(self, start: int, stop: int) -> np.ndarray:
        block = self._data[start:stop] if self.columns == self._data.shape[1] else \
            self._data[start:stop, :self.columns]
        return block.astype(self.dtype, copy=False)

    def __repr__(self) -> str:
        return f"{self.path}:{self.name}"


def split_blocks(split: SplitData, row_width: int | None = None) -> Iterator[SplitData]:
    """``split`` as consecutive blocks of rows in memory (:meth:`SplitData.take`), each within the block budget
    of ``row_width`` float64 entries per row (default: the wider of its features and logits)."""
    width = row_width or max(split.features.shape[1], split.logits_full.shape[1])
    for rows in row_blocks(len(split), width):
        yield split.take(rows)


def load_splits(path: str | Path, modes: tuple[str, ...], expect: dict, lazy: bool = False) -> dict[str, SplitData]:
    """Read a feature file once (validated against the contract and ``expect`` attributes, e.g.
    :func:`csfbench.features.store.run_attrs` of the model spec) and return its :class:`SplitData`
    in each of ``modes``.  ``lazy``: the ``det`` features and logits stay in the file (:class:`FileRows`,
    module docstring)."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown CSF input mode(s) {unknown}; expected some of {MODES}")
    attrs = validate_feature_file(path, expect)
    if lazy:
        keys = ("labels", "confidence") + (("mcd/logits", "mcd/features_mean", "mcd/confidence") if "mcd" in modes
                                           else ())
        arrays, _ = read_features(path, keys=keys)
        n_classes = int(attrs["n_classes"])
        arrays["features"] = FileRows(path, "features", np.float32)
        arrays["logits"] = FileRows(path, "logits", np.float64)
        arrays["class_logits"] = FileRows(path, "logits", np.float64, n_classes)
    else:
        arrays, _ = read_features(path)
    return {mode: _split(path, mode, arrays, attrs) for mode in modes}


def _split(path, mode: str, arrays: dict, attrs: dict) -> SplitData:
    n_classes = int(attrs["n_classes"])
    labels = arrays["labels"].astype(np.int64)
    if mode == "det":
        if is_row_source(arrays["logits"]):
            logits_full, logits = arrays["logits"], arrays["class_logits"]
        else:
            logits_full = arrays["logits"].astype(np.float64)
            logits = class_outputs(logits_full, n_classes)
        return SplitData(str(attrs["dataset"]), mode, arrays["features"], logits, logits_full,
                         labels, row_argmax(logits), arrays.get("confidence"))
    if "mcd/logits" not in arrays:
        raise FeatureFileError(f"{path}: MC-dropout inputs requested but the file has no 'mcd/logits' "
                               f"(model {attrs['model']} was extracted with mcd_samples = {attrs.get('mcd_samples')})")
    passes_full = arrays["mcd/logits"].astype(np.float64)
    passes = class_outputs(passes_full, n_classes)
    conf = arrays.get("mcd/confidence")
    return SplitData(str(attrs["dataset"]), mode, arrays["mcd/features_mean"], passes.mean(1),
                     passes_full.mean(1), labels, softmax(passes).mean(1).argmax(1),
                     None if conf is None else conf.astype(np.float64).mean(1), passes)
