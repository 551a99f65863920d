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

**Inputs.** Each CSF declares the inputs it reads (``Csf.reads``, shown as :attr:`Detector.reads`; a
projected variant reads features, logits, labels and the head).  ``fit`` and ``score`` require those, and
no score depends on the others, so the call above works for every CSF and a logit score needs no more
than logits::

    detector("MSP").fit().score(logits=Z)                  # no features, head or training split
    detector("KNN", k=50).fit(features=H_train).score(features=H)

``fit`` takes the head (where read) and the training inputs of a CSF with fitted state or a projected
variant; ``score`` the features, logits and confidences read.  C and D come from the head where
given, else from the logits and features given (read or not), else C is the largest training label + 1;
zeros of that shape stand in for what a CSF does not read.  So an input given but not read still fixes
C or D and must agree in shape with the others.  Every input given is an array (or nested list) of real
numbers, integer or floating (labels integers), with the dimensions of :data:`LAYOUTS`: a bool,
complex, string or object array is a TypeError, a scalar or another number of dimensions a ValueError,
each naming the split ("train", "val", "head", "score"), the argument and its layout.  Every input read
must be finite: a NaN or Inf is a ValueError naming the input, the split and its first row.

A :class:`Detector` computes what the workflow's CSF engine (:mod:`csfbench.csf.engine`) computes for
one (CSF, variant) whose hyper-parameters are fixed: the same projection state, views
(:func:`~csfbench.csf.views.build_views`), temperatures and registry ``fit``/``score``.  It tunes
nothing on validation data, and it does not produce the engine's MC-dropout expected scores (EMSR, …,
MI), which are not registry CSFs.  Choices:

* **Hyper-parameters** are the keys of the CSF's search space (``Csf.space``), every one required as a
  keyword argument: a real number, an integer where the space is one of integers (numpy scalars
  included; the CSF receives each as its kind, :meth:`~csfbench.csf.registry.Csf.typed`).  A CSF without
  a space takes none.  A value outside the search range is allowed (the range is what the engine tunes
  in); a score that gives every row the same value, as a degenerate choice can (ReAct's clip at
  percentile 0.9 of mostly-zero activations), warns (``UserWarning``).  A neighbour count k (KNN,
  NNGuide: :data:`NEIGHBOUR_COUNTS`) must lie in [1, N] for N training rows, the bound of KNN's bank,
  checked by :meth:`Detector.fit` (NNGuide's bank holds M <= N of them, and a k above M is capped at M,
  as in the engine).
* ``variant``: the projection variant, "none" (default) or, where the CSF supports it, "global",
  "class", "class_avg" or "class_pred" (:mod:`csfbench.csf.projection`).  A projected variant needs
  ``projection_variance`` v ∈ (0, 1], the fraction of the training features' variance its PCA keeps
  (not KPCA RecError's own hyper-parameter ``variance``);
  the PCA (one of the correctly classified training features, or one per class) is fitted in
  :meth:`Detector.fit`.  The engine tunes v on validation within its built-in range
  (:data:`~csfbench.csf.registry.PROJECTION_SPACE`, [0.85, 0.99]) and the configuration
  schema has no default for it (nor may the ``csf`` package read the workflow settings), so v is
  required for projected variants and refused for "none".
* ``temperature_scaling``: the temperature T > 0 (dimensionless) of the variant's logits, used by the
  softmax-based CSFs as softmax(z / T), by MLS, Energy and GradNorm, and (the unprojected logits' T) by
  the KPCA landmark energies.  1.0 by default (ICONIC-444, ImageNet-OOD), or "fit": one T per logit
  source minimising the validation negative log-likelihood, as the engine does (Claros-Olivares &
  Brockmeier, App. E), on ``val_logits`` (or ``val_pass_logits``) and ``val_labels`` given to ``fit``
  (with ``val_features`` where the CSF reads features); validation inputs are refused otherwise.  It
  is not called ``temperature`` because that is a CSF's own hyper-parameter (ODIN's T).  A CSF that
  reads no temperature (``Csf.uses_temperature`` false: MSP, EBO and the other detectors defined at
  T = 1, and the scores of features alone; KPCA RecError reads the base T for its landmark energies)
  refuses any value but 1.0.
* ``backbone``: one of :data:`BACKBONES`, "cnn" (default: a VGG-13, a ResNet or any other CNN) or
  "vit", a ViT model, for which the ``cnn_only`` CSFs (Confidence: no paradigm confidence head) are
  refused and ``quirks="compat_authors"`` gives NeCo's ViT form; any other value is a ValueError
  listing them.  No registry CSF reads the training paradigm, so there is no paradigm argument.
* ``quirks``: "strict" (default, the paper's consistent form) or "compat_authors" (the authors' code;
  :mod:`csfbench.csf.registry`).  The head is the C class rows only: a Deep Gamblers model's
  abstention output is dropped from W, b and the logits, so compat mode cannot restore it for ViM,
  Residual or NeCo.
* **Confidence** (a paradigm's confidence head, higher = more confident) scores the array passed to
  :meth:`Detector.score` as ``confidence`` (N,), the one input it reads.
* **MC dropout**: pass ``pass_logits`` N×P×C (and the pass-averaged features as ``features``) instead
  of ``logits``, to ``fit`` and ``score`` alike (and ``val_pass_logits`` for a fitted T).  As in the
  engine's ``mcd`` mode, the logits are the pass mean, the prediction the argmax of the mean softmax,
  and the softmax-based CSFs of the unprojected variant use the mean of the per-pass softmaxes.
* :meth:`Detector.fit` is required before :meth:`Detector.score` for every CSF, also for those without
  fitted state: it receives the head W, b (where read) and the projection and temperature settings that
  scoring needs.  ``fit`` returns the detector.
* KPCA RecError's class variants share one fitted state, whose score gives all three variants at once;
  the detector returns its own variant's array.
"""
from __future__ import annotations

import numbers
import warnings
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
#: the values of ``backbone``: the registry tells a ViT ("vit") from every other, convolutional, network
BACKBONES = ("cnn", "vit")
#: the CSFs whose hyper-parameter k counts nearest training rows: k in [1, N_train] (KNN's bank rule)
NEIGHBOUR_COUNTS = frozenset({"KNN", "NNGuide"})
#: the array arguments of fit and score: (number of dimensions, layout); ``val_*`` as their training form
LAYOUTS = {"features": (2, "N×D"), "logits": (2, "N×C"), "pass_logits": (3, "N×P×C"), "labels": (1, "(N,)"),
           "head_weight": (2, "C×D"), "head_bias": (1, "(C,)"), "confidence": (1, "(N,)")}


def detector(name: str, *, variant: str = "none", temperature_scaling: float | str = 1.0,
             projection_variance: float | None = None, backbone: str = "cnn", quirks: str = "strict",
             **hyper_parameters) -> "Detector":
    """The registry CSF ``name`` with its hyper-parameters as keyword arguments, ready to :meth:`~Detector.fit`.

    Options (module docstring): ``variant``, ``temperature_scaling`` (T > 0 or "fit"),
    ``projection_variance`` (v ∈ (0, 1], projected variants only), ``backbone`` ("cnn" or "vit"),
    ``quirks``.
    Raises ValueError for an unknown CSF name, variant or option value, TypeError for unknown or
    missing hyper-parameters or one of the wrong type; each message lists the valid choices.
    """
    from csfbench.csf.registry import BY_NAME, CSFS, QUIRKS

    csf = BY_NAME.get(name)
    if csf is None:
        raise ValueError(f"unknown CSF {name!r}; the registry's CSFs are: {', '.join(BY_NAME)}")
    _check_hyper_parameters(csf, hyper_parameters)
    if variant not in csf.variants:
        projected = "" if "none" in csf.variants else " (each needs projection_variance in (0, 1])"
        raise ValueError(f"CSF {name} has no variant {variant!r}; its variants are: {', '.join(csf.variants)}"
                         f"{projected}")
    if not isinstance(backbone, str) or backbone not in BACKBONES:
        raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r} ('cnn' for a VGG, "
                         "ResNet or any other convolutional network, 'vit' for a vision transformer)")
    if csf.cnn_only and backbone == "vit":
        raise ValueError(f"CSF {name} is defined for CNN backbones only, not for backbone 'vit'")
    if quirks not in QUIRKS:
        raise ValueError(f"quirks must be one of {', '.join(QUIRKS)}, got {quirks!r}")
    if variant == "none" and projection_variance is not None:
        raise ValueError("projection_variance applies to the projected variants only, not to variant 'none'")
    if variant != "none" and not _is_fraction(projection_variance):
        raise ValueError(f"variant {variant!r} needs projection_variance, the fraction of the training features' "
                         f"variance its PCA keeps, in (0, 1]; got {projection_variance!r}")
    fitted = isinstance(temperature_scaling, str) and temperature_scaling == "fit"
    if not fitted and not _is_positive(temperature_scaling):
        raise ValueError(f"temperature_scaling must be a temperature > 0 or 'fit', got {temperature_scaling!r}")
    if not csf.uses_temperature and (fitted or float(temperature_scaling) != 1.0):
        readers = ", ".join(c.name for c in CSFS if c.uses_temperature)
        raise ValueError(f"CSF {name} reads no temperature, so temperature_scaling must stay 1.0 (got "
                         f"{temperature_scaling!r}); the CSFs that read one: {readers}")
    return Detector(csf, variant, csf.typed(hyper_parameters), temperature_scaling, projection_variance, backbone,
                    quirks)


def _check_hyper_parameters(csf: Csf, given: dict) -> None:
    """TypeError for an unknown, missing or non-numeric hyper-parameter (an integer one must be an integer)."""
    valid = sorted(csf.space)
    ranges = {key: "{} in [{}, {}]".format("integer" if kind == "int" else "real", low,
                                           "C" if high == "n_classes" else high)
              for key, (low, high, kind) in csf.space.items()}
    takes = (f"{csf.name} takes the hyper-parameters {', '.join(f'{key} ({ranges[key]} when tuned)' for key in valid)}"
             if valid else f"{csf.name} takes no hyper-parameters")
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise TypeError(f"unknown hyper-parameter(s) {', '.join(unknown)}: {takes}")
    missing = [key for key in valid if key not in given]
    if missing:
        raise TypeError(f"missing hyper-parameter(s) {', '.join(missing)}: {takes}")
    for key, value in given.items():
        integer = csf.space[key][2] == "int"
        # an integer may come as a float of integer value (50.0: a JSON or YAML number, a tuned parameter)
        if not isinstance(value, numbers.Real) or isinstance(value, bool) or not np.isfinite(value) \
                or (integer and not float(value).is_integer()):
            raise TypeError(f"{csf.name}'s hyper-parameter {key} must be {'an integer' if integer else 'a finite real'}"
                            f" number, got {value!r}: {takes}")


def _is_positive(value) -> bool:
    """Whether ``value`` is a finite real number > 0 (numpy scalars included, booleans not)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and bool(np.isfinite(value)) \
        and value > 0


def _is_fraction(value) -> bool:
    return _is_positive(value) and value <= 1


#: how each input of :data:`csfbench.csf.registry.INPUTS` is passed to fit and score
ARGUMENTS = {"features": "features", "logits": "logits (or pass_logits)", "labels": "labels",
             "head": "head_weight and head_bias", "confidence": "confidence"}


@dataclass
class _Fitted:
    projection: dict
    temperatures: dict[str, float]
    base_temperature: float
    state: dict | None
    mode: str | None  # "det" or "mcd"; None when the CSF reads no logits
    head: tuple[np.ndarray, np.ndarray] | None  # W, b when the CSF reads them
    n_classes: int | None  # C, when an input read in fit fixed it
    dim: int | None  # D, likewise


class Detector:
    """One registry CSF in one projection variant with fixed hyper-parameters; build it with :func:`detector`."""

    def __init__(self, csf: Csf, variant: str, hyper_parameters: dict, temperature_scaling: float | str,
                 projection_variance: float | None, backbone: str, quirks: str):
        self.name = csf.name
        self.variant = variant
        self.hyper_parameters = hyper_parameters
        #: the inputs this CSF reads in this variant (:data:`csfbench.csf.registry.INPUTS`)
        self.reads = csf.reads_for(variant)
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

    def fit(self, *, features=None, labels=None, head_weight=None, head_bias=None, logits=None, pass_logits=None,
            val_features=None, val_logits=None, val_labels=None, val_pass_logits=None) -> "Detector":
        """Fit the projection, the temperatures and the CSF's state on the training split; returns self.

        ``features`` N×D, ``logits`` N×C or ``pass_logits`` N×P×C (MC dropout), ``labels`` (N,) in
        [0, C), ``head_weight`` C×D, ``head_bias`` (C,): the head where :attr:`reads` has it, the
        training inputs it has where the CSF has fitted state or the variant is projected; the others
        change no score (they may fix C and D: module docstring).  With ``temperature_scaling="fit"``,
        ``val_logits`` (or ``val_pass_logits``) and ``val_labels`` are required (and ``val_features`` for
        a projected variant); otherwise the ``val_*`` inputs are refused.  Arrays of real numbers only,
        of these dimensions (TypeError, ValueError: module docstring); KNN's and NNGuide's k must lie in
        [1, N] for N training rows (ValueError).
        """
        from csfbench.csf.temperature import fit_temperature, fit_temperatures
        from csfbench.csf.views import build_views, variant_logits

        features, logits, pass_logits, labels = _arrays("train", features=features, logits=logits,
                                                        pass_logits=pass_logits, labels=labels)
        head_weight, head_bias = _arrays("head", head_weight=head_weight, head_bias=head_bias)
        val_features, val_logits, val_pass_logits, val_labels = _arrays(
            "val", val_features=val_features, val_logits=val_logits, val_pass_logits=val_pass_logits,
            val_labels=val_labels)
        reads, group = self.reads, GROUP_OF[self.variant]
        # the training split is read only by a CSF with fitted state or by a projected variant
        needs_train = self._csf.fit is not None or group != "none"
        # the temperature of an unprojected variant is fitted on the validation logits alone
        val_reads = frozenset({"logits", "labels"}) | (reads if group != "none" else frozenset())
        train_logits = _logits_given("train", logits, pass_logits)
        given = {"head": head_weight if head_bias is not None else None}
        if needs_train:
            given.update(features=features, logits=train_logits, labels=labels)
        self._require("fit", **given)
        self._check_validation(val_reads, val_features, _logits_given("val", val_logits, val_pass_logits), val_labels)
        head = _head(head_weight, head_bias) if given["head"] is not None else None
        # C and D: from the head, else from the inputs given (read or not; validation ones included)
        if head is not None:
            n_classes, dim = head[0].shape
        else:
            n_classes = _width(logits, pass_logits, val_logits, val_pass_logits) or _label_count(labels)
            dim = _width(features, val_features)
        shape = (n_classes or 1, dim or 1)
        weight, bias = head if head is not None and "head" in reads else _placeholder_head(*shape)
        ctx = self._context(weight, bias)
        train = self._read_split("train", shape, features, logits, pass_logits, labels) if needs_train else None
        if self.name in NEIGHBOUR_COUNTS:
            _check_neighbours(self.name, self.hyper_parameters["k"], len(train.features))
        projection = _fit_projection(group, train, ctx.n_classes, self._projection_variance)
        # the input mode (MC-dropout pass logits or not) of the logits the CSF reads
        modes = set()
        if "logits" in reads and train_logits is not None:
            modes.add("det" if pass_logits is None else "mcd")
        if self._temperature_scaling == "fit":
            val = self._read_split("val", shape, val_features, val_logits, val_pass_logits, val_labels,
                                   reads=val_reads)
            modes.add(val.mode)
            if len(modes) > 1:
                raise ValueError("give pass_logits for both the training and the validation split, or for neither")
            ctx.base_temperature = fit_temperature(val.logits, val.labels, "unprojected logits")
            temperatures = fit_temperatures(variant_logits(val, projection, weight, bias), val.labels,
                                            ctx.base_temperature)
        else:
            temperatures = dict.fromkeys(GROUP_VARIANTS[group], float(self._temperature_scaling))
            ctx.base_temperature = float(self._temperature_scaling)
        state = None
        if self._csf.fit is not None:
            train_view = build_views(train, projection, weight, bias, temperatures)[self._owner]
            state = self._csf.fit(train_view, ctx, self.hyper_parameters)
        mode = modes.pop() if "logits" in reads and modes else None
        self._fitted = _Fitted(projection, temperatures, ctx.base_temperature, state, mode,
                               (weight, bias) if "head" in reads else None, n_classes, dim)
        return self

    def score(self, *, features=None, logits=None, pass_logits=None, confidence=None) -> np.ndarray:
        """Confidence of every row, float64 (N,), higher = more in-distribution.

        ``features`` N×D, ``logits`` N×C or ``pass_logits`` N×P×C (the same kind as given to
        :meth:`fit`), ``confidence`` (N,) the paradigm head's output: those of :attr:`reads` are
        required, the others change no score.  Raises RuntimeError before :meth:`fit`, TypeError for an
        input that is no array of real numbers, ValueError for one of other dimensions, for a non-finite
        input read or non-finite confidences; no rows give an empty array; warns (``UserWarning``) when
        every row gets the same score.
        """
        from csfbench.csf.views import build_views

        fitted = self._require_fit()
        features, logits, pass_logits, confidence = _arrays("score", features=features, logits=logits,
                                                            pass_logits=pass_logits, confidence=confidence)
        self._require("score", features=features, logits=_logits_given("score", logits, pass_logits),
                      confidence=confidence)
        if fitted.head is not None:
            weight, bias = fitted.head
        else:
            weight, bias = _placeholder_head(fitted.n_classes or _width(logits, pass_logits) or 1,
                                             fitted.dim or _width(features) or 1)
        ctx = self._context(weight, bias)
        ctx.base_temperature = fitted.base_temperature
        split = self._read_split("score", weight.shape, features, logits, pass_logits, confidence=confidence)
        if fitted.mode is not None and split.mode != fitted.mode:
            raise ValueError("give pass_logits to both fit and score, or to neither")
        if not len(split.features):
            return np.empty(0)
        view = build_views(split, fitted.projection, weight, bias, fitted.temperatures)[self._owner]
        conf = self._csf.score(fitted.state, view, ctx, self.hyper_parameters)
        if self._owner in self._csf.shares.values():
            conf = conf[self.variant]
        conf = np.asarray(conf, dtype=np.float64)
        bad = int((~np.isfinite(conf)).sum())
        if bad:
            raise ValueError(f"CSF {self.name} [{self.variant}] produced {bad} non-finite confidences")
        if len(conf) > 1 and conf.min() == conf.max():
            warnings.warn(f"CSF {self.name} [{self.variant}] gave all {len(conf)} rows the same score "
                          f"{conf[0]:.6g}, so it cannot rank them: saturated scores (a softmax of 1 at large "
                          "logit margins) or a degenerate fit or hyper-parameter (a clip at 0, a zero covariance; "
                          f"hyper-parameters {self.hyper_parameters})", stacklevel=2)
        return conf

    def _require(self, stage: str, **given) -> None:
        """TypeError naming the inputs of :attr:`reads` that ``stage`` needs and did not get."""
        missing = [ARGUMENTS[key] for key, value in given.items() if key in self.reads and value is None]
        if missing:
            raise TypeError(f"CSF {self.name} [{self.variant}] reads {', '.join(sorted(self.reads))}: "
                            f"{stage} needs {', '.join(missing)}")

    def _check_validation(self, val_reads: frozenset, features, logits, labels) -> None:
        """TypeError unless the validation inputs go with ``temperature_scaling="fit"``, complete."""
        given = {"features": features, "logits": logits, "labels": labels}
        if self._temperature_scaling != "fit":
            if any(value is not None for value in given.values()):
                raise TypeError("val_features/val_logits/val_pass_logits/val_labels are used only with "
                                "temperature_scaling='fit'")
            return
        needed = [key for key in ("logits", "labels", "features") if key in val_reads]
        if any(given[key] is None for key in needed):
            names = {"logits": "val_logits (or val_pass_logits)", "labels": "val_labels", "features": "val_features"}
            raise TypeError(f"temperature_scaling='fit' needs {', '.join(names[key] for key in needed)}")

    def _context(self, weight: np.ndarray, bias: np.ndarray) -> ModelContext:
        from csfbench.csf.registry import ModelContext

        return ModelContext(weight.shape[0], self._backbone, PARADIGM, weight, bias, weight, bias, self._quirks)

    def _read_split(self, dataset: str, head_shape: tuple[int, int], features, logits, pass_logits, labels=None,
                    confidence=None, reads: frozenset | None = None) -> SplitData:
        """:func:`_split` of the inputs of ``reads`` (default :attr:`reads`); zeros of the same rows stand
        in for features and logits not read, and labels not read are left out."""
        reads = self.reads if reads is None else reads
        features = features if "features" in reads else None
        logits, pass_logits = (logits, pass_logits) if "logits" in reads else (None, None)
        labels = labels if "labels" in reads else None
        confidence = confidence if "confidence" in reads else None
        rows = _rows(dataset, features, logits, pass_logits, labels, confidence)
        n_classes, dim = head_shape
        if features is None:
            features = np.zeros((rows, dim), dtype=np.float32)
        if logits is None and pass_logits is None:
            logits = np.zeros((rows, n_classes))
        return _split(dataset, head_shape, features, logits, pass_logits, labels, confidence)

    def _require_fit(self) -> _Fitted:
        if self._fitted is None:
            raise RuntimeError(f"CSF {self.name} [{self.variant}] is not fitted yet: call fit() first")
        return self._fitted


def _one_of(*values):
    """The first of ``values`` that is not None (None if all are)."""
    return next((v for v in values if v is not None), None)


def _width(*arrays) -> int | None:
    """The last-axis length of the first array given (None if none is)."""
    array = _one_of(*arrays)
    if array is None or np.ndim(array) == 0:
        return None
    return int(np.shape(array)[-1])


def _arrays(dataset: str, **given) -> list:
    """The arguments ``given`` ({name: value}) as arrays, in order (None stays None), checked against
    :data:`LAYOUTS`: TypeError unless the values are real numbers (integer or floating; bool, complex,
    string and object arrays are not), ValueError unless the array has the argument's dimensions.
    Labels must be integers (:func:`_split` refuses floating ones, naming the row count)."""
    arrays = []
    for argument, value in given.items():
        if value is None:
            arrays.append(None)
            continue
        ndim, layout = LAYOUTS[argument.removeprefix("val_")]
        kind = "integers" if argument.endswith("labels") else "real numbers (integer or floating)"
        expected = f"{dataset}: {argument} must be a {ndim}-D array {layout} of {kind}"
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as err:  # a ragged nested list
            raise TypeError(f"{expected}, got a {type(value).__name__} that is no such array ({err})") from None
        if array.dtype.kind not in "iuf":
            raise TypeError(f"{expected}, got dtype {array.dtype}")
        if array.ndim != ndim:
            got = "a scalar" if array.ndim == 0 else f"shape {array.shape}"
            raise ValueError(f"{dataset}: {argument} must be {ndim}-D, {layout}, got {got}")
        arrays.append(array)
    return arrays


def _check_neighbours(name: str, k: int, n_train: int) -> None:
    """ValueError unless the neighbour count ``k`` of CSF ``name`` lies in [1, N] for ``n_train`` = N
    training rows: the rule of KNN's bank (:func:`csfbench.csf.knn.knn_score`), applied at fit."""
    if not 1 <= k <= n_train:
        raise ValueError(f"{name} k must lie in [1, {n_train}] (the training-set size), got {k}")


def _logits_given(dataset: str, logits, pass_logits):
    """The logits or pass logits given (None if neither is); TypeError if both are."""
    if logits is not None and pass_logits is not None:
        raise TypeError(f"{dataset}: give exactly one of logits (N×C) or pass_logits (N×P×C, MC dropout)")
    return _one_of(logits, pass_logits)


def _label_count(labels) -> int | None:
    """C = the largest training label + 1 (None for labels :func:`_split` will refuse)."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not labels.size or not np.issubdtype(labels.dtype, np.integer):
        return None
    return int(labels.max()) + 1


def _rows(dataset: str, *arrays) -> int:
    """N, the rows of the first input given (TypeError if none is: nothing to score)."""
    array = _one_of(*arrays)
    if array is None:
        raise TypeError(f"{dataset}: no input rows given")
    return len(np.asarray(array))


def _head(weight, bias) -> tuple[np.ndarray, np.ndarray]:
    """The head W (C×D), b (C,) as float64 (ValueError for other shapes or a NaN/Inf)."""
    weight = np.asarray(weight, dtype=np.float64)
    bias = np.asarray(bias, dtype=np.float64)
    if weight.ndim != 2 or bias.shape != weight.shape[:1]:
        raise ValueError(f"head_weight must be C×D and head_bias (C,), got {weight.shape} and {bias.shape}")
    _check_finite("head", "head_weight", weight)
    _check_finite("head", "head_bias", bias)
    return weight, bias


def _placeholder_head(n_classes: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Zeros in place of a head the CSF does not read."""
    return np.zeros((n_classes, dim)), np.zeros(n_classes)


def _split(dataset: str, head_shape: tuple[int, int], features, logits, pass_logits, labels=None,
           confidence=None) -> SplitData:
    """The engine's :class:`SplitData` of user arrays; unlabelled (labels −1) when ``labels`` is None.
    Exactly one of ``logits`` and ``pass_logits`` is given (:meth:`Detector._read_split` sees to it)."""
    from csfbench.csf.inputs import SplitData

    n_classes, dim = head_shape
    features = np.asarray(features)
    if features.ndim != 2 or features.shape[1] != dim:
        raise ValueError(f"{dataset}: features must be N×{dim} (the D of the head and of fit's inputs), "
                         f"got shape {features.shape}")
    _check_finite(dataset, "features", features)
    n = len(features)
    if pass_logits is None:
        mode, passes = "det", None
        logits = np.asarray(logits, dtype=np.float64)
        if logits.ndim != 2:
            raise ValueError(f"{dataset}: logits must be 2-D, N×C, got shape {logits.shape}")
        _check_finite(dataset, "logits", logits)
    else:
        mode, passes = "mcd", np.asarray(pass_logits, dtype=np.float64)
        if passes.ndim != 3 or passes.shape[1] == 0:
            raise ValueError(f"{dataset}: pass_logits must be N×P×C with P >= 1, got shape {passes.shape}")
        _check_finite(dataset, "pass_logits", passes)
        logits = passes.mean(1)
    if logits.shape != (n, n_classes):
        raise ValueError(f"{dataset}: logits must be {n}×{n_classes} (N×C of the head and of fit's inputs), "
                         f"got shape {logits.shape}")
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
        outside = np.flatnonzero((labels < 0) | (labels >= n_classes))
        if outside.size:
            raise ValueError(f"{dataset}: labels must lie in [0, {n_classes}) (C of the head, logits or largest "
                             f"label); row {outside[0]} has {labels[outside[0]]} ({outside.size} rows outside)")
        labels = labels.astype(np.int64)
    if confidence is not None:
        confidence = np.asarray(confidence, dtype=np.float64)
        if confidence.shape != (n,):
            raise ValueError(f"{dataset}: confidence must have shape ({n},), got {confidence.shape}")
        _check_finite(dataset, "confidence", confidence)
    return SplitData(dataset, mode, features, logits, logits, labels, pred, confidence, passes)


def _check_finite(dataset: str, name: str, array: np.ndarray) -> None:
    """ValueError naming the input, the split and the first row of a NaN or Inf in ``array``."""
    if not np.issubdtype(array.dtype, np.inexact):
        return
    finite = np.isfinite(array)
    if not finite.all():
        rows = np.flatnonzero(~finite.reshape(len(array), -1).all(1))
        raise ValueError(f"{dataset}: {name} has {int((~finite).sum())} NaN/Inf value(s) in {rows.size} row(s), "
                         f"the first in row {rows[0]}")


def _fit_projection(group: str, train: SplitData, n_classes: int, variance: float | None) -> dict:
    """The projection state of ``group`` at variance v, as the engine builds it (without its tuning of v)."""
    if group == "none":
        return {"group": "none"}
    return projection_states(group, train.features, train.labels, train.correct, n_classes)(variance)
