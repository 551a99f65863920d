"""Atomic file creation: write to a temporary name beside the target, rename only when complete.

A killed job therefore never leaves a file under its final name that looks complete.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in ``path``'s folder; rename it to ``path`` if the block succeeds.

    On an exception the temporary file is removed and the exception propagates.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
