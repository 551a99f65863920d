"""The library interface ``csfbench.csf.detector`` against the CSF engine.

For every (CSF, variant) of the registry the detector's scores equal the engine's for the same inputs
and hyper-parameters: with the temperatures fitted on validation, through the engine's own
``fit_mode``/``score_mode`` (deterministic and MC-dropout inputs; strict and the authors'-code
quirks), and at T = 1 through the registry's ``fit``/``score`` on views of the engine's
``fit_projection``.  The detector replaces the inputs a CSF does not declare (``Csf.reads``) with
zeros, so these equalities also show that those inputs change no score; the tests at the end show that
every declared input does.  The errors name the valid choices.  Fixture: 8 classes, 16 feature
dimensions, 200 training rows; the scored split mixes in-distribution rows with isotropic outliers.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import warnings

import numpy as np
import pytest

from csfbench.csf import detector
from csfbench.csf.detector import ARGUMENTS
from csfbench.csf.engine import TuningSettings, fit_mode, fit_projection, score_mode
from csfbench.csf.inputs import SplitData
from csfbench.csf.logit_scores import softmax
from csfbench.csf.projection import GROUP_VARIANTS
from csfbench.csf.registry import BY_NAME, CSFS, INPUTS, ModelContext, bounds, variants_for
from csfbench.csf.views import build_views

N_CLASSES, DIM, PASSES, BACKBONE = 8, 16, 4, "vgg13"
SIZES = {"train": 200, "val": 120, "test": 100}
PROJECTION_VARIANCE = 0.9
# hyper-parameters that the midpoint of the search space would make too large for 200 training rows
SMALL = {"NNGuide": {"k": 10}, "KPCA RecError": {"n_landmarks": 60}, "KNN": {"k": 10}}
GROUP_OF = {variant: group for group, variants in GROUP_VARIANTS.items() for variant in variants}
CASES = [pytest.param(csf.name, variant, id=f"{csf.name}-{variant}") for csf, variant in variants_for(BACKBONE)]


def _head() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(17)
    means = np.zeros((N_CLASSES, DIM))
    means[np.arange(N_CLASSES), np.arange(N_CLASSES)] = 4.0
    means[:, N_CLASSES:] = rng.normal(size=(N_CLASSES, DIM - N_CLASSES)) * 0.5
    return means, 2 * means / np.linalg.norm(means, axis=1, keepdims=True), rng.normal(size=N_CLASSES) * 0.1


MEANS, WEIGHT, BIAS = _head()


def _split(name: str, passes: int, seed: int) -> SplitData:
    """ID rows μ_y + anisotropic noise (about 10 % misclassified); the ``test`` split adds outliers.

    Features are float32, as stored.  MC-dropout pass logits are the head's logits plus strong pass
    noise, so that the argmax of the mean softmax (the mcd prediction) differs from that of the mean
    logits on some rows.
    """
    rng = np.random.default_rng(seed)
    n = SIZES[name]
    labels = rng.integers(0, N_CLASSES, n)
    labels[:N_CLASSES] = np.arange(N_CLASSES)  # every class is present
    scale = np.r_[np.full(N_CLASSES, 1.2), np.full(DIM - N_CLASSES, 0.3)]
    h = MEANS[labels] + rng.normal(size=(n, DIM)) * scale
    if name == "test":
        h[n // 2:] = rng.normal(size=(n - n // 2, DIM)) * 1.5
        labels[n // 2:] = -1
    h = h.astype(np.float32)
    z = h @ WEIGHT.T + BIAS
    margin = np.diff(np.sort(z, 1)[:, -2:], axis=1)[:, 0]
    confidence = 1 / (1 + np.exp(1 - margin))
    if not passes:
        return SplitData(name, "det", h, z, z, labels, z.argmax(1), confidence)
    pass_logits = z[:, None, :] + rng.normal(size=(n, passes, N_CLASSES)) * 3.0
    logits = pass_logits.mean(1)
    return SplitData(name, "mcd", h, logits, logits, labels, softmax(pass_logits).mean(1).argmax(1), confidence,
                     pass_logits)


SPLITS = {mode: {name: _split(name, passes, seed) for seed, name in enumerate(SIZES)}
          for mode, passes in (("det", 0), ("mcd", PASSES))}


def _ctx(quirks: str = "strict") -> ModelContext:
    return ModelContext(N_CLASSES, BACKBONE, "devries", WEIGHT, BIAS, WEIGHT, BIAS, quirks)


def _midpoint(low, high, kind):
    mid = (low + high) / 2
    return int(round(mid)) if kind == "int" else mid


def _hyper_parameters(name: str) -> dict:
    """The centre of the CSF's search space for this model, with the SMALL overrides."""
    space = {k: _midpoint(*b) for k, b in bounds(BY_NAME[name], _ctx()).items()}
    return {**space, **SMALL.get(name, {})}


FIXED = {"projection": {"variance": PROJECTION_VARIANCE}, **{csf.name: _hyper_parameters(csf.name) for csf in CSFS}}
TUNING = TuningSettings(init_points=1, n_iter=0, seed=0, fixed=FIXED)


def _inputs(split: SplitData, labelled: bool = True, prefix: str = "") -> dict:
    """The detector's keyword arguments for a split: features, logits or pass logits, labels."""
    out = {"features": split.features}
    if split.pass_logits is None:
        out["logits"] = split.logits
    else:
        out["pass_logits"] = split.pass_logits
    if labelled:
        out["labels"] = split.labels
    return {prefix + key: value for key, value in out.items()}


def _options(variant: str) -> dict:
    return {"variant": variant, "projection_variance": None if variant == "none" else PROJECTION_VARIANCE}


def _fitted_detector(name: str, variant: str, mode: str, **options):
    splits = SPLITS[mode]
    d = detector(name, **_options(variant), **options, **_hyper_parameters(name))
    fit_inputs = _inputs(splits["train"])
    if options.get("temperature_scaling") == "fit":
        fit_inputs.update(_inputs(splits["val"], prefix="val_"))
    assert d.fit(**fit_inputs, head_weight=WEIGHT, head_bias=BIAS) is d
    return d


def _score(d, mode: str) -> np.ndarray:
    test = SPLITS[mode]["test"]
    conf = d.score(**_inputs(test, labelled=False), confidence=test.confidence)
    assert isinstance(conf, np.ndarray) and conf.dtype == np.float64 and conf.shape == (len(test),)
    assert np.isfinite(conf).all()
    return conf


_ENGINE: dict = {}


def _engine(group: str, mode: str, quirks: str):
    """The engine's fitted group and its scores of the test split (computed once per group, mode, quirks)."""
    key = group, mode, quirks
    if key not in _ENGINE:
        splits = SPLITS[mode]
        fitted = fit_mode(group, splits["train"], splits["val"], _ctx(quirks), TUNING)
        _ENGINE[key] = fitted, score_mode(splits["test"], fitted, _ctx(quirks))
    return _ENGINE[key]


@pytest.mark.parametrize("mode, quirks", [("det", "strict"), ("mcd", "strict"), ("det", "compat_authors")])
@pytest.mark.parametrize("name, variant", CASES)
def test_equals_the_engine_with_temperatures_fitted_on_validation(name, variant, mode, quirks):
    fitted, scores = _engine(GROUP_OF[variant], mode, quirks)
    assert not fitted.csfs[(name, variant)].undefined
    if BY_NAME[name].uses_temperature:
        d = _fitted_detector(name, variant, mode, temperature_scaling="fit", quirks=quirks)
        assert d.temperature == pytest.approx(fitted.temperatures[variant], rel=1e-12)
    else:  # a CSF that reads no temperature takes only T = 1, and its engine scores do not depend on T
        d = _fitted_detector(name, variant, mode, quirks=quirks)
    np.testing.assert_allclose(_score(d, mode), scores[(name, variant)], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, variant", CASES)
def test_equals_the_registry_at_temperature_one(name, variant):
    """Reference: the registry's fit and score on the engine's views at T = 1, built as fit_mode does."""
    csf, group, ctx = BY_NAME[name], GROUP_OF[variant], _ctx()
    splits = SPLITS["det"]
    ctx.base_temperature = 1.0
    projection = fit_projection(group, splits["train"], splits["val"], ctx, TUNING)
    temperatures = dict.fromkeys(GROUP_VARIANTS[group], 1.0)
    owner = csf.shares.get(variant, variant)
    params = FIXED[name]
    train_view, test_view = (build_views(splits[s], projection, WEIGHT, BIAS, temperatures)[owner]
                             for s in ("train", "test"))
    expected = csf.score(csf.fit(train_view, ctx, params) if csf.fit else None, test_view, ctx, params)
    if owner in csf.shares.values():
        expected = expected[variant]
    d = _fitted_detector(name, variant, "det")
    assert d.temperature == 1.0
    np.testing.assert_allclose(_score(d, "det"), expected, rtol=1e-12, atol=1e-12)


def test_a_given_temperature_reaches_the_scores():
    at_one, at_two = (_score(_fitted_detector("MSR", "none", "det", temperature_scaling=t), "det") for t in (1.0, 2.0))
    test = SPLITS["det"]["test"]
    np.testing.assert_allclose(at_two, softmax(test.logits, 2.0).max(1), rtol=1e-12)
    assert not np.allclose(at_one, at_two)


def test_the_issue_example_shape():
    train, test = SPLITS["det"]["train"], SPLITS["det"]["test"]
    d = detector("NNGuide", k=10, alpha=0.3)
    d.fit(features=train.features, logits=train.logits, labels=train.labels, head_weight=WEIGHT, head_bias=BIAS)
    s = d.score(features=test.features, logits=test.logits)
    assert s.shape == (len(test),) and s.dtype == np.float64
    assert s[: len(test) // 2].mean() > s[len(test) // 2:].mean()  # ID rows above the outliers


def test_the_package_exports_the_function_not_the_module():
    importlib.import_module("csfbench.csf.detector")
    from csfbench.csf import detector as exported

    assert inspect.isfunction(exported) and exported is detector


def test_no_hyper_parameter_is_shadowed_by_a_detector_option():
    options = {p.name for p in inspect.signature(detector).parameters.values() if p.kind is p.KEYWORD_ONLY}
    assert options == {"variant", "temperature_scaling", "projection_variance", "backbone", "quirks"}
    assert not [(csf.name, key) for csf in CSFS for key in csf.space if key in options]


@pytest.mark.parametrize("call, error, fragments", [
    (lambda: detector("NoSuchCSF"), ValueError, ["unknown CSF 'NoSuchCSF'", "MSR", "KPCA RecError"]),
    (lambda: detector("GEN", m=3, gamma=0.1, beta=1.0), TypeError,
     ["unknown", "beta", "GEN takes", "gamma (real in [1e-06, 0.999999] when tuned), m (integer in [1, C] when tuned)"]),
    (lambda: detector("KPCA RecError", variance=0.9), TypeError,
     ["missing", "gamma, n_landmarks", "KPCA RecError takes the hyper-parameters gamma (", "n_landmarks (integer in "
      "[2000, 5000] when tuned), variance ("]),
    (lambda: detector("KNN", k=None), TypeError, ["KNN's hyper-parameter k must be an integer number, got None"]),
    (lambda: detector("KNN", k=50.7), TypeError, ["must be an integer number, got 50.7"]),
    (lambda: detector("KNN", k=np.float64(np.inf)), TypeError, ["must be an integer number, got"]),
    (lambda: detector("KNN", k="50"), TypeError, ["must be an integer number, got '50'"]),
    (lambda: detector("KNN", k=True), TypeError, ["must be an integer number, got True"]),
    (lambda: detector("ReAct", percentile=float("nan")), TypeError, ["must be a finite real number, got nan"]),
    (lambda: detector("KNN", k=5, temperature_scaling="fit"), ValueError,
     ["CSF KNN reads no temperature, so temperature_scaling must stay 1.0 (got 'fit')", "MSR, MLS"]),
    (lambda: detector("MSP", temperature_scaling=2.0), ValueError, ["CSF MSP reads no temperature"]),
    (lambda: detector("PCA RecError"), ValueError,
     ["no variant 'none'", "global, class, class_avg, class_pred (each needs projection_variance"]),
    (lambda: detector("MSR", k=3), TypeError, ["unknown", "k", "MSR takes no hyper-parameters"]),
    (lambda: detector("ViM", variant="global", projection_variance=0.9), ValueError,
     ["ViM has no variant 'global'", "its variants are: none"]),
    (lambda: detector("MSR", variant="pca"), ValueError, ["none, global, class, class_avg, class_pred"]),
    (lambda: detector("MSR", variant="global"), ValueError, ["needs projection_variance"]),
    (lambda: detector("MSR", variant="class", projection_variance=1.5), ValueError, ["in (0, 1]"]),
    (lambda: detector("MSR", projection_variance=0.9), ValueError, ["projected variants only"]),
    (lambda: detector("MSR", temperature_scaling=0.0), ValueError, ["> 0 or 'fit'"]),
    (lambda: detector("MSR", temperature_scaling="auto"), ValueError, ["> 0 or 'fit'"]),
    (lambda: detector("MSR", temperature_scaling=np.array([1.0, 2.0])), ValueError, ["> 0 or 'fit'"]),
    (lambda: detector("MSR", quirks="loose"), ValueError, ["strict, compat_authors"]),
    (lambda: detector("Confidence", backbone="vit"), ValueError, ["CNN backbones only"]),
])
def test_invalid_construction_names_the_valid_choices(call, error, fragments):
    with pytest.raises(error) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value)


def _fit(d, mode: str = "det", **extra):
    return d.fit(**{**_inputs(SPLITS[mode]["train"]), **extra}, head_weight=WEIGHT, head_bias=BIAS)


def test_score_before_fit_raises_for_every_csf_also_without_state():
    for name in ("MSR", "Maha"):
        with pytest.raises(RuntimeError, match="call fit"):
            detector(name).score(**_inputs(SPLITS["det"]["test"], labelled=False))
    with pytest.raises(RuntimeError, match=r"CSF MSR \[none\] is not fitted yet: call fit\(\) first"):
        detector("MSR").temperature


def test_numpy_scalars_are_numbers():
    """Options and hyper-parameters taken from numpy arrays (np.float32, np.int64) are accepted as numbers."""
    train, test = SPLITS["det"]["train"], SPLITS["det"]["test"]
    at_two = detector("MSR", temperature_scaling=np.float32(2.0)).fit().score(logits=test.logits)
    np.testing.assert_allclose(at_two, softmax(test.logits, 2.0).max(1), rtol=1e-12)
    knn = detector("KNN", k=5).fit(features=train.features).score(features=test.features)
    # an integer hyper-parameter as a numpy integer, or as a float of integer value (a JSON or YAML number)
    for k in (np.int64(5), 5.0, np.float32(5)):
        assert np.array_equal(detector("KNN", k=k).fit(features=train.features).score(features=test.features), knn)
    projected = detector("MSR", variant="global", projection_variance=np.float32(PROJECTION_VARIANCE))
    assert projected.fit(**_inputs(train), head_weight=WEIGHT, head_bias=BIAS).score(
        **_inputs(test, labelled=False)).shape == (len(test),)


@pytest.mark.parametrize("split", ["train", "score"])
@pytest.mark.parametrize("argument", ["features", "logits", "pass_logits"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_input_is_refused_naming_input_split_and_row(split, argument, bad):
    """A NaN or Inf in an input read is refused before any statistic is fitted or scored, for every split."""
    mode = "mcd" if argument == "pass_logits" else "det"
    inputs = {s: _inputs(SPLITS[mode][s]) for s in ("train", "test")}
    key = "train" if split == "train" else "test"
    array = np.array(inputs[key][argument], dtype=np.float64)
    array[7, ..., 3] = bad
    inputs[key][argument] = array
    inputs["test"].pop("labels")
    d = detector("NNGuide", k=10, alpha=0.3)  # reads features, logits and labels
    with pytest.raises(ValueError, match=rf"^{split}: {argument} has \d+ NaN/Inf value\(s\) in 1 row\(s\), "
                                         r"the first in row 7$"):
        d.fit(**inputs["train"]).score(**inputs["test"])


@pytest.mark.parametrize("part", ["head_weight", "head_bias"])
def test_a_non_finite_head_is_refused(part):
    head = {"head_weight": WEIGHT.copy(), "head_bias": BIAS.copy()}
    head[part][(1,) * head[part].ndim] = np.nan
    with pytest.raises(ValueError, match=f"^head: {part} has 1 NaN/Inf value"):
        detector("MaxCosine").fit(**head)


def test_an_unidentified_temperature_is_logged_once_per_logit_source(caplog):
    """Separable validation logits: the detector's warning names the logits; the unprojected T is fitted once."""
    val = SPLITS["det"]["val"]
    separable = np.eye(N_CLASSES)[val.labels] * 50.0
    with caplog.at_level("WARNING", logger="csfbench.csf.temperature"):
        detector("MSR", temperature_scaling="fit").fit(val_logits=separable, val_labels=val.labels)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["temperature scaling of the unprojected logits"]


def test_a_non_finite_validation_input_is_refused():
    val = _inputs(SPLITS["det"]["val"], prefix="val_")
    val["val_logits"] = val["val_logits"].copy()
    val["val_logits"][4, 0] = np.nan
    with pytest.raises(ValueError, match="^val: logits has 1 NaN/Inf value"):
        detector("MSR", temperature_scaling="fit").fit(val_logits=val["val_logits"], val_labels=val["val_labels"])


def test_no_rows_give_no_scores_for_every_csf():
    test = SPLITS["det"]["test"]
    for csf, variant in variants_for(BACKBONE):
        name = csf.name
        d = _fitted_detector(name, variant, "det")
        empty = d.score(features=test.features[:0], logits=test.logits[:0], confidence=test.confidence[:0])
        assert empty.shape == (0,) and empty.dtype == np.float64, (name, variant)


def test_a_score_that_cannot_rank_warns():
    """ReAct clipped at percentile 0 of non-negative activations (the clip at 0) gives every row the energy of
    the bias alone."""
    train, test = SPLITS["det"]["train"], SPLITS["det"]["test"]
    relu = np.maximum(train.features, 0)
    d = detector("ReAct", percentile=0.0).fit(features=relu, head_weight=WEIGHT, head_bias=BIAS)
    with pytest.warns(UserWarning, match=rf"CSF ReAct \[none\] gave all {len(test)} rows the same score .* cannot rank"):
        d.score(features=np.maximum(test.features, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        detector("ReAct", percentile=90.0).fit(features=relu, head_weight=WEIGHT, head_bias=BIAS).score(
            features=np.maximum(test.features, 0))


def test_confidence_needs_the_confidence_head_output():
    d = _fit(detector("Confidence"))
    with pytest.raises(TypeError, match="reads confidence: score needs confidence"):
        d.score(**_inputs(SPLITS["det"]["test"], labelled=False))


def test_validation_inputs_go_with_a_fitted_temperature_only():
    val = _inputs(SPLITS["det"]["val"], prefix="val_")
    with pytest.raises(TypeError, match="only with temperature_scaling='fit'"):
        _fit(detector("MSR"), **val)
    with pytest.raises(TypeError, match=r"needs val_logits \(or val_pass_logits\), val_labels$"):
        _fit(detector("MSR", temperature_scaling="fit"))
    with pytest.raises(TypeError, match=r"needs val_logits \(or val_pass_logits\), val_labels, val_features$"):
        _fit(detector("MSR", variant="global", projection_variance=PROJECTION_VARIANCE, temperature_scaling="fit"))
    with pytest.raises(ValueError, match="validation split, or for neither"):
        _fit(detector("MSR", temperature_scaling="fit"), **_inputs(SPLITS["mcd"]["val"], prefix="val_"))


def test_fit_and_score_take_the_same_input_mode():
    with pytest.raises(ValueError, match="to both fit and score"):
        _fit(detector("MSR"), "mcd").score(**_inputs(SPLITS["det"]["test"], labelled=False))


@pytest.mark.parametrize("change, fragment", [
    ({"features": np.zeros((200, DIM + 1))}, "features must be N×16"),
    ({"logits": np.zeros((200, N_CLASSES + 1))}, "logits must be 200×8"),
    ({"pass_logits": np.zeros((200, 2, N_CLASSES))}, "exactly one of logits"),
    ({"labels": np.full(200, N_CLASSES)}, "labels must lie in [0, 8) (C of the head, logits or largest label); "
                                          "row 0 has 8 (200 rows outside)"),
    ({"logits": np.zeros(200)}, "logits must be 2-D, N×C, got shape (200,)"),
    ({"labels": np.zeros(200)}, "labels must be 200 integers"),
])
def test_inputs_are_checked_against_the_head(change, fragment):
    """A projected variant reads every input: features, logits, labels and the head."""
    with pytest.raises((TypeError, ValueError)) as info:
        _fit(detector("MSR", variant="global", projection_variance=PROJECTION_VARIANCE), **change)
    assert fragment in str(info.value)


# --- the inputs each CSF declares (Csf.reads) -------------------------------------------------------------
# Sufficiency: the engine comparisons above pass every input to the engine, while the detector replaces
# those a CSF does not declare with zeros, so they show that undeclared inputs do not change any score.
# The tests below show the other direction (every declared input changes the scores), that a declared
# input is required and that a call with only the declared inputs works.
UNPROJECTED = [pytest.param(csf.name, mode, id=f"{csf.name}-{mode}") for csf, _ in variants_for(BACKBONE, ("none",))
               for mode in ("det", "mcd")]


#: the detector arguments that pass each input of INPUTS
ARGUMENTS_OF = {"features": ["features"], "logits": ["logits", "pass_logits"], "labels": ["labels"],
                "head": ["head_weight", "head_bias"], "confidence": ["confidence"]}
INPUT_OF = {argument: key for key, arguments in ARGUMENTS_OF.items() for argument in arguments}


def test_every_declaration_names_known_inputs():
    assert set(ARGUMENTS) == set(ARGUMENTS_OF) == set(INPUTS)
    assert not [csf.name for csf in CSFS if not csf.reads <= set(INPUTS)]


def _declared(name: str, split: SplitData, stage: str) -> dict:
    """The detector arguments of ``split`` that CSF ``name`` reads (labels and head at fit only)."""
    reads = BY_NAME[name].reads
    out = {key: value for key, value in _inputs(split, labelled=stage == "fit").items() if INPUT_OF[key] in reads}
    if stage == "fit" and "head" in reads:
        out.update(head_weight=WEIGHT, head_bias=BIAS)
    if stage == "score" and "confidence" in reads:
        out["confidence"] = split.confidence
    return out


def _minimal_scores(name: str, mode: str, train: SplitData, test: SplitData, **fit_changes) -> np.ndarray:
    d = detector(name, **_hyper_parameters(name))
    d.fit(**{**_declared(name, train, "fit"), **fit_changes})
    return d.score(**_declared(name, test, "score"))


@pytest.mark.parametrize("name, mode", UNPROJECTED)
def test_the_declared_inputs_alone_give_the_scores_of_all_inputs(name, mode):
    splits = SPLITS[mode]
    full = _score(_fitted_detector(name, "none", mode), mode)
    np.testing.assert_array_equal(_minimal_scores(name, mode, splits["train"], splits["test"]), full)


def _perturbed(split: SplitData, key: str, rng) -> SplitData:
    """``split`` with one input changed: features or logits plus noise, labels moved, confidences redrawn."""
    changes = {}
    if key == "features":
        changes["features"] = (split.features + rng.normal(size=split.features.shape)).astype(np.float32)
    elif key == "logits":
        noise = rng.normal(size=split.logits.shape) * 2.0
        changes.update(logits=split.logits + noise, logits_full=split.logits + noise)
        if split.pass_logits is not None:
            changes["pass_logits"] = split.pass_logits + noise[:, None, :]
    elif key == "labels":  # 20 rows relabelled (a permutation of all would leave classes without correct rows)
        labels, rows = split.labels.copy(), rng.choice(len(split), 20, replace=False)
        labels[rows] = (labels[rows] + 1) % N_CLASSES
        changes["labels"] = labels
    elif key == "confidence":
        changes["confidence"] = rng.uniform(size=len(split))
    return dataclasses.replace(split, **changes)


#: declared inputs this fixture cannot move: NeCo keeps 100 principal directions, all 16 of the fixture's, so
#: its ratio ‖Pᵀ(h − μ)‖ / ‖h − μ‖ is 1 whatever h (the next test reads it on 120 dimensions)
FIXTURE_BLIND = {"NeCo": {"features"}}


def test_neco_reads_the_features_beyond_its_principal_directions():
    rng = np.random.default_rng(5)
    h, z = rng.normal(size=(300, 120)).astype(np.float32), rng.normal(size=(300, N_CLASSES))
    d = detector("NeCo").fit(features=h, logits=z)
    moved = (h[:50] + rng.normal(size=(50, 120))).astype(np.float32)
    assert not np.allclose(d.score(features=h[:50], logits=z[:50]), d.score(features=moved, logits=z[:50]))


@pytest.mark.parametrize("name, mode", UNPROJECTED)
def test_every_declared_input_changes_the_scores(name, mode):
    splits, rng = SPLITS[mode], np.random.default_rng(3)
    baseline = _minimal_scores(name, mode, splits["train"], splits["test"])
    for key in sorted(BY_NAME[name].reads - FIXTURE_BLIND.get(name, set())):
        if key == "head":
            changed = _minimal_scores(name, mode, splits["train"], splits["test"],
                                      head_weight=WEIGHT + rng.normal(size=WEIGHT.shape), head_bias=BIAS + 1.0)
        else:
            train, test = (s if key == "labels" and s is splits["test"] else _perturbed(s, key, rng)
                           for s in (splits["train"], splits["test"]))
            changed = _minimal_scores(name, mode, train, test)
        assert not np.allclose(changed, baseline, rtol=1e-9, atol=0), f"{name} declares {key} but does not read it"


@pytest.mark.parametrize("name", [csf.name for csf, _ in variants_for(BACKBONE, ("none",))])
def test_a_missing_declared_input_is_named(name):
    """Scoring needs the declared features, logits and confidences; fitting the head, and the declared
    training inputs where the CSF has fitted state."""
    csf, train, test = BY_NAME[name], SPLITS["det"]["train"], SPLITS["det"]["test"]
    checked = 0
    for key in sorted(csf.reads):
        stages = ["fit"] if key == "head" or (key == "labels" and csf.fit) else []
        stages += ["score"] if key in ("features", "logits", "confidence") else []
        stages += ["fit"] if key in ("features", "logits") and csf.fit else []
        for stage in stages:
            given = _declared(name, train if stage == "fit" else test, stage)
            for argument in ARGUMENTS_OF[key]:
                given.pop(argument, None)
            d = detector(name, **_hyper_parameters(name))
            if stage == "score":
                d.fit(**_declared(name, train, "fit"))
            message = f"CSF {name} [none] reads {', '.join(sorted(csf.reads))}: {stage} needs {ARGUMENTS[key]}"
            with pytest.raises(TypeError, match=re.escape(message)):
                getattr(d, stage)(**given)
            checked += 1
    assert checked >= len(csf.reads - {"labels"})


def test_a_logit_score_needs_no_features_head_or_training_split():
    test = SPLITS["det"]["test"]
    d = detector("MSP").fit()
    np.testing.assert_allclose(d.score(logits=test.logits), softmax(test.logits).max(1), rtol=1e-6)
    knn = detector("KNN", k=10).fit(features=SPLITS["det"]["train"].features)
    assert knn.reads == frozenset({"features"})
    assert knn.score(features=test.features).shape == (len(test),)


def test_a_temperature_fitted_on_validation_alone_keeps_its_input_mode_and_width():
    val, test = SPLITS["mcd"]["val"], SPLITS["det"]["test"]
    d = detector("GradNorm", temperature_scaling="fit").fit(val_pass_logits=val.pass_logits, val_labels=val.labels)
    assert d.temperature > 0  # the unprojected variant's T needs no validation features
    with pytest.raises(ValueError, match="to both fit and score"):
        d.score(features=test.features, logits=test.logits)
    msr = detector("MSR", temperature_scaling="fit").fit(val_logits=SPLITS["det"]["val"].logits,
                                                         val_labels=SPLITS["det"]["val"].labels)
    with pytest.raises(ValueError, match="logits must be 100×8"):
        msr.score(logits=test.logits[:, :3])


def test_the_head_given_sets_the_classes_of_a_csf_that_reads_labels_only():
    train = SPLITS["det"]["train"]
    labels = np.where(train.labels == N_CLASSES - 1, 0, train.labels)  # no training row of the last class
    with pytest.raises(ValueError, match=f"class {N_CLASSES - 1}"):
        detector("Maha").fit(features=train.features, labels=labels, head_weight=WEIGHT, head_bias=BIAS)
