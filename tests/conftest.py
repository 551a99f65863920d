import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/format_fixtures.py etc.


@pytest.fixture(autouse=True)
def _single_thread():
    import torch

    torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def venv_bin(name: str) -> str:
    """An executable of the interpreter's environment (the project's .venv under `make test`)."""
    return str(Path(sys.executable).parent / name)


os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
