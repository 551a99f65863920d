"""timm / torchvision classifiers by name: local weights, seeded random init, encoder + head split, eval preprocessing.

No download: every weights file is written here from a freshly built model."""

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from csfbench.data.base import ArrayImageSet
from csfbench.data.loader import make_loader
from csfbench.data.transforms import normalize
from csfbench.errors import CheckpointError
from csfbench.models.network import Classifier
from csfbench.models.pretrained import (EvalPreprocessing, build_classifier, create_network, eval_preprocessing,
                                        split_network)
from csfbench.models.vit import ViTEncoder

import timm  # noqa: E402  (csfbench.models.pretrained made torchvision importable)
import torchvision  # noqa: E402

# (library, arch, kwargs, feature dim): small or small-input configurations
ARCHS = [
    ("torchvision", "resnet18", {}, 512),
    ("torchvision", "densenet121", {}, 1024),
    ("torchvision", "convnext_tiny", {}, 768),
    ("torchvision", "efficientnet_b0", {}, 1280),
    ("timm", "resnet18", {}, 512),
    ("timm", "convnext_atto", {}, 320),
    ("timm", "vit_tiny_patch16_224", {"img_size": 32}, 192),
]
IDS = [f"{lib}-{arch}" for lib, arch, _, _ in ARCHS]


def _x(n=3, size=32, seed=0):
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def _logits(net, x):
    return net.eval()(x)


@pytest.mark.parametrize("lib,arch,kwargs,dim", ARCHS, ids=IDS)
def test_split_reproduces_the_logits_and_a_saved_file_reloads_exactly(lib, arch, kwargs, dim, tmp_path):
    x = _x()
    net = create_network(lib, arch, num_classes=5, seed=3, **kwargs)
    expected = _logits(net, x)
    path = tmp_path / f"{arch}.pt"
    torch.save(net.state_dict(), path)

    encoder, head = split_network(net, lib)
    assert isinstance(head, nn.Linear) and head.out_features == 5 and encoder.feature_dim == dim
    with torch.no_grad():
        features = encoder.eval()(x)
        assert features.shape == (3, dim)
        torch.testing.assert_close(head(features), expected, rtol=1e-5, atol=1e-5)

    loaded = create_network(lib, arch, weights=path, num_classes=5, **kwargs)
    assert torch.equal(_logits(loaded, x), expected)
    model = build_classifier(lib, arch, 5, weights=path, **kwargs).eval()
    assert isinstance(model, Classifier) and model.feature_dim == dim
    with torch.no_grad():
        out = model(x)
    torch.testing.assert_close(out.logits, expected, rtol=1e-5, atol=1e-5)
    assert out.features.shape == (3, dim) and out.confidence is None


def test_timm_vit_becomes_the_vit_encoder_with_block_maps():
    model = build_classifier("timm", "vit_tiny_patch16_224", 4, seed=0, img_size=32).eval()
    assert isinstance(model.encoder, ViTEncoder)
    x = _x(2)
    with torch.no_grad():
        maps = model.block_maps(x)
        torch.testing.assert_close(model.logits_from_last_block(maps[-1]), model.class_logits(x))


# (library, arch): the ResNets of both libraries, timm's deep-stem and selective-kernel variants among them
RESNETS = [("torchvision", "resnet18"), ("timm", "resnet18"), ("timm", "resnet18d"), ("timm", "skresnet18")]


@pytest.mark.parametrize("lib,arch", RESNETS, ids=[f"{lib}-{arch}" for lib, arch in RESNETS])
def test_resnet_block_maps_are_the_four_stages_and_continue_to_the_logits(lib, arch):
    net = create_network(lib, arch, num_classes=5, seed=3)
    x = _x(2, size=64)
    expected = _logits(net, x)
    encoder, head = split_network(net, lib)
    with torch.no_grad():
        maps = encoder.eval().block_maps(x)
        # 64 px: the stem halves twice (16×16), layer2..layer4 halve once each
        assert [tuple(m.shape) for m in maps] == [(2, 64, 16, 16), (2, 128, 8, 8), (2, 256, 4, 4), (2, 512, 2, 2)]
        stages = [getattr(net, name) for name in ("layer1", "layer2", "layer3", "layer4")]
        torch.testing.assert_close(maps[1], stages[1](maps[0]), rtol=0, atol=0)
        torch.testing.assert_close(encoder.from_last_block(maps[-1]), encoder(x), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(head(encoder.from_last_block(maps[-1])), expected, rtol=1e-6, atol=1e-6)
    model = build_classifier(lib, arch, 5, seed=3).eval()
    with torch.no_grad():
        torch.testing.assert_close(model.logits_from_last_block(model.block_maps(x)[-1]), model.class_logits(x),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("lib,arch,name", [("torchvision", "densenet121", "DenseNet"),
                                           ("torchvision", "convnext_tiny", "ConvNeXt"),
                                           ("timm", "convnext_atto", "ConvNeXt")])
def test_other_encoders_refuse_block_maps_with_the_config_errors_text(lib, arch, name):
    model = build_classifier(lib, arch, 3, seed=0)
    for call in (lambda: model.block_maps(_x(1)), lambda: model.logits_from_last_block(torch.zeros(1, 8, 2, 2))):
        with pytest.raises(NotImplementedError) as err:
            call()
        assert str(err.value).startswith(f"GRAM and RankFeat read the network's block maps, and {lib} {name} has "
                                         "none (csfbench has them for the ResNets of torchvision")
        assert "network_csf.methods: [ODIN-IP]" in str(err.value) and "network_csf.methods: []" in str(err.value)


def test_torchvision_vit_head_is_heads_head():
    from torchvision.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    net = VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=2, hidden_dim=8, mlp_dim=16,
                            num_classes=6)
    nn.init.normal_(net.heads.head.weight)  # torchvision zero-initialises the ViT head
    x = _x(2)
    expected = _logits(net, x)
    encoder, head = split_network(net, "torchvision")
    assert isinstance(net.heads.head, nn.Identity) and encoder.feature_dim == 8
    with torch.no_grad():
        torch.testing.assert_close(head(encoder.eval()(x)), expected)


def test_a_classifier_that_is_not_linear_is_refused():
    with pytest.raises(ValueError, match="nn.Linear"):
        split_network(torchvision.models.get_model("squeezenet1_0", weights=None), "torchvision")
    with pytest.raises(ValueError, match="nn.Linear"):
        split_network(timm.create_model("resnet18", num_classes=0), "timm")


@pytest.mark.parametrize("lib,arch", [("torchvision", "resnet18"), ("timm", "convnext_atto")])
def test_random_init_is_deterministic_per_seed_and_leaves_the_global_rng_alone(lib, arch):
    torch.manual_seed(123)
    a = create_network(lib, arch, num_classes=4, seed=1).state_dict()
    after = torch.rand(3)
    torch.manual_seed(123)
    expected_after = torch.rand(3)
    assert torch.equal(after, expected_after)
    b = create_network(lib, arch, num_classes=4, seed=1).state_dict()
    c = create_network(lib, arch, num_classes=4, seed=2).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_random_resnet50_uses_torchvisions_kaiming_normal_init():
    net = create_network("torchvision", "resnet50", seed=5)
    w = net.conv1.weight  # kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / (64·7·7))
    assert abs(float(w.detach().std()) - (2 / (64 * 49)) ** 0.5) < 0.002
    assert net.fc.out_features == 1000


@pytest.mark.parametrize("lib,arch", [("torchvision", "resnet18"), ("timm", "resnet18"), ("timm", "convnext_atto")])
def test_checkpoint_with_another_class_count_loads_all_but_the_classifier(lib, arch, tmp_path):
    source = create_network(lib, arch, num_classes=7, seed=0)
    path = tmp_path / "w.pt"
    torch.save(source.state_dict(), path)
    x = _x(2)
    src_enc, _ = split_network(source, lib)
    a = build_classifier(lib, arch, 3, weights=path, weights_num_classes=7, seed=4).eval()
    b = build_classifier(lib, arch, 3, weights=path, weights_num_classes=7, seed=4).eval()
    assert a.head.out_features == 3
    with torch.no_grad():
        torch.testing.assert_close(a.encoder(x), src_enc.eval()(x))
        assert torch.equal(a(x).logits, b(x).logits)  # the new classifier comes from the seed


def test_densenet_file_with_the_old_torchvision_keys_loads(tmp_path):
    net = create_network("torchvision", "densenet121", num_classes=3, seed=0)
    # the released files predate BatchNorm's num_batches_tracked and name the layers 'norm.1', 'conv.2', ...
    old = {k.replace("norm1", "norm.1").replace("conv2", "conv.2"): v for k, v in net.state_dict().items()
           if not k.endswith("num_batches_tracked")}
    assert any("norm.1" in k for k in old)
    torch.save(old, tmp_path / "d.pt")
    loaded = create_network("torchvision", "densenet121", weights=tmp_path / "d.pt", num_classes=3)
    assert torch.equal(_logits(loaded, _x(1)), _logits(net, _x(1)))


def test_training_checkpoint_wrappers_are_unwrapped(tmp_path):
    net = create_network("torchvision", "resnet18", num_classes=3, seed=0)
    torch.save({"model": {f"module.{k}": v for k, v in net.state_dict().items()}, "epoch": 3}, tmp_path / "c.pt")
    loaded = create_network("torchvision", "resnet18", weights=tmp_path / "c.pt", num_classes=3)
    assert torch.equal(_logits(loaded, _x(1)), _logits(net, _x(1)))


@pytest.mark.parametrize("lib,arch,other", [("torchvision", "resnet34", "resnet18"),
                                            ("timm", "convnext_atto", "resnet18"),
                                            ("timm", "resnet18", "convnext_atto")])
@pytest.mark.parametrize("weights_num_classes", [None, 7])
def test_a_file_of_another_architecture_raises_checkpoint_error_naming_it(lib, arch, other, weights_num_classes,
                                                                           tmp_path):
    path = tmp_path / "other_arch.pt"
    torch.save(create_network(lib, other, num_classes=7, seed=0).state_dict(), path)
    with pytest.raises(CheckpointError, match="other_arch.pt"):
        create_network(lib, arch, weights=path, num_classes=3 if weights_num_classes else 7,
                       weights_num_classes=weights_num_classes)


@pytest.mark.parametrize("lib", ["torchvision", "timm"])
def test_missing_unreadable_and_pickled_object_files_raise_checkpoint_error(lib, tmp_path):
    with pytest.raises(CheckpointError, match="missing.pt.*not found"):
        create_network(lib, "resnet18", weights=tmp_path / "missing.pt")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="garbage.pt"):
        create_network(lib, "resnet18", weights=garbage)
    evil = tmp_path / "evil.pt"
    torch.save({"fc.weight": torch.zeros(1), "obj": Classifier}, evil)
    with pytest.raises(CheckpointError, match="evil.pt.*weights-only") as err:
        create_network(lib, "resnet18", weights=evil)
    assert "weights_only=False" not in str(err.value)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="library"):
        create_network("keras", "resnet18")
    with pytest.raises(ValueError, match="timm architecture"):
        create_network("timm", "resnet_does_not_exist")
    with pytest.raises(ValueError, match="torchvision classification model"):
        create_network("torchvision", "fasterrcnn_resnet50_fpn")


@pytest.mark.parametrize("arch", ["convnext_atto", "vit_tiny_patch16_224"])
def test_timm_eval_preprocessing_equals_timms_resolve_data_config(arch):
    data = timm.data.resolve_data_config({}, model=timm.create_model(arch, pretrained=False))
    prep = eval_preprocessing("timm", arch)
    assert prep.mean == pytest.approx(data["mean"]) and prep.std == pytest.approx(data["std"])
    assert (prep.interpolation, prep.crop_pct, prep.input_size) == (data["interpolation"], data["crop_pct"],
                                                                    data["input_size"][1])
    assert prep.geometry == "resize_crop" and data["crop_mode"] == "center"


def test_timm_eval_preprocessing_reads_tags_test_size_and_squash():
    vit = eval_preprocessing("timm", "vit_base_patch16_224.augreg2_in21k_ft_in1k")
    assert vit == EvalPreprocessing((0.5, 0.5, 0.5), (0.5, 0.5, 0.5), "bicubic", 0.9, 224, "resize_crop")
    assert eval_preprocessing("timm", "convnext_tiny.in12k_ft_in1k", use_test_size=True).input_size == 288
    squash = eval_preprocessing("timm", "convnext_tiny.fb_in22k_ft_in1k_384")
    assert squash.geometry == "stretch_crop" and squash.input_size == 384


def test_torchvision_eval_preprocessing():
    imagenet = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    v1 = eval_preprocessing("torchvision", "resnet50")
    assert v1 == EvalPreprocessing(*imagenet, "bilinear", 0.875, 224, "resize_crop")
    v2 = eval_preprocessing("torchvision", "resnet50", weights_name="IMAGENET1K_V2")
    assert v2.crop_pct == pytest.approx(224 / 232)
    assert eval_preprocessing("torchvision", "efficientnet_b0").interpolation == "bicubic"
    assert eval_preprocessing("torchvision", "densenet121", image_size=32).input_size == 32
    with pytest.raises(ValueError, match="IMAGENET1K_V9"):
        eval_preprocessing("torchvision", "resnet50", weights_name="IMAGENET1K_V9")


@pytest.mark.parametrize("weights_name", ["IMAGENET1K_V1", "IMAGENET1K_V2"])
def test_loader_with_torchvision_preprocessing_equals_the_weights_transforms(weights_name):
    """ImageNet-OOD's evaluation transform, ResNet50_Weights.IMAGENET1K_V1.transforms(), end to end."""
    prep = eval_preprocessing("torchvision", "resnet50", weights_name=weights_name)
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, (2, 260, 300, 3), dtype=np.uint8)
    images = ArrayImageSet("t", imgs, np.zeros(2), np.arange(2))
    kw = prep.loader_kwargs()
    batch, _, _ = next(iter(make_loader(images, kw.pop("image_size"), 2, **kw)))
    ours = normalize(batch, **prep.normalize_kwargs())
    tf = torchvision.models.get_model_weights("resnet50")[weights_name].transforms()
    ref = torch.stack([tf(Image.fromarray(im)) for im in imgs])
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-5)


def _docs_block(section: str, language: str) -> str:
    """The first ``language`` code block under the heading ``section`` of docs/pretrained.md."""
    from tests.helpers.repo import REPO

    text = (REPO / "docs" / "pretrained.md").read_text(encoding="utf-8").split(f"\n{section}\n", 1)[1]
    return text.split(f"```{language}\n", 1)[1].split("\n```", 1)[0]


def test_the_docs_weights_snippet_saves_files_csfbench_loads(tmp_path):
    """docs/pretrained.md "Saving weights here": its Python runs in a fresh interpreter (the shim before the
    first torchvision import), its backbones validate in the demo config and load the files it wrote."""
    import copy
    import subprocess
    import sys

    import yaml
    from safetensors.torch import load_file

    from csfbench.workflow.settings import validate_config
    from tests.helpers.demo_config import demo_config

    subprocess.run([sys.executable, "-c", _docs_block("### Saving weights here", "python")], cwd=tmp_path,
                   check=True, capture_output=True, text=True)
    backbones = yaml.safe_load(_docs_block("### Saving weights here", "yaml"))["backbones"]
    config = demo_config(None)
    for name, backbone in backbones.items():
        config["backbones"][name] = {**copy.deepcopy(backbone), "sources": ["demo10"]}
        config["sources"]["demo10"]["image_size"][name] = 32
    validate_config(config, "docs snippet")
    x = _x(2)
    for backbone in backbones.values():
        lib, arch, path = backbone["library"], backbone["arch"]["name"], tmp_path / backbone["weights"]["file"]
        reference = (torchvision.models.get_model(arch, num_classes=10) if lib == "torchvision"
                     else timm.create_model(arch, num_classes=10))
        reference.load_state_dict(torch.load(path, weights_only=True) if path.suffix == ".pth" else load_file(path))
        model = build_classifier(lib, arch, 10, weights=path).eval()
        with torch.no_grad():
            assert torch.equal(model.class_logits(x), _logits(reference, x))
