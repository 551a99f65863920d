"""Hostile inputs to the library interface :func:`csfbench.csf.detector` (probes of issue 51).

Every array argument of ``fit`` and ``score`` must be an array of real numbers (integer or floating;
labels integers) with its documented number of dimensions: a scalar, a bool, complex, string or object
array is refused naming the split, the argument and the expected layout, before anything is fitted or
scored (before: a scalar gave ``len() of unsized object``; complex arrays were cast with a
ComplexWarning and bool arrays read as 0/1).  NNGuide's neighbour count k is refused above the
training-set size, by the rule KNN's bank applies (before: accepted and capped).  ``backbone`` is one
of the known kinds (before: any value, ``'vitt'`` included, silently meant a CNN).
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from csfbench.csf import detector
from csfbench.csf.detector import BACKBONES, LAYOUTS, NEIGHBOUR_COUNTS
from csfbench.csf.registry import CSFS

RNG = np.random.default_rng(51)
N, C, D, P = 40, 3, 8, 2
H = RNG.normal(size=(N, D))
Z = RNG.normal(size=(N, C))
Y = np.r_[np.arange(C), RNG.integers(0, C, N - C)]
W, B = RNG.normal(size=(C, D)), RNG.normal(size=C)
PASSES = RNG.normal(size=(N, P, C))

#: (argument, a valid value) of fit and of score, for a CSF reading everything of that call
FIT = {"features": H, "logits": Z, "labels": Y, "head_weight": W, "head_bias": B}
SCORE = {"features": H, "logits": Z}
#: wrong kinds of number: (value of the shape of ``like``, dtype name shown)
WRONG_KINDS = {
    "complex": lambda like: like + 1j,
    "bool": lambda like: like > 0,
    "string": lambda like: like.astype(str),
    "object": lambda like: like.astype(object),
}


def _projected():
    """MSR of the global projection: its fit reads features, logits, labels and the head."""
    return detector("MSR", variant="global", projection_variance=0.9)


def _refused(error, fragments, call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning or other cast on the way
        with pytest.raises(error) as info:
            call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- the number of dimensions: scalars and arrays of the wrong rank ----------------------------------------

@pytest.mark.parametrize("argument", sorted(FIT))
def test_a_scalar_fit_input_is_refused_naming_it_and_its_layout(argument):
    ndim, layout = LAYOUTS[argument]
    dataset = "head" if argument.startswith("head") else "train"
    _refused(ValueError, [f"{dataset}: {argument} must be {ndim}-D, {layout}, got a scalar"],
             lambda: _projected().fit(**{**FIT, argument: np.float64(3.0)}))


@pytest.mark.parametrize("call, fragment", [
    (lambda: detector("MSP").fit().score(logits=np.float64(3.0)), "score: logits must be 2-D, N×C, got a scalar"),
    (lambda: detector("MSP").fit().score(logits=3.0), "score: logits must be 2-D, N×C, got a scalar"),
    (lambda: detector("MSP").fit().score(pass_logits=1.0), "score: pass_logits must be 3-D, N×P×C, got a scalar"),
    (lambda: detector("KNN", k=5).fit(features=3.0), "train: features must be 2-D, N×D, got a scalar"),
    (lambda: detector("KNN", k=5).fit(features=H).score(features=7), "score: features must be 2-D, N×D, got a scalar"),
    (lambda: detector("Confidence").fit().score(confidence=1.0), "score: confidence must be 1-D, (N,), got a scalar"),
    (lambda: detector("Confidence").fit().score(confidence=np.ones((N, 1))),
     "score: confidence must be 1-D, (N,), got shape (40, 1)"),
    (lambda: detector("MSP").fit().score(pass_logits=PASSES[:, 0]), "score: pass_logits must be 3-D, N×P×C, got shape"),
    (lambda: detector("Maha").fit(features=H, labels=Y[:, None]), "train: labels must be 1-D, (N,), got shape (40, 1)"),
    (lambda: detector("MSR", temperature_scaling="fit").fit(val_logits=2.0, val_labels=Y),
     "val: val_logits must be 2-D, N×C, got a scalar"),
    (lambda: detector("MSR", temperature_scaling="fit").fit(val_logits=Z, val_labels=5),
     "val: val_labels must be 1-D, (N,), got a scalar"),
])
def test_a_scalar_or_an_array_of_the_wrong_rank_is_refused(call, fragment):
    _refused(ValueError, [fragment], call)


def test_a_ragged_list_is_refused_naming_the_argument():
    _refused(TypeError, ["score: logits must be a 2-D array N×C of real numbers", "list"],
             lambda: detector("MSP").fit().score(logits=[[1.0, 2.0], [3.0]]))


# --- the kind of number: complex, bool, string and object arrays ---------------------------------------------

@pytest.mark.parametrize("kind", sorted(WRONG_KINDS))
@pytest.mark.parametrize("argument", ["features", "logits", "head_weight", "head_bias"])
def test_a_fit_input_of_another_kind_of_number_is_refused(kind, argument):
    value = WRONG_KINDS[kind](FIT[argument])
    ndim, layout = LAYOUTS[argument]
    dataset = "head" if argument.startswith("head") else "train"
    _refused(TypeError, [f"{dataset}: {argument} must be a {ndim}-D array {layout} of real numbers (integer or "
                         f"floating), got dtype {value.dtype}"],
             lambda: _projected().fit(**{**FIT, argument: value}))


@pytest.mark.parametrize("kind", sorted(WRONG_KINDS))
@pytest.mark.parametrize("argument", ["features", "logits"])
def test_a_score_input_of_another_kind_of_number_is_refused(kind, argument):
    fitted = _projected().fit(**FIT)
    value = WRONG_KINDS[kind](SCORE[argument])
    _refused(TypeError, [f"score: {argument} must be a 2-D array", f"got dtype {value.dtype}"],
             lambda: fitted.score(**{**SCORE, argument: value}))


@pytest.mark.parametrize("kind", sorted(WRONG_KINDS))
def test_complex_or_bool_logits_confidences_and_pass_logits_are_refused(kind):
    """The probe's cases: complex logits were cast (ComplexWarning) and bool logits read as 0/1."""
    make = WRONG_KINDS[kind]
    _refused(TypeError, ["score: logits must be a 2-D array N×C of real numbers"],
             lambda: detector("MSP").fit().score(logits=make(Z)))
    _refused(TypeError, ["score: pass_logits must be a 3-D array N×P×C of real numbers"],
             lambda: detector("MSP").fit().score(pass_logits=make(PASSES)))
    _refused(TypeError, ["score: confidence must be a 1-D array (N,) of real numbers"],
             lambda: detector("Confidence").fit().score(confidence=make(np.linspace(0.1, 0.9, N))))
    _refused(TypeError, ["train: features must be a 2-D array N×D of real numbers"],
             lambda: detector("KNN", k=5).fit(features=make(H)))


@pytest.mark.parametrize("kind", ["complex", "bool", "string"])
def test_labels_of_another_kind_are_refused(kind):
    labels = WRONG_KINDS[kind](Y)
    _refused((TypeError, ValueError), ["train: labels must be", "integers", str(labels.dtype)],
             lambda: detector("Maha").fit(features=H, labels=labels))


def test_an_input_given_but_not_read_is_checked_too():
    """An input a CSF does not read still fixes C or D (module docstring), so it is checked like the others."""
    _refused(TypeError, ["score: features must be a 2-D array N×D of real numbers", "complex128"],
             lambda: detector("MSP").fit().score(logits=Z, features=H + 1j))


def test_integer_and_float32_arrays_and_lists_of_numbers_are_accepted():
    msp = detector("MSP").fit()
    expected = msp.score(logits=Z.round())
    np.testing.assert_array_equal(msp.score(logits=Z.round().astype(np.int64)), expected)
    np.testing.assert_array_equal(msp.score(logits=Z.round().tolist()), expected)
    knn = detector("KNN", k=5).fit(features=H.astype(np.float32))
    assert knn.score(features=H.astype(np.float32)).shape == (N,)
    maha = detector("Maha").fit(features=H, labels=Y.astype(np.uint8))
    assert maha.score(features=H).shape == (N,)


# --- NNGuide's k: at most the training-set size, as for KNN --------------------------------------------------

@pytest.mark.parametrize("name, extra", [("NNGuide", {"alpha": 0.5}), ("KNN", {})])
@pytest.mark.parametrize("k", [N + 1, 1000, 0])
def test_k_outside_the_training_set_size_is_refused_at_fit(name, extra, k):
    """NNGuide accepted k = 1000 for 40 training rows (KNN refused it at score); both refuse it at fit."""
    d = detector(name, k=k, **extra)
    _refused(ValueError, [f"{name} k must lie in [1, {N}] (the training-set size), got {k}"],
             lambda: d.fit(features=H, logits=Z, labels=Y))


def test_k_up_to_the_training_set_size_is_accepted():
    for name, extra in (("NNGuide", {"alpha": 0.5}), ("KNN", {})):
        d = detector(name, k=N, **extra).fit(features=H, logits=Z, labels=Y)
        assert d.score(features=H, logits=Z).shape == (N,)


def test_every_csf_with_a_neighbour_count_is_checked():
    assert NEIGHBOUR_COUNTS == {csf.name for csf in CSFS if "k" in csf.space}


# --- backbone ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backbone", ["vitt", "ViT", "vgg", "", None, 1])
def test_an_unknown_backbone_is_refused_listing_the_known_ones(backbone):
    message = _refused(ValueError, [f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r}"],
                       lambda: detector("MSP", backbone=backbone))
    assert re.search(r"\bcnn\b", message) and re.search(r"\bvit\b", message)


def test_the_known_backbones_are_accepted():
    assert BACKBONES == ("cnn", "vit")
    assert detector("Confidence", backbone="cnn").reads == frozenset({"confidence"})
    assert detector("MSP", backbone="vit").fit().score(logits=Z).shape == (N,)
    with pytest.raises(ValueError, match="CNN backbones only"):
        detector("Confidence", backbone="vit")
