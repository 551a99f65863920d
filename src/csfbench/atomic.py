"""Atomic file creation: write to a temporary name beside the target, rename only when complete.

A killed job therefore never leaves a file under its final name that looks complete: what a kill
leaves is a hidden ``.{name}.tmp-{pid}`` file.  The next writer of the same target removes such
leftovers (one job owns an output at a time, so a leftover can only come from a dead writer; a pid
test would be wrong on a cluster, where writers run on several nodes of one file system).  The
temporary file is flushed to disk (fsync) before the rename, so the renamed file is complete even
after a node crash.

HDF5 files go through :func:`atomic_hdf5`, which also fails cleanly on a full disk (see there).
:func:`require_free_space` lets a writer that knows its size refuse to start when it cannot finish.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from csfbench.errors import WriteError

if TYPE_CHECKING:
    import h5py


def temporary_name(path: Path) -> Path:
    """The hidden temporary name a writer of ``path`` uses in this process."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in ``path``'s folder; rename it to ``path`` if the block succeeds.

    Leftover temporary files of ``path`` from killed writers are removed first.  On an exception the
    temporary file is removed and the exception propagates.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{glob.escape(path.name)}.tmp-*"):
        stale.unlink(missing_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remove_stale_temporaries(folder: str | Path) -> list[Path]:
    """Delete every hidden temporary file of :func:`atomic_path` under ``folder`` and return their paths.

    Only safe when no writer is running there: the workflow calls it when a run starts (Snakemake's lock
    keeps a second run out of the folder), so that the leftovers of killed jobs do not hold disk space
    until their own target is written again.
    """
    stale = sorted(p for p in Path(folder).rglob(".*.tmp-*") if p.is_file())
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def require_free_space(path: str | Path, n_bytes: int) -> None:
    """Raise :class:`WriteError` when the file system of ``path``'s folder has fewer than ``n_bytes`` free."""
    folder = Path(path).parent
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < n_bytes:
        raise WriteError(f"{path}: not enough free disk space: the file needs up to {n_bytes / 2**20:.1f} MiB, "
                         f"{free / 2**20:.1f} MiB are free on {folder}")


def release_disk(fh: "h5py.File") -> None:
    """Truncate an HDF5 file being discarded to zero bytes, which frees its disk space at once (the
    deleted file's blocks would otherwise stay taken until the process exits)."""
    with contextlib.suppress(OSError):
        os.truncate(fh.filename, 0)


def _discard_hdf5(fh: "h5py.File", error: BaseException) -> None:
    """Close an HDF5 file whose writes failed, after :func:`release_disk`.

    Once a flush has failed, HDF5 1.14 cannot close the file any more ("slist already enabled") and
    crashes with SIGSEGV when it tries again at exit; ``error`` (a :class:`WriteError`) is then marked
    ``hdf5_unclosed`` so that the job ends without that crash (:func:`csfbench.logs.job_logging`).
    """
    release_disk(fh)
    try:
        fh.close()
    except Exception:  # h5py raises RuntimeError or OSError here; the file is discarded either way
        if isinstance(error, WriteError):
            error.hdf5_unclosed = True


@contextlib.contextmanager
def atomic_hdf5(path: str | Path) -> Iterator["h5py.File"]:
    """Yield a new HDF5 file open for writing at a temporary name; rename it to ``path`` when complete.

    HDF5 keeps writes in its caches: a write the disk refuses (a full disk, ENOSPC) is reported only at
    the next flush.  The file is therefore flushed before it is closed (a writer that streams flushes
    earlier, see :func:`flush_hdf5`); a failed flush is a :class:`WriteError` naming ``path``, and on any
    error the temporary file is truncated, closed and deleted: nothing is left behind under either name.
    A caller that holds datasets of the file across the error drops them after :func:`release_disk` and
    before leaving the block.
    """
    import h5py

    with atomic_path(path) as tmp:
        fh = h5py.File(tmp, "w", locking=False)
        try:
            yield fh
            flush_hdf5(fh, path)
            fh.close()
        except BaseException as err:
            _discard_hdf5(fh, err)
            raise


def flush_hdf5(fh: "h5py.File", path: str | Path, what: str = "") -> None:
    """Write ``fh``'s cached data to disk; a failure is a :class:`WriteError` naming ``path`` (and ``what``).

    Datasets must stay open while their rows are written and flushed: closing one whose cached chunks
    cannot be written loses the error (h5py reports it as "ignored").
    """
    try:
        fh.flush()
    except (OSError, RuntimeError) as err:
        raise WriteError(f"{path}: cannot write{' ' + what if what else ''}: {err}") from err


def write_json(obj: object, path: str | Path, **dumps_kwargs) -> None:
    """Write ``obj`` as JSON (``json.dumps`` keyword arguments, default indent 2) to ``path`` atomically."""
    dumps_kwargs.setdefault("indent", 2)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, **dumps_kwargs) + "\n")


def save_npy(array, path: str | Path) -> None:
    """Write ``array`` in numpy's ``.npy`` format to ``path`` atomically (never a truncated array)."""
    import numpy as np

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array)
