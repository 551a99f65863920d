"""Any confidence scoring function of the registry on a user's own arrays, without Snakemake or feature
files::

    from csfbench.csf import detector
    d = detector("KPCA RecError", variance=0.9, gamma=0.5, n_landmarks=500)
    d.fit(features=H_train, logits=Z_train, labels=y_train, head_weight=W, head_bias=b)
    s = d.score(features=H, logits=Z)   # float64 (N,), higher = more in-distribution

Shapes and units: N samples, C classes, D penultimate-feature dimensions, P MC-dropout passes.
``features`` N×D are the penultimate activations h (any float dtype; kept as given, the kernels compute
in float64), ``logits`` N×C the pre-softmax class outputs z = W h + b of the linear head
``head_weight`` W (C×D) and ``head_bias`` b (C,), ``labels`` (N,) integer classes in [0, C).  A score is
a float64 array (N,) in the CSF's own unit (a probability, an energy in nats, a negative distance, …),
oriented so that **higher = more confident = more in-distribution**.

A :class:`Detector` computes what the workflow's CSF engine (:mod:`csfbench.csf.engine`) computes for
one (CSF, variant) whose hyper-parameters are fixed: the same projection state, views
(:func:`~csfbench.csf.views.build_views`), temperatures and registry ``fit``/``score``.  It tunes
nothing on validation data, and it does not produce the engine's MC-dropout expected scores (EMSR, …,
MI), which are not registry CSFs.  Choices:

* **Hyper-parameters** are the keys of the CSF's search space (``Csf.space``), every one required as a
  keyword argument; a CSF without a space takes none.
* ``variant``: the projection variant, "none" (default) or, where the CSF supports it, "global",
  "class", "class_avg" or "class_pred" (:mod:`csfbench.csf.projection`).  A projected variant needs
  ``projection_variance`` v ∈ (0, 1], the fraction of the training features' variance its PCA keeps
  (not KPCA RecError's own hyper-parameter ``variance``);
  the PCA (one of the correctly classified training features, or one per class) is fitted in
  :meth:`Detector.fit`.  The engine tunes v on validation within [0.85, 0.99] and the configuration
  schema has no default for it (nor may the ``csf`` package read the workflow settings), so v is
  required for projected variants and refused for "none".
* ``temperature_scaling``: the temperature T > 0 (dimensionless) of the variant's logits, used by the
  softmax-based CSFs as softmax(z / T), by MLS, Energy and GradNorm, and (the unprojected logits' T) by
  the KPCA landmark energies.  1.0 by default (ICONIC-444, ImageNet-OOD), or "fit": one T per logit
  source minimising the validation negative log-likelihood, as the engine does (Claros-Olivares & Brockmeier, App. E), on
  ``val_features`` with ``val_logits`` (or ``val_pass_logits``) and ``val_labels`` given to ``fit``;
  validation inputs are refused otherwise.  It is not called ``temperature`` because that is a CSF's
  own hyper-parameter (ODIN's T).
* ``backbone``: "vit" marks a ViT model, for which the ``cnn_only`` CSFs (Confidence: no paradigm
  confidence head) are refused and ``quirks="compat_authors"`` gives NeCo's ViT form; any other value
  is a CNN.  No registry CSF reads the training paradigm, so there is no paradigm argument.
* ``quirks``: "strict" (default, the paper's consistent form) or "compat_authors" (the authors' code;
  :mod:`csfbench.csf.registry`).  The head is the C class rows only: a Deep Gamblers model's
  abstention output is dropped from W, b and the logits, so compat mode cannot restore it for ViM,
  Residual or NeCo.
* **Confidence** (a paradigm's confidence head, higher = more confident) scores the array passed to
  :meth:`Detector.score` as ``confidence`` (N,); without it, score raises ValueError.
* **MC dropout**: pass ``pass_logits`` N×P×C (and the pass-averaged features as ``features``) instead
  of ``logits``, to ``fit`` and ``score`` alike (and ``val_pass_logits`` for a fitted T).  As in the
  engine's ``mcd`` mode, the logits are the pass mean, the prediction the argmax of the mean softmax,
  and the softmax-based CSFs of the unprojected variant use the mean of the per-pass softmaxes.
* :meth:`Detector.fit` is required before :meth:`Detector.score` for every CSF, also for those without
  fitted state: it receives the head W, b and the projection and temperature settings that scoring
  needs.  ``fit`` returns the detector.
* KPCA RecError's class variants share one fitted state, whose score gives all three variants at once;
  the detector returns its own variant's array.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from csfbench.csf.logit_scores import softmax
from csfbench.csf.projection import GROUP_VARIANTS, projection_states

if TYPE_CHECKING:
    from csfbench.csf.inputs import SplitData
    from csfbench.csf.registry import Csf, ModelContext

# The registry, temperature scaling and the views load scipy and h5py (~0.3 s): they are imported where
# first used, so that ``csfbench.csf``, which exports :func:`detector`, keeps its kernels light to import.

PARADIGM = "unspecified"  # ModelContext.paradigm: read by no registry CSF
GROUP_OF = {variant: group for group, variants in GROUP_VARIANTS.items() for variant in variants}


def detector(name: str, *, variant: str = "none", temperature_scaling: float | str = 1.0,
             projection_variance: float | None = None, backbone: str = "cnn", quirks: str = "strict",
             **hyper_parameters) -> "Detector":
    """The registry CSF ``name`` with its hyper-parameters as keyword arguments, ready to :meth:`~Detector.fit`.

    Options (module docstring): ``variant``, ``temperature_scaling`` (T > 0 or "fit"),
    ``projection_variance`` (v ∈ (0, 1], projected variants only), ``backbone``, ``quirks``.
    Raises ValueError for an unknown CSF name, variant or option value, TypeError for unknown or
    missing hyper-parameters; each message lists the valid choices.
    """
    from csfbench.csf.registry import BY_NAME, QUIRKS

    csf = BY_NAME.get(name)
    if csf is None:
        raise ValueError(f"unknown CSF {name!r}; the registry's CSFs are: {', '.join(BY_NAME)}")
    _check_hyper_parameters(csf, hyper_parameters)
    if variant not in csf.variants:
        raise ValueError(f"CSF {name} has no variant {variant!r}; its variants are: {', '.join(csf.variants)}")
    if csf.cnn_only and backbone == "vit":
        raise ValueError(f"CSF {name} is defined for CNN backbones only, not for backbone 'vit'")
    if quirks not in QUIRKS:
        raise ValueError(f"quirks must be one of {', '.join(QUIRKS)}, got {quirks!r}")
    if variant == "none" and projection_variance is not None:
        raise ValueError("projection_variance applies to the projected variants only, not to variant 'none'")
    if variant != "none" and not _is_fraction(projection_variance):
        raise ValueError(f"variant {variant!r} needs projection_variance, the fraction of the training features' "
                         f"variance its PCA keeps, in (0, 1]; got {projection_variance!r}")
    if temperature_scaling != "fit" and not _is_positive(temperature_scaling):
        raise ValueError(f"temperature_scaling must be a temperature > 0 or 'fit', got {temperature_scaling!r}")
    return Detector(csf, variant, dict(hyper_parameters), temperature_scaling, projection_variance, backbone,
                    quirks)


def _check_hyper_parameters(csf: Csf, given: dict) -> None:
    valid = sorted(csf.space)
    takes = f"{csf.name} takes the hyper-parameters {', '.join(valid)}" if valid else \
        f"{csf.name} takes no hyper-parameters"
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise TypeError(f"unknown hyper-parameter(s) {', '.join(unknown)}: {takes}")
    missing = [key for key in valid if key not in given]
    if missing:
        raise TypeError(f"missing hyper-parameter(s) {', '.join(missing)}: {takes}")


def _is_positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and value > 0


def _is_fraction(value) -> bool:
    return _is_positive(value) and value <= 1


@dataclass
class _Fitted:
    ctx: ModelContext
    projection: dict
    temperatures: dict[str, float]
    state: dict | None
    mode: str


class Detector:
    """One registry CSF in one projection variant with fixed hyper-parameters; build it with :func:`detector`."""

    def __init__(self, csf: Csf, variant: str, hyper_parameters: dict, temperature_scaling: float | str,
                 projection_variance: float | None, backbone: str, quirks: str):
        self.name = csf.name
        self.variant = variant
        self.hyper_parameters = hyper_parameters
        self._csf = csf
        # KPCA's class variants are fitted and scored through the variant owning their shared state
        self._owner = csf.shares.get(variant, variant)
        self._temperature_scaling = temperature_scaling
        self._projection_variance = projection_variance
        self._backbone = backbone
        self._quirks = quirks
        self._fitted: _Fitted | None = None

    @property
    def temperature(self) -> float:
        """The temperature T of this variant's logits (the given one, or the one fitted on validation)."""
        return self._require_fit().temperatures[self.variant]

    def fit(self, *, features, labels, head_weight, head_bias, logits=None, pass_logits=None,
            val_features=None, val_logits=None, val_labels=None, val_pass_logits=None) -> "Detector":
        """Fit the projection, the temperatures and the CSF's state on the training split; returns self.

        ``features`` N×D, exactly one of ``logits`` N×C or ``pass_logits`` N×P×C (MC dropout),
        ``labels`` (N,) in [0, C), ``head_weight`` C×D, ``head_bias`` (C,).  The ``val_*`` inputs (same
        layout, labelled) are required with ``temperature_scaling="fit"`` and refused otherwise.
        """
        from csfbench.csf.registry import ModelContext
        from csfbench.csf.temperature import fit_temperature
        from csfbench.csf.views import build_views, variant_logits

        weight = np.asarray(head_weight, dtype=np.float64)
        bias = np.asarray(head_bias, dtype=np.float64)
        if weight.ndim != 2 or bias.shape != weight.shape[:1]:
            raise ValueError(f"head_weight must be C×D and head_bias (C,), got {weight.shape} and {bias.shape}")
        train = _split("train", weight.shape, features, logits, pass_logits, labels)
        val_inputs = (val_features, val_logits, val_labels, val_pass_logits)
        if self._temperature_scaling != "fit":
            if any(x is not None for x in val_inputs):
                raise TypeError("val_features/val_logits/val_pass_logits/val_labels are used only with "
                                "temperature_scaling='fit'")
        elif val_features is None or val_labels is None:
            raise TypeError("temperature_scaling='fit' needs val_features, val_labels and val_logits "
                            "(or val_pass_logits)")
        ctx = ModelContext(weight.shape[0], self._backbone, PARADIGM, weight, bias, weight, bias, self._quirks)
        group = GROUP_OF[self.variant]
        projection = _fit_projection(group, train, ctx.n_classes, self._projection_variance)
        if self._temperature_scaling == "fit":
            val = _split("val", weight.shape, val_features, val_logits, val_pass_logits, val_labels)
            if val.mode != train.mode:
                raise ValueError("give pass_logits for both the training and the validation split, or for neither")
            parts = variant_logits(val, projection, weight, bias)
            temperatures = {v: fit_temperature(parts[v][1], val.labels) for v in GROUP_VARIANTS[group]}
            ctx.base_temperature = fit_temperature(val.logits, val.labels)
        else:
            temperatures = dict.fromkeys(GROUP_VARIANTS[group], float(self._temperature_scaling))
            ctx.base_temperature = float(self._temperature_scaling)
        train_view = build_views(train, projection, weight, bias, temperatures)[self._owner]
        state = self._csf.fit(train_view, ctx, self.hyper_parameters) if self._csf.fit else None
        self._fitted = _Fitted(ctx, projection, temperatures, state, train.mode)
        return self

    def score(self, *, features, logits=None, pass_logits=None, confidence=None) -> np.ndarray:
        """Confidence of every row, float64 (N,), higher = more in-distribution.

        ``features`` N×D and exactly one of ``logits`` N×C or ``pass_logits`` N×P×C, as given to
        :meth:`fit`; ``confidence`` (N,) is the paradigm head's output, read by the Confidence CSF only.
        Raises RuntimeError before :meth:`fit`, ValueError for non-finite confidences.
        """
        from csfbench.csf.views import build_views

        fitted = self._require_fit()
        ctx = fitted.ctx
        split = _split("score", ctx.weight.shape, features, logits, pass_logits, confidence=confidence)
        if split.mode != fitted.mode:
            raise ValueError("give pass_logits to both fit and score, or to neither")
        view = build_views(split, fitted.projection, ctx.weight, ctx.bias, fitted.temperatures)[self._owner]
        conf = self._csf.score(fitted.state, view, ctx, self.hyper_parameters)
        if self._owner in self._csf.shares.values():
            conf = conf[self.variant]
        conf = np.asarray(conf, dtype=np.float64)
        bad = int((~np.isfinite(conf)).sum())
        if bad:
            raise ValueError(f"CSF {self.name} [{self.variant}] produced {bad} non-finite confidences")
        return conf

    def _require_fit(self) -> _Fitted:
        if self._fitted is None:
            raise RuntimeError(f"CSF {self.name} [{self.variant}]: call fit() before score()")
        return self._fitted


def _split(dataset: str, head_shape: tuple[int, int], features, logits, pass_logits, labels=None,
           confidence=None) -> SplitData:
    """The engine's :class:`SplitData` of user arrays; unlabelled (labels −1) when ``labels`` is None."""
    from csfbench.csf.inputs import SplitData

    n_classes, dim = head_shape
    features = np.asarray(features)
    if features.ndim != 2 or features.shape[1] != dim:
        raise ValueError(f"{dataset}: features must be N×{dim} (the head's D), got shape {features.shape}")
    n = len(features)
    if (logits is None) == (pass_logits is None):
        raise TypeError(f"{dataset}: give exactly one of logits (N×C) or pass_logits (N×P×C, MC dropout)")
    if pass_logits is None:
        mode, passes = "det", None
        logits = np.asarray(logits, dtype=np.float64)
    else:
        mode, passes = "mcd", np.asarray(pass_logits, dtype=np.float64)
        if passes.ndim != 3 or passes.shape[1] == 0:
            raise ValueError(f"{dataset}: pass_logits must be N×P×C with P >= 1, got shape {passes.shape}")
        logits = passes.mean(1)
    if logits.shape != (n, n_classes):
        raise ValueError(f"{dataset}: logits must be {n}×{n_classes} (N×C of the head), got shape {logits.shape}")
    # the prediction of the engine's input modes: argmax of the logits, or of the mean softmax over passes
    pred = logits.argmax(1) if passes is None else softmax(passes).mean(1).argmax(1)
    if labels is None:
        labels = np.full(n, -1, dtype=np.int64)
    else:
        labels = np.asarray(labels)
        if n == 0:
            raise ValueError(f"{dataset}: no samples")
        if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"{dataset}: labels must be {n} integers, got {labels.dtype} of shape {labels.shape}")
        if labels.min() < 0 or labels.max() >= n_classes:
            raise ValueError(f"{dataset}: labels must lie in [0, {n_classes})")
        labels = labels.astype(np.int64)
    if confidence is not None:
        confidence = np.asarray(confidence, dtype=np.float64)
        if confidence.shape != (n,):
            raise ValueError(f"{dataset}: confidence must have shape ({n},), got {confidence.shape}")
    return SplitData(dataset, mode, features, logits, logits, labels, pred, confidence, passes)


def _fit_projection(group: str, train: SplitData, n_classes: int, variance: float | None) -> dict:
    """The projection state of ``group`` at variance v, as the engine builds it (without its tuning of v)."""
    if group == "none":
        return {"group": "none"}
    return projection_states(group, train.features, train.labels, train.correct, n_classes)(variance)
