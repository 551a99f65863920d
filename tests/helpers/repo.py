"""Where the repository and the test interpreter's executables are."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def venv_bin(name: str) -> str:
    """An executable of the interpreter's environment (the project's .venv under `make test`)."""
    return str(Path(sys.executable).parent / name)
