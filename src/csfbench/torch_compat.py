"""Torch compatibility: ``import torchvision`` (and ``timm``) next to a CPU-only torch; weights-only loading.

The torchvision wheels on PyPI are CUDA builds: their ``_C`` extension links ``libtorch_cuda.so``.
Next to the CPU torch of the development/CI machines the extension fails to load, torchvision
swallows that error and then ``register_fake("torchvision::nms")`` raises
``RuntimeError: operator torchvision::nms does not exist`` at import time.

:func:`ensure_torchvision` first tries to load the real extension.  Only when that fails does it
define the two operator schemas torchvision's meta registrations need (``nms``, ``qnms``) with a
plain-torch CPU kernel, import torchvision, and bypass its ``_assert_has_ops`` check.  A working
(CUDA) install is never touched.  ``torchvision.io`` decoding stays unavailable in that mode; the
package decodes images with PIL.

:func:`load_weights` is ``torch.load(weights_only=True)`` with an error that names the file: torch's
own refusal of a pickle that references arbitrary globals (code a tampered checkpoint would run)
names no file and advises loading it with ``weights_only=False``.
"""
from __future__ import annotations

import importlib.util
import pickle
import sys
from pathlib import Path

import torch

from csfbench.errors import CheckpointError

#: True when the fallback operators were installed (the real extension could not be loaded).
SHIM_ACTIVE = False
# how torch's refusal of a pickle that is not weights-only starts; the reason is in the exception it replaced
_REFUSAL = "Weights only load failed"


def _extension_loads() -> bool:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return True  # torchvision absent: nothing to fix, the import error will speak for itself
    candidates = sorted(Path(spec.submodule_search_locations[0]).glob("_C*.so")) + sorted(
        Path(spec.submodule_search_locations[0]).glob("_C*.pyd")
    )
    if not candidates:
        return False
    try:
        torch.ops.load_library(str(candidates[0]))
    except (OSError, RuntimeError):
        return False
    return True


def _nms_cpu(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy non-maximum suppression on (x1, y1, x2, y2) boxes; indices kept, by decreasing score."""
    order = torch.argsort(scores, descending=True, stable=True)
    boxes = boxes.to(torch.float64)
    areas = (boxes[:, 2] - boxes[:, 0]).clamp(min=0) * (boxes[:, 3] - boxes[:, 1]).clamp(min=0)
    keep: list[int] = []
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    for rank, idx in enumerate(order.tolist()):
        if suppressed[rank]:
            continue
        keep.append(idx)
        rest = order[rank + 1 :]
        lt = torch.maximum(boxes[idx, :2], boxes[rest, :2])
        rb = torch.minimum(boxes[idx, 2:], boxes[rest, 2:])
        inter = (rb - lt).clamp(min=0).prod(dim=1)
        iou = inter / (areas[idx] + areas[rest] - inter)
        suppressed[rank + 1 :] |= iou > iou_threshold
    return torch.tensor(keep, dtype=torch.int64)


def _define_fallback_ops() -> None:
    global SHIM_ACTIVE
    lib = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.impl(op, _nms_cpu, "CPU")
    # keep the Library object alive for the life of the process
    sys.modules[__name__]._fallback_library = lib  # type: ignore[attr-defined]
    SHIM_ACTIVE = True


def ensure_torchvision() -> None:
    """Import torchvision, installing the CPU fallback operators only if the extension fails."""
    if "torchvision" in sys.modules:
        return
    if not _extension_loads():
        _define_fallback_ops()
    import torchvision  # noqa: F401  (import is the point)
    import torchvision.extension
    import torchvision.ops.boxes

    if SHIM_ACTIVE:
        torchvision.extension._assert_has_ops = lambda: None
        torchvision.ops.boxes._assert_has_ops = lambda: None


def load_weights(path: str | Path, map_location: str | torch.device = "cpu"):
    """``torch.load(path, weights_only=True)``; a file that is missing, not a weights-only pickle
    (tensors and plain containers only) or not readable raises :class:`CheckpointError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(path, "checkpoint not found")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        raise CheckpointError(path, f"not a weights-only checkpoint (refused: {_refusal_reason(err)})") from None
    except Exception as err:  # zip, EOF, key and runtime errors of a corrupt file alike
        raise CheckpointError(path, f"not a readable checkpoint ({type(err).__name__}: {err})") from None


def _refusal_reason(err: pickle.UnpicklingError) -> str:
    """Why the unpickler refused the file, without torch's advice on loading it anyway (with
    ``weights_only=False`` or by allow-listing the global it references)."""
    if not str(err).startswith(_REFUSAL):
        return str(err)
    inner = err.__context__
    if inner is None:
        return "it holds objects other than tensors and plain containers"
    return str(inner).strip().split(" Please ", 1)[0]
