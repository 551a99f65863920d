"""Config mistakes caught before the DAG is built: each probe's config, and the error naming the key.

Probes (before the fix): a config that wrote over the user's own weights or data outside results/; a
source's misspelt or invalid training override ignored or failing at run time; CSF parameter names and
ranges unchecked; typos in selected names silently dropping a study; a file that is not YAML or lacks a
required section answered by a traceback or a list of every key.
"""
import copy

import pytest

from csfbench.errors import ConfigError, ConfigFileError
from csfbench.workflow.settings import load_config, validate_config
from tests.helpers.demo_config import edited


@pytest.fixture(scope="module")
def demo(repo):
    return load_config(repo / "config/config.yaml")


@pytest.mark.parametrize("path, value, key", [
    # with a `pretrain` section the pretrained file is rule pretrain_vit's output: a user's own weights would
    # be overwritten
    (("backbones", "vit", "pretrained", "file"), "/home/me/weights/vit.safetensors", "backbones/vit/pretrained/file"),
    (("backbones", "vit", "pretrained", "file"), "results/../my_vit.safetensors", "backbones/vit/pretrained/file"),
    # the demo generator writes into data_root
    (("data_root",), "/home/me/datasets", "data_root"),
    (("data_root",), "data", "data_root"),
])
def test_configured_outputs_outside_results_are_refused(demo, path, value, key):
    with pytest.raises(ConfigError) as err:
        validate_config(edited(demo, path, value))
    assert key in str(err.value) and "under results/" in str(err.value) and str(value) in str(err.value)


def test_existing_pretrained_weights_are_an_input_when_there_is_no_pretrain_section(demo):
    config = copy.deepcopy(demo)
    del config["pretrain"], config["demo"]
    config["backbones"]["vit"]["pretrained"]["file"] = "/home/me/weights/vit.safetensors"
    config["data_root"] = "/data"
    assert validate_config(config)["backbones"]["vit"]["pretrained"]["file"] == "/home/me/weights/vit.safetensors"


@pytest.mark.parametrize("override, key, found", [
    ({"vgg13": {"dg": {"epochz": 50}}}, "sources/demo10/training/vgg13/dg", "epochz"),
    ({"vgg13": {"dg": {"epochs": "two"}}}, "sources/demo10/training/vgg13/dg/epochs", "'two'"),
    ({"vgg13": {"dg": {"epochs": -3}}}, "sources/demo10/training/vgg13/dg/epochs", "-3"),
    ({"vgg13": {"common": {"batch_size": 0}}}, "sources/demo10/training/vgg13/common/batch_size", "0"),
])
def test_a_sources_training_overrides_are_validated_as_the_training_section(demo, override, key, found):
    with pytest.raises(ConfigError) as err:
        validate_config(edited(demo, ("sources", "demo10", "training"), override))
    assert f"'{key}'" in str(err.value) and found in str(err.value)


@pytest.mark.parametrize("key, value, fragments", [
    ("fixed", {"projection": {"varience": 0.9}}, ["csf/fixed/projection/varience", "['variance']"]),
    ("fixed", {"projection": {"variance": 5.0}}, ["csf/fixed/projection/variance", "(0, 1]", "5.0"]),
    ("fixed", {"GEN": {"t": 1.0}}, ["csf/fixed/GEN/t", "['gamma', 'm']"]),
    ("search_space", {"GEN": {"m": [10, 2]}}, ["csf/search_space/GEN/m", "low <= high", "[10, 2]"]),
])
def test_csf_parameter_names_and_ranges_are_checked(demo, key, value, fragments):
    with pytest.raises(ConfigError) as err:
        validate_config(edited(demo, ("csf", key), value))
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)


@pytest.mark.parametrize("edit, key, suggestion", [
    (lambda c: c.setdefault("shifts", {}).__setitem__("models", ["vgg13_dg_do1_rew2.2_run7"]), "shifts/models",
     None),
    (lambda c: c.setdefault("shifts", {}).__setitem__("sources", ["demo1O"]), "shifts/sources", "demo10"),
    (lambda c: c["ranking"]["metric_groups"].__setitem__("rc", ["augrc", "aurcc"]), "ranking/metric_groups/rc", "aurc"),
    (lambda c: c["figures"]["rc_curves"]["models"].__setitem__("demo10", "vgg13_dg_do0_rew9_run1"),
     "figures/rc_curves/models/demo10", None),
    (lambda c: c["figures"].__setitem__("table_metric", "AUGRC"), "figures/table_metric", "augrc"),
])
def test_typos_in_selected_names_are_errors_listing_the_valid_ones(demo, edit, key, suggestion):
    config = copy.deepcopy(demo)
    edit(config)
    with pytest.raises(ConfigError) as err:
        validate_config(config, "test")
    assert f"'{key}'" in str(err.value) and "expected one of [" in str(err.value)
    if suggestion:
        assert f"did you mean '{suggestion}'" in str(err.value)


@pytest.mark.parametrize("text, where, problem", [
    ("sources:\n  a: [1, 2\n  b: 3\n", "line 3, column 4", "expected ',' or ']'"),
    ("seed: 1\n\tdatasets: {}\n", "line 2, column 1", "found character '\\t'"),
    ("seed: 1\nseed: [\n", "line 3, column 1", "expected the node content"),
])
def test_a_config_that_is_not_yaml_names_the_file_line_and_column(tmp_path, text, where, problem):
    path = tmp_path / "my.yaml"
    path.write_text(text)
    with pytest.raises(ConfigFileError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}, {where}: not a valid YAML config: "), str(err.value)
    assert problem in str(err.value)


def test_a_binary_config_file_is_named(tmp_path):
    path = tmp_path / "weights.yaml"
    path.write_bytes(b"\x80\x03}q\x00(X\x05\x00\x00\x00")  # a pickle, say
    with pytest.raises(ConfigFileError, match=r"weights\.yaml: not a valid YAML config: binary content"):
        load_config(path)


def test_the_cli_answers_a_broken_file_with_a_sentence(tmp_path, capsys):
    from csfbench.cli import main

    path = tmp_path / "my.yaml"
    path.write_text("sources: [\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"csfbench: error: {path}, line 2, column 1: not a valid YAML config")
    assert "Traceback" not in err


@pytest.mark.parametrize("section", ["sources", "csf", "training"])
def test_a_missing_required_section_is_named(demo, section):
    with pytest.raises(ConfigError) as err:
        validate_config(edited(demo, (section,), KeyError))
    message = str(err.value)
    assert f"invalid value at '{section}': expected the required key(s) ['{section}'], found 'no such key" in message


def test_a_missing_nested_key_is_named_by_its_path(demo):
    with pytest.raises(ConfigError, match=r"at 'features/batch_size': expected the required key\(s\) \['batch_size'\]"):
        validate_config(edited(demo, ("features", "batch_size"), KeyError))
