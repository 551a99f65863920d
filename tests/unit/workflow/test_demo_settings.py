"""The demo generator's ``demo.spec`` is described in config/schema.yaml: validation fills in its
defaults and rejects bad values and unknown keys before the DAG is built."""
from __future__ import annotations

import copy

import pytest

from csfbench.errors import ConfigError

from tests.helpers.demo_config import full_spec


# The generator's defaults, written out independently of the schema: the values the demo generator
# has always used, so that a config without a full spec keeps producing the same data.
EXPECTED_DEFAULT_SPEC = {
    "image_size": 32,
    "demo10": {"n_classes": 10, "n_train": 4000, "n_test": 2000},
    "demo40": {"n_classes": 40, "n_train": 6000, "n_test": 3000},
    "near": {"n_classes": 10, "n_ood": 1000},
    "digits": {"n_ood": 1000},
    "photos": {"n_ood": 1000},
    "noise": {"n_ood": 1000},
    "pretrain": {"n_classes": 20, "n_train": 6000, "n_test": 0},
    "variation": {
        "scale": [0.7, 1.3],
        "position": 0.3,
        "rotation_deg": 20.0,
        "colour_jitter": 0.085,
        "brightness": 0.15,
        "distractors": 3,
        "distractor_prob": 0.5,
        "occlusion_prob": 0.3,
        "blur_sigmas_px": [0.0, 0.5, 0.8, 1.2],
        "noise_std": 0.07,
        "sibling_shift": 0.27,
    },
}


@pytest.mark.parametrize("spec", [None, {}])
def test_default_spec_is_filled_in(spec):
    filled = full_spec(spec)
    assert filled == EXPECTED_DEFAULT_SPEC
    assert type(filled["image_size"]) is int and type(filled["variation"]["distractors"]) is int


def test_given_keys_are_kept_and_the_rest_filled_per_key():
    filled = full_spec({"demo10": {"n_train": 7}, "variation": {"scale": [0.9, 1.1]}})
    expected = copy.deepcopy(EXPECTED_DEFAULT_SPEC)
    expected["demo10"]["n_train"] = 7
    expected["variation"]["scale"] = [0.9, 1.1]
    assert filled == expected


def test_filled_defaults_are_fresh_copies():
    first = full_spec({})
    first["variation"]["blur_sigmas_px"].append(9.0)
    first["demo10"]["n_train"] = 1
    assert full_spec({}) == EXPECTED_DEFAULT_SPEC


@pytest.mark.parametrize(
    "spec, key_path, expected, found",
    [
        ({"image_size": 4}, "demo/spec/image_size", "minimum 8", 4),
        ({"image_size": "32"}, "demo/spec/image_size", "integer", "32"),
        ({"image_size": True}, "demo/spec/image_size", "integer", True),
        ({"demo40": {"n_test": -3}}, "demo/spec/demo40/n_test", "minimum 0", -3),
        ({"demo10": {"n_train": 2.5}}, "demo/spec/demo10/n_train", "integer", 2.5),
        ({"pretrain": {"n_classes": 0}}, "demo/spec/pretrain/n_classes", "minimum 1", 0),
        ({"noise": 5}, "demo/spec/noise", "object", 5),
        ({"variation": {"sibling_shift": 0}}, "demo/spec/variation/sibling_shift", "exclusiveMinimum 0", 0),
        ({"variation": {"sibling_shift": 0.6}}, "demo/spec/variation/sibling_shift", "maximum 0.5", 0.6),
        ({"variation": {"occlusion_prob": 1.5}}, "demo/spec/variation/occlusion_prob", "maximum 1", 1.5),
        ({"variation": {"colour_jitter": -0.1}}, "demo/spec/variation/colour_jitter", "minimum 0", -0.1),
        ({"variation": {"distractors": 1.5}}, "demo/spec/variation/distractors", "integer", 1.5),
        ({"variation": {"scale": [0.7]}}, "demo/spec/variation/scale", "minItems 2", [0.7]),
        ({"variation": {"blur_sigmas_px": []}}, "demo/spec/variation/blur_sigmas_px", "minItems 1", []),
    ],
)
def test_bad_value_is_rejected_naming_its_key_path(spec, key_path, expected, found):
    with pytest.raises(ConfigError) as info:
        full_spec(spec)
    assert info.value.key_path == key_path
    assert expected in info.value.expected
    assert info.value.found == found
    assert key_path in str(info.value)


@pytest.mark.parametrize(
    "spec, key_path, name",
    [
        ({"colour": 1}, "demo/spec", "colour"),
        ({"digits": {"n_classes": 3}}, "demo/spec/digits", "n_classes"),
        ({"demo10": {"n_trian": 5}}, "demo/spec/demo10", "n_trian"),
        ({"variation": {"rotation": 10}}, "demo/spec/variation", "rotation"),
    ],
)
def test_unknown_key_is_rejected(spec, key_path, name):
    with pytest.raises(ConfigError) as info:
        full_spec(spec)
    assert info.value.key_path == key_path
    assert "only the keys" in info.value.expected
    assert name in str(info.value.found)
