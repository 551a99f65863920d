import dataclasses

import pytest
import torch
from torch import nn

from csfbench.models import build_model, load_checkpoint
from csfbench.models.vgg import VGG13Encoder
from csfbench.workflow.settings import schema_default
from csfbench.specs import DatasetSpec, ModelSpec

SPEC = ModelSpec(source="s", model="m", backbone="vgg13", paradigm="dg", dropout=0, reward=0.0, run=1, seed=0,
                 n_classes=5, image_size=32, normalize=dict(mean=[0.5] * 3, std=[0.25] * 3), arch=dict(width=0.125),
                 mcd_samples=0, optim={}, paradigm_params={}, dataset=DatasetSpec("s", "npy", "unused"), val_size=1)
# the confidence head's settings as validate_config fills them in (the schema's defaults)
CONFIDNET_PARAMS = {key: schema_default(f"training/vgg13/confidnet/{key}") for key in ("head_hidden", "head_layers")}


def _spec(**changes) -> ModelSpec:
    """SPEC with ``changes``; a ConfidNet spec carries its head settings."""
    spec = dataclasses.replace(SPEC, **changes)
    if spec.paradigm == "confidnet" and "paradigm_params" not in changes:
        spec = dataclasses.replace(spec, paradigm_params=dict(CONFIDNET_PARAMS))
    return spec


def test_vgg13_full_width_matches_the_paper_architecture():
    enc = VGG13Encoder(32, width=1.0, dropout=False)
    convs = [m.out_channels for m in enc.modules() if isinstance(m, nn.Conv2d)]
    assert convs == [64, 64, 128, 128, 256, 256, 512, 512, 512, 512]
    n_params = sum(p.numel() for p in enc.parameters()) + 512 * 10 + 10
    assert 9.0e6 < n_params < 9.8e6  # ~9.4 M with a 10-class head
    assert enc(torch.zeros(2, 3, 32, 32)).shape == (2, 512)


def test_vgg13_dropout_variant_and_64px_inputs():
    enc = VGG13Encoder(64, width=0.25, dropout=True)
    rates = [m.p for m in enc.modules() if isinstance(m, nn.Dropout)]
    assert rates == [0.3, 0.4, 0.4, 0.4, 0.4, 0.5, 0.5]
    assert enc.fc[1].in_features == 128 * 2 * 2  # flattened 2×2 map at 64 px: the feature size follows the input size
    assert enc(torch.zeros(1, 3, 64, 64)).shape == (1, 128)
    with pytest.raises(ValueError, match="divisible by 32"):
        VGG13Encoder(40)


@pytest.mark.parametrize("paradigm, n_out, has_conf", [("confidnet", 5, True), ("devries", 5, True),
                                                       ("dg", 6, True)])
def test_classifier_outputs(paradigm, n_out, has_conf):
    model = build_model(_spec(paradigm=paradigm)).eval()
    out = model(torch.randn(3, 3, 32, 32))
    assert out.logits.shape == (3, n_out) and out.features.shape == (3, 64)
    assert out.confidence.shape == (3,) and bool(((out.confidence >= 0) & (out.confidence <= 1)).all())
    if paradigm == "dg":
        expected = 1 - torch.softmax(out.logits, 1)[:, -1]
        assert torch.allclose(out.confidence, expected)


def test_mc_dropout_switches_only_dropout_layers():
    model = build_model(_spec(paradigm="devries", dropout=1)).eval()
    model.set_mc_dropout(True)
    assert all(m.training for m in model.modules() if isinstance(m, nn.Dropout))
    assert not any(m.training for m in model.modules() if isinstance(m, nn.BatchNorm2d))
    x = torch.randn(2, 3, 32, 32)
    assert not torch.equal(model(x).logits, model(x).logits)
    model.set_mc_dropout(False)
    assert torch.equal(model(x).logits, model(x).logits)


def test_torchvision_and_timm_import_on_this_torch():
    from csfbench import torch_compat

    torch_compat.ensure_torchvision()
    import timm
    import torchvision

    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], dtype=torch.float)
    kept = torchvision.ops.nms(boxes, torch.tensor([0.9, 0.8, 0.7]), 0.5)
    assert kept.tolist() == [0, 2]
    assert timm.create_model("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=1, num_classes=3)


VIT_ARCH = dict(timm_name="vit_tiny_patch16_224", patch_size=8, depth=2, drop_rate=0.1)


def _pretrained_file(tmp_path, n_classes):
    from safetensors.torch import save_file

    from csfbench.models.vit import timm

    torch.manual_seed(1)
    vit = timm.create_model("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2, num_classes=n_classes)
    path = tmp_path / "vit.safetensors"
    save_file({k: v.contiguous() for k, v in vit.state_dict().items()}, str(path))
    return vit, path


def test_vit_finetune_loads_pretrained_weights_through_timm(tmp_path):
    vit, path = _pretrained_file(tmp_path, n_classes=7)
    spec = _spec(backbone="vit", paradigm="ce", arch=VIT_ARCH, n_classes=5, image_size=32,
                pretrained=dict(file=str(path), num_classes=7))
    model = build_model(spec)
    assert torch.equal(model.encoder.vit.patch_embed.proj.weight, vit.patch_embed.proj.weight)
    assert torch.equal(model.encoder.vit.blocks[1].mlp.fc2.weight, vit.blocks[1].mlp.fc2.weight)
    assert model.head.out_features == 5  # a new head for the new classes
    same = build_model(dataclasses.replace(spec, n_classes=7))
    assert torch.equal(same.head.weight, vit.head.weight)  # kept when the class counts agree
    assert model(torch.randn(2, 3, 32, 32)).features.shape == (2, 192)


def test_vit_upsampled_resolution_resamples_position_embedding(tmp_path):
    vit, path = _pretrained_file(tmp_path, n_classes=7)
    spec = _spec(backbone="vit", paradigm="ce", arch=VIT_ARCH, image_size=64,
                pretrained=dict(file=str(path), num_classes=7))
    model = build_model(spec)
    assert model.encoder.vit.pos_embed.shape[1] == 1 + 8 * 8
    assert model(torch.randn(1, 3, 64, 64)).logits.shape == (1, 5)


def test_vit_missing_pretrained_file_is_named(tmp_path):
    spec = _spec(backbone="vit", paradigm="ce", arch=VIT_ARCH,
                pretrained=dict(file=str(tmp_path / "none.pth"), num_classes=7))
    with pytest.raises(FileNotFoundError, match="none.pth"):
        build_model(spec)


def test_checkpoint_is_weights_only(tmp_path):
    spec = _spec(paradigm="confidnet", dropout=1)
    model = build_model(spec)
    torch.save(model.state_dict(), tmp_path / "c.pt")
    loaded = load_checkpoint(spec, tmp_path / "c.pt")
    assert not loaded.training
    for (k, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), k
