"""The compute device of the blocked CSF kernels: numpy on the host, or torch on a device (docs/methods.md §5.16).

:func:`compute_device` is a process-wide context like :func:`csfbench.csf.blocks.block_budget`: inside
``compute_device("cuda")`` (or any torch device) the neighbour searches of KNN and NNGuide, the fits' grouped
sums and scatter matrices and the Mahalanobis scoring run their blocks on that device
(:mod:`csfbench.csf.torch_kernels`); outside it, or with None / ``"cpu"``, the numpy kernels run unchanged.
A kernel asks :func:`torch_device`.  torch is imported only when a torch device is made active (the workflow
imports the CSF registry to build its DAG, and a CPU job never loads torch).

A fitted array that a kernel reads for many blocks (a KNN bank, a precision matrix) is copied to the device once
per array object (:func:`resident`) and kept while the array lives and the context lasts, so a scoring job
that calls a CSF once per row block transfers its fitted state once.

:func:`job_device` turns the setting ``csf.device`` and the GPUs a rule requests into the device of a job.
"""
from __future__ import annotations

import logging
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

log = logging.getLogger(__name__)

#: the values of ``csf.device``
DEVICE_SETTINGS = ("auto", "cpu", "cuda")

_DEVICE = None  # the active torch.device, None = the numpy kernels
_RESIDENT: dict[int, tuple[weakref.ref, object]] = {}  # id(array) -> (a weak reference to it, its device copy)


def torch_module():
    """torch, imported on first use."""
    import torch

    return torch


@contextmanager
def compute_device(device=None) -> Iterator[None]:
    """A context in which the blocked kernels run on ``device``: None or ``"cpu"`` = the numpy kernels; a torch
    device string (``"cuda"``, ``"cuda:0"``) or a :class:`torch.device` (``torch.device("cpu")`` included: the
    torch kernels on the host, for tests and benchmarks) = the torch kernels there.  float32 matrix products run
    at full float32 precision inside (``torch.set_float32_matmul_precision("highest")``: no TF32), restored on
    exit, as are the device copies of :func:`resident`.  RuntimeError for a CUDA device torch cannot see."""
    global _DEVICE, _RESIDENT
    if device is None or (isinstance(device, str) and device == "cpu"):
        target = None
    else:
        torch = torch_module()
        target = torch.device(device)
        if target.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"compute device {device!r}: torch sees no CUDA device")
    saved = _DEVICE, _RESIDENT
    precision = torch_module().get_float32_matmul_precision() if target is not None else None
    _DEVICE, _RESIDENT = target, {}
    if target is not None:
        torch_module().set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        _DEVICE, _RESIDENT = saved
        if precision is not None:
            torch_module().set_float32_matmul_precision(precision)


def torch_device():
    """The active :class:`torch.device` of the kernels, or None when the numpy kernels run."""
    return _DEVICE


def to_device(array: np.ndarray):
    """``array`` as a tensor on the active device, same dtype: a copy (never a view of the array, on the CPU too)."""
    return torch_module().from_numpy(np.ascontiguousarray(array)).to(_DEVICE, copy=True)


def to_host(tensor) -> np.ndarray:
    """A device tensor as a numpy array (same dtype)."""
    return tensor.cpu().numpy()


def resident(array: np.ndarray):
    """:func:`to_device` of ``array``, copied once per array object and kept while it lives (a weak reference
    drops the copy with the array) and the :func:`compute_device` context lasts."""
    table, key = _RESIDENT, id(array)
    if key in table:  # the array is alive (its weak reference's callback drops the entry with it)
        return table[key][1]
    tensor = to_device(array)
    table[key] = (weakref.ref(array, lambda _: table.pop(key, None)), tensor)
    return tensor


def job_device(setting: str, gpus: int) -> str | None:
    """The compute device of a fit or scoring job (for :func:`compute_device`) from ``csf.device`` and the GPUs
    its rule requests (``resources.fit_csf.gpu`` / ``resources.score_csf.gpu``).

    ``cpu``: None (the numpy kernels).  ``auto``: ``"cuda"`` when the rule requests a GPU and torch sees one;
    else None, logged when a GPU was requested but none is visible (torch is imported only when one is
    requested).  ``cuda``: ``"cuda"``, or RuntimeError naming the setting when torch sees no CUDA device: an
    explicit request is not silently replaced by kernels many times slower (docs/methods.md §5.16)."""
    if setting not in DEVICE_SETTINGS:
        raise ValueError(f"csf.device: expected one of {list(DEVICE_SETTINGS)}, got {setting!r}")
    if setting == "cpu" or (setting == "auto" and not gpus):
        return None
    if torch_module().cuda.is_available():
        return "cuda"
    if setting == "cuda":
        raise RuntimeError("csf.device is 'cuda' but torch sees no CUDA device in this job; run it on a GPU "
                           "(resources.fit_csf.gpu, resources.score_csf.gpu) or set csf.device to auto or cpu")
    log.warning("csf.device auto: the rule requests %d GPU(s) but torch sees no CUDA device; the CPU kernels run",
                gpus)
    return None
