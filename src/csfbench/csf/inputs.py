"""One split's model outputs as the CSF engine consumes them, in deterministic or MC-dropout mode.

Shapes: N samples, C classes, D feature dimensions, T dropout passes.  Logits are restricted to the
C class outputs (Deep Gamblers' abstention output is kept separately in ``logits_full``).

Features stay in their storage precision (float32, the feature-file contract): every kernel
computes in float64 (or in its documented float32 products) whatever the input dtype, widening
row blocks, or one evaluation set at a time (Maha, GradNorm), where it needs float64, so a float64
copy held for the whole run would only double the memory of the largest arrays.  Logits, far
smaller, are held as float64.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

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


def load_splits(path: str | Path, modes: tuple[str, ...], expect: dict) -> dict[str, SplitData]:
    """Read a feature file once (validated against the contract and ``expect`` attributes, e.g.
    :func:`csfbench.features.store.run_attrs` of the model spec) and return its :class:`SplitData`
    in each of ``modes``."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown CSF input mode(s) {unknown}; expected some of {MODES}")
    attrs = validate_feature_file(path, expect)
    arrays, _ = read_features(path)
    return {mode: _split(path, mode, arrays, attrs) for mode in modes}


def _split(path, mode: str, arrays: dict, attrs: dict) -> SplitData:
    n_classes = int(attrs["n_classes"])
    labels = arrays["labels"].astype(np.int64)
    if mode == "det":
        logits_full = arrays["logits"].astype(np.float64)
        logits = class_outputs(logits_full, n_classes)
        return SplitData(str(attrs["dataset"]), mode, arrays["features"], logits, logits_full,
                         labels, logits.argmax(1), arrays.get("confidence"))
    if "mcd/logits" not in arrays:
        raise FeatureFileError(f"{path}: MC-dropout inputs requested but the file has no 'mcd/logits' "
                               f"(model {attrs['model']} was extracted with mcd_samples = {attrs.get('mcd_samples')})")
    passes_full = arrays["mcd/logits"].astype(np.float64)
    passes = class_outputs(passes_full, n_classes)
    conf = arrays.get("mcd/confidence")
    return SplitData(str(attrs["dataset"]), mode, arrays["mcd/features_mean"], passes.mean(1),
                     passes_full.mean(1), labels, softmax(passes).mean(1).argmax(1),
                     None if conf is None else conf.astype(np.float64).mean(1), passes)
