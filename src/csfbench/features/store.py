"""The HDF5 feature file of one (model, dataset) — its contract (also in docs/design.md).

Datasets: ``logits`` (N×K float32; K = C, or C+1 for Deep Gamblers with the abstention output last),
``features`` (N×D float32, penultimate layer), ``labels`` (N int64, −1 for semantic shift),
``pred`` (N int64, argmax over the first C logits), ``correct`` (N bool; false where the label is
−1), ``sample_id`` (N UTF-8 strings), ``confidence`` (N float32, the paradigm's own score in [0, 1],
higher = more confident; absent for plain cross-entropy).  Dropout models with T > 0 Monte-Carlo
passes add ``mcd/logits`` (N×T×K), ``mcd/confidence`` (N×T, when the paradigm has a confidence) and
``mcd/features_mean`` (N×D).  The ``train`` file adds ``head/weight`` (K×D) and ``head/bias`` (K).
Attributes: see :data:`REQUIRED_ATTRS`.

Writing goes through :func:`csfbench.atomic.atomic_path`: a hidden temporary file in the same folder
that is renamed to the final name only after every row was written and the file closed; a killed job
never leaves a file that looks complete.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import h5py
import numpy as np

from csfbench.atomic import atomic_path
from csfbench.errors import FeatureFileError

REQUIRED_ATTRS = (
    "source", "model", "dataset", "split", "n_classes", "feature_dim", "backbone", "paradigm", "dropout",
    "reward", "run", "seed", "image_size", "package_version", "git_commit", "config_hash", "created",
    "mcd_samples", "shift_type",
)
_STRING = h5py.string_dtype("utf-8")


def _compression(kind: str) -> dict:
    if kind == "gzip":
        return {"compression": "gzip", "compression_opts": 1, "shuffle": True}
    if kind == "lzf":
        return {"compression": "lzf", "shuffle": True}
    return {}


class FeatureWriter:
    """Streams batches into a new feature file; use as a context manager.

    ``n`` rows are pre-allocated; :meth:`write_batch` fills them in order.  On a clean exit with all
    rows written the temporary file is renamed to ``path``; on an exception it is deleted.
    """

    def __init__(self, path: str | Path, n: int, n_outputs: int, feature_dim: int, mcd_samples: int,
                 has_confidence: bool, attrs: dict, compression: str = "gzip"):
        self.path = Path(path)
        self.n = n
        self.cursor = 0
        self._atomic = contextlib.ExitStack()
        self.tmp = self._atomic.enter_context(atomic_path(self.path))
        try:
            self.file = h5py.File(self.tmp, "w", locking=False)
            self._layout(n, n_outputs, feature_dim, mcd_samples, has_confidence, attrs, compression)
        except BaseException as err:
            if hasattr(self, "file"):
                self.file.close()
            self._atomic.__exit__(type(err), err, err.__traceback__)  # discards the temporary file
            raise

    def _layout(self, n: int, n_outputs: int, feature_dim: int, mcd_samples: int, has_confidence: bool,
                attrs: dict, compression: str) -> None:
        rows = max(1, min(n, (1 << 20) // max(1, 4 * max(feature_dim, n_outputs * max(mcd_samples, 1)))))
        comp = _compression(compression)

        def create(name, shape, dtype, **extra):
            chunks = (rows,) + tuple(shape[1:]) if n > 0 else None
            return self.file.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, track_times=False,
                                            **(comp if n > 0 else {}), **extra)

        create("logits", (n, n_outputs), "f4")
        create("features", (n, feature_dim), "f4")
        create("labels", (n,), "i8")
        create("pred", (n,), "i8")
        create("correct", (n,), "?")
        create("sample_id", (n,), _STRING)
        if has_confidence:
            create("confidence", (n,), "f4")
        if mcd_samples > 0:
            create("mcd/logits", (n, mcd_samples, n_outputs), "f4")
            create("mcd/features_mean", (n, feature_dim), "f4")
            if has_confidence:
                create("mcd/confidence", (n, mcd_samples), "f4")
        for key, value in attrs.items():
            self.file.attrs[key] = value

    def write_batch(self, arrays: dict[str, np.ndarray]) -> None:
        """Write the next rows; ``arrays`` maps dataset names (as in the file) to batch arrays."""
        size = len(arrays["labels"])
        sl = slice(self.cursor, self.cursor + size)
        if sl.stop > self.n:
            raise ValueError(f"{self.path}: writing rows up to {sl.stop} into a file of {self.n} rows")
        for name, value in arrays.items():
            if name not in self.file:
                raise KeyError(f"{self.path}: no dataset '{name}' in the feature file layout")
            self.file[name][sl] = value
        self.cursor = sl.stop

    def write_head(self, weight: np.ndarray, bias: np.ndarray) -> None:
        self.file.create_dataset("head/weight", data=weight.astype(np.float32), track_times=False)
        self.file.create_dataset("head/bias", data=bias.astype(np.float32), track_times=False)

    def __enter__(self) -> "FeatureWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.file.close()
        if exc_type is None and self.cursor != self.n:
            exc = ValueError(f"{self.path}: only {self.cursor} of {self.n} rows were written")
            self._atomic.__exit__(ValueError, exc, None)  # discards the temporary file
            raise exc
        self._atomic.__exit__(exc_type, exc, tb)  # renames on success, discards on an exception


def read_features(path: str | Path, keys: tuple[str, ...] | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """Load datasets (all, or ``keys``) and attributes of a feature file into memory."""
    path = Path(path)
    if not path.is_file():
        raise FeatureFileError(f"feature file not found: {path}")
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r", locking=False) as fh:
        attrs = dict(fh.attrs)

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and (keys is None or name in keys):
                data = obj[()]
                out[name] = data.astype(str) if obj.dtype.kind == "O" else data
        fh.visititems(visit)
    return out, attrs


def validate_feature_file(path: str | Path, expect: dict | None = None) -> dict:
    """Check a feature file against the contract; return its attributes.

    ``expect`` maps attribute names to required values (e.g. the model id, so that a file of
    another model is rejected).  Raises :class:`FeatureFileError` naming the file, the key, what was
    expected and what was found; NaN/Inf in logits or features are errors.
    """
    path = Path(path)
    if not path.is_file():
        raise FeatureFileError(f"{path}: feature file not found")
    with h5py.File(path, "r", locking=False) as fh:
        attrs = dict(fh.attrs)
        missing = [a for a in REQUIRED_ATTRS if a not in attrs]
        if missing:
            raise FeatureFileError(f"{path}: missing attributes {missing}")
        for key, value in (expect or {}).items():
            if str(attrs.get(key)) != str(value):
                raise FeatureFileError(f"{path}: attribute '{key}': expected {value!r}, found {attrs.get(key)!r}")
        for name in ("logits", "features", "labels", "pred", "correct", "sample_id"):
            if name not in fh:
                raise FeatureFileError(f"{path}: missing dataset '{name}'")
        n = fh["labels"].shape[0]
        n_out = int(attrs["n_classes"]) + (1 if attrs["paradigm"] == "dg" else 0)
        shapes = {"logits": (n, n_out), "features": (n, int(attrs["feature_dim"]))}
        for name, shape in shapes.items():
            if fh[name].shape != shape:
                raise FeatureFileError(f"{path}: dataset '{name}': expected shape {shape}, found {fh[name].shape}")
        for name in ("logits", "features", "mcd/logits", "mcd/features_mean"):
            if name in fh and n > 0:
                bad = _count_non_finite(fh[name])
                if bad:
                    raise FeatureFileError(f"{path}: dataset '{name}': expected finite values, found {bad} NaN/Inf")
    return attrs


def _count_non_finite(dataset: h5py.Dataset) -> int:
    """Non-finite entries, read chunk-row-block by block (memory bounded)."""
    step = dataset.chunks[0] if dataset.chunks else len(dataset)
    return sum(int((~np.isfinite(dataset[i:i + step])).sum()) for i in range(0, len(dataset), step))
