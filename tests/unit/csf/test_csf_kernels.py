"""CSF kernels of Claros-Olivares & Brockmeier, *A Systematic Analysis of Out-of-Distribution Detection
Under Representation and Training Paradigm Shifts* (preprint; no year or arXiv id in its text), App. A.3:
hand-computed values, GradNorm = autograd, orientation (every CSF is a confidence: higher = more
in-distribution, so OOD scores lower on average).

Expected values come either from literal numbers worked out by hand (in the comments) or from
plain-Python reference loops written directly from the published formulas (App. A.3 and each
method's original paper), never from the vectorised kernels under test.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from csfbench.csf import blocks, logit_scores, pnml
from csfbench.csf.distance_scores import class_means, maha_fit, maha_score, max_cosine
from csfbench.csf.fdbd import fdbd
from csfbench.csf.gradnorm import gradnorm
from csfbench.csf.logit_scores import (EPS, energy, ge, gen, max_softmax, mls, msr, mutual_information, pce, pe,
                                       ren, row_max, softmax)
from csfbench.csf.nnguide import nnguide_bank, nnguide_score
from csfbench.csf.pnml import pnml_fit, pnml_score
from csfbench.csf.subspace_scores import vim_fit, vim_score

P3 = np.array([[0.5, 0.3, 0.2]])


def _random_probs(seed: int, n: int = 7, c: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return logit_scores.softmax(rng.normal(scale=2.0, size=(n, c)))


# ---------------------------------------------------------------------------------------------
# plain-Python references (one sample = one list)
# ---------------------------------------------------------------------------------------------

def _ref_softmax(z: list[float], t: float) -> list[float]:
    m = max(z)
    e = [math.exp((v - m) / t) for v in z]
    return [v / sum(e) for v in e]


def _ref_top(p: list[float], m: int) -> list[float]:
    return sorted(p, reverse=True)[:m]


def _ref_gen(p, m, gamma):
    return -sum((v * (1 - v)) ** gamma for v in _ref_top(p, m))


def _ref_ren(p, m, gamma):
    norm = sum(v**gamma for v in _ref_top(p, m)) ** (1 / gamma)
    return -gamma / (1 - gamma) * math.log(norm + EPS)


def _ref_neg_entropy(p):
    return sum(v * math.log(v + EPS) for v in p)


def _per_row(fn, probs, *args):
    return np.array([fn(list(row), *args) for row in probs])


# ---------------------------------------------------------------------------------------------
# logit / probability scores
# ---------------------------------------------------------------------------------------------

def test_softmax_matches_reference_and_is_stable():
    z = np.array([[1.0, 2.0, -0.5], [0.0, 0.0, 0.0]])
    assert np.allclose(softmax(z, 1.7), [_ref_softmax(list(r), 1.7) for r in z], rtol=1e-13)
    big = softmax(np.array([[1000.0, 1000.0, 0.0]], dtype=np.float32))
    assert big.dtype == np.float64
    assert np.allclose(big, [[0.5, 0.5, 0.0]])


def test_rows_far_apart_keep_full_precision():
    # every row is shifted by its own largest z/T: a row 3000/T below another neither underflows to 0/0
    # nor loses precision
    z = np.array([[1.0, 2.0, -0.5], [-3000.0, -2999.0, -3001.5], [2000.0, 0.0, 1999.0]])
    for t in (1.0, 0.5):
        expected = np.array([_ref_softmax(list(r - r.max()), t) for r in z])
        assert np.allclose(softmax(z, t), expected, rtol=1e-13, atol=0)
        log_sums = [t * math.log(sum(math.exp((v - r.max()) / t) for v in r)) for r in z]
        # above the row's maximum; the energy's exponentials are float32 (logit_scores.energy)
        assert np.allclose(energy(z, t) - z.max(axis=1), log_sums, rtol=1e-6, atol=0)


def test_simple_scores_by_hand():
    # p = (0.5, 0.3, 0.2)
    assert msr(P3) == pytest.approx([0.5])
    assert ge(P3) == pytest.approx([-(1 * 0.5 + 2 * 0.3 + 3 * 0.2)])  # -1.7
    assert pce(P3) == pytest.approx([math.log(0.25 + 0.09 + 0.04 + EPS)])
    assert pe(P3) == pytest.approx([0.5 * math.log(0.5) + 0.3 * math.log(0.3) + 0.2 * math.log(0.2)])
    # GEN, M = 2, gamma = 0.5: -(sqrt(0.5*0.5) + sqrt(0.3*0.7)) = -(0.5 + 0.458258)
    assert gen(P3, 2, 0.5) == pytest.approx([-0.958257569], abs=1e-9)
    # REN, M = 3, gamma = 0.5: -(0.5/0.5) log((sum sqrt p)^2) = -2 log(0.707107 + 0.547723 + 0.447214)
    assert ren(P3, 3, 0.5) == pytest.approx([-2 * math.log(1.702043)], abs=1e-6)


def test_mls_and_energy_by_hand():
    z = np.array([[2.0, 0.0, -1.0]])
    assert mls(z, 2.0) == pytest.approx([1.0])
    assert energy(z) == pytest.approx([math.log(math.e**2 + 1 + math.e**-1)])
    assert energy(z, 2.0) == pytest.approx([2 * math.log(math.e + 1 + math.e**-0.5)])
    assert energy(np.array([[1000.0, 1000.0]]))[0] == pytest.approx(1000 + math.log(2))


def test_row_max_matches_a_python_loop_on_every_layout():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(7, 5))
    z[2, 3] = np.nan
    z[4] = -np.inf
    for x in (z, z.astype(np.float32), z[:, ::2], z.T, z[:, :1], z[:0]):
        got = row_max(x)
        assert got.dtype == np.float64 and got.shape == (len(x),)
        expected = [np.nan if np.isnan(row).any() else max(row) for row in x.tolist()]
        np.testing.assert_array_equal(got, expected)
    assert mls(z[:, ::2], 2.0)[0] == max(z[0, ::2]) / 2.0
    with pytest.raises(ValueError, match="C >= 1"):
        row_max(np.zeros((3, 0)))
    with pytest.raises(ValueError, match="N×C"):
        row_max(np.zeros(3))
    for kernel in (softmax, max_softmax, energy, pe):
        with pytest.raises(ValueError, match="C >= 1"):
            kernel(np.zeros((3, 0)))


@pytest.mark.parametrize("seed", [0, 1])
def test_probability_scores_match_loops(seed):
    probs = _random_probs(seed)
    c = probs.shape[1]
    assert np.allclose(msr(probs), [max(r) for r in probs])
    assert np.allclose(pe(probs), _per_row(_ref_neg_entropy, probs))
    assert np.allclose(ge(probs), [-sum(k * v for k, v in enumerate(_ref_top(list(r), c), 1)) for r in probs])
    assert np.allclose(pce(probs), [math.log(sum(v * v for v in r) + EPS) for r in probs])
    for m in (1, 3, c):
        for gamma in (0.1, 0.5, 0.9):
            assert np.allclose(gen(probs, m, gamma), _per_row(_ref_gen, probs, m, gamma), rtol=1e-12)
            assert np.allclose(ren(probs, m, gamma), _per_row(_ref_ren, probs, m, gamma), rtol=1e-12)


def test_gen_ren_extreme_m_and_ties():
    p = np.array([[0.4, 0.4, 0.2]])
    # m = 1 takes one of the tied maxima
    assert gen(p, 1, 0.5) == pytest.approx([-math.sqrt(0.4 * 0.6)])
    assert ren(p, 1, 0.5) == pytest.approx([-math.log(0.4 + EPS)])  # ||(p1)||_g = p1
    # m = C is the untruncated sum
    assert gen(p, 3, 0.5) == pytest.approx([-(2 * math.sqrt(0.24) + math.sqrt(0.16))])
    assert ren(p, 3, 0.5) == pytest.approx([-2 * math.log(2 * math.sqrt(0.4) + math.sqrt(0.2))])
    for bad in (0, 4):
        with pytest.raises(ValueError, match="M must be"):
            gen(p, bad, 0.5)
        with pytest.raises(ValueError, match="M must be"):
            ren(p, bad, 0.5)
    with pytest.raises(ValueError, match="gamma"):
        ren(p, 3, 1.0)


def test_ren_small_gamma_does_not_overflow():
    # gamma -> 0: Rényi entropy -> log(support size) = log M; the norm itself overflows float64
    probs = _random_probs(3)
    assert np.allclose(ren(probs, 4, 1e-6), -math.log(4), atol=1e-4)


def test_mutual_information_by_hand_and_loop():
    # passes (1, 0) and (0, 1): H(mean) = log 2, mean H = 0; identical passes: MI = 0
    passes = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.3, 0.7], [0.3, 0.7]]])
    assert mutual_information(passes) == pytest.approx([-math.log(2), 0.0], abs=1e-12)
    rng = np.random.default_rng(4)
    passes = np.stack([_random_probs(s, n=6, c=4) for s in rng.integers(0, 1000, size=5)], axis=1)
    expected = []
    for sample in passes:
        mean = [sum(col) / len(sample) for col in zip(*sample)]
        mi = -_ref_neg_entropy(mean) + sum(_ref_neg_entropy(list(p)) for p in sample) / len(sample)
        expected.append(-mi)
    assert np.allclose(mutual_information(passes.astype(np.float32)), expected, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# GradNorm
# ---------------------------------------------------------------------------------------------

def test_gradnorm_by_hand():
    # h = (1, -2), C = 2, T = 2, p = (0.75, 0.25): (1/2) * 3 * (|1.5 - 1| + |0.5 - 1|) = 1.5
    assert gradnorm(np.array([[1.0, -2.0]]), np.array([[0.75, 0.25]]), 2.0) == pytest.approx([1.5])


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_gradnorm_equals_autograd(temperature):
    rng = np.random.default_rng(5)
    n, d, c = 6, 8, 4
    h = rng.normal(size=(n, d))
    w0, b = rng.normal(size=(c, d)), rng.normal(size=c)
    expected = []
    for i in range(n):
        w = torch.tensor(w0, requires_grad=True)
        z = w @ torch.tensor(h[i]) + torch.tensor(b)
        loss = -torch.log_softmax(z / temperature, dim=0).sum()
        (grad,) = torch.autograd.grad(loss, w)
        expected.append(grad.abs().sum().item())
    probs = softmax(h @ w0.T + b, temperature)
    assert np.allclose(gradnorm(h, probs, temperature), expected, rtol=1e-6, atol=0)


# ---------------------------------------------------------------------------------------------
# class means, Mahalanobis, cosine
# ---------------------------------------------------------------------------------------------

def test_class_means_mask_fallback_and_errors():
    h = np.array([[0.0, 0.0], [2.0, 2.0], [10.0, 10.0]])
    y = np.array([0, 0, 1])
    assert np.array_equal(class_means(h, y, 2), [[1, 1], [10, 10]])
    # class 0 restricted to its masked sample, class 1 has none masked -> all its samples
    assert np.array_equal(class_means(h, y, 2, mask=np.array([False, True, False])), [[2, 2], [10, 10]])
    with pytest.raises(ValueError, match=r"class 2 has no sample: cannot compute its mean \(C = 3 classes; "
                                         r"no sample of 1 of them: 2\)"):
        class_means(h, y, 3)
    with pytest.raises(ValueError, match=r"class 1 has no sample: .* \(C = 14 classes; no sample of 12 of them: "
                                         r"1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …\)"):
        class_means(np.zeros((2, 2)), np.array([0, 13]), 14)
    with pytest.raises(ValueError, match="labels must lie in"):
        class_means(h, np.array([0, 0, 2]), 2)


def test_maha_by_hand_1d():
    # class 0: {0, 2}, class 1: {10, 14}; mu = (1, 12); scatter = 1+1+4+4 = 10; N-1 = 3; P = 0.3
    h = np.array([[0.0], [2.0], [10.0], [14.0]])
    fit = maha_fit(h, np.array([0, 0, 1, 1]), 2)
    assert np.allclose(fit["means"], [[1.0], [12.0]])
    assert np.allclose(fit["precision"], [[0.3]])
    # h = 3: d0 = 2^2 * 0.3 = 1.2, d1 = 9^2 * 0.3 = 24.3 -> -1.2 ; h = 12 -> 0
    assert np.allclose(maha_score(np.array([[3.0], [12.0]]), **fit), [-1.2, 0.0])
    with pytest.raises(ValueError, match="Maha needs at least 2 training samples for a covariance, got 1"):
        maha_fit(h[:1], np.array([0]), 1)


def test_maha_matches_loops():
    rng = np.random.default_rng(6)
    n, d, c = 40, 3, 3
    h, y = rng.normal(size=(n, d)), np.arange(n) % c
    fit = maha_fit(h, y, c)
    mu = [[sum(h[i][j] for i in range(n) if y[i] == k) / sum(y == k) for j in range(d)] for k in range(c)]
    sigma = np.zeros((d, d))
    for i in range(n):
        diff = h[i] - np.array(mu[y[i]])
        sigma += np.outer(diff, diff) / (n - 1)
    prec = np.linalg.inv(sigma)  # full rank here, so pinv = inv
    test = rng.normal(size=(5, d))
    expected = [max(-float((x - np.array(m)) @ prec @ (x - np.array(m))) for m in mu) for x in test]
    assert np.allclose(fit["means"], mu)
    assert np.allclose(maha_score(test, **fit), expected, rtol=1e-10)


def test_maha_singular_covariance_uses_pinv():
    rng = np.random.default_rng(7)
    h2 = rng.normal(size=(30, 2))
    y = np.arange(30) % 2
    h3 = np.hstack([h2, np.zeros((30, 1))])  # third coordinate constant: Σ is singular
    fit3, fit2 = maha_fit(h3, y, 2), maha_fit(h2, y, 2)
    assert np.all(np.isfinite(fit3["precision"]))
    assert np.allclose(fit3["precision"][:2, :2], fit2["precision"])
    test2 = rng.normal(size=(4, 2))
    shifted = np.hstack([test2, np.full((4, 1), 5.0)])  # moves along the null direction only
    assert np.allclose(maha_score(shifted, **fit3), maha_score(test2, **fit2))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_maha_non_finite_precision_becomes_zero():
    y = np.arange(20) % 2
    h = np.random.default_rng(8).normal(size=(20, 2))
    tiny = maha_fit(h * 1e-155, y, 2)  # Σ ~ 1e-310: its pseudo-inverse overflows
    assert np.array_equal(tiny["precision"], np.zeros((2, 2)))
    h[0, 0] = np.inf
    assert np.array_equal(maha_fit(h, y, 2)["precision"], np.zeros((2, 2)))


def test_max_cosine_by_hand():
    directions = np.array([[1.0, 0.0], [0.0, 2.0]])
    h = np.array([[1.0, 1.0], [-1.0, 0.0], [3.0, 0.0], [0.0, 0.0]])
    # (1,1): 1/sqrt 2 ; (-1,0): max(-1, 0) ; (3,0): 1 ; zero feature: 0
    assert np.allclose(max_cosine(h, directions), [1 / math.sqrt(2), 0.0, 1.0, 0.0])


# ---------------------------------------------------------------------------------------------
# fDBD
# ---------------------------------------------------------------------------------------------

def test_fdbd_by_hand():
    # W rows (1,0), (0,1), (-1,0); h = (2,1), mu = 0: z = (2, 1, -2), ŷ = 0
    # c=1: |2-1| / ||(1,-1)|| = 1/sqrt2 ; c=2: |2+2| / ||(2,0)|| = 2 ; mean / ||h|| = (0.70711+2)/2/sqrt5
    w = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    h = np.array([[2.0, 1.0]])
    expected = (1 / math.sqrt(2) + 2) / 2 / math.sqrt(5)
    assert fdbd(h, h @ w.T, w, np.zeros(2)) == pytest.approx([expected])
    # the logits argument is used as given (authors' quirk): other logits, other score
    assert fdbd(h, np.array([[3.0, 1.0, -2.0]]), w, np.zeros(2)) == pytest.approx(
        [(2 / math.sqrt(2) + 5 / 2) / 2 / math.sqrt(5)])


def test_fdbd_matches_loop():
    rng = np.random.default_rng(9)
    n, d, c = 8, 5, 4
    h, w, b, mu = rng.normal(size=(n, d)), rng.normal(size=(c, d)), rng.normal(size=c), rng.normal(size=d)
    z = h @ w.T + b
    expected = []
    for i in range(n):
        top = max(range(c), key=lambda k: z[i][k])
        total = sum(abs(z[i][top] - z[i][k]) / math.dist(w[top], w[k]) for k in range(c) if k != top)
        expected.append(total / (c - 1) / math.dist(h[i], mu))
    assert np.allclose(fdbd(h.astype(np.float32), z, w, mu), expected, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# NNGuide
# ---------------------------------------------------------------------------------------------

def _nnguide_data(seed: int = 10, n: int = 12, d: int = 3, c: int = 3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, c)), np.arange(n) % c


def test_nnguide_bank_draws_like_the_authors():
    h, z, y = _nnguide_data()
    bank = nnguide_bank(h, z, y, 3, alpha=0.5)  # n_c = floor(12/3 * 0.5) = 2
    state = np.random.get_state()
    try:  # the authors' global-seed form of the same draw
        np.random.seed(12345)
        index = [i for k in range(3) for i in np.random.choice(np.flatnonzero(y == k), 2, replace=False)]
    finally:
        np.random.set_state(state)
    expected = [h[i] / math.hypot(*h[i]) * math.log(sum(math.exp(v) for v in z[i])) for i in index]
    assert bank.shape == (6, 3) and bank.dtype == np.float32
    assert np.allclose(bank, expected)
    assert np.array_equal(bank, nnguide_bank(h, z, y, 3, alpha=0.5))  # deterministic
    assert not np.array_equal(bank, nnguide_bank(h, z, y, 3, alpha=0.5, seed=1))


def test_nnguide_bank_caps_at_class_size_and_rejects_empty_bank():
    h, z, _ = _nnguide_data()
    y = np.array([0] * 6 + [1] * 5 + [2])  # n_c = floor(12/3 * 0.75) = 3; class 2 has 1 sample
    assert len(nnguide_bank(h, z, y, 3, alpha=0.75)) == 3 + 3 + 1
    with pytest.raises(ValueError, match="= 0"):
        nnguide_bank(h, z, y, 3, alpha=0.2)


def test_nnguide_score_by_hand_and_k_cap():
    bank = np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0]])
    h, z = np.array([[5.0, 0.0]]), np.array([[0.0, 0.0]])
    # similarities of (1, 0) with the bank: (2, 0, 1); LSE(0, 0) = log 2
    assert nnguide_score(h, z, bank, 2) == pytest.approx([1.5 * math.log(2)])
    assert nnguide_score(h, z, bank, 10) == pytest.approx([1.0 * math.log(2)])  # k capped at 3
    with pytest.raises(ValueError, match="k must be"):
        nnguide_score(h, z, bank, 0)


# ---------------------------------------------------------------------------------------------
# pNML
# ---------------------------------------------------------------------------------------------

def _projectors(fit):
    """``(P_plus, P_perp)`` from the fitted factors: ``L Lᵀ`` and ``M Mᵀ``."""
    return fit["plus_factor"] @ fit["plus_factor"].T, fit["perp_factor"] @ fit["perp_factor"].T


def _ref_pnml(h, w, b, fit):
    """pNML score of one sample (Bibas et al., 2021, as in their pNML-OOD code; Claros-Olivares &
    Brockmeier, App. A.3.8), written out: softmax of the normalised feature, x̃ᵀg by the max rule, genie
    probabilities, regret / log C, negated."""
    p_plus, p_perp = _projectors(fit)
    norm = math.hypot(*h)
    x = np.array([1.0] + [v / norm for v in h])
    q = _ref_softmax([sum(w[k][j] * x[j + 1] for j in range(len(h))) + b[k] for k in range(len(b))], 1.0)
    par, perp = float(x @ p_plus @ x), float(x @ p_perp @ x)
    xg = max(perp, par / (1 + par))
    genie = [v / (v + (1 - v) * v**xg) for v in q]
    return -math.log(sum(genie)) / math.log(len(b))


def test_pnml_projectors_by_hand():
    # training h = (1,0), (0,1): x̃ = (1,1,0), (1,0,1); P has null vector v = (1,-1,-1)/sqrt3
    train = np.array([[1.0, 0.0], [0.0, 1.0]])
    fit = pnml_fit(train)
    assert fit["plus_factor"].shape == (3, 2) and fit["perp_factor"].shape == (3, 1)  # rank 2 of 3
    for factor in fit.values():  # lower-trapezoidal
        assert np.array_equal(factor, np.tril(factor))
    p_plus, p_perp = _projectors(fit)
    v = np.array([1.0, -1.0, -1.0]) / math.sqrt(3)
    assert np.allclose(p_perp, np.outer(v, v), atol=1e-12)
    # P^+ = X^T G^-2 X with X = rows x̃_i, G = X X^T = [[2,1],[1,2]], G^-2 = [[5,-4],[-4,5]]/9
    x = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    assert np.allclose(p_plus, x.T @ np.array([[5.0, -4.0], [-4.0, 5.0]]) @ x / 9, atol=1e-12)


def test_pnml_score_both_branches_of_the_max_rule():
    fit = pnml_fit(np.array([[1.0, 0.0], [0.0, 1.0]]))
    w, b = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([0.1, 0.0, -0.1])
    # (1,1) lies in the span: x̃^T g = a/(1+a) = 0.393 > perp 0.057
    # (-1,-1) does not: perp = (1+sqrt2)^2/3 = 1.943 > a/(1+a) = 0.019
    h = np.array([[1.0, 1.0], [-1.0, -1.0]])
    expected = [_ref_pnml(list(r), w, b, fit) for r in h]
    assert np.allclose(pnml_score(h, w, b, **fit), expected, rtol=1e-6, atol=0)  # float32 products
    assert -1.0 <= min(expected) and max(expected) <= 0.0


def test_pnml_underflowing_probabilities_take_their_limit():
    fit = pnml_fit(np.array([[1.0, 0.0], [0.0, 1.0]]))
    w, b = np.array([[2000.0, 0.0], [0.0, 0.0], [-2000.0, 0.0]]), np.zeros(3)
    # one q_k = 1, the others underflow to 0.  (1,0) is a training point, exponent a/(1+a) < 1:
    # q̂ -> (1, 0, 0), regret 0.
    # (-1,-1) is out of span, exponent 1.943 > 1: q̂_k -> 1 for the vanishing q_k, sum 3, regret 1
    scores = pnml_score(np.array([[1.0, 0.0], [-1.0, -1.0]]), w, b, **fit)
    assert np.all(np.isfinite(scores))
    assert scores == pytest.approx([0.0, -1.0], abs=1e-9)


def test_pnml_float32_products_stay_within_the_features_own_rounding():
    # near-low-rank features with a large offset: a Gram matrix with condition number > 1e6, the hard
    # case for float32; the products may only add an error of the order of rounding the features to float32
    rng = np.random.default_rng(13)
    mixing = rng.normal(size=(128, 16)) * np.logspace(0, -2, 16)
    data = rng.normal(size=(3400, 16)) @ mixing.T * 5 + 3.0 + 1e-3 * rng.normal(size=(3400, 128))
    train, test = data[:3000], np.vstack([data[3000:], rng.exponential(size=(100, 128))])
    weight, bias = rng.normal(size=(10, 128)), rng.normal(size=10)
    fit = pnml_fit(train)
    p_plus, p_perp = _projectors(fit)
    assert np.linalg.cond(np.linalg.pinv(p_plus)) > 1e6

    def score64(h):  # the pNML rule, float64 throughout
        h = h.astype(np.float64)
        x = np.hstack([np.ones((len(h), 1)), h / np.linalg.norm(h, axis=1, keepdims=True)])
        parallel = np.einsum("ij,jk,ik->i", x, p_plus, x)
        x_t_g = np.maximum(np.einsum("ij,jk,ik->i", x, p_perp, x), parallel / (1 + parallel))
        z = x[:, 1:] @ weight.T + bias
        q = np.exp(z - logsumexp(z, axis=1, keepdims=True))
        return -np.log(np.sum(q / (q + (1 - q) * q ** x_t_g[:, None]), axis=1)) / np.log(10)

    expected = score64(test)
    storage_error = np.abs(score64(test.astype(np.float32)) - expected)
    product_error = np.abs(pnml_score(test, weight, bias, **fit) - expected)
    assert product_error.max() <= 10 * storage_error.max()


def test_pnml_full_rank_training_has_no_perp():
    train = np.random.default_rng(11).normal(size=(50, 4))
    fit = pnml_fit(train)
    assert fit["perp_factor"].shape == (5, 0)
    # the authors' P_perp = I - P^+ P, with P^+ from numpy's pinv, vanishes too
    x = np.hstack([np.ones((50, 1)), train / np.linalg.norm(train, axis=1, keepdims=True)])
    gram = x.T @ x
    assert np.abs(np.eye(5) - np.linalg.pinv(gram, hermitian=True) @ gram).max() < 1e-10
    np.testing.assert_allclose(_projectors(fit)[0], np.linalg.pinv(gram, hermitian=True), rtol=1e-10, atol=1e-12)


def test_pnml_score_with_vanishing_perp_equals_the_two_form_rule():
    # full-rank training: the score has no x̃ᵀP_perp x̃ to take (P_perp = 0); it must equal the rule
    rng = np.random.default_rng(12)
    fit = pnml_fit(rng.normal(size=(50, 4)))
    w, b = rng.normal(size=(3, 4)), rng.normal(size=3)
    h = np.vstack([rng.normal(size=(6, 4)), 30.0 * rng.normal(size=(2, 4))])
    expected = [_ref_pnml(list(r), w, b, fit) for r in h]
    assert np.allclose(pnml_score(h, w, b, **fit), expected, rtol=1e-6, atol=0)  # float32 products


# ---------------------------------------------------------------------------------------------
# chunking and orientation
# ---------------------------------------------------------------------------------------------

def test_row_blocks_cover_and_respect_budget(monkeypatch):
    monkeypatch.setattr(blocks, "MAX_BLOCK_ENTRIES", 10)
    slices = list(blocks.row_blocks(7, 3))  # 3 rows per block
    assert [(s.start, s.stop) for s in slices] == [(0, 3), (3, 6), (6, 7)]
    assert [(s.start, s.stop) for s in blocks.row_blocks(2, 50)] == [(0, 1), (1, 2)]


def _synthetic(seed: int = 0):
    """5 Gaussian classes in D = 16 (centres 8·e_k) with a nearest-mean linear head; OOD points of
    norm 8 in the 11 dimensions no class uses, so their logits are near-uniform."""
    rng = np.random.default_rng(seed)
    c, d = 5, 16
    centres = 8.0 * np.eye(c, d)
    weight, bias = centres, -0.5 * np.sum(centres**2, axis=1)

    def id_points(n):
        y = np.arange(n) % c
        return centres[y] + rng.normal(size=(n, d)), y

    train, y_train = id_points(500)
    test_id, _ = id_points(200)
    directions = np.hstack([np.zeros((200, c)), rng.normal(size=(200, d - c))])
    test_ood = 8.0 * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    test_ood += 0.1 * rng.normal(size=test_ood.shape)
    return train, y_train, test_id, test_ood, weight, bias, rng


def test_every_csf_ranks_ood_below_id():
    train, y_train, test_id, test_ood, weight, bias, rng = _synthetic()
    n_classes, temperature = len(weight), 1.5
    z_train = train @ weight.T + bias
    train_pred_ok = z_train.argmax(axis=1) == y_train
    maha = maha_fit(train, y_train, n_classes)
    means = class_means(train, y_train, n_classes)
    means_oc = class_means(train, y_train, n_classes, mask=train_pred_ok)
    bank = nnguide_bank(train, z_train, y_train, n_classes, alpha=0.3)
    pnml = pnml_fit(train)

    def all_scores(h):
        z = h @ weight.T + bias
        p = softmax(z, temperature)
        passes = np.stack([softmax(z + rng.normal(size=z.shape)) for _ in range(8)], axis=1)
        return {
            "msr": msr(p), "mls": mls(z, temperature), "pe": pe(p), "gen": gen(p, 3, 0.5),
            "ren": ren(p, 3, 0.5), "ge": ge(p), "pce": pce(p), "energy": energy(z, temperature),
            "mi": mutual_information(passes), "gradnorm": gradnorm(h, p, temperature),
            "maha": maha_score(h, **maha), "ctm": max_cosine(h, weight), "ctm_mean": max_cosine(h, means),
            "ctm_mean_oc": max_cosine(h, means_oc), "nnguide": nnguide_score(h, z, bank, 20),
            "fdbd": fdbd(h, z, weight, train.mean(axis=0)), "pnml": pnml_score(h, weight, bias, **pnml),
        }

    scores_id, scores_ood = all_scores(test_id), all_scores(test_ood)
    wrong = {name: (scores_id[name].mean(), scores_ood[name].mean())
             for name in scores_id if not scores_id[name].mean() > scores_ood[name].mean()}
    assert not wrong, f"mean confidence (ID, OOD) not ID > OOD: {wrong}"
    assert all(s.shape == (len(test_id),) and s.dtype == np.float64 for s in scores_id.values())


def test_chunked_scores_equal_single_block(monkeypatch):
    train, y_train, test_id, test_ood, weight, bias, _ = _synthetic(1)
    h = np.vstack([test_id[:20], test_ood[:20]])
    z = h @ weight.T + bias
    z_train = train @ weight.T + bias

    def run():
        maha = maha_fit(train, y_train, len(weight))
        bank = nnguide_bank(train, z_train, y_train, len(weight), alpha=0.2)
        return [maha["precision"], maha_score(h, **maha), max_cosine(h, weight)], [
            pnml_score(h, weight, bias, **pnml_fit(train)), nnguide_score(h, z, bank, 7)]

    whole = run()
    monkeypatch.setattr(blocks, "MAX_BLOCK_ENTRIES", 40)  # a handful of rows per block
    chunked = run()
    for a, b in zip(whole[0], chunked[0]):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-12)
    # pNML's and NNGuide's float32 GEMMs, whose rounding BLAS may order differently per block size
    for a, b in zip(whole[1], chunked[1]):
        assert np.allclose(a, b, rtol=1e-6, atol=0)


def test_map_row_blocks_covers_every_row_once_on_threads(monkeypatch):
    monkeypatch.setattr(blocks, "thread_count", lambda: 3)
    monkeypatch.setattr(blocks, "MIN_THREAD_BLOCK_ROWS", 4)
    seen = []
    blocks.map_row_blocks(lambda rows: seen.append((rows.start, rows.stop)), 50)
    assert sorted(seen) == [(s, min(s + 5, 50)) for s in range(0, 50, 5)]  # 50 / (4 blocks · 3 threads) -> 5

    def fail(rows):
        raise RuntimeError(f"block {rows.start}")

    with pytest.raises(RuntimeError, match="block"):
        blocks.map_row_blocks(fail, 50)
    # sums are added in row order: [0, 5) + [5, 10) + ... whatever the threads' timing
    total = blocks.sum_row_blocks(lambda rows: np.array([float(rows.start)]), 50)
    assert total.tolist() == [sum(range(0, 50, 5))]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fixed_row_blocks_do_not_depend_on_the_thread_count(monkeypatch, threads):
    monkeypatch.setattr(blocks, "thread_count", lambda: threads)
    seen = []
    blocks.map_row_blocks(lambda rows: seen.append((rows.start, rows.stop)), 50, block_rows=20)
    assert sorted(seen) == [(0, 20), (20, 40), (40, 50)]
    total = blocks.sum_row_blocks(lambda rows: np.array([float(rows.stop)]), 50, block_rows=20)
    assert total.tolist() == [20.0 + 40.0 + 50.0]
    with pytest.raises(ValueError, match="block_rows must be >= 1, got 0"):
        blocks.map_row_blocks(lambda rows: None, 50, block_rows=0)


def test_threaded_scores_equal_serial(monkeypatch):
    """Every kernel that runs on :func:`blocks.map_row_blocks` or :func:`blocks.sum_row_blocks` gives the
    same fits and scores on 3 threads with small blocks as serially (float32 inputs included)."""
    train, y_train, test_id, test_ood, weight, bias, _ = _synthetic(3)
    h = np.vstack([test_id, test_ood])
    z = h @ weight.T + bias
    bank = nnguide_bank(train, train @ weight.T + bias, y_train, len(weight), alpha=0.2)

    def run():
        p = softmax(z, 1.3)
        pnml, subspace = pnml_fit(train), vim_fit(train, train @ weight.T + bias, weight, bias, 8)
        float64 = [p, softmax(z.astype(np.float32)), msr(p), mls(z, 1.3), pe(p), energy(z, 1.3),
                   energy(z.astype(np.float32)), fdbd(h.astype(np.float32), z, weight, train.mean(axis=0)),
                   pnml["plus_factor"]]
        float32_products = [nnguide_score(h, z, bank, 7), pnml_score(h, weight, bias, **pnml), subspace["alpha"],
                            vim_score(h, z, **subspace)]
        return float64, float32_products

    monkeypatch.setattr(blocks, "thread_count", lambda: 1)
    serial = run()
    monkeypatch.setattr(blocks, "thread_count", lambda: 3)
    monkeypatch.setattr(blocks, "MIN_THREAD_BLOCK_ROWS", 16)
    threaded = run()
    for a, b in zip(serial[0], threaded[0]):  # fitted sums are added in other blocks: rounding only
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(a).max())
    # float32 GEMMs, whose rounding BLAS may order differently per block size: the error is relative to the
    # operands, so a score that is a difference of large terms (ViM = energy − α·residual near 0) gets an
    # absolute tolerance on the array's scale
    for a, b in zip(serial[1], threaded[1]):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-6 * np.abs(a).max())


def test_nnguide_float32_similarities_match_float64_reference():
    train, y_train, test_id, test_ood, weight, bias, _ = _synthetic(2)
    bank = nnguide_bank(train, train @ weight.T + bias, y_train, len(weight), alpha=0.5)
    h = np.vstack([test_id, test_ood])
    z = h @ weight.T + bias
    similarities = h / np.linalg.norm(h, axis=1, keepdims=True) @ bank.T
    for k in (1, 5, 40):
        top = np.sort(similarities, axis=1)[:, -k:]
        expected = np.log(np.exp(z).sum(axis=1)) * top.mean(axis=1)
        assert np.allclose(nnguide_score(h, z, bank, k), expected, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unit_rows_in_both_precisions(dtype):
    rng = np.random.default_rng(21)
    x = np.vstack([rng.normal(size=(5, 7)) * [[1e-3], [1.0], [1e3], [1e30], [5.0]], np.zeros((1, 7))])
    x = x.astype(np.float32)
    x[4] = 1e-40  # subnormal float32 entries: the reciprocal of the norm exceeds the float32 range
    wide = x.astype(np.float64)
    expected = wide / np.maximum(np.linalg.norm(wide, axis=1, keepdims=True), 1e-300)
    unit = blocks.unit_rows(x, dtype)
    assert unit.dtype == dtype
    np.testing.assert_allclose(unit, expected, rtol=4 * np.finfo(dtype).eps if dtype == np.float32 else 1e-15,
                               atol=0)
    assert not unit[5].any()  # the all-zero row stays zero


def test_pnml_cholesky_inverse_and_eigen_pseudo_inverse_agree(monkeypatch):
    # a well-conditioned Gram matrix takes the Cholesky path; forced through the eigen-decomposition
    # (as ill-conditioned ones are) it must give the same projector and the same scores
    rng = np.random.default_rng(17)
    train, test = rng.normal(size=(300, 12)) + 0.5, rng.normal(size=(40, 12))
    weight, bias = rng.normal(size=(4, 12)), rng.normal(size=4)
    fast = pnml_fit(train)
    monkeypatch.setattr(pnml, "CONDITION_MARGIN", np.inf)
    eigen = pnml_fit(train)
    assert fast["plus_factor"].shape == eigen["plus_factor"].shape == (13, 13)
    assert fast["perp_factor"].shape == eigen["perp_factor"].shape == (13, 0)
    assert not np.array_equal(fast["plus_factor"], eigen["plus_factor"])  # two different factors ...
    np.testing.assert_allclose(_projectors(fast)[0], _projectors(eigen)[0], rtol=1e-10, atol=1e-14)  # ... one P^+
    np.testing.assert_allclose(pnml_score(test, weight, bias, **fast), pnml_score(test, weight, bias, **eigen),
                               rtol=1e-6)


def test_float32_unit_rows_of_float64_input_beyond_the_float32_range():
    huge = np.array([[1e100, 1e100, 0.0], [3.0, 4.0, 0.0]])  # beyond float32, not float64
    np.testing.assert_allclose(blocks.unit_rows(huge, np.float32), [[2**-0.5, 2**-0.5, 0.0], [0.6, 0.8, 0.0]],
                               rtol=1e-7)
