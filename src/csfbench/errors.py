"""Exceptions with messages that name what was wrong and where."""
from __future__ import annotations

import difflib


class CsfbenchError(Exception):
    """Base class of every error csfbench raises on bad input."""


class ConfigError(CsfbenchError):
    """An invalid configuration: names the key path, what was expected and what was found."""

    def __init__(self, key_path: str, expected: str, found: object, source: str = "config"):
        self.key_path = key_path
        self.expected = expected
        self.found = found
        super().__init__(f"{source}: invalid value at '{key_path}': expected {expected}, found {found!r}")


class ConfigFileError(ConfigError):
    """A config file that is not YAML text: names the file and, for a syntax error, the line and column."""

    def __init__(self, path: str, where: str, problem: str):
        self.key_path = where
        self.expected = "a YAML config file"
        self.found = problem
        CsfbenchError.__init__(self, f"{path}{', ' + where if where else ''}: not a valid YAML config: {problem}")


class DatasetError(CsfbenchError):
    """A missing or malformed dataset: names the dataset, the path tried and the expected layout."""

    def __init__(self, dataset: str, path: object, problem: str, expected_layout: str):
        self.dataset = dataset
        self.path = str(path)
        self.problem = problem
        self.expected_layout = expected_layout
        super().__init__(
            f"dataset '{dataset}': {problem}\n  path tried: {path}\n  expected layout:\n"
            + "\n".join("    " + line for line in expected_layout.strip().splitlines())
        )


class WriteError(CsfbenchError):
    """A result file that cannot be written (a full disk, a lost file system): names the file.

    ``hdf5_unclosed`` is set when the HDF5 library could not close the discarded file (see
    :func:`csfbench.atomic.atomic_hdf5`).
    """

    hdf5_unclosed = False


class FeatureFileError(CsfbenchError):
    """A feature file that breaks the HDF5 contract (missing dataset, wrong shape, NaN, wrong model)."""


class CheckpointError(CsfbenchError):
    """A checkpoint that cannot be loaded: names the file and the problem (never torch's advice to
    load it with ``weights_only=False``)."""

    def __init__(self, path: object, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def did_you_mean(name: object, valid) -> str:
    """`` (did you mean 'x'?)`` naming the valid name closest to ``name`` (case-insensitive), or "": the hint an
    error message about an unknown name ends with."""
    lower = {str(v).lower(): v for v in valid}
    close = difflib.get_close_matches(str(name).lower(), list(lower), n=1)
    return f" (did you mean {lower[close[0]]!r}?)" if close else ""
