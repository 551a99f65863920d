"""Every metric of the results table by its name, and the peer tools' conventions as presets.

:func:`metric` returns the function of any metric name that appears in the results table.  Each takes
``(confidence, residual)`` — ``confidence`` higher = more in-distribution or more likely correct,
``residual`` 1 for an OOD sample or a failure and 0 otherwise — plus, for a few, keyword context arrays
(:attr:`MetricSpec.needs`): ``shifted`` (bool, the samples of the shifted set, for the open-set metrics,
which tell a misclassified ID sample from an OOD one), ``labels`` (the true classes, for the
balanced-accuracy curves) and ``weight`` (per-sample weights, AUROC only, optional).

Name grammar (one ``@`` for a convention or a parameter, two for a conformal correction):

- ``<family>``: csfbench's own convention, e.g. ``aurc``, ``fpr95``, ``brier``;
- ``<family>@<convention>``: the same quantity as a peer computes it, e.g. ``fpr95@openood``,
  ``aupr_in@trapezoid``, ``ece@fd-shifts``, ``aurc@torch-uncertainty``;
- ``<family>@<parameter><value>``: a metric at a configured point, e.g. ``risk@coverage0.8``,
  ``coverage@risk0.05``, ``sgr_coverage@risk0.05_delta0.001``, ``scod_aurc@cost0.5``, ``ccr@fpr0.01``; the SCOD
  areas take torch-uncertainty's sample-wise curve with the suffix ``_torch-uncertainty``
  (``scod_aurc@cost0.5_torch-uncertainty``); ``scod_risk@coverage0.8_cost0.5`` and
  ``scod_coverage@risk0.05_cost0.5`` are the operating points of the SCOD loss;
- ``<classical>@<method>@<delta>``: a calibration-conditional conformal correction (Novello, Dalmau &
  Andéol, arXiv 2403.11532), e.g. ``auroc@dkwm@0.05``: the ID samples (residual 0) are the calibration set.

:data:`PRESETS` name, per tool, the metrics whose values equal that tool's own (docs/methods.md §6 has
the cross-walk): a run with ``evaluation.conventions: [openood]`` can be compared with OpenOOD's tables.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Callable

from csfbench.metrics import achievable, balanced_risk, open_set, probabilistic, selective
from csfbench.metrics import classification as clf
from csfbench.metrics import risk_coverage as rc
from csfbench.metrics.conformal import METHODS as CONFORMAL_METHODS
from csfbench.metrics.conformal import conformal_auroc, conformal_fpr_at_tpr

#: context keywords a metric may need (:attr:`MetricSpec.needs`)
CONTEXT = ("shifted", "labels")


@dataclass(frozen=True)
class MetricSpec:
    """One metric: ``function(confidence, residual, **context) -> float``, its orientation, the context arrays
    it needs (:data:`CONTEXT`), whether it reads confidences as probabilities (only defined within [0, 1]),
    whether it takes the ``failure`` scheme's per-sample weights, and the schemes whose sets it is meaningful
    on (None = every scheme)."""

    name: str
    function: Callable[..., float]
    higher_is_better: bool
    needs: tuple[str, ...] = ()
    probability: bool = False
    weighted: bool = False
    schemes: tuple[str, ...] | None = None


#: the evaluation sets where residual 0 means a correct ID prediction and residual 1 an error or an OOD sample,
#: the only ones on which the joint (open-set, SCOD) metrics mean what their papers define
FAILURE_SETS = ("failure", "failure_pooled")


def _auroc(confidence, residual, weight=None):
    return clf.auroc(confidence, residual, sample_weight=weight)


def _fixed() -> dict[str, MetricSpec]:
    lower, higher = False, True
    specs = [
        MetricSpec("aurc", rc.aurc, lower), MetricSpec("augrc", rc.augrc, lower),
        MetricSpec("e_aurc", rc.e_aurc, lower), MetricSpec("e_augrc", rc.e_augrc, lower),
        MetricSpec("auroc", _auroc, higher, weighted=True),
        MetricSpec("aupr_in", clf.aupr_in, higher), MetricSpec("aupr_out", clf.aupr_out, higher),
        MetricSpec("ece", clf.ece, lower, probability=True), MetricSpec("mce", clf.mce, lower, probability=True),
        MetricSpec("aupr_in@trapezoid", partial(clf.aupr_in, integration="trapezoid"), higher),
        MetricSpec("aupr_out@trapezoid", partial(clf.aupr_out, integration="trapezoid"), higher),
        MetricSpec("ece@fd-shifts", partial(clf.ece, binning="fd-shifts"), lower, probability=True),
        MetricSpec("mce@fd-shifts", partial(clf.mce, binning="fd-shifts"), lower, probability=True),
        MetricSpec("aurc@torch-uncertainty", partial(rc.aurc, convention="torch-uncertainty"), lower),
        MetricSpec("augrc@torch-uncertainty", partial(rc.augrc, convention="torch-uncertainty"), lower),
        MetricSpec("aurc_ba", balanced_risk.aurc_ba, lower, needs=("labels",)),
        MetricSpec("augrc_ba", balanced_risk.augrc_ba, lower, needs=("labels",)),
        MetricSpec("aurc_achievable", achievable.aurc_achievable, lower),
        MetricSpec("e_aurc_achievable", achievable.e_aurc_achievable, lower),
        MetricSpec("brier", probabilistic.brier, lower, probability=True),
        MetricSpec("nll", probabilistic.nll, lower, probability=True),
        MetricSpec("autc", open_set.autc, lower),
        MetricSpec("oscr", open_set.oscr, higher, needs=("shifted",), schemes=FAILURE_SETS),
    ]
    for percent in (95, 99):
        tpr = percent / 100
        specs += [
            MetricSpec(f"fpr{percent}", partial(clf.fpr_at_tpr, tpr=tpr, positive="success"), lower),
            MetricSpec(f"fpr{percent}_failure_positive", partial(clf.fpr_at_tpr, tpr=tpr, positive="failure"),
                       lower),
            MetricSpec(f"fpr{percent}@openood",
                       partial(clf.fpr_at_tpr, tpr=tpr, positive="failure", rule="openood"), lower),
        ]
    specs.append(MetricSpec("fpr95@fd-shifts", partial(clf.fpr_at_tpr, tpr=0.95, positive="success",
                                                       rule="fd-shifts"), lower))
    return {spec.name: spec for spec in specs}


_FIXED = _fixed()
_NUMBER = r"(\d+(?:\.\d+)?(?:e-?\d+)?)"


@dataclass(frozen=True)
class _Family:
    """A metric family with numeric parameters in its name: ``pattern`` (a regex of the whole name with one
    group per parameter), ``build(*values) -> MetricSpec`` and an ``example`` name for messages."""

    pattern: re.Pattern
    build: Callable[..., MetricSpec]
    example: str
    bounds: tuple[tuple[float, float, bool], ...] = field(default=())  # (low, high, low open) per parameter


def _family(regex: str, example: str, bounds, build) -> _Family:
    return _Family(re.compile(regex), build, example, tuple(bounds))


def _rc(suffix: str | None) -> str:
    """The risk–coverage convention of an optional ``_torch-uncertainty`` name suffix."""
    return "torch-uncertainty" if suffix else "csfbench"


_OPEN_UNIT = (0.0, 1.0, True)  # (0, 1]
_CLOSED_UNIT = (0.0, 1.0, False)  # [0, 1]
_FAMILIES = (
    _family(rf"risk@coverage{_NUMBER}", "risk@coverage0.8", [_OPEN_UNIT],
            lambda name, c: MetricSpec(name, partial(selective.risk_at_coverage, coverage=c), False)),
    _family(rf"coverage@risk{_NUMBER}", "coverage@risk0.05", [_CLOSED_UNIT],
            lambda name, r: MetricSpec(name, partial(selective.coverage_at_risk, risk=r), True)),
    _family(rf"sgr_coverage@risk{_NUMBER}_delta{_NUMBER}", "sgr_coverage@risk0.05_delta0.001",
            [_CLOSED_UNIT, _OPEN_UNIT],
            lambda name, r, d: MetricSpec(name, partial(selective.selective_guaranteed_risk, risk=r, delta=d), True)),
    _family(rf"scod_aurc@cost{_NUMBER}(_torch-uncertainty)?", "scod_aurc@cost0.5", [_CLOSED_UNIT],
            lambda name, c, tu: MetricSpec(name, partial(selective.scod_aurc, ood_cost=c, convention=_rc(tu)), False,
                                           needs=("shifted",), schemes=FAILURE_SETS)),
    _family(rf"scod_augrc@cost{_NUMBER}(_torch-uncertainty)?", "scod_augrc@cost0.5_torch-uncertainty",
            [_CLOSED_UNIT],
            lambda name, c, tu: MetricSpec(name, partial(selective.scod_augrc, ood_cost=c, convention=_rc(tu)), False,
                                           needs=("shifted",), schemes=FAILURE_SETS)),
    _family(rf"scod_risk@coverage{_NUMBER}_cost{_NUMBER}", "scod_risk@coverage0.8_cost0.5", [_OPEN_UNIT, _CLOSED_UNIT],
            lambda name, c, cost: MetricSpec(name, partial(selective.scod_risk_at_coverage, coverage=c, ood_cost=cost),
                                             False, needs=("shifted",), schemes=FAILURE_SETS)),
    _family(rf"scod_coverage@risk{_NUMBER}_cost{_NUMBER}", "scod_coverage@risk0.05_cost0.5",
            [_CLOSED_UNIT, _CLOSED_UNIT],
            lambda name, r, cost: MetricSpec(name, partial(selective.scod_coverage_at_risk, risk=r, ood_cost=cost),
                                             True, needs=("shifted",), schemes=FAILURE_SETS)),
    _family(rf"ccr@fpr{_NUMBER}", "ccr@fpr0.01", [_OPEN_UNIT],
            lambda name, f: MetricSpec(name, partial(open_set.ccr_at_fpr, fpr=f), True, needs=("shifted",),
                                       schemes=FAILURE_SETS)),
)

#: the conformal corrections of the results table: ``<classical>@<method>@<delta>``
CONFORMAL_BASES = ("auroc", "fpr95_failure_positive", "fpr99_failure_positive")


def _conformal_function(base: str, method: str, delta: float) -> Callable[..., float]:
    def corrected(confidence, residual, n_mc: int = 10_000, seed: int = 0) -> float:
        conf, failure = clf._binary_pair(confidence, residual, base)
        calibration, shifted = conf[~failure], conf[failure]
        if base == "auroc":
            return conformal_auroc(calibration, shifted, delta, method, n_mc=n_mc, seed=seed)
        tpr = 0.95 if base.startswith("fpr95") else 0.99
        return conformal_fpr_at_tpr(calibration, shifted, delta, method, tpr, n_mc=n_mc, seed=seed)
    corrected.__doc__ = (f"{base} corrected by the {method} band at δ = {delta:g} (csfbench.metrics.conformal); "
                         "the ID samples (residual 0) are the calibration set, the others the shifted set; "
                         "``n_mc`` and ``seed`` set the mc_search simulation.")
    return corrected


def _conformal(name: str) -> MetricSpec | None:
    parts = name.split("@")
    if len(parts) != 3 or parts[0] not in CONFORMAL_BASES or parts[1] not in CONFORMAL_METHODS:
        return None
    try:
        delta = float(parts[2])
    except ValueError:
        return None
    if not 0 < delta < 1:
        return None
    return MetricSpec(name, _conformal_function(parts[0], parts[1], delta), parts[0] == "auroc")


def _parametric(name: str) -> MetricSpec | None:
    for family in _FAMILIES:
        match = family.pattern.fullmatch(name)
        if match is None:
            continue
        values = [float(v) for v in match.groups()[:len(family.bounds)]]
        for value, (low, high, low_open) in zip(values, family.bounds):
            if value > high or value < low or (low_open and value == low):
                raise UnknownMetricError(f"metric {name!r}: {value:g} lies outside "
                                         f"{'(' if low_open else '['}{low:g}, {high:g}]")
        return family.build(name, *values, *match.groups()[len(family.bounds):])
    return None


class UnknownMetricError(ValueError):
    """A metric name that :func:`metric_spec` does not know."""


def known_names() -> str:
    """The known names and families, for error messages and docs."""
    families = ", ".join(f.example for f in _FAMILIES)
    return (f"{', '.join(sorted(_FIXED))}; parametric: {families}; conformal: "
            f"<{'|'.join(CONFORMAL_BASES)}>@<{'|'.join(CONFORMAL_METHODS)}>@<delta>")


@lru_cache(maxsize=None)
def metric_spec(name: str) -> MetricSpec:
    """The :class:`MetricSpec` of a metric name (:mod:`this module's grammar <csfbench.metrics.registry>`);
    an unknown name raises :class:`UnknownMetricError` listing the known ones."""
    spec = _FIXED.get(name) or _parametric(name) or _conformal(name)
    if spec is None:
        raise UnknownMetricError(f"unknown metric {name!r}; known: {known_names()}")
    return spec


def metric(name: str) -> Callable[..., float]:
    """The function of a metric name of the results table, convention or parameter suffix included:
    ``metric("fpr95@openood")(confidence, residual)``.

    Every function takes ``confidence`` (higher = more in-distribution or more likely correct) and
    ``residual`` (1 for an OOD sample or a failure, 0 otherwise) and returns a float; the open-set and SCOD
    metrics also take ``shifted=`` (bool, the OOD samples), the balanced-accuracy curves ``labels=``.
    Orientation: :func:`higher_is_better`.  An unknown name raises :class:`UnknownMetricError`.
    """
    return metric_spec(name).function


def higher_is_better(name: str) -> bool:
    """Orientation of a metric name: True where higher is better (a conformal correction has its base's)."""
    return metric_spec(name).higher_is_better


#: csfbench's default metric rows (the names the results table always had)
DEFAULT_METRICS = ("aurc", "augrc", "e_aurc", "e_augrc", "auroc", "fpr95", "fpr95_failure_positive", "fpr99",
                   "fpr99_failure_positive", "aupr_in", "aupr_out", "ece", "mce")
#: per tool, the metric names whose values equal that tool's own computation (docs/methods.md §6)
PRESETS = {
    "csfbench": DEFAULT_METRICS,
    "openood": ("auroc", "aupr_in@trapezoid", "aupr_out@trapezoid", "fpr95@openood",
                "ccr@fpr0.0001", "ccr@fpr0.001", "ccr@fpr0.01", "ccr@fpr0.1"),
    "pytorch-ood": ("auroc", "aupr_in@trapezoid", "aupr_out@trapezoid", "fpr95_failure_positive", "autc", "oscr"),
    "fd-shifts": ("auroc", "fpr95@fd-shifts", "aupr_in", "aupr_out", "aurc", "e_aurc", "augrc", "e_augrc",
                  "aurc_achievable", "e_aurc_achievable", "aurc_ba", "augrc_ba", "ece@fd-shifts",
                  "mce@fd-shifts", "nll"),
    "torch-uncertainty": ("auroc", "aupr_out", "fpr95_failure_positive", "aurc@torch-uncertainty",
                          "augrc@torch-uncertainty", "risk@coverage0.8", "coverage@risk0.05",
                          "scod_aurc@cost0.5_torch-uncertainty", "scod_augrc@cost0.5_torch-uncertainty",
                          "scod_risk@coverage0.8_cost0.5", "scod_coverage@risk0.05_cost0.5"),
}


def metric_names(conventions=("csfbench",), extra=()) -> tuple[str, ...]:
    """The metric rows of a run: the presets of ``conventions`` (:data:`PRESETS`) then the ``extra`` names, each
    once, in that order.  Unknown conventions or names raise ValueError."""
    unknown = [c for c in conventions if c not in PRESETS]
    if unknown:
        raise ValueError(f"unknown convention(s) {unknown}; known: {sorted(PRESETS)}")
    names = [name for c in conventions for name in PRESETS[c]] + list(extra)
    for name in names:
        metric_spec(name)
    return tuple(dict.fromkeys(names))
