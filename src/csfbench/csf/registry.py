"""The registry of confidence scoring functions (Claros-Olivares & Brockmeier, App. A.3) and the variants each supports
(the paper's Table 3, with the not-applicable cells of its Table 8; docs/methods.md).

Every CSF is one :class:`Csf`: an optional ``fit(train_view, ctx, hp) -> state`` on the training
features of the same variant (every statistic is refitted in the variant's feature space, as in the
authors' code),
and ``score(state, view, ctx, hp) -> confidence`` (N,), **higher = more confident / more ID**.
``space`` is the hyper-parameter search space tuned on validation, {param: :class:`~csfbench.csf.tuning.Param`}
(its built-in range and kind; an upper bound of ``"n_classes"`` means C): ``fit`` and ``score`` receive every
value as its kind (``hp["k"]`` an int), typed once where it enters (:meth:`Csf.typed`).
Claros-Olivares & Brockmeier's CSFs give 83 non-MCD variants for a CNN paradigm and 82 for a ViT (no
paradigm confidence head), tested against the support matrix of docs/methods.md; the post-hoc detectors
of ICONIC-444 and ImageNet-OOD add 15 more, on the unprojected outputs only.

Flavours: a CSF that reads a temperature (``uses_temperature``) runs at the validation-fitted T of
Claros-Olivares & Brockmeier and/or at T = 1 (ICONIC-444, ImageNet-OOD), and a CSF with a published ``grid`` is tuned by
Bayesian optimisation of validation −AUGRC and/or by ICONIC-444's grid search; each flavour other than
(fitted T, Bayesian optimisation) is a CSF of its own under :func:`flavour_name` (``MLS@T1``,
``KNN@grid``), so every results table keys it apart (:mod:`csfbench.csf.engine`, docs/methods.md §3.1–3.2).

Quirks of the authors' code (github.com/cesar-claros/ood_systematic) are reproduced with
``quirks="compat_authors"``; the default ``"strict"`` uses the paper's consistent form:
- class_avg/class_pred NNGuide bank energies and fDBD logits: strict = the variant's own logits,
  compat = the class-projected logits ĝ^class;
- ViM/Residual/NeCo on Deep Gamblers: strict drops the abstention row of W, b and logits, compat keeps it;
- NeCo on ViT: strict centres the denominator like the CNN form, compat uses ‖h‖ (authors' ViT path).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from csfbench.csf import class_templates as templates
from csfbench.csf import distance_scores as dist
from csfbench.csf import feature_shaping as shaping
from csfbench.csf import kpca
from csfbench.csf import logit_methods
from csfbench.csf import logit_scores as ls
from csfbench.csf import openmax
from csfbench.csf.blocks import column_mean
from csfbench.csf.knn import KNN_GRID, knn_fit, knn_score
from csfbench.csf.fdbd import fdbd
from csfbench.csf.gradnorm import gradnorm
from csfbench.csf.nnguide import nnguide_bank, nnguide_score
from csfbench.csf.pnml import pnml_fit, pnml_score
from csfbench.csf.projection import VARIANTS
from csfbench.csf import subspace_scores as sub
from csfbench.csf.tuning import Param

QUIRKS = ("strict", "compat_authors")
ALL = VARIANTS
NO_CLASS = ("none", "global", "class_avg", "class_pred")
PROJECTED = ("global", "class", "class_avg", "class_pred")
#: the inputs a CSF can read: penultimate features, logits (or MC-dropout pass logits), the training
#: labels, the linear head W, b, and a paradigm's confidence-head output (the arguments of
#: :func:`csfbench.csf.detector.detector`'s fit and score)
INPUTS = ("features", "logits", "labels", "head", "confidence")
#: what every projected variant reads: its PCA is fitted on the correctly classified training features
#: (prediction and label) and its logits are recomputed through the head
PROJECTED_READS = frozenset({"features", "logits", "labels", "head"})
# the two most common declarations
_LOGITS = frozenset({"logits"})
_FEATURES_HEAD = frozenset({"features", "head"})


@dataclass
class ModelContext:
    """Per-model constants: head W (C×D), b (C,) without DG's abstention row, the full head, the
    backbone, paradigm, quirk mode, and the base temperature of the current input mode."""

    n_classes: int
    backbone: str
    paradigm: str
    weight: np.ndarray
    bias: np.ndarray
    weight_full: np.ndarray
    bias_full: np.ndarray
    quirks: str = "strict"
    base_temperature: float = 1.0

    @property
    def compat(self) -> bool:
        return self.quirks == "compat_authors"


@dataclass(frozen=True)
class Csf:
    name: str
    variants: tuple[str, ...]
    score: Callable
    fit: Callable | None = None
    space: dict[str, Param] = field(default_factory=dict)
    cnn_only: bool = False
    # variant -> variant whose fitted state and hyper-parameters it shares (KPCA class modes); the
    # owner's ``score`` then returns {variant: confidence} for all sharing variants in one pass
    shares: dict = field(default_factory=dict)
    # whether the score reads the temperature (``view.temperature``, ``view.probs`` or
    # ``ctx.base_temperature``): such a CSF can run at the fitted T and at T = 1 (:func:`flavour_name`)
    uses_temperature: bool = False
    # ICONIC-444's Table 7 grid {param: values} for its grid-search protocol; a parameter whose search
    # space is bounded by "n_classes" keeps only the values <= C (:func:`grid_points`)
    grid: dict = field(default_factory=dict)
    # the inputs (of INPUTS) that the unprojected variant's fit and score read; a projected variant reads
    # PROJECTED_READS.  tests/unit/csf/test_detector.py checks both ways: the scores do not change when
    # the others are left out, and they do change when any declared one does
    reads: frozenset = PROJECTED_READS
    # the parameters of ``space`` that count training rows (a neighbour count k): their Bayesian search
    # range is clipped to ``csf.tuning.max_neighbour_fraction`` of the training rows
    # (:func:`csfbench.csf.tuning.clip_counts`).  Only the score reads them, never the fit, so a search
    # reuses one fit across counts and one neighbour search for its largest count
    # (:mod:`csfbench.csf.neighbours`)
    neighbour_counts: tuple[str, ...] = ()

    def reads_for(self, variant: str) -> frozenset:
        """The inputs the CSF reads in ``variant``."""
        return self.reads if variant == "none" else PROJECTED_READS

    def typed(self, params) -> dict:
        """``params`` ({param: value}) with each value of a parameter of ``space`` as its kind
        (:meth:`~csfbench.csf.tuning.Param.value`); any other key is kept as it is."""
        return {k: self.space[k].value(v) if k in self.space else v for k, v in params.items()}


def _span(grid: dict[str, tuple], kind: str) -> dict[str, Param]:
    """A search space spanning a published grid: {param: Param(min, max, kind)}."""
    return {name: Param(min(values), max(values), kind) for name, values in grid.items()}


def _ash(rule: str) -> Callable:
    """ASH-S, ASH-B or ASH-P (``rule`` s, b, p) on the view's features, then the head's energy."""
    return lambda state, view, ctx, hp: shaping.ash_score(view.features, ctx.weight, ctx.bias, hp["percentile"], rule)


def _int_bounds_m() -> dict[str, Param]:
    return {"m": Param(1, "n_classes", "int"), "gamma": Param(1e-6, 0.999999, "float")}


def _bank_logits(view, ctx):
    quirk = ctx.compat and view.variant in ("class_avg", "class_pred")
    return view.class_logits if quirk else view.logits


def _head_for_subspace(view, ctx):
    """W, b and logits for ViM/Residual/NeCo (the authors' code keeps Deep Gamblers' abstention row)."""
    if ctx.compat:
        return ctx.weight_full, ctx.bias_full, view.split.logits_full
    return ctx.weight, ctx.bias, view.logits


def _cos_score(directions: Callable, class_column: str) -> Callable:
    """Cosine scores max_k cos(d_k, h), higher = closer in angle to a class direction = more ID.

    ``directions(state, ctx)`` gives the K×D directions d_k for a variant with one feature vector;
    the ``class`` variant reads its precomputed per-class column ``class_column`` instead, the cosine
    of each class-projected feature ĥᵏ with that class's own direction, and takes the max over k:
    ``"cos_weight"`` = cos(w_k, ĥᵏ) (CTM), ``"cos_mean"`` = cos(m̂_k, ĥᵏ) with m̂_k the mean of ĥᵏ over
    the class-k training samples (CTMmean).
    """
    def score(state, view, ctx, hp):
        if view.variant == "class":
            return view.columns[class_column].max(1)
        return dist.max_cosine(view.features, directions(state, ctx))
    return score


def _fit_class_means(only_correct: bool) -> Callable:
    def fit(train, ctx, hp):
        if train.variant == "class":
            return None  # the class targets m̂_c are part of the class projection state ("mean_targets")
        mask = train.split.correct if only_correct else None
        return {"means": dist.class_means(train.features, train.split.labels, ctx.n_classes, mask)}
    return fit


def _vim_fit(train, ctx, hp):
    w, b, logits = _head_for_subspace(train, ctx)
    return sub.vim_fit(train.features, logits, w, b, sub.principal_dim(train.features.shape[1]))


def _vim_score(state, view, ctx, hp):
    logits = _head_for_subspace(view, ctx)[2]
    return sub.vim_score(view.features, logits, state["origin"], state["basis"], state["alpha"])


def _neco_score(state, view, ctx, hp):
    centered = not (ctx.compat and ctx.backbone == "vit")
    logits = _head_for_subspace(view, ctx)[2]
    return sub.neco_score(view.features, logits, state["mean"], state["components"], centered)


def _landmark_energy(train, ctx):
    return ls.energy(train.split.logits, ctx.base_temperature)


def _kpca_fit(train, ctx, hp):
    args = (train.split.features, _landmark_energy(train, ctx))
    if train.variant == "global":
        return kpca.kpca_fit(*args, hp["gamma"], hp["n_landmarks"], hp["variance"])
    return kpca.kpca_fit_classes(train.split.features, train.split.labels, args[1], ctx.n_classes, hp["gamma"],
                                 hp["n_landmarks"], hp["variance"])


def _kpca_score(state, view, ctx, hp):
    """Global KPCA score, or all three class-mode scores at once as {variant: conf} (shared state)."""
    if view.variant == "global":
        return kpca.kpca_score(view.split.features, state, hp["gamma"])
    return kpca.kpca_score_classes(view.split.features, state, hp["gamma"], view.split.pred)


def _gradnorm_score(state, view, ctx, hp):
    """GradNorm of the view's features h with p = softmax(z / T) of the view's own logits z (higher = more ID).

    Under MC dropout the unprojected view holds h̄, the features averaged over the passes, and z̄, the
    mean of the per-pass logits, which is W h̄ + b for the linear head: GradNorm of the averaged
    features, as Claros-Olivares & Brockmeier compute it (their
    ``src/utils_funcs.py``: ``mcd_function(gradnorm.get_scores, encoded_distribution, temperature=T)``,
    the pass-mean of the features, then GradNorm with the head's logits).  It does not use
    ``view.probs``, which there is the mean of the per-pass softmaxes (the MSR/PE input).
    """
    return gradnorm(view.features, ls.softmax(view.logits, view.temperature), view.temperature)


def _confidence(state, view, ctx, hp):
    if view.split.confidence is None:
        raise ValueError(f"{view.split.dataset}: the model has no confidence head output")
    return np.asarray(view.split.confidence, dtype=np.float64)


CSFS: tuple[Csf, ...] = (
    Csf("MSR", ALL, lambda s, v, c, hp: ls.msr(v.probs), uses_temperature=True, reads=_LOGITS),
    Csf("MLS", ALL, lambda s, v, c, hp: ls.mls(v.logits, v.temperature), uses_temperature=True, reads=_LOGITS),
    Csf("PE", ALL, lambda s, v, c, hp: ls.pe(v.probs), uses_temperature=True, reads=_LOGITS),
    Csf("GEN", ALL, lambda s, v, c, hp: ls.gen(v.probs, hp["m"], hp["gamma"]), space=_int_bounds_m(),
        uses_temperature=True, grid=logit_methods.GEN_GRID, reads=_LOGITS),
    Csf("REN", ALL, lambda s, v, c, hp: ls.ren(v.probs, hp["m"], hp["gamma"]), space=_int_bounds_m(),
        uses_temperature=True, reads=_LOGITS),
    Csf("GE", ALL, lambda s, v, c, hp: ls.ge(v.probs), uses_temperature=True, reads=_LOGITS),
    Csf("PCE", ALL, lambda s, v, c, hp: ls.pce(v.probs), uses_temperature=True, reads=_LOGITS),
    Csf("Energy", ALL, lambda s, v, c, hp: ls.energy(v.logits, v.temperature), uses_temperature=True, reads=_LOGITS),
    Csf("GradNorm", NO_CLASS, _gradnorm_score, uses_temperature=True, reads=frozenset({"features", "logits"})),
    Csf("PCA RecError", PROJECTED, lambda s, v, c, hp: v.rec),
    Csf("KPCA RecError", PROJECTED, _kpca_score, _kpca_fit,
        space={"variance": Param(0.85, 0.99, "float"), "gamma": Param(0.1, 1.0, "float"),
               "n_landmarks": Param(2000, 5000, "int")},
        shares={"class_avg": "class", "class_pred": "class"}, uses_temperature=True),
    Csf("CTM", ALL, _cos_score(lambda state, ctx: ctx.weight, "cos_weight"), reads=_FEATURES_HEAD),
    Csf("CTMmean", ALL, _cos_score(lambda state, ctx: state["means"], "cos_mean"), _fit_class_means(False),
        reads=frozenset({"features", "labels"})),
    Csf("CTMmeanOC", ("none",), _cos_score(lambda state, ctx: state["means"], "cos_mean"), _fit_class_means(True),
        reads=frozenset({"features", "logits", "labels"})),
    Csf("NNGuide", NO_CLASS, lambda s, v, c, hp: nnguide_score(v.features, v.logits, s["bank"], hp["k"]),
        lambda t, c, hp: {"bank": nnguide_bank(t.features, _bank_logits(t, c), t.split.labels, c.n_classes,
                                               hp["alpha"])},
        space={"k": Param(10, 500, "int"), "alpha": Param(0.1, 0.5, "float")}, neighbour_counts=("k",),
        reads=frozenset({"features", "logits", "labels"})),
    Csf("fDBD", NO_CLASS, lambda s, v, c, hp: fdbd(v.features, _bank_logits(v, c), c.weight, s["mean"]),
        lambda t, c, hp: {"mean": column_mean(t.features)},
        reads=frozenset({"features", "logits", "head"})),
    Csf("Maha", NO_CLASS, lambda s, v, c, hp: dist.maha_score(v.features, s["means"], s["precision"]),
        lambda t, c, hp: dist.maha_fit(t.features, t.split.labels, c.n_classes),
        reads=frozenset({"features", "labels"})),
    Csf("pNML", NO_CLASS,
        lambda s, v, c, hp: pnml_score(v.features, c.weight, c.bias, s["plus_factor"], s["perp_factor"]),
        lambda t, c, hp: pnml_fit(t.features), reads=_FEATURES_HEAD),
    Csf("Residual", ("none",), lambda s, v, c, hp: sub.residual_score(v.features, s["origin"], s["basis"]),
        _vim_fit, reads=_FEATURES_HEAD),
    Csf("ViM", ("none",), _vim_score, _vim_fit, reads=frozenset({"features", "logits", "head"})),
    Csf("NeCo", ("none",), _neco_score, lambda t, c, hp: sub.neco_fit(t.features, 100),
        reads=frozenset({"features", "logits"})),
    Csf("Confidence", ("none",), _confidence, cnn_only=True, reads=frozenset({"confidence"})),
    # Post-hoc detectors of ICONIC-444 (Krumpl, Avenhaus & Possegger, arXiv 2601.10802, §3 and Table 7)
    # and ImageNet-OOD (Yang, Zhang & Russakovsky, ICLR 2024, arXiv 2310.01755, §3) computed from the
    # stored outputs, on the unprojected features and logits; search ranges span their grids
    Csf("MSP", ("none",), lambda s, v, c, hp: ls.max_softmax(v.logits, 1.0), reads=_LOGITS),
    Csf("EBO", ("none",), lambda s, v, c, hp: ls.energy(v.logits, 1.0), reads=_LOGITS),
    Csf("ODIN", ("none",), lambda s, v, c, hp: logit_methods.odin(v.logits, hp["temperature"]),
        space=_span(logit_methods.ODIN_GRID, "float"), grid=logit_methods.ODIN_GRID, reads=_LOGITS),
    Csf("KLM", ("none",), lambda s, v, c, hp: templates.klm_score(s, v.logits),
        lambda t, c, hp: templates.klm_fit(t.logits), reads=_LOGITS),
    Csf("OpenMax", ("none",), lambda s, v, c, hp: openmax.openmax_score(s, v.logits),
        lambda t, c, hp: openmax.openmax_fit(t.logits, t.split.labels), reads=frozenset({"logits", "labels"})),
    Csf("KNN", ("none",), lambda s, v, c, hp: knn_score(s, v.features, hp["k"]),
        lambda t, c, hp: knn_fit(t.features), space=_span(KNN_GRID, "int"), grid=KNN_GRID, neighbour_counts=("k",),
        reads=frozenset({"features"})),
    Csf("ReAct", ("none",), lambda s, v, c, hp: shaping.react_score(s, v.features, c.weight, c.bias),
        lambda t, c, hp: shaping.react_fit(t.features, hp["percentile"]),
        space=_span(shaping.REACT_GRID, "float"), grid=shaping.REACT_GRID, reads=_FEATURES_HEAD),
    *(Csf(f"ASH-{rule.upper()}", ("none",), _ash(rule), space=_span(shaping.ASH_GRID, "float"),
          grid=shaping.ASH_GRID, reads=_FEATURES_HEAD) for rule in ("s", "b", "p")),
    Csf("SCALE", ("none",), lambda s, v, c, hp: shaping.scale_score(v.features, c.weight, c.bias, hp["percentile"]),
        space=_span(shaping.SCALE_GRID, "float"), grid=shaping.SCALE_GRID, reads=_FEATURES_HEAD),
    Csf("DICE", ("none",), lambda s, v, c, hp: shaping.dice_score(s, v.features, c.bias),
        lambda t, c, hp: shaping.dice_fit(t.features, c.weight, hp["percentile"]),
        space=_span(shaping.DICE_GRID, "float"), grid=shaping.DICE_GRID, reads=_FEATURES_HEAD),
    Csf("RMDS", ("none",), lambda s, v, c, hp: templates.rmds_score(s, v.features),
        lambda t, c, hp: templates.rmds_fit(t.features, t.split.labels, c.n_classes),
        reads=frozenset({"features", "labels"})),
    Csf("SHE", ("none",), lambda s, v, c, hp: templates.she_score(s, v.features, v.logits),
        lambda t, c, hp: templates.she_fit(t.features, t.logits, t.split.labels),
        reads=frozenset({"features", "logits", "labels"})),
    Csf("MaxCosine", ("none",), lambda s, v, c, hp: dist.max_cosine(v.features, c.weight), reads=_FEATURES_HEAD),
)

BY_NAME = {csf.name: csf for csf in CSFS}
#: the projection's tuned variance v, the fraction of the training features' variance its global or class PCA
#: keeps (:mod:`csfbench.csf.projection`): the built-in search range, which ``csf.search_space.projection``
#: replaces as a CSF's own ``search_space`` entry replaces its range
PROJECTION_SPACE: dict[str, Param] = {"variance": Param(0.85, 0.99, "float")}
#: the declared parameters of every tuned quantity, {CSF name or "projection": {param: Param}}: what the
#: config's ``csf.fixed``, ``csf.search_space`` and ``csf.tuning.grids`` can name
SPACES: dict[str, dict[str, Param]] = {**{csf.name: csf.space for csf in CSFS}, "projection": PROJECTION_SPACE}
# MCD-E ("expected") variants: the mean over dropout passes of these per-pass scores (authors' code)
EXPECTED = ("MSR", "MLS", "PE", "GEN", "REN", "GE", "PCE", "Energy")
# Pairs of (CSF, variant) score keys of one model that coincide by definition (MSP and MSR@T1 up to MSP's
# float32 exponentials, logit_scores._shifted_exp_sums), {(a, b): one-line reason};
# any other two variants must give different confidences (tests/unit/csf/test_csf_aliases.py).  E.g. CTM and
# CTMmean differ in every variant (head weights w_k vs class means).
ALIASES: dict[tuple[tuple[str, str], tuple[str, str]], str] = {
    (("CTM", "none"), ("MaxCosine", "none")):
        "ImageNet-OOD's Max-Cosine is the maximum cosine of h with the head's class weights, which is CTM",
    (("MSR@T1", "none"), ("MSP", "none")):
        "MSP is the maximum softmax probability at T = 1, which is MSR at T = 1 (deterministic inputs; under MC "
        "dropout MSR averages the per-pass softmaxes and MSP takes the softmax of the mean logits)",
    (("Energy@T1", "none"), ("EBO", "none")): "EBO is the negated energy at T = 1, which is Energy at T = 1",
}

# The temperature of a CSF that reads one (Csf.uses_temperature): "fitted" = the validation-fitted T of
# its logit source (Claros-Olivares & Brockmeier, App. E), "one" = T = 1 (ICONIC-444, Krumpl, Avenhaus &
# Possegger, arXiv 2601.10802; ImageNet-OOD, Yang, Zhang & Russakovsky, ICLR 2024, arXiv 2310.01755).
TEMPERATURES = ("fitted", "one")
# How a CSF's hyper-parameters are chosen: "bayes" = Bayesian optimisation of validation -AUGRC
# (Claros-Olivares & Brockmeier, App. E), "grid" = every point of the CSF's ICONIC-444 Table 7 grid, tuned
# on the ID and an OOD validation set (ICONIC-444, §4, App. B.2): the best validation AUROC of ID against
# OOD (the paper states no criterion; AUROC is OpenOOD v1.5's, on which it builds).
PROTOCOLS = ("bayes", "grid")
# What a fitted (CSF, variant) records as its ``tuning_protocol``: a protocol of PROTOCOLS, or "fixed"
# (every hyper-parameter pinned in the config) or "none" (the CSF has no hyper-parameter)
RECORDED_PROTOCOLS = PROTOCOLS + ("fixed", "none")
_TAGS = {"one": "@T1", "grid": "@grid"}


def flavour_name(name: str, temperature: str = "fitted", protocol: str = "bayes") -> str:
    """The result name of CSF ``name`` run at ``temperature`` and tuned by ``protocol``: Claros-Olivares &
    Brockmeier's (fitted T, Bayesian optimisation) keeps the bare name; T = 1 appends ``@T1``, the grid
    protocol ``@grid`` (``"GEN@T1@grid"``: ICONIC-444's GEN).  The CSF name column of the scores and metric
    rows carries it, so the results table, rankings and figures tell the flavours apart with no special case."""
    return name + _TAGS.get(temperature, "") + _TAGS.get(protocol, "")


def flavour_names(csf: Csf) -> list[str]:
    """Every result name ``csf`` can have: each temperature if it reads one, each protocol if it has a
    published grid (a config's ``csf.tuning.grids`` can give any tuned CSF a grid flavour too)."""
    return [flavour_name(csf.name, t, p) for t in (TEMPERATURES if csf.uses_temperature else ("fitted",))
            for p in (PROTOCOLS if csf.grid else ("bayes",))]


def base_name(name: str) -> str:
    """The registry CSF (or MC-dropout score, "EMSR", "MI") a result name was computed with:
    :func:`flavour_name` without its tags."""
    return name.split("@", 1)[0]


def grid_points(csf: Csf, ctx: ModelContext, overrides: dict | None = None) -> dict[str, tuple]:
    """The grid of ``csf`` for this model: {param: values}, ``overrides`` (config ``csf.tuning.grids``)
    replacing the published values per parameter; values above C of a parameter bounded by C (GEN's M)
    are dropped."""
    grid = {**csf.grid, **(overrides or {})}
    out = {}
    for name, values in grid.items():
        if csf.space[name][1] == "n_classes":
            values = [v for v in values if v <= ctx.n_classes]
        out[name] = tuple(values)
    return out


def variants_for(backbone: str, variants: tuple[str, ...] = VARIANTS,
                 methods: frozenset[str] | None = None) -> list[tuple[Csf, str]]:
    """(CSF, variant) pairs a model of ``backbone`` gets for the given projection variants, among the CSFs
    named in ``methods`` (None: every CSF of the registry)."""
    return [(csf, v) for v in variants for csf in CSFS
            if v in csf.variants and not (csf.cnn_only and backbone == "vit")
            and (methods is None or csf.name in methods)]


def bounds(csf: Csf, ctx: ModelContext, overrides: dict | None = None) -> dict[str, Param]:
    """The search space of ``csf`` for this model: {param: Param(low, high, kind)}; config ``overrides``
    replace (low, high) per parameter."""
    return space_bounds(csf.space, ctx.n_classes, overrides)


def space_bounds(space: dict[str, Param], n_classes: int, overrides: dict | None = None) -> dict[str, Param]:
    """``space`` ({param: Param}, a CSF's or :data:`PROJECTION_SPACE`) with an upper bound ``"n_classes"``
    resolved to ``n_classes`` and (low, high) replaced per parameter by ``overrides``."""
    out = {}
    for name, (low, high, kind) in space.items():
        if overrides and name in overrides:
            low, high = overrides[name]
        out[name] = Param(low, n_classes if high == "n_classes" else high, kind)
    return out
