"""The HDF5 feature file of one (model, dataset) — its contract (also in docs/design.md).

Datasets: ``logits`` (N×K float32; K = C, or C+1 for Deep Gamblers with the abstention output last),
``features`` (N×D float32, or float16 where ``features.feature_dtype`` asks for it; penultimate layer),
``labels`` (N int64, −1 for semantic shift),
``pred`` (N int64, argmax over the first C logits), ``correct`` (N bool; false where the label is
−1), ``sample_id`` (N UTF-8 strings), ``confidence`` (N float32, the paradigm's own score in [0, 1],
higher = more confident; absent for plain cross-entropy).  Dropout models with T > 0 Monte-Carlo
passes add ``mcd/logits`` (N×T×K), ``mcd/confidence`` (N×T, when the paradigm has a confidence) and
``mcd/features_mean`` (N×D, the features' dtype).  The ``train`` file adds ``head/weight`` (K×D) and
``head/bias`` (K).
Attributes: see :data:`REQUIRED_ATTRS`; the file of a classifier whose features are shared between studies
(:mod:`csfbench.features.identity`) adds ``extraction_model``, ``extraction_hash`` and ``extraction``.

Writing goes through :func:`csfbench.atomic.atomic_hdf5`: a hidden temporary file in the same folder
that is renamed to the final name only after every row was written and the file closed; a killed job
never leaves a file that looks complete.  The writer first checks that the disk has room for the
uncompressed arrays, and flushes after every batch, so a disk that fills up during extraction is a
:class:`~csfbench.errors.WriteError` naming the file and the rows, with the temporary file removed.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import h5py
import numpy as np

from csfbench.atomic import atomic_hdf5, flush_hdf5, release_disk, require_free_space
from csfbench.errors import FeatureFileError, WriteError
from csfbench.features.identity import model_hash, shares_features
from csfbench.seeds import spec_hash
from csfbench.specs import ModelSpec

REQUIRED_ATTRS = (
    "source", "model", "dataset", "split", "n_classes", "feature_dim", "backbone", "paradigm", "dropout",
    "reward", "run", "seed", "image_size", "package_version", "git_commit", "config_hash", "created",
    "mcd_samples", "shift_type",
)
_STRING = h5py.string_dtype("utf-8")
SAMPLE_ID_BYTES = 32  # a sample id's share of the file: its UTF-8 bytes and HDF5's heap entry


def _uncompressed_bytes(n: int, n_outputs: int, feature_dim: int, mcd_samples: int, has_confidence: bool,
                        feature_bytes: int = 4) -> int:
    """Size in bytes of a feature file's arrays before compression: the free space a writer requires
    (compression only shrinks them; HDF5's own metadata is a few KiB); ``feature_bytes`` per feature value."""
    row = 4 * (n_outputs + has_confidence) + feature_bytes * feature_dim + 8 + 8 + 1 + SAMPLE_ID_BYTES
    if mcd_samples > 0:
        row += 4 * (mcd_samples * n_outputs + mcd_samples * has_confidence) + feature_bytes * feature_dim
    return n * row


#: ``features.feature_dtype`` -> the HDF5 dtype of the feature datasets
FEATURE_DTYPES = {"float32": "f4", "float16": "f2"}


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
                 has_confidence: bool, attrs: dict, compression: str = "gzip", feature_dtype: str = "float32"):
        if feature_dtype not in FEATURE_DTYPES:
            raise ValueError(f"feature dtype {feature_dtype!r}: expected one of {sorted(FEATURE_DTYPES)}")
        self.path = Path(path)
        self.n = n
        self.cursor = 0
        dtype = FEATURE_DTYPES[feature_dtype]
        require_free_space(self.path, _uncompressed_bytes(n, n_outputs, feature_dim, mcd_samples, has_confidence,
                                                          np.dtype(dtype).itemsize))
        self._atomic = contextlib.ExitStack()
        self.file = self._atomic.enter_context(atomic_hdf5(self.path))
        try:
            self._layout(n, n_outputs, feature_dim, mcd_samples, has_confidence, attrs, compression, dtype)
        except BaseException as err:
            self._atomic.__exit__(type(err), err, err.__traceback__)  # discards the temporary file
            raise

    def _layout(self, n: int, n_outputs: int, feature_dim: int, mcd_samples: int, has_confidence: bool,
                attrs: dict, compression: str, feature_dtype: str) -> None:
        self._datasets: dict[str, h5py.Dataset] = {}  # held open: see write_batch
        rows = max(1, min(n, (1 << 20) // max(1, 4 * max(feature_dim, n_outputs * max(mcd_samples, 1)))))
        comp = _compression(compression)

        def create(name, shape, dtype, **extra):
            chunks = (rows,) + tuple(shape[1:]) if n > 0 else None
            self._datasets[name] = self.file.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks,
                                                            track_times=False, **(comp if n > 0 else {}), **extra)

        create("logits", (n, n_outputs), "f4")
        create("features", (n, feature_dim), feature_dtype)
        create("labels", (n,), "i8")
        create("pred", (n,), "i8")
        create("correct", (n,), "?")
        create("sample_id", (n,), _STRING)
        if has_confidence:
            create("confidence", (n,), "f4")
        if mcd_samples > 0:
            create("mcd/logits", (n, mcd_samples, n_outputs), "f4")
            create("mcd/features_mean", (n, feature_dim), feature_dtype)
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
        unknown = sorted(set(arrays) - set(self._datasets))
        if unknown:
            raise KeyError(f"{self.path}: no dataset {unknown} in the feature file layout")
        what = f"rows {sl.start}-{sl.stop - 1}"
        for name, value in arrays.items():
            if self._datasets[name].dtype != np.float16 or not np.size(value):
                continue
            largest = float(np.nanmax(np.abs(value)))
            if largest > float(np.finfo(np.float16).max):
                raise ValueError(f"{self.path}: {name} {what} exceed float16's range (|x| ≤ 65504, largest "
                                 f"{largest:.6g}); store them with features.feature_dtype float32")
        try:  # through the datasets held open (csfbench.atomic.flush_hdf5)
            for name, value in arrays.items():
                self._datasets[name][sl] = value
        except (OSError, RuntimeError) as err:
            raise WriteError(f"{self.path}: cannot write {what}: {err}") from err
        flush_hdf5(self.file, self.path, what)  # a full disk surfaces here, at the batch that hit it
        self.cursor = sl.stop

    def write_head(self, weight: np.ndarray, bias: np.ndarray) -> None:
        """Add the classifier head (``head/weight`` K×D, ``head/bias`` K), written with the file's last flush."""
        self.file.create_dataset("head/weight", data=weight.astype(np.float32), track_times=False)
        self.file.create_dataset("head/bias", data=bias.astype(np.float32), track_times=False)

    def __enter__(self) -> "FeatureWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and self.cursor != self.n:
            exc = ValueError(f"{self.path}: only {self.cursor} of {self.n} rows were written")
            self._atomic.__exit__(ValueError, exc, None)  # discards the temporary file
            raise exc
        if exc_type is not None:
            release_disk(self.file)
            self._datasets.clear()
        self._atomic.__exit__(exc_type, exc, tb)  # flushes, closes and renames on success; discards on an exception


def read_features(path: str | Path, keys: tuple[str, ...] | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """Load datasets (all, or ``keys``) and attributes of a feature file into memory.  Float16 features
    (``features.feature_dtype``) are returned as float32, so every reader sees the float32 contract.

    A missing, truncated or corrupt file raises :class:`FeatureFileError` naming it."""
    out: dict[str, np.ndarray] = {}
    with _open(path) as fh:
        attrs = dict(fh.attrs)

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and (keys is None or name in keys):
                if obj.dtype == np.float16:
                    out[name] = obj.astype(np.float32)[()]  # converted by HDF5 while reading: no float16 copy
                    return
                data = obj[()]
                out[name] = data.astype(str) if obj.dtype.kind == "O" else data
        fh.visititems(visit)
    return out, attrs


REQUIRED_DATASETS = ("logits", "features", "labels", "pred", "correct", "sample_id")
FINITE_DATASETS = ("logits", "features", "confidence", "mcd/logits", "mcd/features_mean", "mcd/confidence")
ROW_BLOCK = 65536  # rows per read of an unchunked dataset


def validate_feature_file(path: str | Path, expect: dict | None = None,
                          finite: tuple[str, ...] = FINITE_DATASETS) -> dict:
    """Check a feature file against the contract; return its attributes.

    ``expect`` maps attribute names to required values (:func:`feature_expect` of the model spec, so that a
    file of another model, or of another run of it, is rejected).  Raises :class:`FeatureFileError`
    naming the file, the key, what was expected and what was found: for a file that cannot be read,
    a missing attribute or dataset, a wrong shape or dtype, NaN/Inf in logits, features or
    confidences, and labels outside [-1, n_classes) (-1: unlabelled, e.g. semantic shift).  Arrays are
    read in row blocks: memory stays bounded.  ``finite``: the datasets whose values are checked for NaN/Inf (a
    reader of the logits alone, such as an ensemble's, need not decompress the features).
    """
    path = Path(path)
    with _open(path) as fh:
        attrs = dict(fh.attrs)
        _check_attrs(path, attrs, expect or {})
        _check_layout(path, fh, attrs)
        _check_values(path, fh, int(attrs["n_classes"]), finite)
    return attrs


def _count_non_finite(dataset: h5py.Dataset) -> int:
    """Non-finite entries, read block by block (memory bounded)."""
    return sum(int((~np.isfinite(block)).sum()) for block in _row_blocks(dataset))


def run_attrs(spec: ModelSpec) -> dict:
    """The attributes that identify the feature files of ``spec``'s run, as
    :func:`csfbench.features.extract.feature_attrs` writes them: the ``expect`` of
    :func:`validate_feature_file` for a consumer that holds the model spec."""
    return {"source": spec.source, "model": spec.model, "seed": spec.seed, "config_hash": spec_hash(spec.to_dict())}


def feature_expect(spec: ModelSpec) -> dict:
    """The ``expect`` of :func:`validate_feature_file` for a consumer of ``spec``'s feature files: its
    :func:`run_attrs`, or for a classifier whose features are shared between studies (taken from Snakemake's
    between-workflow cache, written by another study under its own names and seed) the ``extraction_model`` its
    files record (:func:`csfbench.features.identity.model_hash`)."""
    if shares_features(spec):
        return {"extraction_model": model_hash(spec)}
    return run_attrs(spec)


@contextlib.contextmanager
def _open(path: str | Path):
    """``path`` opened for reading; a missing file, and a failure to open or read it inside the
    ``with`` block (truncated, corrupt, not HDF5), raise :class:`FeatureFileError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise FeatureFileError(f"{path}: feature file not found")
    try:
        with h5py.File(path, "r", locking=False) as fh:
            yield fh
    except (OSError, KeyError, RuntimeError) as err:  # h5py's errors for truncated or corrupt content
        raise FeatureFileError(f"{path}: not a readable HDF5 feature file ({type(err).__name__}: {err})") from err


def _check_attrs(path: Path, attrs: dict, expect: dict) -> None:
    """Required attributes present, sizes integral, ``expect`` met."""
    missing = [a for a in REQUIRED_ATTRS if a not in attrs]
    if missing:
        raise FeatureFileError(f"{path}: missing attributes {missing}")
    for key in ("n_classes", "feature_dim", "mcd_samples"):
        if not isinstance(attrs[key], (int, np.integer)) or attrs[key] < 0:
            raise FeatureFileError(f"{path}: attribute '{key}': expected a non-negative integer, "
                                   f"found {attrs[key]!r}")
    for key, value in expect.items():
        found = str(attrs.get(key))
        if found != str(value):
            raise FeatureFileError(f"{path}: attribute '{key}': expected {str(value)!r}, found {found!r}")


def _check_layout(path: Path, fh: h5py.File, attrs: dict) -> None:
    """Every required dataset present; each dataset of the contract with its shape and dtype kind."""
    missing = [name for name in REQUIRED_DATASETS if name not in fh]
    if missing:
        raise FeatureFileError(f"{path}: missing dataset(s) {missing}")
    labels = fh["labels"]
    if not isinstance(labels, h5py.Dataset) or labels.ndim != 1:
        raise FeatureFileError(f"{path}: dataset 'labels': expected shape (N,), found {labels}")
    n, d, t = labels.shape[0], int(attrs["feature_dim"]), int(attrs["mcd_samples"])
    k = int(attrs["n_classes"]) + (1 if attrs["paradigm"] == "dg" else 0)
    layout = {"logits": ((n, k), "f"), "features": ((n, d), "f"), "labels": ((n,), "iu"), "pred": ((n,), "iu"),
              "correct": ((n,), "b"), "sample_id": ((n,), "OSU"), "confidence": ((n,), "f"),
              "mcd/logits": ((n, t, k), "f"), "mcd/features_mean": ((n, d), "f"), "mcd/confidence": ((n, t), "f")}
    for name, (shape, kinds) in layout.items():
        dataset = fh[name] if name in fh else None
        if dataset is not None and (not isinstance(dataset, h5py.Dataset) or dataset.shape != shape
                                    or dataset.dtype.kind not in kinds):
            raise FeatureFileError(f"{path}: dataset '{name}': expected shape {shape} of dtype kind {kinds!r}, "
                                   f"found {dataset}")


def _check_values(path: Path, fh: h5py.File, n_classes: int, finite: tuple[str, ...]) -> None:
    """Finite values in the datasets ``finite`` (those present); labels in [-1, n_classes) (-1: an unlabelled
    sample)."""
    for name in finite:
        bad = _count_non_finite(fh[name]) if name in fh else 0
        if bad:
            raise FeatureFileError(f"{path}: dataset '{name}': expected finite values, found {bad} NaN/Inf")
    count, values = 0, set()
    for block in _row_blocks(fh["labels"]):
        bad = block[(block < -1) | (block >= n_classes)]
        count += len(bad)
        values.update(np.unique(bad)[:5].tolist())
    if count:
        raise FeatureFileError(f"{path}: dataset 'labels': expected values in [-1, {n_classes}) (-1: unlabelled), "
                               f"found {count} outside that range: {sorted(values)[:5]}")


def _row_blocks(dataset: h5py.Dataset):
    """``dataset`` in blocks of rows: its chunk rows, or :data:`ROW_BLOCK` rows when it is not chunked."""
    step = dataset.chunks[0] if dataset.chunks else ROW_BLOCK
    for start in range(0, len(dataset), step):
        yield dataset[start:start + step]
