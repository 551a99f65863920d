"""Typed config sections of the stages: one frozen dataclass per section (or part of one) that a stage reads.

Field names are the schema's keys (``config/schema.yaml``, which holds every default); no field has a default
here: the validated config has every key, so :meth:`Section.from_dict` requires each one and refuses any
other (:class:`SectionKeyError`).  A JSON array becomes a tuple (a nested section's array: a tuple of that
section), a nested mapping its section; every other value is kept as the config gives it, so
:meth:`Section.to_dict` gives back the mapping it was built from (:meth:`Section.to_json`: sorted keys, the
inverse of :meth:`Section.from_json`).  The job scripts build these from the params the rules pass
(:meth:`Section.from_param`: a JSON string or a mapping) and hand them to the stage functions.

Only the standard library is imported: the sections load without side effects, before any heavy library.
"""
from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from csfbench.errors import ConfigError, CsfbenchError


class SectionKeyError(ConfigError):
    """A mapping that lacks a key of its section or holds one the section does not have."""

    def __init__(self, section: str, missing: list[str], unknown: list[str], keys: list[str]):
        self.key_path = section
        self.expected = f"the keys {keys}"
        self.found = {"missing": missing, "unknown": unknown}
        parts = ([f"missing key(s) {missing}"] if missing else []) + ([f"unknown key(s) {unknown}"] if unknown else [])
        CsfbenchError.__init__(self, f"config section '{section}': {'; '.join(parts)} (its keys: {keys}; the "
                                     "validated config fills in every default)")


def _convert(hint: Any, value: Any, where: str) -> Any:
    """``value`` (JSON data) as field type ``hint``: a nested section, a tuple, or unchanged."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _convert(hint, value, where)
    if isinstance(hint, type) and issubclass(hint, Section):
        return hint.from_dict(value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(where, "a list", value)
        (item, *_) = typing.get_args(hint)
        return tuple(_convert(item, v, f"{where}/{i}") for i, v in enumerate(value))
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


class Section:
    """Base of the sections: strict construction from the config's mapping and a JSON round trip."""

    #: the section's key path in the config, for error messages
    PATH: ClassVar[str] = ""
    #: keys the schema leaves optional (absent = None); every other key is required
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """The section of mapping ``data``; :class:`SectionKeyError` when a key is missing or unknown."""
        if not isinstance(data, Mapping):
            raise ConfigError(cls.PATH, "a mapping", data)
        names = [f.name for f in fields(cls)]
        missing = sorted(set(names) - set(data) - cls.OPTIONAL)
        unknown = sorted(set(data) - set(names))
        if missing or unknown:
            raise SectionKeyError(cls.PATH, missing, unknown, sorted(names))
        hints = typing.get_type_hints(cls)
        return cls(**{name: _convert(hints[name], data.get(name), f"{cls.PATH}/{name}") for name in names})

    @classmethod
    def from_json(cls, text: str):
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_param(cls, value: str | Mapping[str, Any]):
        """From a rule's param as the rules pass it: a JSON string or the mapping itself."""
        return cls.from_json(value) if isinstance(value, str) else cls.from_dict(value)

    def to_dict(self) -> dict[str, Any]:
        """The config mapping of the section (tuples as lists; an optional key that is None left out)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if not (f.name in self.OPTIONAL and getattr(self, f.name) is None)}

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): equal sections give equal strings; :meth:`from_json` inverts it."""
        return json.dumps(self.to_dict(), sort_keys=True)


# ---- conformal ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConformalCalibration(Section):
    """``conformal.calibration``: where the ID calibration scores of the conformal rows come from."""

    PATH: ClassVar[str] = "conformal/calibration"

    split: str
    """the split the calibration samples are drawn from (``test``; ``val`` is refused by the config check)"""
    n_cal: int
    """calibration size n: samples of the ID test split"""
    seed: int
    """seed of the draw of the calibration samples"""


@dataclass(frozen=True)
class ConformalFigure(Section):
    """``conformal.figure``: the report's figure of the classical and conformal ROC."""

    PATH: ClassVar[str] = "conformal/figure"

    csf: str
    """the CSF variant drawn (``MSR``, ``KNN:global``: :func:`csfbench.report.figures.parse_variant`)"""
    band_sizes: tuple[int, ...]
    """calibration sizes n of the band-width curves: samples"""


@dataclass(frozen=True)
class Raps(Section):
    """``conformal.prediction_sets.raps``: RAPS' regularisation λ·max(0, rank + 1 − k_reg)."""

    PATH: ClassVar[str] = "conformal/prediction_sets/raps"

    lam: float
    """λ: added to the non-conformity (a score in [0, 1] units) per rank beyond k_reg"""
    k_reg: int
    """k_reg: labels (ranks) free of the penalty"""


@dataclass(frozen=True)
class PredictionSets(Section):
    """``conformal.prediction_sets``: LAC, APS and RAPS sets with class-dependent conformity scores."""

    PATH: ClassVar[str] = "conformal/prediction_sets"

    scores: tuple[str, ...]
    """conformity scores (:data:`csfbench.csf.conformity_scores.CONFORMITY_SCORES`)"""
    methods: tuple[str, ...]
    """set methods (``lac``, ``aps``, ``raps``)"""
    alphas: tuple[float, ...]
    """miscoverage levels α: probabilities"""
    cal_fraction: float
    """fraction of the ID test split used for calibration (the rest is evaluated)"""
    repeats: int
    """draws of the uniforms of APS and RAPS"""
    seed: int
    """seed of the calibration split and of the uniforms"""
    raps: Raps
    react_percentile: float
    """ReAct's clip: this percentile (0-100) of the training activations"""
    odin_temperature: float
    """ODIN's temperature T (logits are divided by it)"""
    knn_k: int
    """KNN: the k-th nearest training feature of each class (a count of neighbours)"""


@dataclass(frozen=True)
class ConformalFit(Section):
    """The part of ``conformal`` that the metric rows read (rule ``conformal_metrics``' param: the section
    without ``figure`` and ``prediction_sets``, so that a change of those reruns no metric job)."""

    PATH: ClassVar[str] = "conformal"

    enabled: bool
    """false = the stage has no jobs"""
    delta: tuple[float, ...]
    """levels δ of the correction bands: probabilities (a band holds with probability >= 1 − δ)"""
    methods: tuple[str, ...]
    """correction bands (:data:`csfbench.metrics.conformal.METHODS`)"""
    n_mc: int
    """simulated order-statistic vectors of ``mc_search``"""
    seed: int
    """seed of ``mc_search``'s simulation"""
    tpr: tuple[float, ...]
    """TPR levels β of the conformal FPR@TPR rows: fractions (OOD = positive)"""
    calibration: ConformalCalibration


@dataclass(frozen=True)
class Conformal(ConformalFit):
    """The config's ``conformal`` section (rule ``conformal_report``'s param)."""

    figure: ConformalFigure
    prediction_sets: PredictionSets


@dataclass(frozen=True)
class CorrectionBand(Section):
    """The key of one correction band file (rule ``conformal_band``'s param ``band``)."""

    PATH: ClassVar[str] = "conformal_band"

    method: str
    """the band (:data:`csfbench.metrics.conformal.METHODS`)"""
    n: int
    """calibration size n: samples (the band holds n values b_1..b_n)"""
    delta: float
    """level δ: a probability"""
    n_mc: int
    """simulated order-statistic vectors (``mc_search``)"""
    seed: int
    """seed of the simulation (``mc_search``)"""


# ---- analyses ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AnalysisPair(Section):
    """An explicit (ID-role set, OOD-role set) pair of ``analyses.pairs``."""

    PATH: ClassVar[str] = "analyses/pairs/*"
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"schemes"})

    id: str
    """the ID-role set: ``test`` (the ID test split) or a covariate set"""
    ood: str
    """the OOD-role set: a semantic or covariate set"""
    schemes: tuple[str, ...] | None
    """this pair's schemes; None (the key absent) = ``analyses.schemes``"""


@dataclass(frozen=True)
class Analyses(Section):
    """The config's ``analyses`` section (rule ``pair_analyses``' param ``settings``)."""

    PATH: ClassVar[str] = "analyses"

    enabled: bool
    """false = the stage has no jobs"""
    pairs: tuple[AnalysisPair, ...]
    covariate_x_semantic: bool
    """add the ID test split and every covariate set, each against every semantic set"""
    schemes: tuple[str, ...]
    """the schemes of every pair's metric rows (``csfbench.stages.analyses.PAIR_SCHEMES``)"""
    csfs: tuple[str, ...] | None
    """CSFs analysed (their variant without projection); None = every CSF of fit group none"""
    reference_csf: str
    """the CSF the pair grid's changes are measured against"""
    gallery_k: int
    """samples per set of the rank-gap gallery"""
    distance_bins: int
    """equal-count distance bins of the distance-controlled AUROC (at most the smallest set's size)"""
    frr_quantile: float
    """q of the transferred threshold: a fraction of the semantic set rejected"""


# ---- projnorm ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Projnorm(Section):
    """The config's ``projnorm`` section (rules ``projnorm_reference`` and ``projnorm_shift``, param
    ``settings``)."""

    PATH: ClassVar[str] = "projnorm"

    enabled: bool
    """false = the stage has no jobs"""
    iterations: int
    """SGD steps of each fine-tune"""
    lr: float
    """SGD learning rate"""
    batch_size: int
    """images per SGD step and per prediction batch"""
    momentum: float
    """SGD momentum, in [0, 1]"""
    weight_decay: float
    """SGD weight decay (L2 coefficient)"""
    seed: int
    """seed of θ₀, of the sample draw and of the shuffling"""
    reference: str
    """``finetune`` = θ₀ fine-tuned on the training split; ``trained`` = the model itself"""
    max_samples: int
    """shifted images used per set, m: images (0 = all)"""
    agree_run_offset: int
    """AgreeScore partner = the same configuration with run + this offset (0 = no AgreeScore)"""
    atc_score: str
    """score thresholded by ATC (``negative_entropy``, ``max_confidence``)"""


# ---- network_csf -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NetworkOdin(Section):
    """``network_csf.odin``: ODIN-IP's grid."""

    PATH: ClassVar[str] = "network_csf/odin"

    temperatures: tuple[float, ...]
    """temperatures T (logits are divided by them)"""
    noise: tuple[float, ...]
    """input perturbation magnitudes ε, in pixel units of [0, 1] images"""


@dataclass(frozen=True)
class NetworkGram(Section):
    """``network_csf.gram``: GRAM's Gram matrix orders."""

    PATH: ClassVar[str] = "network_csf/gram"

    powers: tuple[int, ...]
    """orders p of the Gram matrices"""


@dataclass(frozen=True)
class NetworkRankFeat(Section):
    """``network_csf.rankfeat``: RankFeat's rank-1 solver."""

    PATH: ClassVar[str] = "network_csf/rankfeat"

    power_iterations: int
    """0 = the rank-1 term from an exact SVD; k > 0 = from k rounds of power iteration"""


@dataclass(frozen=True)
class NetworkCsfFit(Section):
    """The part of ``network_csf`` that a fit reads (rule ``fit_network_csf``'s param ``settings``: the section
    without ``batch_size``, which is a param of its own)."""

    PATH: ClassVar[str] = "network_csf"

    methods: tuple[str, ...]
    """the network-pass CSFs (``ODIN-IP``, ``GRAM``, ``RankFeat``); empty = the stage has no jobs"""
    odin: NetworkOdin
    gram: NetworkGram
    rankfeat: NetworkRankFeat


@dataclass(frozen=True)
class NetworkCsf(NetworkCsfFit):
    """The config's ``network_csf`` section."""

    batch_size: int
    """images per network pass"""
