"""Fit every CSF variant of one (model, fit group) on training + validation, and score any split.

Flow per input mode (``det``; plus ``mcd`` for dropout models, Claros-Olivares & Brockmeier, §4.1):

1. temperature of the unprojected logits on validation — also the KPCA landmark temperature;
2. the fit group's projection (global / class PCA) with its variance v tuned on validation;
3. the views of every variant for train and val, each with its own temperature;
4. per (CSF, variant): hyper-parameters (fixed in the config, or tuned on validation −AUGRC)
   and the fitted state on the training view;
5. in ``mcd`` mode and the ``none`` group, the expected scores (MCD-E*) and mutual information.

Only the ``train`` and ``val`` splits ever reach this module's fitting code (``fit_group`` checks
the split names), so no OOD data can influence a fit or a tuned value.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from csfbench.csf import logit_scores as ls
from csfbench.csf.inputs import SplitData
from csfbench.csf.projection import (GROUP_VARIANTS, class_rec_confidence, project, projection_states,
                                     rec_confidence)
from csfbench.csf.registry import BY_NAME, EXPECTED, Csf, ModelContext, bounds, variants_for
from csfbench.csf.temperature import fit_temperature
from csfbench.csf.tuning import tune
from csfbench.csf.views import View, build_views, variant_logits
from csfbench.metrics import augrc

log = logging.getLogger(__name__)


@dataclass
class TuningSettings:
    """Search budgets and fixed values from the config's ``csf`` section.

    ``init_points`` + ``n_iter`` is the budget of every tuned quantity except those in ``budgets``
    ({CSF name or "projection": (init_points, n_iter)}); ``seed`` seeds the Bayesian optimisation.
    The config's defaults are those of ``csf.tuning`` in ``config/schema.yaml``.
    """

    init_points: int
    n_iter: int
    seed: int
    fixed: dict = field(default_factory=dict)          # {CSF name or "projection": {param: value}}
    search_space: dict = field(default_factory=dict)   # {CSF name or "projection": {param: [low, high]}}
    budgets: dict = field(default_factory=dict)        # {CSF name or "projection": (init_points, n_iter)}

    @classmethod
    def from_config(cls, csf_cfg: dict) -> "TuningSettings":
        """From a validated config's ``csf`` section (or its cut :func:`csfbench.grid.csf_fit_config`)."""
        t = csf_cfg["tuning"]
        return cls(int(t["init_points"]), int(t["n_iter"]), int(t["seed"]), csf_cfg["fixed"],
                   csf_cfg["search_space"], resolved_budgets(t))

    def budget(self, name: str) -> tuple[int, int]:
        """(init_points, n_iter) of the tuned quantity ``name`` (a CSF name or "projection")."""
        return tuple(self.budgets.get(name, (self.init_points, self.n_iter)))

    def search(self, objective, space: dict, name: str, label: str):
        """:func:`~csfbench.csf.tuning.tune` with the budget of ``name`` and the seed."""
        return tune(objective, space, *self.budget(name), self.seed, label=label)


def resolved_budgets(tuning_cfg: dict) -> dict[str, tuple[int, int]]:
    """{name: (init_points, n_iter)} from a validated config's ``csf.tuning.budgets``."""
    return {name: (int(b["init_points"]), int(b["n_iter"])) for name, b in tuning_cfg["budgets"].items()}


@dataclass
class FittedCsf:
    """Tuned hyper-parameters, fitted state (arrays), the tuning trace, and a shared-state link."""

    params: dict
    state: dict | None
    probed: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    objectives: np.ndarray = field(default_factory=lambda: np.zeros(0))
    shares: str | None = None
    undefined: str = ""  # why the CSF could not be fitted for this model (then it is not scored)


@dataclass
class FittedMode:
    """Everything needed to score a split in one input mode."""

    projection: dict
    temperatures: dict[str, float]
    csfs: dict[tuple[str, str], FittedCsf]
    base_temperature: float


def _residual(split: SplitData) -> np.ndarray:
    return (~split.correct).astype(np.float64)


def _objective(conf: np.ndarray, split: SplitData) -> float:
    return -augrc(conf, _residual(split))


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


def fit_projection(group: str, train: SplitData, val: SplitData, ctx: ModelContext, tuning: TuningSettings) -> dict:
    """The fitted projection state of ``group`` with its variance v tuned on val."""
    if group == "none":
        return {"group": "none"}
    space = {"variance": (*tuning.search_space.get("projection", {}).get("variance", (0.85, 0.99)), "float")}
    fixed = tuning.fixed.get("projection", {})
    state = projection_states(group, train.features, train.labels, train.correct, ctx.n_classes)
    if group == "global":
        def val_conf(st):
            return rec_confidence(val.features, project(val.features, st["mean"], st["basis"]))
    else:
        def val_conf(st):
            return class_rec_confidence(val.features, st["subspaces"]).max(1)

    if "variance" in fixed:
        return state(float(fixed["variance"]))
    best, _, _ = tuning.search(lambda p: _objective(val_conf(state(p["variance"])), val), space, "projection",
                               f"{group} projection")
    return state(best["variance"])


def fit_temperatures(val: SplitData, parts: dict) -> dict[str, float]:
    """One temperature per logit source of the group, on validation.

    ``parts`` are :func:`~csfbench.csf.views.variant_logits` of the validation split.
    """
    return {variant: fit_temperature(part[1], val.labels) for variant, part in parts.items()
            if not variant.startswith("_")}


def _fit_one(csf: Csf, variant: str, train: View, val: View, ctx: ModelContext, tuning: TuningSettings) -> FittedCsf:
    space = bounds(csf, ctx, tuning.search_space.get(csf.name))

    def run(params):
        state = csf.fit(train, ctx, params) if csf.fit else None
        conf = csf.score(state, val, ctx, params)
        return state, conf[variant] if isinstance(conf, dict) else conf

    fixed = tuning.fixed.get(csf.name, {})
    if not space or set(space) <= set(fixed):
        params = {k: fixed[k] for k in space}
        return FittedCsf(params, csf.fit(train, ctx, params) if csf.fit else None)
    label = f"{csf.name} [{variant}]"
    best: dict = {}  # the state of the first best probe, so the tuned CSF is not fitted once more

    def probe(p):
        state, conf = run(p)
        value = _objective(conf, val.split)
        if np.isfinite(value) and value > best.get("objective", -np.inf):
            best.update(objective=value, params=p, state=state)
        return value

    params, probed, objectives = tuning.search(probe, space, csf.name, label)
    state = best["state"] if best.get("params") == params else run(params)[0]
    return FittedCsf(params, state, probed, objectives)


def fit_mode(group: str, train: SplitData, val: SplitData, ctx: ModelContext, tuning: TuningSettings,
             methods: frozenset[str] | None = None) -> FittedMode:
    """Fit the projection, temperatures and every (CSF, variant) of ``group`` in one input mode, among the
    CSFs named in ``methods`` (None: every CSF of the registry)."""
    _check_fit_inputs(train, val)
    check_dims(train, ctx)
    check_dims(val, ctx)
    ctx.base_temperature = fit_temperature(val.logits, val.labels)
    t0 = time.perf_counter()
    projection = fit_projection(group, train, val, ctx, tuning)
    val_parts = variant_logits(val, projection, ctx.weight, ctx.bias)
    temperatures = fit_temperatures(val, val_parts)
    views_train = build_views(train, projection, ctx.weight, ctx.bias, temperatures)
    views_val = build_views(val, projection, ctx.weight, ctx.bias, temperatures, val_parts)
    log.info("%s/%s: projection and temperatures %s in %.1fs", group, train.mode,
             {k: round(v, 4) for k, v in temperatures.items()}, time.perf_counter() - t0)
    fitted: dict[tuple[str, str], FittedCsf] = {}
    for csf, variant in variants_for(ctx.backbone, GROUP_VARIANTS[group], methods):
        t0 = time.perf_counter()
        owner = csf.shares.get(variant)
        if owner is not None:
            base = fitted[(csf.name, owner)]
            fitted[(csf.name, variant)] = FittedCsf(base.params, None, shares=owner, undefined=base.undefined)
            continue
        try:
            fitted[(csf.name, variant)] = _fit_one(csf, variant, views_train[variant], views_val[variant], ctx, tuning)
        except ValueError as err:
            # a CSF that is mathematically undefined for these features (e.g. ViM without any
            # residual subspace) is recorded with its reason and not scored; the others go on
            log.warning("%s/%s: %s [%s] is undefined for this model: %s", group, train.mode, csf.name, variant, err)
            fitted[(csf.name, variant)] = FittedCsf({}, None, undefined=str(err))
            continue
        log.info("%s/%s: fitted %s [%s] in %.2fs", group, train.mode, csf.name, variant, time.perf_counter() - t0)
    return FittedMode(projection, temperatures, fitted, ctx.base_temperature)


def score_mode(split: SplitData, fitted: FittedMode, ctx: ModelContext) -> dict[tuple[str, str], np.ndarray]:
    """Confidence of every (CSF, variant) of a fitted mode on ``split`` (higher = more confident).

    In ``mcd`` mode with the ``none`` group this adds the expected variants ("E" + name: the mean
    of the per-pass scores, hyper-parameters of the MCD-X variant) and "MI" (−mutual information).
    """
    check_dims(split, ctx)
    ctx.base_temperature = fitted.base_temperature
    views = build_views(split, fitted.projection, ctx.weight, ctx.bias, fitted.temperatures)
    scores = {}
    shared: dict[tuple[str, str], dict] = {}  # (CSF, owner variant) -> {variant: conf}
    for (name, variant), item in fitted.csfs.items():
        if item.undefined:
            continue
        csf = BY_NAME[name]
        owner = item.shares or variant
        if owner in csf.shares.values():
            if (name, owner) not in shared:
                owner_item = fitted.csfs[(name, owner)]
                shared[(name, owner)] = csf.score(owner_item.state, views[owner], ctx, owner_item.params)
            conf = shared[(name, owner)][variant]
        else:
            conf = csf.score(item.state, views[variant], ctx, item.params)
        conf = np.asarray(conf, dtype=np.float64)
        bad = int((~np.isfinite(conf)).sum())
        if bad:
            raise ValueError(f"{split.dataset}: CSF {name} [{variant}] produced {bad} non-finite confidences")
        scores[(name, variant)] = conf
    if split.pass_logits is not None and "none" in views:
        scores.update(expected_scores(split, fitted, ctx))
    return scores


def expected_scores(split: SplitData, fitted: FittedMode, ctx: ModelContext) -> dict[tuple[str, str], np.ndarray]:
    """MCD-E variants of the fitted ones among :data:`EXPECTED`: per-pass logit/softmax scores averaged
    over passes, and −MI (as in the authors' ``mcd_expected_function``)."""
    t = fitted.temperatures["none"]
    out = {}
    for name in (n for n in EXPECTED if (n, "none") in fitted.csfs):
        csf, params = BY_NAME[name], fitted.csfs[(name, "none")].params
        per_pass = [csf.score(None, View("pass", split, None, split.pass_logits[:, p], t), ctx, params)
                    for p in range(split.pass_logits.shape[1])]
        out[(f"E{name}", "none")] = np.mean(per_pass, axis=0)
    out[("MI", "none")] = ls.mutual_information(ls.softmax(split.pass_logits, t))
    return out
