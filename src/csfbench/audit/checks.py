"""Every check of the self-audit (:data:`CHECKS`, in the order the audit table lists them) and
:func:`run_checks`, which runs them all."""
from __future__ import annotations

from typing import Callable

from csfbench.audit import fit_checks, model_checks, ranking_checks, result_checks
from csfbench.audit.findings import Finding, Thresholds, sort_key
from csfbench.audit.records import AuditInputs

Check = Callable[[AuditInputs, Thresholds], list[Finding]]

#: {check name (the table's ``check`` column): its function}, in the table's order
CHECKS: dict[str, Check] = {
    "ood_auroc_below_floor": result_checks.ood_auroc_below_floor,
    "tuned_at_edge": fit_checks.tuned_at_edge,
    "neighbours_above_fraction": fit_checks.neighbours_above_fraction,
    "few_mcd_passes": model_checks.few_mcd_passes,
    "wide_interval": result_checks.wide_intervals,
    "few_independent_blocks": ranking_checks.few_independent_blocks,
    "near_chance_accuracy": model_checks.near_chance_accuracy,
    "undefined_csf": fit_checks.undefined_csfs,
    "tuned_to_equivalent": fit_checks.tuned_to_equivalent,
    "full_prediction_sets": model_checks.full_prediction_sets,
}


def run_checks(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """The findings of every check of :data:`CHECKS`, sorted (:func:`~csfbench.audit.findings.sort_key`): the
    same inputs give the same list in the same order."""
    order = {name: i for i, name in enumerate(CHECKS)}
    findings = [finding for check in CHECKS.values() for finding in check(inputs, thresholds)]
    unnamed = sorted({f.check for f in findings} - set(order))
    if unnamed:
        raise ValueError(f"findings of checks not in CHECKS: {unnamed}")
    return sorted(findings, key=lambda f: sort_key(f, order))
