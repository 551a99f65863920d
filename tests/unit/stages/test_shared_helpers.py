"""The helpers the stages share: an evaluation set's images (csfbench.data.eval_sets) and the one reader of the
embeddings files (csfbench.proximity.stratification.read_embeddings), which the pair analyses and the
stratification both use."""
from __future__ import annotations

import numpy as np
import pytest

from csfbench.data import eval_sets
from csfbench.proximity.stratification import read_embeddings, write_embeddings
from csfbench.specs import DatasetSpec, EvalSet
from csfbench.stages.proximity import write_stratification

SOURCE = DatasetSpec("src", "npy", "src")
SHIFTED = DatasetSpec("far", "npy", "far")


def test_an_id_split_comes_from_the_source_and_a_shifted_set_from_its_dataset(monkeypatch):
    monkeypatch.setattr(eval_sets, "source_split", lambda dataset, val_size, split: ("split", dataset.name, val_size,
                                                                                       split))
    monkeypatch.setattr(eval_sets, "shift_set", lambda dataset, shift_type: ("shift", dataset.name, shift_type))
    assert eval_sets.set_images(SOURCE, 7, EvalSet("val", "id", "val")) == ("split", "src", 7, "val")
    assert eval_sets.set_images(SOURCE, 7, EvalSet("far", "semantic", "far", SHIFTED)) == ("shift", "far", "semantic")


def test_the_embeddings_reader_skips_sets_and_reads_files_without_labels(tmp_path):
    path = tmp_path / "e.h5"
    write_embeddings(path, "src", "enc", {"train": np.zeros((3, 2)), "test": np.ones((2, 2))})
    sets, labels, text, attrs = read_embeddings(path, skip=("train",))
    assert list(sets) == ["test"] and labels is None and text is None and attrs["encoder"] == "enc"
    with pytest.raises(ValueError, match=r"not an embeddings file of the proximity stage \(lacks \['labels'\]\)"):
        write_stratification("src", path, {}, "static", 0, 2, 2, tmp_path / "d.csv", tmp_path / "d.tex",
                             tmp_path / "r.csv")
