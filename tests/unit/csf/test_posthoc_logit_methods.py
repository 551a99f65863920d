"""MSP and EBO at T = 1, ODIN at ε = 0 (csfbench.csf.logit_methods) and ICONIC-444's GEN grid:
hand-computed values, orientation, and agreement with pytorch-ood 0.4.0's MaxSoftmax, EnergyBased and
ODIN (``eps=0``, through an identity "model" on the logits, so its input gradient step is a no-op)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from csfbench.csf import blocks
from csfbench.csf.logit_methods import GEN_GRID, ODIN_GRID, gen_grid, odin
from csfbench.csf.logit_scores import LOG_FLOOR_FLOAT32, _unshifted_log_sums, energy, max_softmax, msr, softmax

from tests.helpers.posthoc_data import FLOAT32_EXP, agree, gaussian_outputs, outlier, pytorch_ood, separation


@pytest.fixture(scope="module")
def data():
    return gaussian_outputs()


def test_odin_by_hand():
    z = [1.0, 2.0, 3.0]
    expected = math.exp(0.3) / sum(math.exp(v / 10) for v in z)
    assert odin(np.array([z]), 10.0)[0] == pytest.approx(expected, rel=FLOAT32_EXP)
    with pytest.raises(ValueError, match="temperature"):
        odin(np.array([z]), 0.0)


def test_msp_and_ebo_at_t1_by_hand():
    z = [1.0, 2.0, 3.0]
    total = sum(math.exp(v) for v in z)
    assert msr(softmax(np.array([z])))[0] == pytest.approx(math.exp(3.0) / total, rel=1e-14)
    assert max_softmax(np.array([z]))[0] == pytest.approx(math.exp(3.0) / total, rel=FLOAT32_EXP)
    assert energy(np.array([z]))[0] == pytest.approx(math.log(total), rel=FLOAT32_EXP)


def test_confident_rows_keep_their_resolution():
    """1 − MSP of a confident row (about 4 e^-gap here) lies far below float32's 6e-8, where a float32
    sum would round MSP to 1 for all but the first row: the float64 sums resolve it to float64's
    1e-16 near 1.  The energy's float32 sum (logit_scores._unshifted_log_sums) resolves its log-sum
    to a few 2^-24 of the sum, far finer than the float32 spacing of the maxima (2^-24·gap·2)."""
    gaps = np.array([10.0, 20.0, 30.0, 35.0])
    z = np.zeros((len(gaps), 5))
    z[:, 0] = gaps
    others = 4 * np.exp(-gaps)
    np.testing.assert_allclose(1.0 - max_softmax(z), others / (1 + others), rtol=FLOAT32_EXP, atol=2e-16)
    np.testing.assert_allclose(energy(z), gaps + np.log1p(others), rtol=0, atol=4 * 2.0**-24)
    assert np.all(np.diff(max_softmax(z)) > 0)


def test_energy_takes_the_shift_form_exactly_where_the_one_pass_sum_does_not_hold():
    """The one-pass log-sum keeps a row whose float32 sum of e^(z/T) is finite and >= 2^-60, within
    2^-24 (max|z/T| + C + 2); a row near float32's exponent limits, a tiny one, a NaN or an infinite
    logit take the shift form, and every row matches the float64 logsumexp (±inf where the largest
    logit is ±inf), without a warning."""
    rows = np.array([[1.0, 2.0, 3.0],         # kept
                     [88.5, 88.5, 0.0],       # each term finite, the sum overflows float32
                     [89.0, 0.0, 0.0],        # a term overflows
                     [-45.0, -46.0, -47.0],   # sum about 4e-20 < 2^-60
                     [-38.0, -90.0, -1e4],    # sum above 2^-60 with terms raised to the float32 floor: kept
                     [1.0, np.nan, 0.0],
                     [np.inf, 0.0, 1.0],
                     [-np.inf, -np.inf, -np.inf],
                     [-np.inf, 0.5, -2.0]])   # kept: e^-inf = 0
    kept = [True, False, False, False, True, False, False, False, True]
    for dtype in (np.float32, np.float64):
        out = np.full(len(rows), -1.0)
        given = rows.astype(dtype)
        done = _unshifted_log_sums(given, 1.0, out)
        np.testing.assert_array_equal(given, rows.astype(dtype))  # the caller's logits are not written
        assert done.tolist() == kept
        assert out[~done].tolist() == [-1.0] * (~done).sum()  # rows not kept are left alone
        # |z| capped at 90: kept rows have every z below 88.7, and terms raised to the floor add nothing visible
        bound = 2.0**-24 * (np.minimum(np.abs(rows[done]), 90).max(axis=1) + 3 + 2)
        assert np.all(np.abs(out[done] - logsumexp(rows[done], axis=1)) <= bound)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for temperature in (1.0, 0.5):
            expected = temperature * logsumexp(rows / temperature, axis=1)
            np.testing.assert_allclose(energy(rows, temperature), expected, rtol=FLOAT32_EXP)
    assert not _unshifted_log_sums(rows[:1], 1 / 30, out[:1])[0]  # z/T = 90 at T = 1/30: shift form


def test_energy_of_a_row_is_bit_for_bit_the_same_in_any_block_layout_or_thread_count(monkeypatch):
    """The one-pass sums (einsum) round a row the same way alone, in a block of any size, in a
    Fortran-ordered array and on several threads (a BLAS matrix-vector product does not: about half
    of these rows differ alone)."""
    z = np.random.default_rng(5).normal(0.0, 3.0, (300, 100)).astype(np.float32)
    z[::10, 0] = -100.0  # some blocks take the float32 floor
    whole = energy(z)
    np.testing.assert_array_equal(np.concatenate([energy(row[None]) for row in z]), whole)
    np.testing.assert_array_equal(np.concatenate([energy(z[i:i + 7]) for i in range(0, len(z), 7)]), whole)
    np.testing.assert_array_equal(energy(np.asfortranarray(z)), whole)
    monkeypatch.setattr(blocks, "thread_count", lambda: 3)
    monkeypatch.setattr(blocks, "MIN_THREAD_BLOCK_ROWS", 16)
    np.testing.assert_array_equal(energy(z), whole)


@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.3, 1000.0])
def test_max_softmax_and_energy_against_float64(data, temperature):
    """MSP = msr(softmax) and the energy = T·logsumexp(z/T) of float64 terms, within the float32
    terms' error, on float64 and float32 logits, also far from 0 (for float32 logits the error follows
    the shifted logits, not the logits); extra rows have terms under the float32 floor, or are beyond
    float32's range."""
    width = data["z_test"].shape[1]
    deep = [-900.0, -905.0, *[-1000.0] * (width - 2)]  # terms far under e^LOG_FLOOR_FLOAT32
    assert deep[0] - deep[-1] > -LOG_FLOOR_FLOAT32
    huge = [1e39, 1e39 - 1e24, *[0.0] * (width - 2)]  # beyond float32: the float64 route
    far = (data["z_test"] + 1e4).astype(np.float32).astype(np.float64)  # float64 logits are rounded to float32
    z = np.vstack([data["z_test"], far, deep, huge])
    for logits in (z[:-1].astype(np.float32), z):
        reference = msr(softmax(logits.astype(np.float64), temperature))
        np.testing.assert_allclose(max_softmax(logits, temperature), reference, rtol=FLOAT32_EXP)
        lse = temperature * logsumexp(logits.astype(np.float64) / temperature, axis=1)
        np.testing.assert_allclose(energy(logits, temperature), lse, rtol=FLOAT32_EXP)
    assert max_softmax(z[-1:], temperature) == msr(softmax(z[-1:], temperature))


@pytest.mark.parametrize("kernel", [max_softmax, energy])
def test_a_row_scores_the_same_whatever_its_neighbours(data, kernel):
    """A NaN row gives NaN, and it or a row beyond float32's range (scored in float64) leaves every
    other row's score bit for bit as it is alone (and so whatever the row blocks)."""
    z = data["z_test"][:6].astype(np.float32).astype(np.float64)
    alone = np.concatenate([kernel(row[None]) for row in z])
    mixed = z.copy()
    mixed[1, 2] = np.nan
    mixed[4] = [1e39, *[0.0] * (z.shape[1] - 1)]
    scores = kernel(mixed)
    assert np.isnan(scores).tolist() == [False, True, False, False, False, False]
    np.testing.assert_array_equal(scores[[0, 2, 3, 5]], alone[[0, 2, 3, 5]])
    assert scores[4] == kernel(mixed[4:5])[0]


def test_grids():
    assert ODIN_GRID == {"temperature": (1, 10, 100, 1000)}
    assert gen_grid(7) == {"gamma": (0.01, 0.1, 0.5, 1, 2, 5, 10), "m": (2, 4, 5)}
    assert gen_grid(1000) == GEN_GRID


def test_orientation(data):
    z = data["z_test"]
    for name, scores in {"MSP": max_softmax(z), "EBO": energy(z),
                         **{f"ODIN T={t}": odin(z, t) for t in ODIN_GRID["temperature"]}}.items():
        # on this fixture: EBO 1.0, MSP 0.86, ODIN 0.72-0.86 (falling with T); a flipped sign gives <= 0.28
        assert separation(scores) > 0.7, name


def test_agree_with_pytorch_ood(data):
    import torch

    ood = pytorch_ood()
    z = torch.tensor(data["z_test"])
    agree(max_softmax(data["z_test"]), outlier(ood.MaxSoftmax(None).predict_logits(z)), FLOAT32_EXP)
    agree(energy(data["z_test"]), outlier(ood.EnergyBased(None).predict_logits(z)), FLOAT32_EXP)
    for t in ODIN_GRID["temperature"]:
        theirs = outlier(ood.ODIN(torch.nn.Identity(), eps=0.0, temperature=t).predict(z))
        agree(odin(data["z_test"], t), theirs, FLOAT32_EXP)
