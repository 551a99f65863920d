"""The torch path of the blocked CSF kernels (issue 52, item 5; docs/methods.md §5.16) against the numpy kernels.

Each comparison runs on torch's CPU device here and, marked ``cuda``, on a CUDA device where torch sees one.
Tolerances (those stated in :mod:`csfbench.csf.torch_kernels`): the float32 neighbour values within 1e-5
absolute (KNN squared distances within 2e-5; NNGuide similarities within 1e-5 × the bank row's norm); the
float64 sums, scatter matrices and Maha scores within 1e-9 relative to the magnitude of their terms; ViM's and
NeCo's scatter within 1e-5 of its largest diagonal entry (the numpy one is float32 about block centres).
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from contextlib import contextmanager

import h5py
import numpy as np
import pytest
import torch

from csfbench.csf import blocks
from csfbench.csf import device as dev
from csfbench.csf import distance_scores as dist
from csfbench.csf import knn, nnguide, torch_kernels
from csfbench.csf import subspace_scores as sub
from csfbench.csf.blocks import block_budget
from csfbench.csf.device import compute_device, job_device, torch_device
from csfbench.csf.engine import fit_mode, score_blocks
from csfbench.csf.inputs import FileRows
from csfbench.csf.logit_scores import energy
from csfbench.csf.neighbours import shared_search
from csfbench.errors import ConfigError
from csfbench.workflow.grid import Grid
from csfbench.workflow.settings import load_config, schema_default, validate_config

from tests.helpers.csf_synthetic import FIXED_TUNING, make_splits

NO_CUDA = not torch.cuda.is_available()
DEVICES = [pytest.param(torch.device("cpu"), id="torch-cpu"),
           pytest.param("cuda", id="cuda", marks=[pytest.mark.cuda,
                                                  pytest.mark.skipif(NO_CUDA, reason="no CUDA device visible to torch")])]
N_BANK, N_QUERY, D, C = 1500, 230, 96, 6
#: a block budget whose bank chunks (MAX_BLOCK_ENTRIES // (D + 1) rows) split the bank into several
SMALL_MIB = 0.1
#: the neighbour values (float32 products of unit vectors in another summation order)
VALUE_ATOL = 1e-5
#: float64 sums and products, relative to the magnitude of their terms
FLOAT64_RTOL = 1e-9


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    labels = np.arange(N_BANK) % C
    centres = rng.normal(size=(C, D)) * 1.5
    train = np.maximum(centres[labels] + rng.normal(size=(N_BANK, D)), 0.0).astype(np.float32)
    queries = np.maximum(centres[np.arange(N_QUERY) % C] + rng.normal(size=(N_QUERY, D)) * 1.3, 0.0)
    queries[3] = 0.0  # an all-zero feature: the zero vector, at distance 1 from every bank row
    queries[4] = train[10]  # a training row: its nearest neighbour at distance ~0
    return {"train": train, "queries": queries.astype(np.float32), "labels": labels,
            "train_logits": rng.normal(size=(N_BANK, C)) * 3, "logits": rng.normal(size=(N_QUERY, C)) * 3}


@contextmanager
def on(device, **budget):
    """The torch path on ``device``, within ``budget`` (:func:`block_budget`; a small one splits the bank into
    chunks)."""
    with block_budget(**budget), compute_device(device):
        yield


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_knn_search_on_the_device_is_numpys_within_the_tolerance(data, device, dtype):
    """Float32 and float16 banks, searched in several chunks: the count largest values (descending) and the
    count-th alone within 1e-5, the ‖ĥ‖² column exactly; KNN scores for several k within 2e-5 squared."""
    bank = knn.knn_fit(data["train"].astype(dtype))["bank"]
    assert bank.dtype == dtype
    queries = data["queries"]
    for count in (1, 7, 64):
        for keep in (True, False):
            square, largest = knn._search(bank, queries, count, keep)
            with on(device, mib=SMALL_MIB):
                assert N_BANK // max(count, blocks.MAX_BLOCK_ENTRIES // (D + 1)) >= 4  # several bank chunks
                d_square, d_largest = knn._search(bank, queries, count, keep)
            assert d_largest.dtype == np.float32 and d_largest.shape == largest.shape
            np.testing.assert_array_equal(d_square, square)
            np.testing.assert_allclose(d_largest, largest, rtol=0, atol=VALUE_ATOL)
            if keep:
                assert np.all(np.diff(d_largest, axis=1) <= 0)  # descending
    state = {"bank": bank}
    for k in (1, 5, 50, 300):
        expected = knn.knn_score(state, queries, k)
        with on(device, mib=SMALL_MIB):
            got = knn.knn_score(state, queries, k)
        np.testing.assert_allclose(got**2, expected**2, rtol=0, atol=2 * VALUE_ATOL)
        assert got[3] == expected[3]  # the zero vector: products 0, exactly


@pytest.mark.parametrize("device", DEVICES)
def test_the_shared_search_grid_on_the_device(data, device):
    """Inside shared_search the device search runs once for the reach and every k of the grid reads its column:
    the scores of a search per k on the host within the tolerance, KNN and NNGuide."""
    state = knn.knn_fit(data["train"])
    bank = nnguide.nnguide_bank(data["train"], data["train_logits"], data["labels"], C, 0.5)
    ks = (2, 10, 40, 120)
    knn_expected = {k: knn.knn_score(state, data["queries"], k) for k in ks}
    nng_expected = {k: nnguide.nnguide_score(data["queries"], data["logits"], bank, k) for k in ks}
    calls = []
    real = torch_kernels.top_products

    def counted(*args):
        calls.append(args[3])
        return real(*args)

    with on(device, mib=SMALL_MIB), shared_search(max(ks)), pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch_kernels, "top_products", counted)
        knn_got = {k: knn.knn_score(state, data["queries"], k) for k in ks}
        nng_got = {k: nnguide.nnguide_score(data["queries"], data["logits"], bank, k) for k in ks}
    assert calls == [max(ks), max(ks)]  # one search per (bank, queries), for the reach
    scale = np.abs(energy(data["logits"])) * np.linalg.norm(bank, axis=1).max()
    for k in ks:
        np.testing.assert_allclose(knn_got[k]**2, knn_expected[k]**2, rtol=0, atol=2 * VALUE_ATOL)
        assert np.all(np.abs(nng_got[k] - nng_expected[k]) <= VALUE_ATOL * scale)


@pytest.mark.parametrize("device", DEVICES)
def test_nnguide_on_the_device_is_numpys_within_the_tolerance(data, device):
    bank = nnguide.nnguide_bank(data["train"], data["train_logits"], data["labels"], C, 0.8)
    scale = np.abs(energy(data["logits"])) * np.linalg.norm(bank, axis=1).max()
    for k in (1, 9, 100):
        expected = nnguide.nnguide_score(data["queries"], data["logits"], bank, k)
        with on(device, mib=SMALL_MIB):
            got = nnguide.nnguide_score(data["queries"], data["logits"], bank, k)
        assert np.all(np.abs(got - expected) <= VALUE_ATOL * scale)
    for keep in (True, False):
        expected = nnguide._top_sums(data["queries"], bank, 30, keep)
        with on(device, mib=SMALL_MIB):
            got = nnguide._top_sums(data["queries"], bank, 30, keep)
        assert got.dtype == np.float64 and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=30 * VALUE_ATOL * np.linalg.norm(bank, axis=1).max())


@pytest.mark.parametrize("device", DEVICES)
def test_the_fits_sums_and_scatters_on_the_device(data, device, tmp_path):
    """Grouped sums, class means (also with a mask), Maha's covariance and ViM's/NeCo's scatter, from an array
    and from file rows read in row blocks."""
    path = tmp_path / "train.h5"
    with h5py.File(path, "w") as fh:
        fh["features"] = data["train"]
    rows = FileRows(path, "features", np.float32)
    train, labels = data["train"], data["labels"]
    magnitude = np.abs(train.astype(np.float64)).sum()
    expected_sums = dist.grouped_sums(train, labels, C)
    mask = np.arange(N_BANK) % 3 > 0
    expected_means = dist.class_means(train, labels, C, mask)
    fit = dist.maha_fit(train, labels, C)
    origin = np.linspace(-1, 1, D)
    expected_scatter = sub.scatter_about(train, origin)
    for source in (train, rows):
        with on(device, max_rows=97):
            sums = dist.grouped_sums(source, labels, C)
            means = dist.class_means(source, labels, C, mask)
            got = dist.maha_fit(source, labels, C)
            scatter = sub.scatter_about(source, origin)
        np.testing.assert_allclose(sums, expected_sums, rtol=0, atol=FLOAT64_RTOL * magnitude)
        np.testing.assert_array_equal(sums[:, -1], expected_sums[:, -1])  # the counts
        np.testing.assert_allclose(means, expected_means, rtol=0, atol=FLOAT64_RTOL * np.abs(train).max())
        np.testing.assert_allclose(got["means"], fit["means"], rtol=0, atol=FLOAT64_RTOL * np.abs(train).max())
        np.testing.assert_allclose(got["precision"], fit["precision"], rtol=0,
                                   atol=1e-7 * np.abs(fit["precision"]).max())  # pinv of covariances within 1e-9
        np.testing.assert_array_equal(scatter, scatter.T)
        np.testing.assert_allclose(scatter, expected_scatter, rtol=0, atol=1e-5 * np.diag(expected_scatter).max())
    centred = train.astype(np.float64) - fit["means"][labels]
    with on(device):
        covariance = torch_kernels.scatter(train, fit["means"], labels) / (N_BANK - 1)
    np.testing.assert_allclose(covariance, centred.T @ centred / (N_BANK - 1), rtol=0,
                               atol=FLOAT64_RTOL * np.abs(centred).max() ** 2 * N_BANK)


@pytest.mark.parametrize("device", DEVICES)
def test_maha_scores_on_the_device(data, device):
    fit = dist.maha_fit(data["train"], data["labels"], C)
    expected = dist.maha_score(data["queries"], fit["means"], fit["precision"])
    with on(device, max_rows=50):
        got = dist.maha_score(data["queries"], fit["means"], fit["precision"])
    h = data["queries"].astype(np.float64)
    terms = np.einsum("ij,jk,ik->i", h, fit["precision"], h) + np.max(
        np.einsum("cj,jk,ck->c", fit["means"], fit["precision"], fit["means"]))
    assert got.dtype == np.float64 and np.all(got <= 1e-9 * terms)
    assert np.all(np.abs(got - expected) <= FLOAT64_RTOL * terms)


def test_the_cpu_device_runs_the_numpy_kernels_untouched(data, monkeypatch):
    """None and "cpu" are the numpy kernels (the torch path is never entered); a torch device dispatches to it,
    and the numpy search is not run."""
    def refuse(*args, **kwargs):
        raise AssertionError("the torch path ran")

    state = knn.knn_fit(data["train"])
    expected = knn.knn_score(state, data["queries"], 5)
    for name in ("top_products", "grouped_sums", "scatter", "maha_scores"):
        monkeypatch.setattr(torch_kernels, name, refuse)
    for device in (None, "cpu"):
        with compute_device(device):
            assert torch_device() is None
            np.testing.assert_array_equal(knn.knn_score(state, data["queries"], 5), expected)
            dist.maha_fit(data["train"], data["labels"], C)
    monkeypatch.undo()
    monkeypatch.setattr(knn, "_largest", refuse)
    with compute_device(torch.device("cpu")):
        assert torch_device() == torch.device("cpu")
        knn.knn_score(state, data["queries"], 5)
    assert torch_device() is None


def test_torch_is_imported_only_for_a_torch_device():
    """The CSF modules import no torch; fitting and scoring under the CPU device, or a job whose rule requests
    no GPU, load none either."""
    code = ("import json, sys, numpy as np\n"
            "from csfbench.csf import registry, knn, distance_scores as d\n"
            "from csfbench.csf.device import compute_device, job_device\n"
            "x = np.random.default_rng(0).normal(size=(50, 8)).astype(np.float32)\n"
            "assert job_device('auto', 0) is None and job_device('cpu', 1) is None\n"
            "with compute_device(job_device('auto', 0)):\n"
            "    knn.knn_score(knn.knn_fit(x), x, 3); d.maha_fit(x, np.arange(50) % 2, 2)\n"
            "print(json.dumps('torch' in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) is False


def test_a_fitted_array_is_copied_to_the_device_once(data, monkeypatch):
    """The bank reaches the device once for many calls (a scoring job calls KNN once per row block), and its
    copy goes with the array or with the context."""
    copies = []
    real = dev.to_device
    monkeypatch.setattr(dev, "to_device", lambda array: copies.append(array.shape) or real(array))
    state = knn.knn_fit(data["train"])
    with compute_device(torch.device("cpu")):
        for rows in (slice(0, 50), slice(50, 120), slice(120, None)):
            knn.knn_score(state, data["queries"][rows], 4)
        assert copies == [state["bank"].shape]
        assert id(state["bank"]) in dev._RESIDENT
        del state
        assert not dev._RESIDENT  # the weak reference dropped the copy with the bank
        dev.resident(np.ones(3))
    assert not dev._RESIDENT


def test_the_device_context_restores_what_it_changed():
    torch.set_float32_matmul_precision("high")
    try:
        with compute_device(torch.device("cpu")):
            assert torch.get_float32_matmul_precision() == "highest"  # no TF32 products
            with compute_device(None):
                assert torch_device() is None
            assert torch_device() == torch.device("cpu")
        assert torch_device() is None and torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")


@pytest.mark.skipif(not NO_CUDA, reason="a CUDA device is visible")
def test_cuda_without_a_device():
    """``cuda`` where torch sees no CUDA device is an error naming the setting; ``auto`` falls back, logged."""
    with pytest.raises(RuntimeError, match="no CUDA device"):
        with compute_device("cuda"):
            pass
    with pytest.raises(RuntimeError, match="csf.device is 'cuda'"):
        job_device("cuda", 1)


def test_the_job_device_of_the_setting(monkeypatch, caplog):
    with pytest.raises(ValueError, match="csf.device"):
        job_device("gpu", 1)
    assert job_device("cpu", 1) is None and job_device("auto", 0) is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with caplog.at_level(logging.WARNING, logger="csfbench.csf.device"):
        assert job_device("auto", 1) is None
    assert "torch sees no CUDA device; the CPU kernels run" in caplog.text
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert job_device("auto", 1) == "cuda" and job_device("cuda", 0) == "cuda"


def test_the_setting_is_validated_and_reruns_no_fit(repo):
    """``csf.device``: auto by default, one of auto/cpu/cuda; it is not in a fit's settings, so changing it
    leaves every fit's param (and its fit file's ``csf_config``) as it was."""
    assert schema_default("csf/device") == "auto"
    config = load_config(repo / "config/config.yaml")
    assert config["csf"]["device"] == "auto"
    for value in ("cpu", "cuda"):
        changed = json.loads(json.dumps(config))
        changed["csf"]["device"] = value
        validate_config(changed)
        assert all(Grid(changed).csf_fit_config(group) == Grid(config).csf_fit_config(group)
                   for group in config["csf"]["groups"])
    assert "device" not in Grid(config).csf_fit_config("none")
    wrong = json.loads(json.dumps(config))
    wrong["csf"]["device"] = "gpu"
    with pytest.raises(ConfigError, match="device"):
        validate_config(wrong)


@pytest.mark.parametrize("device", DEVICES)
def test_a_fit_and_its_scores_on_the_device(device):
    """Every CSF of the unprojected group fitted and scored by the engine with the kernels on the device: the
    scores of the numpy kernels within the float32 products' rounding (1e-5 relative, as for other query
    blocks in test_blocked_fits), those of the second-moment CSFs (ViM, Residual, NeCo: float32 scatter on the
    host, float64 on the device) within 1e-5 of their largest score, as there."""
    splits, ctx = make_splits(passes=0)
    host_fit = fit_mode("none", splits["train"], splits["val"], ctx, FIXED_TUNING)
    want = score_blocks(splits["test"], host_fit, ctx)
    with on(device, max_rows=64):
        device_fit = fit_mode("none", splits["train"], splits["val"], ctx, FIXED_TUNING)
        got = score_blocks(splits["test"], device_fit, ctx)
    assert got.keys() == want.keys() and len(want) > 30
    for key in want:
        scatter = key[0].split("@")[0] in ("ViM", "Residual", "NeCo")
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5,
                                   atol=1e-5 * np.abs(want[key]).max() if scatter else 1e-6, err_msg=str(key))
