import os
from pathlib import Path

import pytest

from tests.helpers.repo import REPO


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's hook reads the groups
def pytest_collection_modifyitems(config, items):
    """The units of work of a parallel run (`make test`: ``pytest -n CORES --dist loadgroup``, pytest-xdist).

    A test file is one unit, so that its module fixtures are set up once.  The files that share one finished
    workflow run per process mark themselves with a common ``xdist_group`` (``SHARES_MICRO_RUN`` in
    tests/helpers/micro_run.py, ``SHARES_REFERENCE_RUN`` in tests/helpers/workflow_runs.py) and form one unit,
    so that the run is made once.  The end-to-end (``workflow``) tests come first: theirs are the longest
    units, and the short ones fill the other worker around them."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))  # (two files of one name: one unit)
    items.sort(key=lambda item: item.get_closest_marker("workflow") is None)  # stable: file order kept


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
