"""The audit's records read back from files in the layouts the stages write."""
from __future__ import annotations

import pytest

from csfbench.audit import AccuracyRecord, FitRecord
from csfbench.audit.readers import read_accuracy, read_csf_fit, read_network_fit
from csfbench.errors import FeatureFileError

from tests.unit.audit.builders import MODEL
from tests.unit.audit.files import KNN_CLIP, write_csf_fit, write_features, write_network_fit


def test_a_csf_fit_gives_its_tuned_quantities_with_their_search_ranges(tmp_path):
    records = {(r.name, r.variant): r for r in read_csf_fit(write_csf_fit(tmp_path / "fit.h5"), {"s1": 4})}
    # a sharing variant repeats its owner's values and is left out
    assert sorted(records) == [("GEN", "none"), ("KNN", "none"), ("KNN@grid", "none"), ("KPCA RecError", "class"),
                               ("ViM", "none"), ("projection", "global")]
    base = {"source": "s1", "model": MODEL, "fit_group": "global", "mode": "det"}
    # the projection's range: the fit's csf_config override of the registry's [0.85, 0.99]
    assert records[("projection", "global")] == FitRecord(**base, name="projection", variant="global",
                                                          csf="projection", protocol="bayes",
                                                          params={"variance": 0.95}, space={"variance": (0.8, 0.95)})
    # the Bayesian range after the neighbour-count clip, the bank's rows from its shape
    assert records[("KNN", "none")] == FitRecord(**base, name="KNN", variant="none", csf="KNN", protocol="bayes",
                                                 params={"k": 50}, space={"k": (1.0, 50.0)}, clips=KNN_CLIP,
                                                 bank_rows=1000)
    # a grid's range: its smallest and largest probed point
    assert records[("KNN@grid", "none")].space == {"k": (1.0, 200.0)}
    # GEN's m bounded by the 4 classes; its pinned gamma is not searched
    assert records[("GEN", "none")].space == {"m": (1.0, 4.0)}
    assert records[("ViM", "none")].undefined == "no residual subspace: 3 dimensions for 4 classes"
    assert records[("ViM", "none")].space == {}


def test_a_csf_fit_of_an_unknown_source_or_format_is_refused(tmp_path):
    path = write_csf_fit(tmp_path / "fit.h5", source="s2")
    with pytest.raises(ValueError, match="source 's2', whose number of classes was not given"):
        read_csf_fit(path, {"s1": 4})
    with pytest.raises(FeatureFileError, match="CSF fit file not found"):
        read_csf_fit(tmp_path / "none.h5", {"s1": 4})


def test_a_network_fit_gives_odin_ip_with_its_grid(tmp_path):
    (record,) = read_network_fit(write_network_fit(tmp_path / "network.h5", 10.0, 0.0014))
    assert record == FitRecord("s1", MODEL, "network", "det", "ODIN-IP", "none", "ODIN-IP", "id_grid",
                               {"temperature": 10.0, "noise": 0.0014},
                               {"temperature": (1.0, 10.0), "noise": (0.0, 0.0014)})


def test_accuracy_is_that_of_the_labelled_samples(tmp_path):
    path = write_features(tmp_path / "test.h5", "test", [1, 0, 0, 1], [0, 1, 2, 3])
    assert read_accuracy(path) == AccuracyRecord("s1", MODEL, "dg", "test", "id", 4, 0.5)
    assert read_accuracy(write_features(tmp_path / "near.h5", "near", [0, 0], [-1, -1], "semantic")) is None
