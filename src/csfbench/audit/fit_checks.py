"""Checks of the fitted CSFs (:class:`~csfbench.audit.records.FitRecord`): hyper-parameters tuned at the edge of
their range (:func:`tuned_at_edge`), neighbour counts that cover much of their bank
(:func:`neighbours_above_fraction`), CSFs that could not be computed (:func:`undefined_csfs`) and tuned values at
which a CSF equals another (:func:`tuned_to_equivalent`)."""
from __future__ import annotations

from csfbench.audit.equivalences import EQUIVALENCES, Equivalence
from csfbench.audit.findings import Finding, Thresholds
from csfbench.audit.records import AuditInputs, FitRecord
from csfbench.csf.registry import BY_NAME

#: the network-pass CSF whose hyper-parameters a grid of the ``network_csf`` section sets, {param: its setting}
NETWORK_GRID = {"ODIN-IP": {"temperature": "network_csf.odin.temperatures", "noise": "network_csf.odin.noise"}}


def _range_setting(record: FitRecord, param: str) -> str:
    """The setting that holds ``param``'s search range for the record's protocol."""
    if record.csf in NETWORK_GRID:
        return NETWORK_GRID[record.csf][param]
    if record.protocol == "grid":
        return f"csf.tuning.grids.{record.csf}.{param}"
    return f"csf.search_space.{record.csf}.{param}"


def _defined(inputs: AuditInputs) -> list[FitRecord]:
    return [r for r in inputs.fits if not r.undefined]


def equivalence_of(record: FitRecord, tolerance: float) -> Equivalence | None:
    """The first equivalence of :data:`EQUIVALENCES` that holds for the record's values (None: none holds)."""
    return next((e for e in EQUIVALENCES if e.csf == record.csf and e.holds(record.params, record.space, tolerance)),
                None)


def tuned_at_edge(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """Tuned parameters within ``edge_fraction`` × the range's width of an end of their search range; a parameter at
    a value where the CSF equals another is left to :func:`tuned_to_equivalent`, which says more.  Value: the tuned
    value; threshold: the end it is at (both in the parameter's own units)."""
    findings = []
    for record in _defined(inputs):
        equivalence = equivalence_of(record, thresholds.equivalence_tolerance)
        for param, (low, high) in sorted(record.space.items()):
            if param not in record.params or not high > low or (equivalence and param in equivalence.at):
                continue
            value, margin = float(record.params[param]), thresholds.edge_fraction * (high - low)
            end = "lower" if value <= low + margin else "upper" if value >= high - margin else None
            if end is None:
                continue
            clip = record.clips.get(param)
            if clip is not None and end == "upper":
                cause = (f"{param} = {value:g} is at the upper end of its search range [{low:g}, {high:g}], which the "
                         f"neighbour-count clip cut down from [{clip['range'][0]:g}, {clip['range'][1]:g}] for "
                         f"{clip['train_rows']} training rows: the clip, not the validation data, stopped the search.")
                remedy = ("If a larger neighbour count is intended, raise csf.tuning.max_neighbour_fraction and refit "
                          "(docs/methods.md §3.2); otherwise the clip is doing its job and nothing needs to change.")
            else:
                cause = (f"{param} = {value:g} was tuned ({record.protocol}) to the {end} end of its search range "
                         f"[{low:g}, {high:g}]: the best value may lie beyond the range.")
                remedy = (f"Widen the range past this end ({_range_setting(record, param)}) and refit; if the end is "
                          "a natural limit of the parameter, read the result as the CSF preferring that limit.")
            findings.append(Finding("tuned_at_edge", "warning", f"{record.subject} · {param}", value,
                                    low if end == "lower" else high, cause, remedy))
    return findings


def neighbours_above_fraction(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """Neighbour counts (a registry CSF's ``neighbour_counts``: KNN's and NNGuide's k) above
    ``max_neighbour_fraction`` of the rows of the bank they search.  Value: k / bank rows; threshold: the
    fraction."""
    findings = []
    for record in _defined(inputs):
        counts = BY_NAME[record.csf].neighbour_counts if record.csf in BY_NAME else ()
        for param in counts:
            if param not in record.params or not record.bank_rows:
                continue
            k, rows = int(record.params[param]), int(record.bank_rows)
            fraction = k / rows
            if fraction <= thresholds.max_neighbour_fraction:
                continue
            unclipped = (" Grid points and fixed values are not clipped." if record.protocol != "bayes" else
                         " The Bayesian search clips k to csf.tuning.max_neighbour_fraction of the training rows, "
                         "which allowed this many here: that fraction is larger, or the bank is smaller than the "
                         "training split (NNGuide samples its bank).")
            findings.append(Finding(
                "neighbours_above_fraction", "warning", f"{record.subject} · {param}", fraction,
                thresholds.max_neighbour_fraction,
                f"{param} = {k} neighbours is {fraction:.1%} of the {rows} rows of the bank it searches, more than "
                f"{thresholds.max_neighbour_fraction:.1%}: a neighbour count near the bank size averages over much "
                f"of the training set and ranks far-OOD inputs as in-distribution.{unclipped}",
                f"Lower {param}: lower csf.tuning.max_neighbour_fraction, drop the large values from "
                f"csf.tuning.grids.{record.csf}.{param}, or pin it in csf.fixed.{record.csf}; Sun et al. (ICML 2022) "
                "use k = 50 of 50,000 training rows."))
    return findings


def undefined_csfs(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """CSFs that the fit recorded as undefined for a model, with the recorded reason (no value or threshold)."""
    return [Finding(
        "undefined_csf", "warning", record.subject, float("nan"), float("nan"),
        f"{record.name} [{record.variant}] could not be computed for this model: {record.undefined}. It has no "
        "scores, metric rows or ranks for this model.",
        "If the CSF should apply to this model, change what the reason names; otherwise nothing needs to change: "
        "the rankings compare the CSFs that were computed (ranking.incomplete says how a cell treats a CSF "
        "missing from some of its blocks).") for record in inputs.fits if record.undefined]


def tuned_to_equivalent(inputs: AuditInputs, thresholds: Thresholds) -> list[Finding]:
    """Fits whose hyper-parameters sit where the CSF equals another (:data:`EQUIVALENCES`, first match; within
    ``equivalence_tolerance``).  Value: the first parameter's chosen value; threshold: its equivalence value."""
    findings = []
    for record in _defined(inputs):
        if record.protocol == "none":
            continue
        match = equivalence_of(record, thresholds.equivalence_tolerance)
        if match is None:
            continue
        param, target = next(iter(match.at.items()))
        chosen = ", ".join(f"{p} = {float(record.params[p]):g}" for p in match.at)
        how = "fixed in the config" if record.protocol == "fixed" else f"tuned ({record.protocol})"
        findings.append(Finding(
            "tuned_to_equivalent", "info", record.subject, float(record.params[param]), float(target),
            f"{chosen} ({how}): {match.reason}, so this fit {'is' if match.exact else 'is nearly'} {match.equals}.",
            f"Read its ranks as those of {match.equals}, not as a method of its own; to evaluate {record.csf} away "
            f"from {match.equals}, move its search range away from this value."))
    return findings
