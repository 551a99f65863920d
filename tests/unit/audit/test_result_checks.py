"""The checks of the results rows: OOD AUROC below chance and wide bootstrap intervals."""
from __future__ import annotations

import numpy as np
import pandas as pd

from csfbench.audit import AuditInputs
from csfbench.audit.result_checks import ood_auroc_below_floor, results_rows, wide_intervals

from tests.unit.audit.builders import MODEL, key, result_row, results, thresholds

SUBJECT = f"s1/{MODEL} · MSR [none] · det · near (correct_vs_ood, auroc)"


def test_an_interval_wholly_below_chance_is_reported_with_its_interval():
    inputs = results(result_row(value=0.42, ci=(0.38, 0.46, 1000, 0.95)),
                     result_row(value=0.45, ci=(0.40, 0.52, 1000, 0.95)),  # the interval reaches 0.5: silent
                     result_row(dataset="far", value=0.3, ci=(0.2, 0.4, 1000, 0.95), split="val"))  # not test
    (finding,) = ood_auroc_below_floor(inputs, thresholds())
    assert key([finding]) == [("ood_auroc_below_floor", "warning", SUBJECT, 0.46, 0.5)]
    assert "95% bootstrap interval [0.380, 0.460] (1000 bootstrap replicates)" in finding.cause
    assert "orient" in finding.remedy


def test_without_an_interval_the_point_value_is_compared_and_the_cause_says_so():
    inputs = results(result_row(value=0.48), result_row(value=0.61, dataset="far"),
                     result_row(value=0.2, scheme="failure"), result_row(value=0.2, id_set="near_cov"))
    (finding,) = ood_auroc_below_floor(inputs, thresholds())
    assert key([finding]) == [("ood_auroc_below_floor", "warning", SUBJECT, 0.48, 0.5)]
    assert "no interval" in finding.cause
    # the interval columns may be absent from the table altogether (rows of a run without bootstrap)
    bare = pd.DataFrame([result_row(value=0.48)]).drop(columns=["ci_low", "ci_high", "n_boot", "ci_level"])
    assert key(ood_auroc_below_floor(AuditInputs(results=bare), thresholds())) == key([finding])


def test_a_clean_table_gives_no_auroc_finding():
    inputs = results(result_row(value=0.7, ci=(0.65, 0.75, 500, 0.9)), result_row(value=0.55, scheme="newclass"))
    assert ood_auroc_below_floor(inputs, thresholds()) == []


def test_an_interval_wider_than_the_maximum_is_reported_with_its_sample_counts():
    inputs = results(result_row(metric="augrc", value=0.1, ci=(0.05, 0.2, 200, 0.95)),
                     result_row(metric="aurc", value=0.1, ci=(0.08, 0.12, 200, 0.95)),
                     result_row(metric="auroc", value=0.8, ci=(0.6, 0.95, np.nan, np.nan), n_cal=150))
    findings = wide_intervals(inputs, thresholds())
    subject = f"s1/{MODEL} · MSR [none] · det · near (correct_vs_ood, "
    assert key(findings) == [("wide_interval", "warning", subject + "augrc)", 0.15, 0.1),
                             ("wide_interval", "warning", subject + "auroc)", 0.35, 0.1)]
    assert "(200 bootstrap replicates) is 0.150 wide" in findings[0].cause
    assert "150 calibration samples" in findings[1].cause
    assert wide_intervals(inputs, thresholds(max_interval_width=0.5)) == []


def test_the_rows_read_are_the_ood_aurocs_and_the_rows_with_an_interval():
    table = pd.DataFrame([result_row(), result_row(metric="augrc"), result_row(metric="aurc", ci=(0.1, 0.2, 9, 0.9))])
    assert results_rows(table)["metric"].tolist() == ["auroc", "aurc"]
