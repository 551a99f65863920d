"""The class outputs of a classifier head, split from Deep Gamblers' abstention output.

A classifier of C classes has K outputs: K = C, or K = C + 1 for Deep Gamblers, whose abstention
output is the last one (the (C+1)-th logit, and the (C+1)-th row of the head's weight and bias).
:func:`class_outputs` is the one place that split is made, for numpy arrays and torch tensors alike
(it only indexes, so it imports neither and returns a view of its input); the model code
(:mod:`csfbench.models`), training, feature extraction, attacks and the numpy-only CSF and geometry
stages all call it.  It lives at the package's top level because ``csfbench.models`` imports torch
when it is imported, which the CSF jobs never do.
"""
from __future__ import annotations

from typing import TypeVar

Outputs = TypeVar("Outputs")  # a numpy array or a torch tensor


def class_outputs(outputs: Outputs, n_classes: int, axis: int = -1) -> Outputs:
    """The C class entries of ``outputs`` along ``axis``, without Deep Gamblers' abstention entry.

    ``outputs`` has K = C or K = C + 1 (Deep Gamblers: the abstention output last) entries along
    ``axis``: logits or probabilities N×K, or MC-dropout pass logits N×T×K, on the last axis (the
    default); the head's weight K×D and bias (K,) on ``axis=0`` (``W[:C]``, ``b[:C]``).  The result has
    C entries along ``axis`` and is a view (numpy) or a slice (torch) of ``outputs``, as ``x[..., :C]``
    is.  ValueError when K is neither C nor C + 1.
    """
    c = int(n_classes)
    k = outputs.shape[axis]
    if k not in (c, c + 1):
        raise ValueError(f"expected C = {c} class outputs, or C + 1 with Deep Gamblers' abstention output last, "
                         f"along axis {axis} of shape {tuple(outputs.shape)}, got {k}")
    index = [slice(None)] * outputs.ndim
    index[axis] = slice(0, c)
    return outputs[tuple(index)]
