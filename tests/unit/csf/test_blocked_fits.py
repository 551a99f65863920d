"""Fits and scores in row blocks (issue 52): training rows read from their file block by block give the fit of
the rows held in memory, for every CSF family whose fit reads training rows.

Tolerances: the same block bounds, from the file or from memory, give the same arithmetic (relative 1e-12);
other block bounds (7 rows, which divides none of the row counts, against one block) change the float64 sums'
order only (relative 1e-10), except the second moments of ViM, Residual and NeCo, whose per-block products are
float32 by design (:func:`csfbench.csf.subspace_scores.scatter_about`): their scores agree to 1e-5 of the
largest score.
Scoring in row blocks changes the query blocks of the float32 score products only (1e-5 relative).
"""
from __future__ import annotations

import dataclasses
import tracemalloc

import h5py
import numpy as np
import pytest

from csfbench.csf import class_templates as templates
from csfbench.csf import distance_scores as dist
from csfbench.csf import feature_shaping as shaping
from csfbench.csf import subspace_scores as sub
from csfbench.csf.blocks import block_budget, column_mean, take_rows
from csfbench.csf.engine import fit_mode, score_blocks, score_mode
from csfbench.csf.inputs import FileRows
from csfbench.csf.knn import knn_fit, knn_score
from csfbench.csf.nnguide import nnguide_bank
from csfbench.csf.openmax import openmax_fit
from csfbench.csf.pnml import pnml_fit

from tests.helpers.csf_synthetic import FIXED_TUNING, make_splits

N, D, C = 203, 12, 5
#: block rows that divide none of the row counts of the fixtures (203, 800)
BLOCK = 7
WHOLE = 10**6


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Training rows (N×D float32 ReLU features, C classes, float64 logits of a
    nearest-class-mean head, so that most rows are classified correctly) in memory and in an HDF5 file
    (features float32 and float16, logits float64)."""
    rng = np.random.default_rng(3)
    labels = np.arange(N) % C
    # class centres and most of the spread in the first D/2 dimensions, so that the principal subspace of ViM,
    # Residual (D_p = D/2) and NeCo (D/2 components) is well determined by the data
    centres = np.c_[rng.normal(size=(C, D // 2)) * 2.0 + 3.0, np.zeros((C, D - D // 2))]
    scales = np.r_[np.linspace(1.0, 0.6, D // 2), np.full(D - D // 2, 0.05)]
    features = np.maximum(centres[labels] + rng.normal(size=(N, D)) * scales, 0.0).astype(np.float32)
    weight = np.stack([features[labels == c].mean(0) for c in range(C)]).astype(np.float64)
    bias = -0.5 * np.sum(weight**2, axis=1)
    logits = features.astype(np.float64) @ weight.T + bias
    path = tmp_path_factory.mktemp("rows") / "train.h5"
    with h5py.File(path, "w") as fh:
        fh["features"] = features
        fh["features16"] = features.astype(np.float16)
        fh["logits"] = logits
    return {"features": features, "logits": logits, "labels": labels, "weight": weight, "bias": bias,
            "rows": FileRows(path, "features", np.float32), "rows16": FileRows(path, "features16", np.float32),
            "logit_rows": FileRows(path, "logits", np.float64)}


def _fits(h, z, y, d):
    """{family: its fitted arrays} for features ``h`` and logits ``z`` (arrays or row sources)."""
    correct = np.argmax(d["logits"], axis=1) == y
    return {
        "class means": {"means": dist.class_means(h, y, C)},
        "class means, masked": {"means": dist.class_means(h, y, C, correct)},
        "Maha": dist.maha_fit(h, y, C),
        "RMDS": templates.rmds_fit(h, y, C),
        "SHE": templates.she_fit(h, z, y),
        "KLM": templates.klm_fit(z),
        "OpenMax": openmax_fit(z, y, tail_size=10),
        # the projector P^+ = L Lᵀ (its factor L is unique up to the signs of its columns)
        "pNML": {"plus": (lambda f: f["plus_factor"] @ f["plus_factor"].T)(pnml_fit(h))},
        "KNN": knn_fit(h),
        "NNGuide": {"bank": nnguide_bank(h, z, y, C, 0.5)},
        "ReAct": shaping.react_fit(h, 90),
        "DICE": shaping.dice_fit(h, d["weight"], 70),
        "fDBD": {"mean": column_mean(h)},
    }


def _subspace_scores(h, z, d):
    """ViM, Residual and NeCo scores of the in-memory training rows with states fitted on ``h``, ``z``."""
    vim = sub.vim_fit(h, z, d["weight"], d["bias"], sub.principal_dim(D))
    neco = sub.neco_fit(h, D // 2)
    return {"ViM": sub.vim_score(d["features"], d["logits"], vim["origin"], vim["basis"], vim["alpha"]),
            "Residual": sub.residual_score(d["features"], vim["origin"], vim["basis"]),
            "NeCo": sub.neco_score(d["features"], d["logits"], neco["mean"], neco["components"], True)}


def _assert_states_equal(got: dict, want: dict, rtol: float) -> None:
    assert got.keys() == want.keys()
    for family in want:
        for key in want[family]:
            scale = float(np.max(np.abs(want[family][key]), initial=0.0))
            np.testing.assert_allclose(got[family][key], want[family][key], rtol=rtol, atol=rtol * scale,
                                       err_msg=f"{family} {key}")


def test_file_rows_read_slices_and_refuse_whole_reads(data):
    rows = data["rows"]
    assert rows.shape == (N, D) and len(rows) == N and rows.ndim == 2
    np.testing.assert_array_equal(rows[5:17], data["features"][5:17])
    np.testing.assert_array_equal(rows[200:500], data["features"][200:])
    assert data["rows16"].storage_dtype == np.float16 and data["rows16"][:3].dtype == np.float32
    narrow = FileRows(rows.path, "logits", np.float64, 3)
    np.testing.assert_array_equal(narrow[:10], data["logits"][:10, :3])
    with pytest.raises(TypeError, match="row blocks"):
        np.asarray(rows)
    with pytest.raises(TypeError, match="slices of step 1"):
        rows[np.arange(3)]


def test_take_rows_of_a_file_is_fancy_indexing(data):
    index = np.array([150, 3, 3, 202, 0, 77, 150])
    with block_budget(max_rows=BLOCK):
        np.testing.assert_array_equal(take_rows(data["rows"], index), data["features"][index])
    with pytest.raises(IndexError):
        take_rows(data["rows"], np.array([N]))


def test_fits_from_file_blocks_are_the_fits_of_the_rows_in_memory(data):
    """The same 7-row blocks, from the file or from memory: the same arithmetic."""
    with block_budget(max_rows=BLOCK):
        from_file = _fits(data["rows"], data["logit_rows"], data["labels"], data)
        in_memory = _fits(data["features"], data["logits"], data["labels"], data)
        subspace_file = _subspace_scores(data["rows"], data["logit_rows"], data)
        subspace_memory = _subspace_scores(data["features"], data["logits"], data)
    _assert_states_equal(from_file, in_memory, rtol=1e-12)
    for name in subspace_memory:
        np.testing.assert_allclose(subspace_file[name], subspace_memory[name], rtol=1e-12, err_msg=name)


def test_block_bounds_change_the_summation_order_only(data):
    """7-row blocks against one block of all rows."""
    with block_budget(max_rows=BLOCK):
        blocked = _fits(data["rows"], data["logit_rows"], data["labels"], data)
        subspace_blocked = _subspace_scores(data["rows"], data["logit_rows"], data)
    with block_budget(max_rows=WHOLE):
        whole = _fits(data["features"], data["logits"], data["labels"], data)
        subspace_whole = _subspace_scores(data["features"], data["logits"], data)
    _assert_states_equal(blocked, whole, rtol=1e-10)
    for name in subspace_whole:
        scale = float(np.max(np.abs(subspace_whole[name])))
        np.testing.assert_allclose(subspace_blocked[name], subspace_whole[name], rtol=1e-5, atol=1e-5 * scale,
                                   err_msg=name)


def test_knn_bank_of_float16_features_is_held_in_float16(data):
    """The bank of float16-stored features is float16 (half the bytes) and scores within its rounding of the float32
    bank of the same values: unit rows rounded to float16 (2^-11 relative per entry) change a squared distance
    ‖q‖² − 2(q·b − ‖b‖²/2) by a few 2^-11 at most."""
    with block_budget(max_rows=BLOCK):
        bank16 = knn_fit(data["rows16"])
    bank32 = knn_fit(data["features"].astype(np.float16).astype(np.float32))
    assert bank16["bank"].dtype == np.float16 and bank32["bank"].dtype == np.float32
    queries = data["features"][:50]
    np.testing.assert_allclose(knn_score(bank16, queries, 5) ** 2, knn_score(bank32, queries, 5) ** 2,
                               atol=4 * 2.0**-11)


def test_class_means_of_file_rows_hold_one_block_not_the_rows(tmp_path):
    """Memory: the fit of class means and the Maha covariance from 40,000 × 32 float32 rows (5 MB) in blocks of 500
    rows allocates far less than the rows (tracemalloc sees numpy's and h5py's buffers)."""
    rng = np.random.default_rng(0)
    n, dim = 40_000, 32
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as fh:
        fh["features"] = rng.normal(size=(n, dim)).astype(np.float32)
    rows, labels = FileRows(path, "features", np.float32), np.arange(n) % 10
    with block_budget(max_rows=500):
        tracemalloc.start()
        try:
            dist.maha_fit(rows, labels, 10)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    # labels' own int64 copies (N × 8 B each) are the only N-sized arrays
    assert peak < 4 * n * 8 + 2 * 500 * dim * 8 * 4 + 4 * dim * dim * 8, peak
    assert peak < n * dim * 4


def test_engine_fit_from_file_rows_gives_the_scores_of_the_split_in_memory(tmp_path):
    """Every CSF of the unprojected group: fitted on a training split whose features and logits are read from a
    file in 7-row blocks, and on the same split in memory with the same blocks, the test scores are the same;
    scoring in blocks (:func:`score_blocks`) gives :func:`score_mode` of the whole split."""
    splits, ctx = make_splits(passes=0)
    train = splits["train"]
    path = tmp_path / "train.h5"
    with h5py.File(path, "w") as fh:
        fh["features"], fh["logits"] = train.features, train.logits
    lazy = dataclasses.replace(train, features=FileRows(path, "features", train.features.dtype),
                               logits=FileRows(path, "logits", np.float64),
                               logits_full=FileRows(path, "logits", np.float64))
    with block_budget(max_rows=BLOCK):
        from_file = fit_mode("none", lazy, splits["val"], ctx, FIXED_TUNING)
        in_memory = fit_mode("none", train, splits["val"], ctx, FIXED_TUNING)
        blocked = score_blocks(splits["test"], from_file, ctx)
    with block_budget(max_rows=WHOLE):
        want = score_mode(splits["test"], in_memory, ctx)
        got = score_mode(splits["test"], from_file, ctx)
    assert not [key for key, item in from_file.csfs.items() if item.undefined]
    assert got.keys() == want.keys() == blocked.keys() and len(want) > 30
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-12, err_msg=str(key))
        # the float32 products of KNN, NNGuide, pNML, ViM and the shaped heads round differently for other query
        # block shapes (2^-24 per product)
        np.testing.assert_allclose(blocked[key], want[key], rtol=1e-5, atol=1e-6, err_msg=str(key))


def test_a_state_fitted_once_is_held_and_stored_once(tmp_path):
    """ViM and Residual fit the same subspace: one state object in the fit, one dataset in fit.h5 (a hard link),
    one array when read back; the scores are those of separate fits."""
    from csfbench.csf.store import read_fit, write_fit

    splits, ctx = make_splits(passes=0)
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, FIXED_TUNING)
    vim, residual = fitted.csfs[("ViM", "none")], fitted.csfs[("Residual", "none")]
    assert vim.state is residual.state
    path = tmp_path / "fit.h5"
    write_fit(path, {"det": fitted}, (ctx.weight, ctx.bias), {"model": "m"})
    with h5py.File(path, "r") as fh:
        assert fh["det/csf/ViM/none/basis"].id == fh["det/csf/Residual/none/basis"].id
    modes, _, _ = read_fit(path)
    back = modes["det"].csfs
    assert back[("ViM", "none")].state["basis"] is back[("Residual", "none")].state["basis"]
    np.testing.assert_array_equal(back[("ViM", "none")].state["basis"], vim.state["basis"])
    separate = sub.vim_fit(splits["train"].features, splits["train"].logits, ctx.weight, ctx.bias,
                           sub.principal_dim(ctx.weight.shape[1]))
    np.testing.assert_array_equal(separate["basis"], vim.state["basis"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_order_statistic_of_blocks_is_the_partition(dtype):
    """The radix selection over blocks (ReAct's percentile when the sample's bracket misses, e.g. at ties) gives the
    order statistics of all entries: negative values, zeros (-0.0 and 0.0) and ties included."""
    rng = np.random.default_rng(5)
    x = np.maximum(rng.normal(size=(301, 13)), 0.0).astype(dtype)
    x[:, :6] = 0.0
    x[3, 3], x[4, 4], x[5, 5] = -2.5, -0.0, -1e-30
    flat = np.sort(x.ravel())

    def blocks():
        return (x[i:i + BLOCK].ravel() for i in range(0, len(x), BLOCK))

    for rank in (0, 1, 2, 3, 1500, 2000, 2500, x.size - 1):
        assert shaping._order_statistic(blocks, rank) == flat[rank], rank
    with block_budget(max_rows=BLOCK):
        for percentile in (10, 46.2, 50, 90, 100):
            assert shaping.percentile_of_all(x, percentile) == np.percentile(x, percentile), percentile
