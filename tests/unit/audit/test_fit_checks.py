"""The checks of the fitted CSFs: range edges, neighbour counts, undefined CSFs and equivalent values."""
from __future__ import annotations

from csfbench.audit import AuditInputs, FitRecord
from csfbench.audit.fit_checks import neighbours_above_fraction, tuned_at_edge, tuned_to_equivalent, undefined_csfs

from tests.unit.audit.builders import MODEL, key, thresholds


def fit(name="KNN", csf=None, protocol="bayes", params=None, space=None, fit_group="none", **extra) -> FitRecord:
    return FitRecord("s1", MODEL, fit_group, "det", name, "none", csf or name, protocol, params or {}, space or {},
                     **extra)


def subject(name: str, fit_group: str = "none", variant: str = "none") -> str:
    return f"s1/{MODEL} · {name} [{variant}] · det, fit group {fit_group}"


def fits(*records: FitRecord) -> AuditInputs:
    return AuditInputs(fits=list(records))


def test_a_value_at_either_end_of_its_range_is_reported():
    inputs = fits(fit("NNGuide", params={"k": 500, "alpha": 0.1001}, space={"k": (10.0, 500.0), "alpha": (0.1, 0.5)}),
                  fit("GEN", params={"m": 5, "gamma": 0.3}, space={"m": (1.0, 10.0), "gamma": (1e-6, 0.999999)}))
    findings = tuned_at_edge(inputs, thresholds())
    assert key(findings) == [("tuned_at_edge", "warning", subject("NNGuide") + " · alpha", 0.1001, 0.1),
                             ("tuned_at_edge", "warning", subject("NNGuide") + " · k", 500.0, 500.0)]
    assert "lower end of its search range [0.1, 0.5]" in findings[0].cause
    assert "csf.search_space.NNGuide.k" in findings[1].remedy
    assert tuned_at_edge(inputs, thresholds(edge_fraction=0.0))[0].subject.endswith(" · k")


def test_a_range_cut_by_the_neighbour_clip_names_the_clip_and_a_grid_names_its_setting():
    clips = {"k": {"range": [1, 1000], "clipped": [1, 50], "train_rows": 1000}}
    inputs = fits(fit(params={"k": 50}, space={"k": (1.0, 50.0)}, clips=clips, bank_rows=1000),
                  fit("ReAct@grid", csf="ReAct", protocol="grid", params={"percentile": 70.0},
                      space={"percentile": (70.0, 99.0)}),
                  fit("ODIN-IP", protocol="id_grid", params={"temperature": 1000.0, "noise": 0.0014},
                      space={"temperature": (1.0, 1000.0), "noise": (0.0, 0.0028)}))
    findings = tuned_at_edge(inputs, thresholds())
    assert [f.subject for f in findings] == [subject("KNN") + " · k", subject("ReAct@grid") + " · percentile",
                                             subject("ODIN-IP") + " · temperature"]
    assert "neighbour-count clip cut down from [1, 1000] for 1000 training rows" in findings[0].cause
    assert "csf.tuning.max_neighbour_fraction" in findings[0].remedy
    assert "csf.tuning.grids.ReAct.percentile" in findings[1].remedy
    assert "network_csf.odin.temperatures" in findings[2].remedy


def test_values_inside_their_range_and_untuned_fits_are_silent():
    inputs = fits(fit(params={"k": 20}, space={"k": (1.0, 50.0)}),
                  fit("MSR", protocol="none"), fit("Maha", protocol="fixed", params={"x": 1.0}),
                  fit("ViM", undefined="no residual subspace", space={"k": (0.0, 1.0)}))
    assert tuned_at_edge(inputs, thresholds()) == []


def test_a_neighbour_count_above_the_fraction_of_its_bank_is_reported():
    inputs = fits(fit("KNN@grid", csf="KNN", protocol="grid", params={"k": 200}, bank_rows=1000),
                  fit(params={"k": 50}, bank_rows=1000),  # 5 %: at the fraction, silent
                  fit("NNGuide", params={"k": 40, "alpha": 0.2}, bank_rows=200),
                  fit("GEN", params={"m": 900}, bank_rows=10))  # not a neighbour count
    findings = neighbours_above_fraction(inputs, thresholds())
    assert key(findings) == [("neighbours_above_fraction", "warning", subject("KNN@grid") + " · k", 0.2, 0.05),
                             ("neighbours_above_fraction", "warning", subject("NNGuide") + " · k", 0.2, 0.05)]
    assert "Grid points and fixed values are not clipped" in findings[0].cause
    assert "the bank is smaller than the training split" in findings[1].cause
    assert neighbours_above_fraction(inputs, thresholds(max_neighbour_fraction=0.5)) == []


def test_an_undefined_csf_is_reported_with_its_reason():
    inputs = fits(fit("ViM", undefined="the features have 8 dimensions for 10 classes"), fit("MSR", protocol="none"))
    (finding,) = undefined_csfs(inputs, thresholds())
    assert key([finding])[0][:3] == ("undefined_csf", "warning", subject("ViM"))
    assert "could not be computed for this model: the features have 8 dimensions for 10 classes" in finding.cause


def test_a_value_where_the_csf_equals_another_is_reported_once():
    inputs = fits(fit("ODIN-IP", protocol="id_grid", params={"temperature": 1.0, "noise": 0.0},
                      space={"temperature": (1.0, 1000.0), "noise": (0.0, 0.0028)}),
                  fit("ODIN-IP", protocol="id_grid", params={"temperature": 100.0, "noise": 0.0},
                      space={"temperature": (1.0, 1000.0), "noise": (0.0, 0.0028)}, fit_group="network"),
                  fit("ODIN", params={"temperature": 1.004}, space={"temperature": (1.0, 1000.0)}),
                  fit("ReAct", params={"percentile": 99.0}, space={"percentile": (70.0, 99.0)}),
                  fit("ASH-P", protocol="fixed", params={"percentile": 0.0}))
    findings = tuned_to_equivalent(inputs, thresholds())
    assert key(findings) == [("tuned_to_equivalent", "info", subject("ODIN-IP"), 1.0, 1.0),
                             ("tuned_to_equivalent", "info", subject("ODIN-IP", "network"), 0.0, 0.0),
                             ("tuned_to_equivalent", "info", subject("ODIN"), 1.004, 1.0),
                             ("tuned_to_equivalent", "info", subject("ReAct"), 99.0, 100.0),
                             ("tuned_to_equivalent", "info", subject("ASH-P"), 0.0, 0.0)]
    assert findings[0].cause.endswith("so this fit is MSP.") and "is ODIN." in findings[1].cause
    assert "is nearly EBO" in findings[3].cause and "fixed in the config" in findings[4].cause


def test_values_away_from_an_equivalence_are_silent():
    inputs = fits(fit("ODIN-IP", protocol="id_grid", params={"temperature": 1.0, "noise": 0.0014},
                      space={"temperature": (1.0, 1000.0), "noise": (0.0, 0.0028)}),
                  fit("ODIN", params={"temperature": 10.0}, space={"temperature": (1.0, 1000.0)}),
                  fit("ReAct", params={"percentile": 90.0}), fit("MSR", protocol="none"))
    assert tuned_to_equivalent(inputs, thresholds()) == []
