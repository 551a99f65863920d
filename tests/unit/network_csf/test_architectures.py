"""The network-pass detectors on the library architectures (``csfbench.network_csf.architectures``).

* The torch-free name tables equal what the installed timm and torchvision register, and each listed timm
  module builds the class the table claims.
* GRAM and RankFeat on random torchvision and timm ResNet-18s (no weights exist offline; random init is the
  architecture's own): finite scores, GRAM's far inputs lower, RankFeat equal to OpenOOD's recipe written out
  on the un-split network (the rank-1 term of the ``layer4`` map removed by SVD, then ``avgpool``/global pool,
  ``fc`` and ``logsumexp``: the energy, higher = more in-distribution).
* ODIN-IP alone on an architecture without block maps (torchvision DenseNet-121).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from csfbench.models.pretrained import build_classifier, create_network, timm, torchvision
from csfbench.network_csf import architectures as arch
from csfbench.network_csf import detectors as net

STD = [0.25, 0.25, 0.25]


def _images(n, size, seed, scale=1.0):
    return scale * torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------
# the name tables
# ---------------------------------------------------------------------------------------------

def test_the_torchvision_table_is_torchvisions_resnet_module():
    names = torchvision.models.list_models(module=torchvision.models)
    resnets = {n for n in names if torchvision.models.get_model_builder(n).__module__ == "torchvision.models.resnet"}
    assert arch.TORCHVISION_RESNETS == resnets


def test_the_timm_tables_are_the_models_of_their_modules():
    assert arch.TIMM_RESNETS == set(timm.list_models(module=list(arch.TIMM_RESNET_MODULES)))
    vit_modules = set(timm.list_models(module=list(arch.TIMM_VIT_MODULES)))
    distilled = {n for n in timm.list_models(module="deit") if "distilled" in n}
    assert len(distilled) == 4 and arch.TIMM_VITS == vit_modules - distilled
    assert not arch.TIMM_RESNETS & arch.TIMM_VITS


@pytest.mark.parametrize("module", arch.TIMM_RESNET_MODULES + arch.TIMM_VIT_MODULES + ("deit-distilled",))
def test_each_timm_module_builds_the_class_of_its_table(module):
    """The first model of each module (on the meta device: no memory, no weights) is of the table's class;
    deit's distilled models are VisionTransformerDistilled, whose two heads are not split."""
    from timm.models.resnet import ResNet
    from timm.models.vision_transformer import VisionTransformer

    if module == "deit-distilled":
        name = sorted(n for n in timm.list_models(module="deit") if "distilled" in n)[0]
    else:
        name = sorted(timm.list_models(module=module))[0]
    with torch.device("meta"):
        model = timm.create_model(name, num_classes=3)
    if module in arch.TIMM_RESNET_MODULES:
        assert type(model) is ResNet and name in arch.TIMM_RESNETS
    elif module == "deit-distilled":
        assert type(model).__name__ == "VisionTransformerDistilled" and not arch.has_block_maps("timm", name)
    else:
        assert type(model) is VisionTransformer and model.head is model.get_classifier() and name in arch.TIMM_VITS


def test_has_block_maps_by_library_and_name():
    assert arch.has_block_maps("torchvision", "resnet50") and arch.has_block_maps("torchvision", "wide_resnet50_2")
    assert arch.has_block_maps("timm", "resnet50.a1_in1k") and arch.has_block_maps("timm", "vit_tiny_patch16_224")
    assert not arch.has_block_maps("torchvision", "densenet121") and not arch.has_block_maps("torchvision", "vgg13")
    assert not arch.has_block_maps("torchvision", "vit_b_16")  # torchvision's ViT: no block maps
    assert not arch.has_block_maps("timm", "convnext_atto") and not arch.has_block_maps("timm", "resnetv2_50")


def test_the_tables_import_without_torch():
    code = ("import sys, csfbench.network_csf.architectures, csfbench.workflow.settings; "
            "print(sorted(m for m in ('torch', 'timm', 'torchvision') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# GRAM and RankFeat on ResNets
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lib", ["torchvision", "timm"])
def test_gram_and_rankfeat_on_a_random_resnet18(lib):
    model = build_classifier(lib, "resnet18", 4, seed=1).eval()
    train, val = _images(48, 64, 0), _images(16, 64, 1)
    near, far = _images(16, 64, 2), _images(16, 64, 3, scale=30.0)  # far: 30× the training inputs' scale
    settings = net.NetworkSettings(("GRAM", "RankFeat"), powers=(1, 2, 3))
    fitted = net.fit(model, lambda: [train[:24], train[24:]], lambda: [val], np.ones(16, bool), settings, STD)
    # per stage: powers × classes × channels
    assert [tuple(m.shape) for m in fitted.gram.mins] == [(3, 4, 64), (3, 4, 128), (3, 4, 256), (3, 4, 512)]
    scores = net.score(model, lambda: [torch.cat([near, far])], fitted, STD)
    for name in ("GRAM", "RankFeat"):
        assert scores[name].shape == (32,) and np.isfinite(scores[name]).all()
    # higher = more in-distribution: every far input leaves the Gram bounds further than any near one
    assert scores["GRAM"][16:].max() < scores["GRAM"][:16].min()

    # RankFeat by hand on an identical un-split network (OpenOOD's RankFeat, block 4): the rank-1 term of the
    # layer4 map removed, pooled, the classifier, logsumexp
    full = create_network(lib, "resnet18", num_classes=4, seed=1).eval()
    x = torch.cat([near, far])
    with torch.no_grad():
        h = full.maxpool((full.relu if lib == "torchvision" else full.act1)(full.bn1(full.conv1(x))))
        feat = full.layer4(full.layer3(full.layer2(full.layer1(h)))).flatten(2)  # N×512×4
        u, s, vh = torch.linalg.svd(feat, full_matrices=False)
        feat = (feat - s[:, :1, None] * (u[:, :, :1] @ vh[:, :1, :])).reshape(32, 512, 2, 2)
        logits = full.fc(torch.flatten(full.avgpool(feat), 1) if lib == "torchvision" else full.global_pool(feat))
    np.testing.assert_allclose(scores["RankFeat"], torch.logsumexp(logits.double(), 1).numpy(), rtol=1e-5)


def test_odin_alone_runs_on_an_architecture_without_block_maps():
    model = build_classifier("torchvision", "densenet121", 3, seed=0).eval()
    x = _images(4, 32, 0)
    settings = net.NetworkSettings(("ODIN-IP",), temperatures=(1.0, 10.0), noises=(0.0, 0.0014))
    fitted = net.fit(model, lambda: [x], lambda: [x[:2], x[2:]], np.array([True, False, True, True]), settings, STD)
    scores = net.score(model, lambda: [x[:2], x[2:]], fitted, STD)
    t, eps = fitted.odin["params"]["temperature"], fitted.odin["params"]["noise"]
    assert list(scores) == ["ODIN-IP"] and np.isfinite(scores["ODIN-IP"]).all()
    assert ((scores["ODIN-IP"] > 0) & (scores["ODIN-IP"] <= 1)).all()
    np.testing.assert_allclose(scores["ODIN-IP"], net.odin(model, x, t, eps, STD).numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="torchvision DenseNet has none"):
        net.score(model, lambda: [x], net.NetworkFit(net.NetworkSettings(("RankFeat",))), STD)
