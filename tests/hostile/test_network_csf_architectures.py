"""Network-pass detectors on library backbones without block maps: a ConfigError before the DAG (issue 51).

Probe (the behaviour before the fix): the demo config with a torchvision ``densenet121`` (or a ``resnet18``)
library backbone and the default ``network_csf.methods: [ODIN-IP, GRAM, RankFeat]`` validated; about 1.5 min
into the run ``fit_network_csf`` died with ``NotImplementedError: block maps are implemented for VGG-13 and timm
ViTs, not ResNet`` — every ResNet too, the architecture of the seed papers.

Now ResNets (torchvision's and timm's) have block maps, GRAM and RankFeat on any other library architecture are
refused by validation (a name lookup, no torch import) naming the detectors, the backbone, its library and
architecture and how to turn them off, and ODIN-IP alone is accepted on every architecture.
"""
from __future__ import annotations

import pytest

from csfbench.errors import ConfigError
from csfbench.workflow.settings import validate_config
from tests.helpers.demo_config import demo_config


def _with_backbone(library: str, name: str, methods: list[str] | None = None, conformal_gram: bool = True) -> dict:
    """The demo config with library backbone ``extra`` (``library`` ``name``, paradigm ``random``) serving the
    source pretrain20; ``methods``: ``network_csf.methods`` (None: the schema's default); without
    ``conformal_gram`` the prediction sets leave out the GRAM conformity score."""
    config = demo_config(None)
    config["backbones"]["extra"] = {"library": library, "arch": {"name": name}, "paradigms": ["random"],
                                    "runs": [1], "sources": ["pretrain20"]}
    config["sources"]["pretrain20"]["image_size"]["extra"] = 32
    if methods is None:
        del config["network_csf"]["methods"]
    else:
        config["network_csf"]["methods"] = methods
    if not conformal_gram:
        config["conformal"]["prediction_sets"] = {"scores": ["softmax", "odin"]}
    return config


def _refusal(config: dict) -> str:
    with pytest.raises(ConfigError) as err:
        validate_config(config, "probe")
    assert err.value.key_path == "network_csf/methods"
    return str(err.value)


def test_gram_on_a_torchvision_densenet_is_refused_naming_detector_backbone_architecture_and_the_fix():
    message = _refusal(_with_backbone("torchvision", "densenet121", ["ODIN-IP", "GRAM"], conformal_gram=False))
    assert message.startswith("probe: invalid value at 'network_csf/methods': expected network-pass detectors "
                              "every backbone can run: GRAM reads the network's block maps, and backbone 'extra' "
                              "(torchvision densenet121) has none")
    assert "Remove GRAM from network_csf.methods (network_csf.methods: [ODIN-IP])" in message
    assert "network_csf.methods: [] for no network-pass detector" in message
    assert message.endswith("found ['ODIN-IP', 'GRAM']")


def test_the_default_detectors_on_a_densenet_name_both_and_the_gram_conformity_score():
    message = _refusal(_with_backbone("torchvision", "densenet121"))
    assert "GRAM and RankFeat read the network's block maps, and backbone 'extra' (torchvision densenet121)" in message
    assert "network_csf.methods: [ODIN-IP]" in message
    assert "also drop 'gram' from conformal.prediction_sets.scores" in message


@pytest.mark.parametrize("library, name", [("torchvision", "convnext_tiny"), ("torchvision", "vit_b_16"),
                                           ("torchvision", "vgg13"), ("timm", "convnext_atto"),
                                           ("timm", "resnetv2_50")])
def test_rankfeat_on_other_architectures_is_refused(library, name):
    message = _refusal(_with_backbone(library, name, ["RankFeat"]))
    assert f"RankFeat reads the network's block maps, and backbone 'extra' ({library} {name}) has none" in message
    assert "Set network_csf.methods: [ODIN-IP], or [] for no network-pass detector" in message


@pytest.mark.parametrize("library, name", [("torchvision", "resnet18"), ("torchvision", "resnext50_32x4d"),
                                           ("torchvision", "wide_resnet50_2"), ("timm", "resnet18"),
                                           ("timm", "resnet50.a1_in1k"), ("timm", "seresnext26d_32x4d")])
def test_resnets_are_accepted_with_the_default_detectors(library, name):
    config = validate_config(_with_backbone(library, name), "probe")
    assert config["network_csf"]["methods"] == ["ODIN-IP", "GRAM", "RankFeat"]


@pytest.mark.parametrize("methods", [["ODIN-IP"], []])
def test_odin_alone_or_no_detector_is_accepted_on_any_architecture(methods):
    validate_config(_with_backbone("torchvision", "densenet121", methods, conformal_gram=False), "probe")
