import os
from pathlib import Path

import pytest

from tests.helpers.repo import REPO


@pytest.fixture(autouse=True)
def _single_thread():
    import torch

    torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """(work folder, config file) of the uninterrupted core-config run shared by the crash, rerun and
    manifest tests (tests/helpers/workflow_runs.py)."""
    from tests.helpers.workflow_runs import reference_run

    return reference_run(tmp_path_factory.mktemp("reference-run"))


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """A tiny Deep Gamblers VGG trained on the blobs (attack and ProjNorm tests): model, spec, train, test."""
    import torch
    from tests.helpers.training import tiny_spec, write_blobs

    from csfbench.data.sources import source_split
    from csfbench.training.loop import train_model

    # a session fixture is set up before the autouse `_single_thread` of the first test that uses it: pin the
    # threads here too, or the model (float summation order) depends on which test comes first.  4 epochs:
    # with 3, the single-threaded model stays at chance-level margins (clean error 0.25, ProjNorm not
    # growing with contrast loss)
    torch.set_num_threads(1)
    root = write_blobs(tmp_path_factory.mktemp("blobs"), n_train=256, n_test=192)
    spec = tiny_spec(root, paradigm="dg", dropout=0, epochs=4)
    train = source_split(spec.dataset, spec.val_size, "train")
    val = source_split(spec.dataset, spec.val_size, "val")
    work = tmp_path_factory.mktemp("model")
    model = train_model(spec, train, val, work / "c.pt", work / "h.csv", work / "r.pt", device=torch.device("cpu"))
    return model.eval(), spec, train, source_split(spec.dataset, spec.val_size, "test")


os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
