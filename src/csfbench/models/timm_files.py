"""Strict loading of a timm model from a local weights file, with an error that names the file and what does
not fit (:func:`timm_from_file`): the one loader of the ViT backbone's pretrained weights
(:mod:`csfbench.models.vit`) and of paradigm ``pretrained``'s timm classifiers (:mod:`csfbench.models.pretrained`).
"""
from __future__ import annotations

import pickle
import re
from pathlib import Path

import torch
from safetensors import SafetensorError
from torch import nn

from csfbench.errors import CheckpointError
from csfbench.torch_compat import _refusal_reason, ensure_torchvision

ensure_torchvision()
import timm  # noqa: E402  (needs the torchvision fix above on CPU-only torch)


def timm_from_file(arch: str, path: Path, num_classes: int, **kwargs) -> nn.Module:
    """timm model ``arch`` with a classifier of ``num_classes`` outputs — the class count of the file's own
    classifier —, its weights loaded **strictly** from the local file ``path`` by timm's pretrained-file
    mechanism (``pretrained_cfg_overlay=dict(file=...)``: timm's reader of ``.safetensors`` and weights-only
    pickles, its unwrapping of training checkpoints, its conversion of other layouts and its resampling of
    position and patch embeddings to the model built from ``kwargs``).

    Built with the file's class count, timm loads every tensor or fails (with another count it drops the
    classifier and loads whatever names match, which accepts a file of any other model).  Every failure
    raises :class:`CheckpointError` naming ``path``: a pickle that references anything but tensors (its
    reason, never the advice to load it with ``weights_only=False``), a malformed ``.safetensors`` file, or
    tensors that do not fit — how many of the model's tensors the file holds by name, a few it lacks and a
    few the model has not, or (every name matching) torch's first size mismatches.
    """
    build = {**kwargs, "num_classes": int(num_classes)}
    overlay = dict(file=str(path), num_classes=int(num_classes), source="")
    try:
        return timm.create_model(arch, pretrained=True, pretrained_cfg_overlay=overlay, **build)
    except (pickle.UnpicklingError, SafetensorError, RuntimeError, KeyError, ValueError, AttributeError,
            AssertionError, EOFError, IndexError) as err:
        raise CheckpointError(path, _timm_file_problem(path, arch, build, err)) from None


def _timm_file_problem(path: Path, arch: str, build: dict, err: Exception) -> str:
    """Why timm could not build ``arch`` from the file ``path`` (see :func:`timm_from_file`)."""
    # timm re-raises torch's refusal of a pickle that is not weights-only as a RuntimeError
    refusal = err if isinstance(err, pickle.UnpicklingError) else err.__cause__
    if isinstance(refusal, pickle.UnpicklingError):
        return f"not a weights-only checkpoint (refused: {_refusal_reason(refusal)})"
    if isinstance(err, SafetensorError):
        return f"not a readable .safetensors file ({err})"
    model = f"timm model {arch} with {build['num_classes']} classes"
    fit = _tensor_fit(path, arch, build, model) if isinstance(err, RuntimeError) else None
    first_lines = " ".join(line.strip() for line in str(err).strip().splitlines()[:3])
    return fit or f"not a checkpoint of {model} ({type(err).__name__}: {first_lines})"


def _tensor_fit(path: Path, arch: str, build: dict, model: str) -> str | None:
    """Which tensors of the model the file holds, by name; None when every name matches both ways (or the
    names cannot be read)."""
    try:
        held = set(timm.models.load_state_dict(str(path)))  # timm's own reading and unwrapping of the file
        with torch.device("meta"):  # the names only: no weights allocated
            names = list(timm.create_model(arch, pretrained=False, **build).state_dict())
    except Exception:  # noqa: BLE001 -- only a message is at stake: timm's own error is reported instead
        return None
    lacking = [name for name in names if name not in held]
    extra = sorted(held - set(names))
    if not lacking and not extra:
        return None
    problem = f"the file holds {len(names) - len(lacking)} of the {len(names)} tensors of {model} (by name)"
    if lacking:
        problem += f"; it lacks {len(lacking)}: {_few(lacking)}"
    if extra:
        problem += f"; it has {len(extra)} tensors the model has not: {_few(extra)}"
    return problem


def _few(names: list[str], shown: int = 5) -> str:
    """The first ``shown`` names, and how many more."""
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
