"""csfbench.features.consistency.check_predictions reads a feature file in row blocks: mismatches in later blocks
are counted and located by their row in the file."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from csfbench.errors import FeatureFileError
from csfbench.features.consistency import check_predictions

N, C = 50, 3


def _file(path, pred=None, correct=None, chunk=8):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(N, C)).astype("f4")
    labels = rng.integers(0, C, N)
    pred = logits.argmax(1) if pred is None else pred
    correct = pred == labels if correct is None else correct
    with h5py.File(path, "w") as fh:
        fh.attrs["n_classes"] = C
        fh.create_dataset("logits", data=logits, chunks=(chunk, C))
        fh["labels"], fh["pred"], fh["correct"] = labels, pred, correct
    return path, logits, labels


def test_a_consistent_file_passes(tmp_path):
    assert check_predictions(_file(tmp_path / "f.h5")[0]) is None


def test_mismatches_of_later_blocks_are_counted_and_located(tmp_path):
    path, logits, labels = _file(tmp_path / "f.h5")
    pred = logits.argmax(1)
    pred[[20, 41]] = (pred[[20, 41]] + 1) % C
    _file(path, pred=pred)
    with pytest.raises(FeatureFileError, match=r"found 2 row\(s\) that differ \(first at row 20: pred "):
        check_predictions(path)


def test_a_pred_outside_the_classes_is_named(tmp_path):
    path, logits, _ = _file(tmp_path / "f.h5")
    pred = logits.argmax(1)
    pred[33] = C
    _file(path, pred=pred)
    with pytest.raises(FeatureFileError, match=rf"expected class indices in \[0, {C}\), found 1 outside \(first at "
                                               rf"row 33: pred {C}\)"):
        check_predictions(path)


def test_an_unreadable_file_is_named(tmp_path):
    path = tmp_path / "f.h5"
    path.write_bytes(b"junk")
    with pytest.raises(FeatureFileError, match="not a readable HDF5 feature file"):
        check_predictions(path)
