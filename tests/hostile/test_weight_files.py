"""Hostile ViT weights files (``backbones/vit/pretrained/file`` and paradigm ``pretrained``; probes of issue 51).

Both routes load a timm weights file through timm's pretrained-file mechanism, strictly
(:func:`csfbench.models.timm_files.timm_from_file`): a pickle that references code runs nothing and a
malformed ``.safetensors`` is refused, and a file that does not hold every tensor of the model is refused
— each with a CheckpointError naming the file (and for a file that does not fit: how many of the model's
tensors it holds and a few it lacks), never timm's advice to retry with ``weights_only=False``."""
from __future__ import annotations

import dataclasses
import os

import pytest
import torch
from safetensors.torch import save_file

from csfbench.errors import CheckpointError
from csfbench.models import build_model
from csfbench.models.vit import timm
from csfbench.specs import DatasetSpec, ModelSpec

NAME = "vit_tiny_patch16_224"
SMALL = dict(patch_size=8, depth=1)  # the smallest ViT the tests build: 32 px, one block
FILE_CLASSES, N_CLASSES = 7, 5  # the file's head and the source's classes differ: the head is re-initialised

BASE = ModelSpec(source="s", model="m", backbone="vit", paradigm="ce", dropout=0, reward=0.0, run=1, seed=0,
                 n_classes=N_CLASSES, image_size=32, normalize=dict(mean=[0.5] * 3, std=[0.25] * 3),
                 arch=dict(timm_name=NAME, drop_rate=0.0, **SMALL), mcd_samples=0, optim={}, paradigm_params={},
                 dataset=DatasetSpec("s", "npy", "unused"), val_size=1)


def _vit_backbone(path) -> ModelSpec:
    """The ``vit`` backbone fine-tuned from ``path`` (``backbones/vit/pretrained``)."""
    return dataclasses.replace(BASE, pretrained=dict(file=str(path), num_classes=FILE_CLASSES))


def _pretrained_paradigm(path) -> ModelSpec:
    """A timm library classifier evaluated from ``path`` (paradigm ``pretrained``)."""
    return dataclasses.replace(BASE, backbone="vitlib", paradigm="pretrained", library="timm",
                               arch=dict(name=NAME, img_size=32, **SMALL),
                               weights=dict(file=str(path), num_classes=FILE_CLASSES))


ROUTES = pytest.mark.parametrize("route", [_vit_backbone, _pretrained_paradigm], ids=["vit-backbone", "pretrained"])


def _vit_state(n_classes: int = FILE_CLASSES, **arch) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    vit = timm.create_model(NAME, img_size=32, num_classes=n_classes, **{**SMALL, **arch})
    return {k: v.contiguous() for k, v in vit.state_dict().items()}


def _refused(spec: ModelSpec, path) -> str:
    with pytest.raises(CheckpointError) as info:
        build_model(spec)
    message = str(info.value)
    assert info.value.path == str(path) and str(path) in message, message
    assert "weights_only=False" not in message, message
    return message


class _RunsCode:
    """Unpickles to ``os.mkdir(path)``: what a crafted weights file would run under a plain ``torch.load``."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


@ROUTES
def test_a_pickle_that_runs_code_is_refused_naming_the_file(route, tmp_path):
    marker = tmp_path / "payload_ran"
    path = tmp_path / "evil.pth"
    torch.save({**_vit_state(), "extra": _RunsCode(str(marker))}, path)
    message = _refused(route(path), path)
    assert "not a weights-only checkpoint" in message and "mkdir" in message, message
    assert not marker.exists()


@ROUTES
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_malformed_safetensors_file_is_refused_naming_the_file(route, damage, tmp_path):
    path = tmp_path / "broken.safetensors"
    if damage == "garbage":
        path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    else:
        save_file(_vit_state(), str(path))
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    message = _refused(route(path), path)
    assert "not a readable .safetensors file" in message, message


@ROUTES
def test_a_file_of_none_of_the_vits_tensors_is_refused(route, tmp_path):
    path = tmp_path / "unrelated.safetensors"
    save_file({"foo": torch.zeros(3), "bar.weight": torch.ones(2, 2)}, str(path))
    n_model = len(_vit_state())
    message = _refused(route(path), path)
    assert f"holds 0 of the {n_model} tensors of timm model {NAME}" in message, message
    assert "cls_token, pos_embed, patch_embed.proj.weight" in message and "bar.weight, foo" in message, message


def _without_blocks(state):
    return {k: v for k, v in state.items() if not k.startswith("blocks.")}


def _without_head(state):
    return {k: v for k, v in state.items() if not k.startswith("head.")}


@ROUTES
@pytest.mark.parametrize("cut, fragment", [
    (_without_blocks, "lacks 12: blocks.0.norm1.weight"),
    (_without_head, "lacks 2: head.weight, head.bias"),
], ids=["no-blocks", "no-head"])
def test_a_file_covering_part_of_the_vit_is_refused(route, cut, fragment, tmp_path):
    state = _vit_state()
    path = tmp_path / "partial.safetensors"
    save_file(cut(state), str(path))
    message = _refused(route(path), path)
    assert f"holds {len(cut(state))} of the {len(state)} tensors" in message and fragment in message, message


@ROUTES
def test_a_file_of_a_deeper_vit_is_refused(route, tmp_path):
    path = tmp_path / "deeper.safetensors"
    save_file(_vit_state(depth=2), str(path))
    message = _refused(route(path), path)
    assert "it has 12 tensors the model has not: blocks.1." in message, message


@ROUTES
def test_a_head_of_another_class_count_is_refused(route, tmp_path):
    """The file's classifier must have ``num_classes`` outputs (every name matches: the shapes are named)."""
    path = tmp_path / "head3.safetensors"
    save_file(_vit_state(n_classes=3), str(path))
    message = _refused(route(path), path)
    assert "head.weight" in message and "torch.Size([3, 192])" in message, message


def test_the_vit_backbone_keeps_every_tensor_of_the_file_and_draws_its_new_head_as_before(tmp_path):
    """Strict loading changes nothing for a fitting file: the file's tensors, and a new head drawn from the
    caller's random stream exactly as timm's constructor draws it (the same numbers as before the fix)."""
    state = _vit_state()
    path = tmp_path / "vit.safetensors"
    save_file(state, str(path))
    torch.manual_seed(123)
    model = build_model(_vit_backbone(path))
    after = torch.rand(1)
    torch.manual_seed(123)
    fresh = timm.create_model(NAME, img_size=32, num_classes=N_CLASSES, drop_rate=0.0, **SMALL)
    assert torch.equal(torch.rand(1), after)  # the file's own model drew nothing from the caller's stream
    vit = model.encoder.vit
    for key, tensor in state.items():
        if not key.startswith("head."):
            assert torch.equal(vit.state_dict()[key], tensor), key
    assert torch.equal(model.head.weight, fresh.head.weight) and torch.equal(model.head.bias, fresh.head.bias)
