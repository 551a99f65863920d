"""Long-format metric rows for one (model, fit group, evaluation set), one per value (:data:`COLUMNS`).

Which schemes apply (Claros-Olivares & Brockmeier, §4.1; Yang et al., ICLR 2024, Table 1; docs/methods.md):

- ``misclf`` on the ID splits (val, test) and on every covariate/adversarial set, which keep labels;
- ``correct_vs_ood``, ``newclass`` and ``failure`` for every shifted set against the ID test set.

MC-dropout variants are judged against the MC-mean prediction's correctness (``mcd`` = True rows).
The column ``id_set`` names the set in the ID role of a row: ``test`` (the ID test split) for the OOD schemes of
a shifted set, the calibration split for conformal rows, the pair's ID-role set for the pair analyses' rows
(:mod:`csfbench.stages.analyses`); null for the ``misclf`` rows, which judge a set on its own.
The columns :data:`GROUP_COLUMNS` (``corruption``, ``severity``, ``rendition``) carry the set's group keys, null
where the set has none, so results can be grouped by corruption, severity and rendition.
Metrics undefined for a set (e.g. AUROC when nothing fails) are omitted by
:func:`csfbench.metrics.evaluate`, which logs why.

Conformal rows (:func:`conformal_rows`, scheme ``conformal``; Novello, Dalmau & Andéol, arXiv 2403.11532):
ID calibration confidences against every sample of a shifted set, OOD = positive.  Their metrics are
``auroc``, ``fpr95_failure_positive`` and ``fpr99_failure_positive`` (classical, on the calibration set) and
the same names followed by ``@{method}@{delta}`` for the calibration-conditional corrections; the rows also
fill the columns :data:`CONFORMAL_COLUMNS`, which are empty (null) in every other row.

Bootstrap intervals (:class:`Bootstrap`, :func:`csfbench.metrics.bootstrap.intervals`; docs/methods.md §6.4): every
row of :func:`metric_rows` carries :data:`BOOTSTRAP_COLUMNS` — ``ci_low``, ``ci_high`` (the percentile interval, in
the value's units), ``n_boot`` (the replicates; 0 without an interval) and ``ci_level`` — NaN/0 where no interval
is computed: the setting is off (``n_boot`` 0), the row's split or metric is not selected, the metric has no
weighted replicate (ECE, MCE), or the set has a single label class.  The replicates of one row group (model, mode,
CSF variant, set, scheme) are drawn once for all its metrics, with the seed :func:`bootstrap_seed` of (model, mode,
set, scheme): every CSF variant of a model, mode, set and scheme is evaluated on the same resamples (a paired
bootstrap), so replicate b of two variants compares them on one resample, as the ranking's stability needs.
With ``Bootstrap.replicates`` > 0 the rows of ``Bootstrap.replicate_metrics`` that have an interval also keep
their first ``replicates`` replicate values (column :data:`REPLICATE_COLUMN`, a float64 array; None in the other
rows), which the ranking's clique stability reads (:mod:`csfbench.aggregate.stability`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from csfbench.metrics import DEFAULT_METRICS, UndefinedMetricError, build_scheme, evaluate
from csfbench.metrics.bootstrap import SUPPORTED as BOOTSTRAP_METRICS
from csfbench.metrics.bootstrap import percentile_interval, replicate_values
from csfbench.metrics.conformal import band_metrics
from csfbench.seeds import derive_seed
from csfbench.specs import GROUP_KEYS, EnsembleSpec, EvalSet, ModelSpec

log = logging.getLogger(__name__)

#: the columns that name a row's model: its source, configuration and run, and for a deep ensemble (run 0) its member
#: runs (``members``: ``1-2-3``; null for a single model)
MODEL_COLUMNS = ["source", "backbone", "paradigm", "dropout", "reward", "run", "members"]
COLUMNS = MODEL_COLUMNS + ["mcd", "csf", "variant", "tuning_protocol",
           "dataset", "id_set", "shift_type", "regime", "corruption", "severity", "rendition", "scheme", "split",
           "metric", "value"]
#: the evaluation set's group keys (:attr:`csfbench.specs.EvalSet.groups`): attributes of the dataset, not part of
#: a row's key, null where they do not apply
GROUP_COLUMNS = list(GROUP_KEYS)
SHIFT_SCHEMES = ("correct_vs_ood", "newclass", "failure")
#: ``id_set`` of the rows whose ID role is the ID test split
ID_TEST = "test"
#: attributes of a conformal row (not part of a row's key: the metric name holds method and δ)
CONFORMAL_COLUMNS = ["delta", "conformal_method", "n_cal", "calibration", "n_mc", "band_seed"]
#: the band method whose rows record its simulation (``n_mc`` draws, ``band_seed``; null for the closed forms)
SIMULATED_METHOD = "mc_search"
CONFORMAL_SCHEME = "conformal"
#: the bootstrap interval of a metric row (:class:`Bootstrap`): not part of a row's key; NaN / 0 without one
BOOTSTRAP_COLUMNS = ["ci_low", "ci_high", "n_boot", "ci_level"]
#: the kept bootstrap replicate values of a metric row (:class:`Bootstrap` ``replicates``); the metric files' only
#: column that is not in the results table
REPLICATE_COLUMN = "replicates"
#: the splits of the metric rows (:func:`metric_rows`' ``split`` column)
ROW_SPLITS = ("val", "test")
#: conformal metric name of FPR@TPRβ: the classical metric of the same meaning (OOD = failure = positive)
FPR_METRIC = {0.95: "fpr95_failure_positive", 0.99: "fpr99_failure_positive"}


def with_interval_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every column of :data:`BOOTSTRAP_COLUMNS`, NaN where it had none (a results table written
    before the columns existed)."""
    missing = {c: np.nan for c in BOOTSTRAP_COLUMNS if c not in frame.columns}
    return frame.assign(**missing) if missing else frame


@dataclass(frozen=True)
class Bootstrap:
    """The bootstrap intervals of :func:`metric_rows`: ``n_boot`` stratified replicates per row group (0 = no
    intervals), percentile intervals at ``level`` (in (0, 1)), the base ``seed`` of :func:`bootstrap_seed`, the
    ``metrics`` that get intervals (names of :data:`csfbench.metrics.bootstrap.SUPPORTED`) and the ``splits``
    (:data:`ROW_SPLITS`) whose rows get them; the rows of ``replicate_metrics`` keep their first ``replicates``
    replicate values (at most ``n_boot``; 0 = none).  Invalid values raise ValueError naming them."""

    n_boot: int = 0
    level: float = 0.95
    seed: int = 0
    metrics: tuple[str, ...] = ()
    splits: tuple[str, ...] = ("test",)
    replicates: int = 0
    replicate_metrics: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("metrics", "splits", "replicate_metrics"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if isinstance(self.replicates, bool) or int(self.replicates) != self.replicates or not (
                0 <= self.replicates <= self.n_boot):
            raise ValueError(f"bootstrap replicates must be an integer in [0, n_boot = {self.n_boot}], "
                             f"got {self.replicates!r}")
        if isinstance(self.n_boot, bool) or int(self.n_boot) != self.n_boot or self.n_boot < 0:
            raise ValueError(f"bootstrap n_boot must be an integer >= 0, got {self.n_boot!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"bootstrap level must lie in (0, 1), got {self.level!r}")
        unsupported = [name for name in self.metrics if name not in BOOTSTRAP_METRICS]
        if unsupported:
            raise ValueError(f"no bootstrap replicate for the metric(s) {unsupported}; supported: "
                             f"{sorted(BOOTSTRAP_METRICS)}")
        unknown = [split for split in self.splits if split not in ROW_SPLITS]
        if unknown:
            raise ValueError(f"bootstrap splits must be among {ROW_SPLITS}, got {unknown}")

    def wanted(self, split: str) -> tuple[str, ...]:
        """The metrics that get intervals in the rows of ``split`` (none when off)."""
        return self.metrics if self.n_boot and split in self.splits else ()


def bootstrap_seed(seed: int, spec: ModelSpec, mode: str, dataset: str, scheme: str) -> int:
    """The seed of the replicates of one (model, mode, set, scheme): :func:`csfbench.seeds.derive_seed` of the base
    ``seed`` and that identity (source, model, mode ``det``/``mcd``, evaluation set, scheme), so that a row group's
    intervals do not depend on which other groups, sets or jobs were evaluated, nor in which order.  The CSF variant
    is not part of it: the variants of one model, mode, set and scheme share their labels, hence their resamples
    (paired replicates, :func:`csfbench.metrics.bootstrap.replicate_values`)."""
    return derive_seed(seed, spec.source, spec.model, mode, dataset, scheme)


def conformal_metric(base: str, method: str, delta: float) -> str:
    """The metric name of a conformal correction, e.g. ``auroc@mc_gamma0@0.05``."""
    return f"{base}@{method}@{delta:g}"


def base_metric(metric: str) -> str:
    """The classical metric a (conformal) metric name corrects: ``auroc@dkwm@0.05`` -> ``auroc``."""
    return metric.split("@", 1)[0]


def tuning_protocols(metrics_files) -> dict[tuple[bool, str, str], str | None]:
    """{(mcd flag, csf, variant): tuning protocol} of the rows of metric files (:func:`metric_rows`')."""
    protocols = {}
    for path in metrics_files:
        rows = pd.read_parquet(path, columns=["mcd", "csf", "variant", "tuning_protocol"]).drop_duplicates()
        protocols.update({(bool(r.mcd), r.csf, r.variant): r.tuning_protocol for r in rows.itertuples()})
    return protocols


def schemes_for(eval_set: EvalSet) -> tuple[str, ...]:
    """The schemes evaluated for an evaluation set (``eval_set``: name, shift_type)."""
    if eval_set.shift_type == "id":
        return ("misclf",)
    if eval_set.shift_type in ("covariate", "adversarial"):
        return ("misclf",) + SHIFT_SCHEMES
    return SHIFT_SCHEMES


def id_role(scheme: str) -> str | None:
    """The set in the ID role of a row of :func:`metric_rows` under ``scheme``: the ID test split for the OOD
    schemes, None for ``misclf``, which judges a set on its own."""
    return None if scheme == "misclf" else ID_TEST


def ensemble_rows(frame: pd.DataFrame) -> pd.Series:
    """Which rows of a metric-row frame are a deep ensemble's (``members`` not null); none in a table written before
    the column existed."""
    if "members" not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame["members"].notna()


def model_columns(spec: ModelSpec | EnsembleSpec) -> dict[str, Any]:
    """The :data:`MODEL_COLUMNS` values of a model's (or an ensemble's) rows."""
    return {**{k: getattr(spec, k) for k in MODEL_COLUMNS if k != "members"}, "members": spec.member_runs}


def metric_rows(spec: ModelSpec | EnsembleSpec, eval_set: EvalSet, scores: dict, id_scores: dict | None,
                metrics: tuple[str, ...] = DEFAULT_METRICS, bootstrap: Bootstrap = Bootstrap()) -> pd.DataFrame:
    """Rows for every mode/CSF/variant/scheme/metric of one scores file (columns :data:`COLUMNS` then
    :data:`BOOTSTRAP_COLUMNS`).

    ``scores`` and ``id_scores`` are :func:`csfbench.csf.store.read_scores` mappings of the set and
    of the ID test set (``id_scores`` is needed unless the set is an ID split).  A mode of ``scores`` may
    carry ``"protocols"``, {(csf, variant): the protocol that chose its hyper-parameters}
    (:func:`csfbench.csf.engine.tuning_protocols`), written to the ``tuning_protocol`` column (None without),
    and ``"labels"`` (the true classes, −1 = unlabelled), which the ``misclf`` rows of a labelled set pass to the
    balanced-accuracy metrics.  ``metrics``: the metric names (:mod:`csfbench.metrics.registry`).
    ``bootstrap``: the intervals (:class:`Bootstrap`; default: none), computed on the scheme's evaluation set
    (:func:`csfbench.metrics.build_scheme`) by :func:`_row_intervals`; with ``bootstrap.replicates`` > 0 the rows
    end with the column :data:`REPLICATE_COLUMN`.
    """
    schemes = schemes_for(eval_set)
    if any(s in SHIFT_SCHEMES for s in schemes) and id_scores is None:
        raise ValueError(f"{eval_set.name}: the ID test scores are needed for the {SHIFT_SCHEMES} schemes")
    base = model_columns(spec)
    base.update(dataset=eval_set.name, shift_type=eval_set.shift_type, regime=eval_set.regime,
                split="val" if eval_set.name == "val" else "test", **eval_set.groups)
    wanted = bootstrap.wanted(base["split"])
    rows = []
    for mode, data in scores.items():
        protocols = data.get("protocols", {})
        labels = data.get("labels")
        labels = labels if labels is not None and labels.size and labels.min() >= 0 else None
        for (csf, variant), conf in sorted(data["scores"].items()):
            for scheme in schemes:
                if scheme == "misclf":
                    built = build_scheme("misclf", conf, data["correct"], id_labels=labels)
                else:
                    ref = id_scores[mode]
                    built = build_scheme(scheme, ref["scores"][(csf, variant)], ref["correct"], conf)
                values = evaluate(built, metrics)
                chosen = [m for m in wanted if m in values]
                bounds = _row_intervals(built, chosen, bootstrap, bootstrap_seed(
                    bootstrap.seed, spec, mode, eval_set.name, scheme)) if chosen else {}
                for metric, value in values.items():
                    rows.append({**base, "mcd": mode == "mcd", "csf": csf, "variant": variant,
                                 "tuning_protocol": protocols.get((csf, variant)), "scheme": scheme,
                                 "id_set": id_role(scheme), "metric": metric,
                                 "value": float(value), **bounds.get(metric, _NO_INTERVAL)})
    kept = [REPLICATE_COLUMN] if bootstrap.replicates else []
    return pd.DataFrame(rows, columns=COLUMNS + BOOTSTRAP_COLUMNS + kept)


#: the bootstrap columns of a row without an interval
_NO_INTERVAL = {"ci_low": np.nan, "ci_high": np.nan, "n_boot": 0, "ci_level": np.nan, REPLICATE_COLUMN: None}


def _row_intervals(built, metrics: list[str], bootstrap: Bootstrap, seed: int) -> dict[str, dict]:
    """{metric: its :data:`BOOTSTRAP_COLUMNS` values} of one scheme's evaluation set ``built``
    (:class:`csfbench.metrics.SchemeData`), all ``metrics`` (at least one) from the same replicates drawn with
    ``seed``.

    Resampling is stratified by the set's binary residual (ID and OOD for the OOD schemes, correct and failure for
    ``misclf``) and within it by ``built.shifted`` (the ID and the shifted set are separate samples: in the
    ``failure`` scheme the misclassified ID and the shifted samples keep their numbers, and with them the AUROC's
    weights 1/n_id, 1/n_shift, which the replicates carry).  A set with a single class gets no intervals.  The
    metrics of ``bootstrap.replicate_metrics`` also keep their first ``bootstrap.replicates`` replicate values."""
    try:
        found = replicate_values(metrics, built.confidence, built.residual, n_boot=bootstrap.n_boot, seed=seed,
                                 strata=built.shifted, weight=built.weight)
    except UndefinedMetricError as err:
        log.debug("no bootstrap intervals for scheme %s: %s", built.scheme, err)
        return {}
    bounds = {}
    for metric, values in found.items():
        low, high = percentile_interval(values, bootstrap.level)
        kept = values[:bootstrap.replicates] if bootstrap.replicates and metric in bootstrap.replicate_metrics else None
        bounds[metric] = {"ci_low": low, "ci_high": high, "n_boot": bootstrap.n_boot, "ci_level": bootstrap.level,
                          REPLICATE_COLUMN: kept}
    return bounds



def conformal_rows(spec: ModelSpec, eval_set: EvalSet, calibration: dict, scores: dict, bands: dict,
                   tprs: tuple[float, ...], calibration_name: str, protocols: dict,
                   groups: dict | None = None, simulation: tuple[int, int] | None = None) -> pd.DataFrame:
    """Conformal rows of one shifted set: per mode and CSF variant, the classical AUROC and FPR@TPRβ of the ID
    calibration confidences against the set's, and their corrections by every band.

    ``calibration`` and ``scores``: {mode: {(csf, variant): confidences}} of the calibration samples and of the
    set; ``bands``: {(method, δ): band array for n = the calibration size}; ``protocols``: {(mcd flag, csf,
    variant): tuning protocol} (the classical metric rows' column); ``groups``: the set's group keys (default
    ``eval_set.groups``; a set read back from a scores file: :func:`csfbench.csf.store.set_groups`);
    ``simulation``: (n_mc, seed) of the ``mc_search`` bands, written to its rows' ``n_mc`` and ``band_seed``.
    """
    base = model_columns(spec)
    base.update(dataset=eval_set.name, shift_type=eval_set.shift_type, regime=eval_set.regime, split="test",
                scheme=CONFORMAL_SCHEME, calibration=calibration_name, id_set=calibration_name,
                **(eval_set.groups if groups is None else groups))
    rows = []
    for mode, per_variant in scores.items():
        for (csf, variant), conf in sorted(per_variant.items()):
            id_conf = calibration[mode][(csf, variant)]
            common = {**base, "mcd": mode == "mcd", "csf": csf, "variant": variant, "n_cal": len(id_conf),
                      "tuning_protocol": protocols.get((mode == "mcd", csf, variant))}
            for number, ((method, delta), band) in enumerate(sorted(bands.items())):
                values = band_metrics(id_conf, conf, band, tprs)
                for key, (classical, conformal) in values.items():
                    name = "auroc" if key == "auroc" else FPR_METRIC[float(key.split("@")[1])]
                    if number == 0:
                        rows.append({**common, "metric": name, "value": classical, "conformal_method": "none"})
                    simulated = dict(zip(("n_mc", "band_seed"), simulation)) if (
                        simulation is not None and method == SIMULATED_METHOD) else {}
                    rows.append({**common, "metric": conformal_metric(name, method, delta), "value": conformal,
                                 "conformal_method": method, "delta": delta, **simulated})
    return pd.DataFrame(rows, columns=COLUMNS + CONFORMAL_COLUMNS)
