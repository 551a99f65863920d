"""Fit every CSF variant of one (model, fit group) on training + validation, and score any split.

Flow per input mode (``det``; plus ``mcd`` for dropout models, Claros-Olivares & Brockmeier, §4.1):

1. temperature of the unprojected logits on validation — also the KPCA landmark temperature;
2. the fit group's projection (global / class PCA) with its variance v tuned on validation;
3. the views of every variant for train and val, each with its own temperature, and the same views at
   T = 1;
4. per (CSF, variant) and per *flavour* of it (:func:`flavours`: the temperature, fitted or 1, of a CSF
   that reads one, and the tuning protocol): hyper-parameters (fixed in the config, tuned on validation
   −AUGRC by Bayesian optimisation, or chosen from the CSF's grid by validation AUROC against an OOD
   validation set) and the fitted state on the training view;
5. in ``mcd`` mode and the ``none`` group, the expected scores (MCD-E*) and mutual information.

A flavour other than (fitted T, Bayesian optimisation) is stored under its own name
(:func:`csfbench.csf.registry.flavour_name`, e.g. ``MLS@T1``, ``KNN@grid``).  Only the ``train`` and
``val`` splits reach the fitting code (``fit_mode`` checks the split names), plus — for the grid
protocol only — the OOD validation split, which must be none of the ID splits; the configuration keeps
it out of the evaluation sets (``csf.tuning.ood_validation``).  No evaluation set can influence a fit
or a tuned value.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

from csfbench.csf import logit_scores as ls
from csfbench.csf.fit_settings import TuningSettings, resolved_budgets  # noqa: F401 (resolved_budgets: re-exported)
from csfbench.csf.inputs import SplitData, split_blocks
from csfbench.csf.neighbours import shared_search
from csfbench.csf.projection import (GROUP_VARIANTS, class_rec_confidence, project, projection_states,
                                     rec_confidence)
from csfbench.csf.registry import (BY_NAME, EXPECTED, PROJECTION_SPACE, Csf, ModelContext, bounds, flavour_name,
                                   grid_points, space_bounds, variants_for)
from csfbench.csf.temperature import fit_temperature, fit_temperatures
from csfbench.csf.tuning import clip_counts, grid_search
from csfbench.csf.views import View, build_views, variant_logits
from csfbench.metrics import auroc, augrc

log = logging.getLogger(__name__)
ID_SPLITS = ("train", "val", "test")


@dataclass
class FittedCsf:
    """Tuned hyper-parameters, fitted state (arrays), the tuning trace, and a shared-state link.

    ``csf`` is the registry name (the key of a flavour is its :func:`~csfbench.csf.registry.flavour_name`),
    ``temperature`` "fitted" or "one" ("" for a CSF that reads no temperature), ``protocol`` what chose
    the hyper-parameters (:data:`~csfbench.csf.registry.RECORDED_PROTOCOLS`), ``range_clips`` the neighbour-count
    search ranges the Bayesian search clipped to the training rows ({param: {"range", "clipped",
    "train_rows"}}, :func:`~csfbench.csf.tuning.clip_counts`; empty when none was).
    """

    params: dict
    state: dict | None
    probed: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    objectives: np.ndarray = field(default_factory=lambda: np.zeros(0))
    shares: str | None = None
    undefined: str = ""  # why the CSF could not be fitted for this model (then it is not scored)
    csf: str = ""
    temperature: str = ""
    protocol: str = "none"
    range_clips: dict = field(default_factory=dict)


@dataclass
class FittedMode:
    """Everything needed to score a split in one input mode.

    ``temperature_choices`` are the configured temperatures (the MI scores of ``mcd`` mode follow them);
    ``projection_protocol`` records how the projection variance was chosen ("bayes", "fixed", or "none"
    for the unprojected group).
    """

    projection: dict
    temperatures: dict[str, float]
    csfs: dict[tuple[str, str], FittedCsf]
    base_temperature: float
    temperature_choices: tuple[str, ...] = ("fitted",)
    projection_protocol: str = "none"


@dataclass(frozen=True)
class Flavour:
    """One way of running a CSF: its ``temperature`` ("fitted", "one"; "" when it reads none) and the
    ``protocol`` that chooses its hyper-parameters (bayes, grid, fixed, none)."""

    temperature: str
    protocol: str

    def name(self, csf: str) -> str:
        return flavour_name(csf, self.temperature, self.protocol)


def flavours(csf: Csf, tuning: TuningSettings) -> list[Flavour]:
    """The flavours of ``csf`` that ``tuning`` asks for, in a fixed order.

    A CSF that reads a temperature runs at every configured temperature.  A CSF with a hyper-parameter
    left free by ``tuning.fixed`` is tuned by every configured protocol it supports: ``bayes`` always,
    ``grid`` when its grid (published, or ``tuning.grids``) covers every free parameter; with ``grid`` the
    only configured protocol, a CSF without a grid is tuned by ``bayes`` (and records so).
    """
    temperatures = tuning.temperatures if csf.uses_temperature else ("",)
    free = [k for k in csf.space if k not in tuning.fixed.get(csf.name, {})]
    if not csf.space:
        protocols = ["none"]
    elif not free:
        protocols = ["fixed"]
    else:
        gridded = set(free) <= set(csf.grid) | set(tuning.grids.get(csf.name, {}))
        protocols = [p for p in tuning.protocols if p == "bayes" or gridded] or ["bayes"]
    return [Flavour(t, p) for t in temperatures for p in protocols]


def at_temperature(ctx: ModelContext, temperature: str) -> ModelContext:
    """``ctx`` for a flavour: at T = 1 (``"one"``) the base temperature is 1, else ``ctx`` itself."""
    return dataclasses.replace(ctx, base_temperature=1.0) if temperature == "one" else ctx


def _temperature_views(split: SplitData, projection: dict, ctx: ModelContext, temperatures: dict[str, float],
                       parts: dict | None = None) -> dict[str, dict[str, View]]:
    """{"fitted": views at the fitted temperatures, "one": the same views at T = 1} (views are cheap:
    the projected parts are computed once, each view's softmax only when a CSF reads it)."""
    parts = parts if parts is not None else variant_logits(split, projection, ctx.weight, ctx.bias)
    ones = {variant: 1.0 for variant in temperatures}
    return {"fitted": build_views(split, projection, ctx.weight, ctx.bias, temperatures, parts),
            "one": build_views(split, projection, ctx.weight, ctx.bias, ones, parts)}


def _residual(split: SplitData) -> np.ndarray:
    return (~split.correct).astype(np.float64)


def _objective(conf: np.ndarray, split: SplitData) -> float:
    return -augrc(conf, _residual(split))


def ood_objective(id_conf: np.ndarray, ood_conf: np.ndarray) -> float:
    """The grid protocol's objective: AUROC of the confidences of the ID validation split (positive)
    against those of the OOD validation split, in [0, 1] (higher = better separated, ties count ½)."""
    conf = np.concatenate([np.asarray(id_conf, dtype=np.float64), np.asarray(ood_conf, dtype=np.float64)])
    return auroc(conf, np.r_[np.zeros(len(id_conf)), np.ones(len(ood_conf))])


def check_dims(split: SplitData, ctx: ModelContext) -> None:
    """The split's features and logits must match the model head (C×D)."""
    c, d = ctx.weight.shape
    if split.features.shape[1] != d or split.logits.shape[1] != c:
        raise ValueError(f"{split.dataset}: features N×{split.features.shape[1]} and logits N×{split.logits.shape[1]} "
                         f"do not match the model head ({c} classes × {d} dimensions)")


def _check_fit_inputs(train: SplitData, val: SplitData) -> None:
    if (train.dataset, val.dataset) != ("train", "val"):
        raise ValueError(f"CSFs are fitted on the ID train and val splits only, got {train.dataset!r}, {val.dataset!r}")
    for split in (train, val):
        if len(split) == 0:
            raise ValueError(f"CSF fit: the {split.dataset} split is empty")
        if (split.labels < 0).any():
            raise ValueError(f"CSF fit: the {split.dataset} split has unlabelled samples")


def _check_ood_validation(ood_val: SplitData | None) -> None:
    if ood_val is None:
        raise ValueError("the grid tuning protocol needs an OOD validation split (csf.tuning.ood_validation)")
    if ood_val.dataset in ID_SPLITS:
        raise ValueError(f"the OOD validation split must be a shifted set, not the ID split {ood_val.dataset!r}")
    if len(ood_val) == 0:
        raise ValueError(f"CSF fit: the OOD validation split {ood_val.dataset!r} is empty")


def fit_projection(group: str, train: SplitData, val: SplitData, ctx: ModelContext, tuning: TuningSettings) -> dict:
    """The fitted projection state of ``group`` with its variance v tuned on val."""
    if group == "none":
        return {"group": "none"}
    space = space_bounds(PROJECTION_SPACE, ctx.n_classes, tuning.search_space.get("projection"))
    fixed = tuning.fixed.get("projection", {})
    state = projection_states(group, train.features, train.labels, train.correct, ctx.n_classes)
    if group == "global":
        def val_conf(st):
            return rec_confidence(val.features, project(val.features, st["mean"], st["basis"]))
    else:
        def val_conf(st):
            return class_rec_confidence(val.features, st["subspaces"]).max(1)

    if "variance" in fixed:
        return state(fixed["variance"])
    best, _, _ = tuning.search(lambda p: _objective(val_conf(state(p["variance"])), val), space, "projection",
                               f"{group} projection")
    return state(best["variance"])


class SharedFits:
    """The fitted states of one fit mode, kept so that a fit computed once is held once: a CSF fit of the same
    function on the same training view, base temperature and parameters (neighbour counts aside, which only the
    score reads) returns the state already fitted — ViM's and Residual's subspace, the one KNN bank of KNN and
    KNN@grid.  Only the states a fitted flavour keeps are added (:meth:`keep`), never a tuning probe's."""

    def __init__(self):
        self.states: dict[tuple, dict | None] = {}

    @staticmethod
    def key(csf: Csf, train: View, ctx: ModelContext, params: dict) -> tuple:
        return (csf.fit, id(train), ctx.base_temperature,
                tuple(sorted((k, v) for k, v in params.items() if k not in csf.neighbour_counts)))

    def fit(self, csf: Csf, train: View, ctx: ModelContext, params: dict) -> dict | None:
        if csf.fit is None:
            return None
        key = self.key(csf, train, ctx, params)
        return self.states[key] if key in self.states else csf.fit(train, ctx, params)

    def keep(self, csf: Csf, train: View, ctx: ModelContext, item: FittedCsf) -> FittedCsf:
        if csf.fit is not None and item.state is not None:
            self.states.setdefault(self.key(csf, train, ctx, item.params), item.state)
        return item


def _fit_one(csf: Csf, variant: str, train: View, val: View, ctx: ModelContext, tuning: TuningSettings,
             protocol: str = "bayes", ood: View | None = None, shared: SharedFits | None = None) -> FittedCsf:
    """Hyper-parameters and fitted state of one (CSF, variant) flavour; ``protocol`` as :func:`flavours`
    gives it (``ood``: the OOD validation view, for ``grid``; ``shared``: the states fitted so far in this mode)."""
    space = bounds(csf, ctx, tuning.search_space.get(csf.name))
    shared = shared if shared is not None else SharedFits()

    fits: dict = {}  # the last fit, by its parameters other than neighbour counts (which only the score reads)

    def run(params):
        key = tuple(sorted((k, v) for k, v in params.items() if k not in csf.neighbour_counts))
        if key not in fits:
            fits.clear()
            fits[key] = shared.fit(csf, train, ctx, params)
        state = fits[key]
        return state, _own(csf.score(state, val, ctx, params), variant)

    fixed = tuning.fixed.get(csf.name, {})
    if protocol in ("fixed", "none"):
        params = {k: fixed[k] for k in space}
        return shared.keep(csf, train, ctx, FittedCsf(params, shared.fit(csf, train, ctx, params), protocol=protocol))
    label = f"{csf.name} [{variant}]" + (" grid" if protocol == "grid" else "")
    best: dict = {}  # the state of the first best probe, so the tuned CSF is not fitted once more

    def probe(p):
        state, conf = run(p)
        if protocol == "grid":
            value = ood_objective(conf, _own(csf.score(state, ood, ctx, p), variant))
        else:
            value = _objective(conf, val.split)
        if np.isfinite(value) and value > best.get("objective", -np.inf):
            best.update(objective=value, params=p, state=state)
        return value

    clips: dict = {}  # the grid protocol runs the grid's own points, unclipped
    if protocol == "grid":
        grid = {k: v for k, v in grid_points(csf, ctx, tuning.grids.get(csf.name)).items() if k not in fixed}
        held = {k: fixed[k] for k in space if k in fixed}
        reach = _reach(csf, {k: max(v) for k, v in grid.items()} | held,
                       varied=[k for k, v in grid.items() if len(set(v)) > 1])
        with shared_search(reach) if reach else nullcontext():
            params, probed, objectives = grid_search(probe, grid, space, held, label)
    else:  # a parameter pinned by tuning.fixed is a range of one point, which the search holds
        counts = [k for k in csf.neighbour_counts if k not in fixed]
        space, clips = clip_counts(space, counts, len(train.split), tuning.max_neighbour_fraction, label)
        pinned = {k: (fixed[k], fixed[k], kind) if k in fixed else (low, high, kind)
                  for k, (low, high, kind) in space.items()}
        reach = _reach(csf, {k: high for k, (low, high, kind) in pinned.items()},
                       varied=[k for k, (low, high, kind) in pinned.items() if low != high])
        with shared_search(reach) if reach else nullcontext():
            params, probed, objectives = tuning.search(probe, pinned, csf.name, label)
    state = best["state"] if best.get("params") == params else run(params)[0]
    return shared.keep(csf, train, ctx, FittedCsf(params, state, probed, objectives, protocol=protocol,
                                                  range_clips=clips))


def _reach(csf: Csf, largest: dict, varied: list[str]) -> int:
    """The largest neighbour count a search can probe (``largest``: {param: its largest value}), for
    :func:`csfbench.csf.neighbours.shared_search`; 0 (no shared search) for a CSF without neighbour counts, or when
    the search also varies a parameter of its fit (``varied``: the parameters it probes at several values; NNGuide's
    α under Bayesian search), which refits the bank at every probe, so that nothing could be reused."""
    if any(k not in csf.neighbour_counts for k in varied):
        return 0
    return max((int(largest[k]) for k in csf.neighbour_counts if k in largest), default=0)


def _own(conf, variant: str) -> np.ndarray:
    """A CSF's confidence of ``variant`` (a shared-state score returns {variant: confidence})."""
    return conf[variant] if isinstance(conf, dict) else conf


def fit_mode(group: str, train: SplitData, val: SplitData, ctx: ModelContext, tuning: TuningSettings,
             methods: frozenset[str] | None = None, ood_val: SplitData | None = None) -> FittedMode:
    """Fit the projection, temperatures and every (CSF, variant) flavour of ``group`` in one input mode, among
    the CSFs named in ``methods`` (None: every CSF of the registry).

    ``ood_val`` is the OOD validation split, required when ``tuning.protocols`` has ``grid`` (and read only
    by the grid-tuned flavours).
    """
    _check_fit_inputs(train, val)
    check_dims(train, ctx)
    check_dims(val, ctx)
    grid = "grid" in tuning.protocols
    if grid:
        _check_ood_validation(ood_val)
        check_dims(ood_val, ctx)
    ctx.base_temperature = fit_temperature(val.logits, val.labels, "unprojected logits")
    t0 = time.perf_counter()
    projection = fit_projection(group, train, val, ctx, tuning)
    val_parts = variant_logits(val, projection, ctx.weight, ctx.bias)
    temperatures = fit_temperatures(val_parts, val.labels, ctx.base_temperature)
    views_train = _temperature_views(train, projection, ctx, temperatures)
    views_val = _temperature_views(val, projection, ctx, temperatures, val_parts)
    views_ood = _temperature_views(ood_val, projection, ctx, temperatures) if grid else None
    log.info("%s/%s: projection and temperatures %s in %.1fs", group, train.mode,
             {k: round(v, 4) for k, v in temperatures.items()}, time.perf_counter() - t0)
    fitted: dict[tuple[str, str], FittedCsf] = {}
    shared = SharedFits()
    for csf, variant in variants_for(ctx.backbone, GROUP_VARIANTS[group], methods):
        for flavour in flavours(csf, tuning):
            t0 = time.perf_counter()
            name, at = flavour.name(csf.name), flavour.temperature or "fitted"
            tags = {"csf": csf.name, "temperature": flavour.temperature, "protocol": flavour.protocol}
            owner = csf.shares.get(variant)
            if owner is not None:
                base = fitted[(name, owner)]
                fitted[(name, variant)] = FittedCsf(base.params, None, shares=owner, undefined=base.undefined, **tags)
                continue
            ood = views_ood[at][variant] if flavour.protocol == "grid" else None
            try:
                item = _fit_one(csf, variant, views_train[at][variant], views_val[at][variant],
                                at_temperature(ctx, flavour.temperature), tuning, flavour.protocol, ood, shared)
            except ValueError as err:
                # a CSF that is mathematically undefined for these features (e.g. ViM without any
                # residual subspace) is recorded with its reason and not scored; the others go on
                log.warning("%s/%s: %s [%s] is undefined for this model: %s", group, train.mode, name, variant, err)
                fitted[(name, variant)] = FittedCsf({}, None, undefined=str(err), **tags)
                continue
            fitted[(name, variant)] = dataclasses.replace(item, **tags)
            log.info("%s/%s: fitted %s [%s] in %.2fs", group, train.mode, name, variant, time.perf_counter() - t0)
    projection_protocol = "none" if group == "none" else \
        "fixed" if "variance" in tuning.fixed.get("projection", {}) else "bayes"
    return FittedMode(projection, temperatures, fitted, ctx.base_temperature, tuning.temperatures,
                      projection_protocol)


def score_mode(split: SplitData, fitted: FittedMode, ctx: ModelContext) -> dict[tuple[str, str], np.ndarray]:
    """Confidence of every (CSF flavour, variant) of a fitted mode on ``split`` (higher = more confident).

    In ``mcd`` mode with the ``none`` group this adds the expected variants ("E" + name: the mean
    of the per-pass scores, hyper-parameters of the MCD-X variant) and "MI" (−mutual information), at
    every configured temperature.
    """
    check_dims(split, ctx)
    ctx.base_temperature = fitted.base_temperature
    views = _temperature_views(split, fitted.projection, ctx, fitted.temperatures)
    scores = {}
    shared: dict[tuple[str, str], dict] = {}  # (CSF flavour, owner variant) -> {variant: conf}
    for (name, variant), item in fitted.csfs.items():
        if item.undefined:
            continue
        csf = BY_NAME[item.csf or name]
        at, fctx = views[item.temperature or "fitted"], at_temperature(ctx, item.temperature)
        owner = item.shares or variant
        if owner in csf.shares.values():
            if (name, owner) not in shared:
                owner_item = fitted.csfs[(name, owner)]
                shared[(name, owner)] = csf.score(owner_item.state, at[owner], fctx, owner_item.params)
            conf = shared[(name, owner)][variant]
        else:
            conf = csf.score(item.state, at[variant], fctx, item.params)
        conf = np.asarray(conf, dtype=np.float64)
        bad = int((~np.isfinite(conf)).sum())
        if bad:
            raise ValueError(f"{split.dataset}: CSF {name} [{variant}] produced {bad} non-finite confidences")
        scores[(name, variant)] = conf
    if split.pass_logits is not None and "none" in views["fitted"]:
        scores.update(expected_scores(split, fitted, ctx))
    return scores


def score_blocks(split: SplitData, fitted: FittedMode, ctx: ModelContext) -> dict[tuple[str, str], np.ndarray]:
    """:func:`score_mode` of ``split`` one block of rows at a time (:func:`~csfbench.csf.inputs.split_blocks`:
    each block's inputs within the block budget, read from the file when the split's rows are a row source),
    the blocks' confidences concatenated.  Every score of a row depends on that row alone, so the result is
    :func:`score_mode` of the whole split up to the rounding of the matrix products over other block shapes."""
    width = max(split.features.shape[1], int(np.prod(
        (split.pass_logits if split.pass_logits is not None else split.logits_full).shape[1:])))
    parts: dict[tuple[str, str], list] = {}
    for block in split_blocks(split, width):
        for key, conf in score_mode(block, fitted, ctx).items():
            parts.setdefault(key, []).append(conf)
    return {key: np.concatenate(confs) for key, confs in parts.items()}


def _temperature_of(fitted: FittedMode, temperature: str) -> float:
    """The unprojected logits' temperature of a flavour: fitted, or 1."""
    return 1.0 if temperature == "one" else fitted.temperatures["none"]


def expected_scores(split: SplitData, fitted: FittedMode, ctx: ModelContext) -> dict[tuple[str, str], np.ndarray]:
    """MCD-E variants of the fitted flavours of :data:`EXPECTED`: per-pass logit/softmax scores averaged
    over passes, and −MI per configured temperature (as in the authors' ``mcd_expected_function``)."""
    out = {}
    for (name, variant), item in fitted.csfs.items():
        if variant != "none" or item.undefined or (item.csf or name) not in EXPECTED:
            continue
        csf, t = BY_NAME[item.csf or name], _temperature_of(fitted, item.temperature)
        per_pass = [csf.score(None, View("pass", split, None, split.pass_logits[:, p], t), ctx, item.params)
                    for p in range(split.pass_logits.shape[1])]
        out[(f"E{name}", "none")] = np.mean(per_pass, axis=0)
    for temperature in fitted.temperature_choices:
        t = _temperature_of(fitted, temperature)
        out[(flavour_name("MI", temperature), "none")] = ls.mutual_information(ls.softmax(split.pass_logits, t))
    return out


def tuning_protocols(fitted: FittedMode, keys) -> dict[tuple[str, str], str]:
    """{(name, variant): the protocol that chose its hyper-parameters} for score keys of ``fitted``: a
    fitted flavour's own, an expected score's ("E" + name) that of its MCD-X flavour, "none" for MI."""
    out = {}
    for name, variant in keys:
        item = fitted.csfs.get((name, variant)) or fitted.csfs.get((name[1:], variant))
        out[(name, variant)] = item.protocol if item is not None else "none"
    return out
