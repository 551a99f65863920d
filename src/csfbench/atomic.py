"""Atomic file creation: write to a temporary name beside the target, rename only when complete.

A killed job therefore never leaves a file under its final name that looks complete: what a kill
leaves is a hidden ``.{name}.tmp-{pid}`` file.  The next writer of the same target removes such
leftovers (one job owns an output at a time, so a leftover can only come from a dead writer; a pid
test would be wrong on a cluster, where writers run on several nodes of one file system).  The
temporary file is flushed to disk (fsync) before the rename, so the renamed file is complete even
after a node crash.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
from pathlib import Path
from typing import Iterator


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
