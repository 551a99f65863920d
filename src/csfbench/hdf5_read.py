"""Opening a csfbench HDF5 file for reading with an error that names the file and what it should be."""
from __future__ import annotations

from pathlib import Path

import h5py

from csfbench.errors import FeatureFileError


def open_hdf5(path: str | Path, what: str) -> h5py.File:
    """``path`` opened read-only (no file locking: cluster file systems often refuse it); a missing or unreadable
    file raises :class:`~csfbench.errors.FeatureFileError` naming the file and ``what`` it should be
    (e.g. ``"network CSF fit"``)."""
    path = Path(path)
    if not path.is_file():
        raise FeatureFileError(f"{what} not found: {path}")
    try:
        return h5py.File(path, "r", locking=False)
    except OSError as err:
        raise FeatureFileError(f"{path}: not a readable HDF5 {what} ({err})") from err
