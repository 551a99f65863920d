"""The audit's thresholds come from the config's ``audit`` section with the schema's defaults; the checks run in a
fixed order; the package knows nothing of the workflow."""
from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from csfbench.audit import CHECKS, AuditInputs, Thresholds, run_checks
from csfbench.workflow.settings import schema

from tests.unit.audit.builders import micro_config, result_row, thresholds
from tests.unit.audit.test_fit_checks import fit
from tests.unit.test_imports import _in_package, imports


def test_a_config_without_an_audit_section_gets_the_schema_defaults():
    defaults = {key: spec["default"] for key, spec in schema()["properties"]["audit"]["properties"].items()}
    assert micro_config()["audit"] == defaults
    assert dataclasses.asdict(thresholds()) == defaults == {
        "auroc_floor": 0.5, "edge_fraction": 0.01, "max_neighbour_fraction": 0.05, "min_mcd_passes": 10,
        "max_interval_width": 0.1, "min_blocks": 5, "chance_factor": 1.5, "equivalence_tolerance": 0.01,
        "full_set_fraction": 0.99}
    assert micro_config()["resources"]["audit"]["mem_mb"] > 0


def test_thresholds_refuse_an_incomplete_or_unknown_section():
    with pytest.raises(ValueError, match=r"missing \['min_blocks'\], unknown \['min_block'\]"):
        Thresholds.from_settings({**{k: v for k, v in micro_config()["audit"].items() if k != "min_blocks"},
                                  "min_block": 3})


def test_findings_are_sorted_by_check_then_subject_whatever_the_input_order():
    records = [fit("NNGuide", params={"k": 500}, space={"k": (10.0, 500.0)}, bank_rows=1000),
               fit("KNN", params={"k": 50}, space={"k": (1.0, 50.0)}, bank_rows=100)]
    rows = [result_row(value=0.4), result_row(value=0.3, dataset="far")]
    forward = run_checks(AuditInputs(results=pd.DataFrame(rows), fits=records,
                                     mcd_passes={"vgg13": 2}), thresholds())
    backward = run_checks(AuditInputs(results=pd.DataFrame(rows[::-1]), fits=records[::-1],
                                      mcd_passes={"vgg13": 2}), thresholds())
    assert forward == backward
    order = list(CHECKS)
    assert [order.index(f.check) for f in forward] == sorted(order.index(f.check) for f in forward)
    assert [f.subject.split(" · ")[-1] for f in forward[:2]] == ["far (correct_vs_ood, auroc)",
                                                                 "near (correct_vs_ood, auroc)"]


def test_the_audit_package_imports_neither_the_workflow_nor_the_stages():
    found = [str(e) for e in imports() if _in_package(e.importer, "csfbench.audit")
             and (_in_package(e.target, "csfbench.workflow") or _in_package(e.target, "csfbench.stages"))]
    assert not found, found
