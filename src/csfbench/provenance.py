"""Provenance attributes stamped on every artifact: package version, git commit, time."""
from __future__ import annotations

import datetime as _dt
import functools
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def package_version() -> str:
    try:
        return version("csfbench")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The commit of the checkout the package runs from (``+dirty`` if modified), or ``unknown``."""
    try:
        commit = subprocess.run(["git", "-C", str(_REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(_REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
