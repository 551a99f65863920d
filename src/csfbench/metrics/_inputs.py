"""Input checks shared by the metric functions, and the errors they raise.

Every metric takes ``confidence`` (higher = more likely a success) and ``residual`` (the loss of a
prediction in [0, 1]; for classification ``1 - correct``, so 1 = failure) as 1-D arrays of equal length.
"""
from __future__ import annotations

import numpy as np

from csfbench.errors import CsfbenchError


class MetricInputError(CsfbenchError, ValueError):
    """Bad metric input: non-finite values, mismatched lengths, an empty set, a residual out of range."""


class UndefinedMetricError(MetricInputError):
    """A metric that needs both successes and failures was given a single-class set."""


def finite_1d(values, name: str) -> np.ndarray:
    """``values`` as a 1-D float64 array; raise if it is not 1-D or holds NaN/Inf (with their count)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise MetricInputError(f"{name} must be 1-D, got shape {arr.shape}")
    n_bad = arr.size - int(np.count_nonzero(np.isfinite(arr)))
    if n_bad:
        raise MetricInputError(f"{name} contains {n_bad} non-finite value(s) (NaN or Inf) out of {arr.size}")
    return arr


def check_pair(confidence, residual) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(confidence, residual)``: equal lengths, non-empty, finite, residual within [0, 1]."""
    conf = np.asarray(confidence)
    res = np.asarray(residual)
    if conf.ndim == 1 and res.ndim == 1 and conf.shape[0] != res.shape[0]:
        raise MetricInputError(f"length mismatch: confidence has {conf.shape[0]} values, residual has {res.shape[0]}")
    return finite_1d(conf, "confidence"), check_residual(res)


def check_residual(residual) -> np.ndarray:
    """Validate ``residual`` alone: 1-D, non-empty, finite, within [0, 1]; return it as float64."""
    res = finite_1d(residual, "residual")
    if res.size == 0:
        raise MetricInputError("empty evaluation set: no values given")
    n_out = int(np.count_nonzero((res < 0) | (res > 1)))
    if n_out:
        raise MetricInputError(f"residual must lie in [0, 1]; {n_out} value(s) fall outside "
                               f"(min {res.min():g}, max {res.max():g})")
    return res


def is_binary(residual: np.ndarray) -> bool:
    """Whether every residual is exactly 0 or 1."""
    return bool(np.all((residual == 0) | (residual == 1)))


def check_binary(residual: np.ndarray, metric: str) -> None:
    """Raise unless ``residual`` is binary (0 = success, 1 = failure), as ``metric`` needs class labels."""
    if not is_binary(residual):
        raise MetricInputError(f"{metric} needs a binary residual (0 = success, 1 = failure); "
                               f"{int(np.count_nonzero((residual != 0) & (residual != 1)))} value(s) are neither")


def check_two_classes(is_failure: np.ndarray, metric: str) -> None:
    """Raise :class:`UndefinedMetricError` when ``is_failure`` (bool) holds only one class."""
    n_fail = int(np.count_nonzero(is_failure))
    if n_fail == 0:
        raise UndefinedMetricError(f"{metric} is undefined: the set has no failures (residual 1), "
                                   "it needs both successes and failures")
    if n_fail == is_failure.size:
        raise UndefinedMetricError(f"{metric} is undefined: the set has no successes (residual 0), "
                                   "it needs both successes and failures")


def check_labels(labels: np.ndarray, n_rows: int, n_classes: int) -> np.ndarray:
    """``labels`` as an array of ``n_rows`` integers in [0, n_classes) (ValueError otherwise)."""
    labels = np.asarray(labels)
    if labels.shape != (n_rows,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be {n_rows} integers, got shape {labels.shape} dtype {labels.dtype}")
    if n_rows and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}), found [{labels.min()}, {labels.max()}]")
    return labels


def check_shifted(shifted, n: int, metric: str | None = None) -> np.ndarray:
    """``shifted`` (bool or 0/1, one value per sample of a set of ``n``: True = a sample of the shifted set) as a
    boolean array; ``metric`` prefixes the messages."""
    prefix = f"{metric}: " if metric else ""
    arr = np.asarray(shifted)
    if arr.shape != (n,):
        raise MetricInputError(f"{prefix}shifted must be 1-D with one value per sample ({n}), got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return arr
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise MetricInputError(f"{prefix}shifted must be bool or 0/1, got dtype {arr.dtype}")
    values = finite_1d(arr, "shifted")
    n_bad = int(np.count_nonzero((values != 0) & (values != 1)))
    if n_bad:
        raise MetricInputError(f"{prefix}shifted must hold only 0/1 (or bool); {n_bad} value(s) are neither")
    return values == 1
