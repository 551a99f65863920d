"""ImageNet-style classifiers of timm or torchvision by name: local pretrained weights or random initialisation,
split into encoder + linear head for :class:`~csfbench.models.network.Classifier`.

* :func:`create_network` builds ``arch`` of ``library`` (``"timm"``: Wightman, "PyTorch Image Models", 2019;
  ``"torchvision"``) and loads a **local** weights file through the library's own loader — timm's
  ``pretrained_cfg_overlay=dict(file=...)`` mechanism, torchvision's ``get_model(arch, weights=None)`` +
  ``load_state_dict`` of a weights-only ``torch.load`` (with torchvision's DenseNet key conversion).
  Without a file the network keeps the architecture's default initialisation, drawn from
  ``torch.manual_seed(seed)``: the random-network sanity check of Yang, Zhang & Russakovsky, "ImageNet-OOD:
  Deciphering Modern Out-of-Distribution Detection Algorithms" (ICLR 2024, §4 and App. F: five random
  ResNet-50s — torchvision's default Kaiming-normal convolutions —, DenseNet-121s and WideResNet-50s).
* :func:`split_network` detaches the final linear layer: the encoder maps N×3×S×S to the N×D penultimate
  features (the input of the classifier layer, where ImageNet-OOD hooks its features), the head is that
  ``nn.Linear``; ``head(encoder(x))`` equals the original network's logits.
* :func:`build_classifier` does both and wraps them in a :class:`Classifier`.
* The encoders of ResNets (torchvision's ``ResNet``, timm's ``ResNet``) and of timm ViTs have the *block maps*
  GRAM and RankFeat read (``csfbench.network_csf``): a ResNet's are the outputs of ``layer1`` … ``layer4``.
* :func:`eval_preprocessing` reads the evaluation preprocessing the weights were made for: timm's
  pretrained config, or torchvision's weights transforms (ImageNet-OOD evaluates all thirteen torchvision
  classifiers with ``ResNet50_Weights.IMAGENET1K_V1.transforms()``: bilinear resize 256, centre crop 224).

A file that is missing, not a weights-only checkpoint, a malformed ``.safetensors`` file or not a checkpoint of the
architecture (timm: every tensor, the classifier of the file's class count included — :func:`timm_from_file`, which
also loads the pretrained weights of the ``vit`` backbone) raises :class:`~csfbench.errors.CheckpointError` naming
it.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from csfbench.data.loader import check_geometry
from csfbench.errors import CheckpointError
from csfbench.models.network import Classifier
from csfbench.models.timm_files import timm_from_file
from csfbench.network_csf.architectures import block_maps_refusal
from csfbench.torch_compat import ensure_torchvision, load_weights

ensure_torchvision()
import timm  # noqa: E402  (needs the torchvision fix above on CPU-only torch)
import torchvision  # noqa: E402
from timm.models.resnet import ResNet as TimmResNet  # noqa: E402

LIBRARIES = ("timm", "torchvision")
#: where torchvision classifiers keep their final linear layer (``classifier`` may be a Sequential ending in it)
TORCHVISION_HEADS = ("fc", "classifier", "heads.head", "head")
#: torchvision's conversion of the old DenseNet checkpoint keys ('norm.1' → 'norm1'), from
#: ``torchvision.models.densenet._load_state_dict``; the released IMAGENET1K_V1 files use the old keys
_DENSENET_KEY = re.compile(
    r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _check_library(library: str) -> None:
    if library not in LIBRARIES:
        raise ValueError(f"unknown model library '{library}' (known: {', '.join(LIBRARIES)})")


def create_network(library: str, arch: str, *, weights: str | Path | None = None, num_classes: int | None = None,
                   weights_num_classes: int | None = None, seed: int | None = None, **kwargs) -> nn.Module:
    """The classifier ``arch`` of ``library`` (``"timm"`` | ``"torchvision"``), in train mode.

    ``weights``: a local weights file (a state dict; timm also takes its own checkpoint dicts and
    ``.safetensors``), loaded strictly through the library's loader; ``None`` keeps the architecture's default
    random initialisation.  ``num_classes``: outputs of the network (``None``: ``weights_num_classes``, else the
    library's default, 1000).
    ``weights_num_classes``: outputs of the checkpoint's classifier when they differ from ``num_classes``
    (e.g. 1000 for ImageNet weights fine-tuned to 12 classes); the classifier is then re-initialised
    (timm's ``reset_classifier``; for torchvision the freshly built layer) and everything else loaded
    strictly.  ``seed``: the random parts (the whole network without ``weights``, a re-initialised
    classifier with them) are drawn after ``torch.manual_seed(seed)`` in a forked RNG, so the caller's
    random state is untouched and a seed always gives the same network.  ``kwargs`` go to
    ``timm.create_model`` (e.g. ``img_size``, ``drop_rate``) or ``torchvision.models.get_model``.
    """
    _check_library(library)
    if seed is None:
        return _create(library, arch, weights, num_classes, weights_num_classes, kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return _create(library, arch, weights, num_classes, weights_num_classes, kwargs)


def _create(library, arch, weights, num_classes, weights_num_classes, kwargs) -> nn.Module:
    if library == "timm":
        return _create_timm(arch, weights, num_classes, weights_num_classes, kwargs)
    return _create_torchvision(arch, weights, num_classes, weights_num_classes, kwargs)


def _create_timm(arch, weights, num_classes, weights_num_classes, kwargs) -> nn.Module:
    if arch.startswith(("hf-hub:", "hf_hub:", "local-dir:")) or not timm.is_model(arch):
        raise ValueError(f"unknown timm architecture '{arch}' (a registered timm model name, e.g. resnet50)")
    if num_classes is not None:
        kwargs = {**kwargs, "num_classes": int(num_classes)}
    if weights is None:
        return timm.create_model(arch, pretrained=False, **kwargs)
    path = Path(weights)
    if not path.is_file():
        raise CheckpointError(path, "checkpoint not found")
    ckpt_classes = weights_num_classes if weights_num_classes is not None else kwargs.get("num_classes")
    if ckpt_classes is None:
        ckpt_classes = timm.models.get_pretrained_cfg_value(arch, "num_classes") or 1000
    net = timm_from_file(arch, path, int(ckpt_classes), **{k: v for k, v in kwargs.items() if k != "num_classes"})
    wanted = kwargs.get("num_classes", ckpt_classes)
    if int(wanted) != int(ckpt_classes):
        net.reset_classifier(int(wanted))
    return net


def _create_torchvision(arch, weights, num_classes, weights_num_classes, kwargs) -> nn.Module:
    if arch not in torchvision.models.list_models(module=torchvision.models):
        raise ValueError(f"unknown torchvision classification model '{arch}' "
                         f"(one of torchvision.models.list_models(module=torchvision.models))")
    if num_classes is None:
        num_classes = weights_num_classes
    if num_classes is not None:
        kwargs = {**kwargs, "num_classes": int(num_classes)}
    net = torchvision.models.get_model(arch, weights=None, **kwargs)
    if weights is None:
        return net
    path = Path(weights)
    state = load_weights(path)
    for key in ("state_dict", "model"):  # a training checkpoint holding the state dict
        if isinstance(state, Mapping) and isinstance(state.get(key), Mapping):
            state = state[key]
            break
    if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(path, f"not a state dict of tensors (a {type(state).__name__})")
    state = dict(state)
    if state and all(k.startswith("module.") for k in state):  # saved from DataParallel
        state = {k[len("module."):]: v for k, v in state.items()}
    if arch.startswith("densenet"):
        state = {(_DENSENET_KEY.sub(r"\1\2", k)): v for k, v in state.items()}
    head_keys: set[str] = set()
    if weights_num_classes is not None and num_classes is not None and int(weights_num_classes) != int(num_classes):
        head_name, _ = _torchvision_head(net)
        head_keys = {f"{head_name}.weight", f"{head_name}.bias"}
        shapes = {k: tuple(state[k].shape) for k in head_keys if k in state}
        if not shapes or any(s[0] != int(weights_num_classes) for s in shapes.values()):
            raise CheckpointError(path, f"classifier {head_name} of the file is {shapes or 'missing'}, "
                                        f"not {weights_num_classes} classes")
        state = {k: v for k, v in state.items() if k not in head_keys}
    try:
        result = net.load_state_dict(state, strict=not head_keys)
    except RuntimeError as err:
        raise CheckpointError(path, f"not a checkpoint of torchvision model {arch} ({err})") from None
    if head_keys and (set(result.missing_keys) != head_keys or result.unexpected_keys):
        raise CheckpointError(path, f"not a checkpoint of torchvision model {arch} (missing keys "
                                    f"{sorted(set(result.missing_keys) - head_keys)}, unexpected keys "
                                    f"{sorted(result.unexpected_keys)})")
    return net


def _torchvision_head(net: nn.Module) -> tuple[str, nn.Linear]:
    """The dotted name and module of a torchvision classifier's final ``nn.Linear``."""
    for name in TORCHVISION_HEADS:
        try:
            module = net.get_submodule(name)
        except AttributeError:
            continue
        if isinstance(module, nn.Sequential) and len(module) and isinstance(module[-1], nn.Linear):
            last = list(module._modules)[-1]
            return f"{name}.{last}", module[-1]
        if isinstance(module, nn.Linear):
            return name, module
    raise ValueError(f"{type(net).__name__}: no final nn.Linear at {', '.join(TORCHVISION_HEADS)} "
                     "(or the last layer of a Sequential there)")


def _replace(net: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(net.get_submodule(parent) if parent else net, child, module)


#: a ResNet's four stages, whose outputs are its block maps (both libraries name them so)
RESNET_STAGES = ("layer1", "layer2", "layer3", "layer4")


class _LibraryEncoder(nn.Module):
    """A library classifier without its classifier layer: N×3×S×S → N×D (``feature_dim``), with block maps
    where the network is a ResNet of the library (``resnet_class``).

    A ResNet's block maps are the outputs of its four stages ``layer1`` … ``layer4`` (N×C_l×H_l×W_l; for
    ResNet-50 at S = 224: 256×56×56, 512×28×28, 1024×14×14, 2048×7×7), after the stem (the modules
    ``resnet_stem``); :meth:`from_last_block` pools the ``layer4`` map to the penultimate features (the
    subclass's ``_pool(net, last)``).  The subclasses name the library's modules and its pooling; every other
    architecture raises ``NotImplementedError`` with the text of
    :func:`~csfbench.network_csf.architectures.block_maps_refusal`, the last line of defence behind the config
    check of :func:`~csfbench.network_csf.architectures.has_block_maps`."""

    library: str
    resnet_class: type
    resnet_stem: tuple[str, ...]

    def __init__(self, net: nn.Module, feature_dim: int):
        super().__init__()
        self.net = net
        self.feature_dim = int(feature_dim)

    def _resnet(self) -> nn.Module:
        if not isinstance(self.net, self.resnet_class):
            raise NotImplementedError(block_maps_refusal(f"{self.library} {type(self.net).__name__}"))
        return self.net

    def block_maps(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The outputs of ``layer1`` … ``layer4`` (4 maps, N×C×H×W); the last one is the map
        :meth:`from_last_block` continues from."""
        net = self._resnet()
        for name in self.resnet_stem:
            x = getattr(net, name)(x)
        maps = []
        for name in RESNET_STAGES:
            x = getattr(net, name)(x)
            maps.append(x)
        return maps

    def from_last_block(self, last: torch.Tensor) -> torch.Tensor:
        """The N×D penultimate features from the ``layer4`` map (N×C×H×W, edited or not): the rest of
        :meth:`forward`."""
        return self._pool(self._resnet(), last)


class TimmEncoder(_LibraryEncoder):
    """A timm classifier without its classifier layer: ``forward_head(forward_features(x), pre_logits=True)``,
    N×3×S×S → N×D (pooling, head norm and dropout included); block maps for timm's ``ResNet`` class (stem
    ``conv1, bn1, act1, maxpool``; the layer4 map pooled by ``forward_head(·, pre_logits=True)``: global pooling
    and the head dropout)."""

    library = "timm"
    resnet_class = TimmResNet
    resnet_stem = ("conv1", "bn1", "act1", "maxpool")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net.forward_head(self.net.forward_features(x), pre_logits=True)

    def _pool(self, net: nn.Module, last: torch.Tensor) -> torch.Tensor:
        return net.forward_head(last, pre_logits=True)


class TorchvisionEncoder(_LibraryEncoder):
    """A torchvision classifier whose final ``nn.Linear`` is an ``nn.Identity``: N×3×S×S → N×D; block maps for
    ``torchvision.models.ResNet`` (ResNet, ResNeXt, Wide ResNet: stem ``conv1, bn1, relu, maxpool``; the layer4
    map pooled by ``avgpool`` and flattened)."""

    library = "torchvision"
    resnet_class = torchvision.models.ResNet
    resnet_stem = ("conv1", "bn1", "relu", "maxpool")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def _pool(self, net: nn.Module, last: torch.Tensor) -> torch.Tensor:
        return torch.flatten(net.avgpool(last), 1)


def split_network(net: nn.Module, library: str) -> tuple[nn.Module, nn.Linear]:
    """(encoder, head) of a timm or torchvision classifier; ``net`` is modified (its classifier layer becomes
    ``nn.Identity``) and owned by the encoder.  The encoder has ``feature_dim``; ``head(encoder(x))`` are the
    original logits.

    timm: the layer ``get_classifier()`` returns, the encoder is ``forward_head(forward_features(x),
    pre_logits=True)`` (a timm ``VisionTransformer`` becomes :class:`~csfbench.models.vit.ViTEncoder`, which
    also exposes its block maps; a timm ``ResNet`` has them in :class:`TimmEncoder`).  torchvision: ``fc``
    (ResNet, ResNeXt, WideResNet, RegNet), ``classifier`` (DenseNet), ``classifier[-1]`` (ConvNeXt,
    EfficientNet, MobileNet, VGG), ``heads.head`` (ViT), ``head`` (Swin); a ``torchvision.models.ResNet`` has
    block maps in :class:`TorchvisionEncoder`.  A classifier that is not one ``nn.Linear`` raises
    ``ValueError``.
    """
    _check_library(library)
    if library == "timm":
        head = net.get_classifier()
        if not isinstance(head, nn.Linear):
            raise ValueError(f"{type(net).__name__}: timm classifier is {type(head).__name__}, not one nn.Linear "
                             "(num_classes=0 or a distilled / convolutional head cannot be split)")
        from timm.models.vision_transformer import VisionTransformer

        if isinstance(net, VisionTransformer) and net.head is head:
            from csfbench.models.vit import split_vit

            return split_vit(net)
        name = next(n for n, m in net.named_modules() if m is head)
        _replace(net, name, nn.Identity())
        return TimmEncoder(net, head.in_features), head
    name, head = _torchvision_head(net)
    _replace(net, name, nn.Identity())
    return TorchvisionEncoder(net, head.in_features), head


def build_classifier(library: str, arch: str, n_classes: int, *, weights: str | Path | None = None,
                     weights_num_classes: int | None = None, seed: int | None = None, paradigm: str = "ce",
                     confidnet_hidden: int = 400, confidnet_layers: int = 5, **kwargs) -> Classifier:
    """:func:`create_network` + :func:`split_network` as a csfbench :class:`Classifier` of ``n_classes``
    (``n_classes + 1`` outputs for Deep Gamblers, ``paradigm="dg"``).  The confidence branches of the other
    paradigms are built after the network, from the global RNG."""
    n_out = int(n_classes) + (1 if paradigm == "dg" else 0)
    net = create_network(library, arch, weights=weights, num_classes=n_out, weights_num_classes=weights_num_classes,
                         seed=seed, **kwargs)
    encoder, head = split_network(net, library)
    return Classifier(encoder, head, paradigm, int(n_classes), confidnet_hidden=confidnet_hidden,
                      confidnet_layers=confidnet_layers)


class EvalPreprocessing(NamedTuple):
    """How the weights' authors evaluate: normalisation, resize interpolation, crop fraction, input side and the
    loader geometry (:func:`csfbench.data.loader.fit_geometry`).  ``loader_kwargs()`` and ``normalize_kwargs()``
    give the arguments of :func:`~csfbench.data.loader.make_loader` and
    :func:`~csfbench.data.transforms.normalize`."""

    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    interpolation: str
    crop_pct: float
    input_size: int
    geometry: str = "resize_crop"

    def loader_kwargs(self) -> dict:
        return {"image_size": self.input_size, "geometry": self.geometry, "crop_pct": self.crop_pct,
                "interpolation": self.interpolation}

    def normalize_kwargs(self) -> dict:
        return {"mean": list(self.mean), "std": list(self.std)}


_TIMM_CROP_MODES = {"center": "resize_crop", "squash": "stretch_crop"}


def eval_preprocessing(library: str, arch: str, *, image_size: int | None = None,
                       weights_name: str | None = None, use_test_size: bool = False) -> EvalPreprocessing:
    """The evaluation preprocessing of ``arch``'s pretrained weights, without building the model.

    timm: ``timm.data.resolve_data_config`` of the pretrained config of ``arch`` (``arch.tag`` picks a weight
    tag; ``use_test_size`` its ``test_input_size`` / ``test_crop_pct``); ``crop_mode`` ``center`` →
    ``resize_crop``, ``squash`` → ``stretch_crop`` (``border`` is refused).  torchvision: the transforms of the
    weights ``weights_name`` (default ``IMAGENET1K_V1`` where the architecture has it — the weights
    ImageNet-OOD uses —, else ``DEFAULT``): crop fraction = crop / resize size (224/256 for most V1 weights,
    224/232 for the V2 ones).  ``image_size`` overrides the input side and keeps the crop fraction.
    """
    _check_library(library)
    if library == "timm":
        from timm.data import resolve_data_config

        try:
            cfg = timm.models.get_pretrained_cfg(arch, allow_unregistered=False)
        except RuntimeError as err:
            raise ValueError(f"timm {arch}: no pretrained config ({err})") from None
        data = resolve_data_config({}, pretrained_cfg=cfg.to_dict(), use_test_size=use_test_size)
        _, h, w = data["input_size"]
        if h != w:
            raise ValueError(f"timm {arch}: non-square input size {h}×{w} is not supported")
        crop_mode = data.get("crop_mode", "center")
        if crop_mode not in _TIMM_CROP_MODES:
            raise ValueError(f"timm {arch}: crop_mode '{crop_mode}' is not supported "
                             f"(supported: {', '.join(_TIMM_CROP_MODES)})")
        prep = EvalPreprocessing(tuple(float(v) for v in data["mean"]), tuple(float(v) for v in data["std"]),
                                 str(data["interpolation"]), float(data["crop_pct"]), int(h),
                                 _TIMM_CROP_MODES[crop_mode])
    else:
        enum = torchvision.models.get_model_weights(arch)
        if weights_name is None:
            weights_name = "IMAGENET1K_V1" if "IMAGENET1K_V1" in enum.__members__ else "DEFAULT"
        if weights_name not in enum.__members__:
            raise ValueError(f"torchvision {arch}: unknown weights '{weights_name}' "
                             f"(known: {', '.join(enum.__members__)})")
        tf = enum[weights_name].transforms()
        crop, resize = int(tf.crop_size[0]), int(tf.resize_size[0])
        prep = EvalPreprocessing(tuple(float(v) for v in tf.mean), tuple(float(v) for v in tf.std),
                                 tf.interpolation.value, crop / resize, crop, "resize_crop")
    if image_size is not None:
        prep = prep._replace(input_size=int(image_size))
    check_geometry(prep.geometry, prep.crop_pct, prep.interpolation)
    return prep
