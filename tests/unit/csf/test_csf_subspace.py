"""Residual, ViM, NeCo and KPCA RecError kernels of Claros-Olivares & Brockmeier, *A Systematic Analysis
of Out-of-Distribution Detection Under Representation and Training Paradigm Shifts* (preprint; no year
or arXiv id in its text), App. A.3.11–A.3.13 (Wang et al., 2022; Ammar et al., 2023; Fang et al., 2025),
with KPCA RecError in the Nyström form of the authors' code (github.com/cesar-claros/ood_systematic).

References are independent of the implementation: hand-computed cases, explicit formulas with a
different route (SVD instead of eigh, Cholesky instead of K^(-1/2), the kernel trick instead of
Nyström), scikit-learn's PCA and RBF kernel, and pytorch-ood's ViM.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.linalg import cholesky, solve_triangular
from scipy.special import logsumexp
from scipy.stats import spearmanr
from sklearn.decomposition import PCA
from sklearn.metrics.pairwise import rbf_kernel

from csfbench.csf import blocks, kpca
from csfbench.csf import subspace_scores as ss


def _unit(h: np.ndarray) -> np.ndarray:
    return h / (np.linalg.norm(h, axis=1, keepdims=True) + 1e-12)


def _k_rule(eigenvalues: np.ndarray, variance: float) -> int:
    ratio = np.cumsum(eigenvalues) / eigenvalues.sum()
    return min(int(np.sum(ratio <= variance)) + 1, len(eigenvalues))


# ---------------------------------------------------------------- principal dim, ViM, Residual

@pytest.mark.parametrize("dim, expected", [(512, 256), (768, 512), (2048, 1000), (4096, 1000), (1024, 512),
                                           (640, 320), (2, 1)])
def test_principal_dim_rule(dim, expected):
    assert ss.principal_dim(dim) == expected


def test_vim_and_residual_hand_case():
    """W = I, b = (1, −2): u = −b = (−1, 2).  About u the training points are (±3, 0), (0, ±1):
    second moment diag(18, 2)/3, principal direction e1, residual basis ±e2.  Training max logits
    3, 0, 1, 0 (mean 1), residual norms 0, 0, 1, 1 (mean 0.5), so alpha = 2."""
    origin = np.array([-1.0, 2.0])
    centred = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    weight, bias = np.eye(2), np.array([1.0, -2.0])
    features = centred + origin
    state = ss.vim_fit(features, features @ weight.T + bias, weight, bias, principal_dim=1)
    np.testing.assert_allclose(state["origin"], origin)
    np.testing.assert_allclose(np.abs(state["basis"]), [[0.0], [1.0]], atol=1e-12)
    assert state["alpha"].shape == () and state["alpha"] == pytest.approx(2.0)
    h = origin + np.array([[1.0, 2.0]])
    z = h @ weight.T + bias  # (1, 2)
    np.testing.assert_allclose(ss.residual_score(h, state["origin"], state["basis"]), [-2.0])
    np.testing.assert_allclose(ss.vim_score(h, z, state["origin"], state["basis"], state["alpha"]),
                               [np.log(np.e + np.e ** 2) - 2.0 * 2.0])


def test_vim_matches_explicit_formulas():
    rng = np.random.default_rng(1)
    n, dim, n_classes, dp = 60, 8, 3, 4
    features = rng.normal(size=(n, dim)) * np.linspace(3, 0.5, dim) + 1.0
    weight, bias = rng.normal(size=(n_classes, dim)), rng.normal(size=n_classes)
    logits = features @ weight.T + bias
    state = ss.vim_fit(features, logits, weight, bias, dp)
    assert state["basis"].shape == (dim, dim - dp)
    # origin: the minimum-norm solution of W u = −b
    origin = np.linalg.lstsq(weight, -bias, rcond=None)[0]
    np.testing.assert_allclose(state["origin"], origin, atol=1e-12)
    # residual subspace: trailing right singular vectors of H − u (no re-centring)
    vt = np.linalg.svd(features - origin, full_matrices=False)[2]
    residual_basis = vt[dp:].T
    # the second moment's products are float32 (module docstring, "Precision")
    np.testing.assert_allclose(state["basis"] @ state["basis"].T, residual_basis @ residual_basis.T, atol=1e-6)
    train_res = np.linalg.norm((features - origin) @ residual_basis, axis=1)
    alpha = logits.max(axis=1).mean() / train_res.mean()
    # the residual products are float32 (module docstring, "Precision")
    assert float(state["alpha"]) == pytest.approx(alpha, rel=1e-6)
    test = rng.normal(size=(20, dim)) * 2
    test_logits = test @ weight.T + bias
    res = np.linalg.norm((test - origin) @ residual_basis, axis=1)
    np.testing.assert_allclose(ss.residual_score(test, state["origin"], state["basis"]), -res, rtol=1e-6)
    np.testing.assert_allclose(ss.vim_score(test, test_logits, state["origin"], state["basis"], state["alpha"]),
                               logsumexp(test_logits, axis=1) - alpha * res, rtol=1e-6, atol=1e-6)


def _near_low_rank_features(rng, n, dim=128, noise=1e-3):
    """A 16-d latent with a decaying mixing spectrum, a large offset and small full-rank noise: an
    ill-conditioned second moment and residuals ~1e-4 of ‖h − u‖, the hard case for float32."""
    mixing = rng.normal(size=(dim, 16)) * np.logspace(0, -2, 16)
    return rng.normal(size=(n, 16)) @ mixing.T * 5 + 3.0 + noise * rng.normal(size=(n, dim))


def test_vim_float32_residual_products_stay_within_the_features_own_rounding():
    # float32 products may only add an error of the order of rounding the features to float32
    rng = np.random.default_rng(7)
    data = _near_low_rank_features(rng, 3500)
    train, test = data[:3000], data[3000:]
    weight, bias = rng.normal(size=(10, train.shape[1])), rng.normal(size=10)
    state = ss.vim_fit(train, train @ weight.T + bias, weight, bias, 64)
    origin, basis = state["origin"], state["basis"]

    def residual64(h):
        return np.linalg.norm((h.astype(np.float64) - origin) @ basis, axis=1)

    residual = residual64(test)
    assert np.median(residual / np.linalg.norm(test - origin, axis=1)) < 1e-3
    storage_error = np.abs(residual64(test.astype(np.float32)) - residual)
    product_error = np.abs(-ss.residual_score(test, origin, basis) - residual)
    assert product_error.max() <= 10 * storage_error.max()
    z = test @ weight.T + bias
    np.testing.assert_allclose(ss.vim_score(test, z, **state) - (logsumexp(z, axis=1) - state["alpha"] * residual),
                               0.0, atol=10 * float(state["alpha"]) * storage_error.max())


def test_scatter_float32_products_are_centred_per_block_and_thread_independent(monkeypatch):
    """The second moment about o from float32 products stays within float32 rounding of the *centred*
    scatter even when the features sit far from o (offset 1e3, spread ~1): products about o in float32,
    as pytorch-ood forms them, miss that bound by orders of magnitude.  Its fixed blocks give the
    same bits on 1 and 3 threads."""
    rng = np.random.default_rng(12)
    n, dim = 2 * ss.SCATTER_BLOCK_ROWS + 904, 16  # two full blocks and a partial one
    features = (rng.normal(size=(n, dim)) * np.linspace(3, 0.1, dim) + 1e3).astype(np.float32)
    origin = rng.normal(size=dim)
    exact = features.astype(np.float64) - origin
    exact = exact.T @ exact
    centred = features - features.mean(axis=0, dtype=np.float64)
    bound = 1e-6 * np.abs(centred.T @ centred).max()
    monkeypatch.setattr(blocks, "thread_count", lambda: 1)
    serial = ss.scatter_about(features, origin)
    assert np.abs(serial - exact).max() <= bound
    about_origin = features - origin.astype(np.float32)
    assert np.abs(about_origin.T @ about_origin - exact).max() > 100 * bound
    monkeypatch.setattr(blocks, "thread_count", lambda: 3)
    assert np.array_equal(ss.scatter_about(features, origin), serial)


@pytest.mark.parametrize("dtype, scale", [(np.float32, 1e-25), (np.float32, 1e30), (np.float64, 1e-100),
                                          (np.float64, 1e100)])
def test_scatter_keeps_the_range_of_its_input(dtype, scale):
    """Blocks whose float32 products would overflow or fall into subnormals are scaled by a power of
    two first: tiny and huge features keep the float32 accuracy of unit-scale ones."""
    rng = np.random.default_rng(13)
    features = (rng.normal(size=(3000, 8)) * np.linspace(2, 0.1, 8) + 4.0) * scale
    features, origin = features.astype(dtype), rng.normal(size=8) * scale
    exact = features.astype(np.float64) - origin
    exact = exact.T @ exact
    centred = features - features.mean(axis=0, dtype=np.float64)
    assert np.abs(ss.scatter_about(features, origin) - exact).max() <= 1e-6 * np.abs(centred.T @ centred).max()


def test_float32_inputs_give_the_float64_results():
    rng = np.random.default_rng(2)
    features = rng.normal(size=(40, 6)).astype(np.float32)
    weight, bias = rng.normal(size=(3, 6)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    logits = features @ weight.T + bias
    as64 = [a.astype(np.float64) for a in (features, logits, weight, bias)]
    s32, s64 = ss.vim_fit(features, logits, weight, bias, 3), ss.vim_fit(*as64, 3)
    v32 = ss.vim_score(features, logits, s32["origin"], s32["basis"], s32["alpha"])
    v64 = ss.vim_score(*as64[:2], s64["origin"], s64["basis"], s64["alpha"])
    assert v32.dtype == np.float64
    np.testing.assert_allclose(v32, v64, rtol=1e-12)
    energy = logsumexp(logits, axis=1)
    k32 = kpca.kpca_score(features, kpca.kpca_fit(features, energy, 0.5, 20, 0.9), 0.5)
    k64 = kpca.kpca_score(as64[0], kpca.kpca_fit(as64[0], energy, 0.5, 20, 0.9), 0.5)
    np.testing.assert_allclose(k32, k64, rtol=1e-9)


def test_vim_matches_pytorch_ood():
    """pytorch-ood's ``ViM`` is an OOD *outlier* score, −(LSE(z) − α‖Rᵀ(h − u)‖), so ours is compared with
    its negation.  Other differences, all aligned or immaterial here: it computes the logits itself
    from W, b (we pass the same logits), divides the second moment by N instead of N − 1 (same
    eigenvectors, same alpha), works in float32, and keeps the D − d smallest-eigenvalue directions
    (same residual subspace as ours for the same d, since the features here have distinct eigenvalues)."""
    from csfbench.torch_compat import ensure_torchvision

    try:
        ensure_torchvision()
        import torch
        from pytorch_ood.detector import ViM
    except ImportError as exc:  # pragma: no cover - the test extra is installed in CI
        pytest.skip(f"pytorch-ood is not importable: {exc}")
    rng = np.random.default_rng(3)
    n, dim, n_classes = 400, 16, 5
    scale = np.linspace(4, 0.3, dim)
    features = rng.normal(size=(n, dim)) * scale + 0.5
    test = np.vstack([rng.normal(size=(150, dim)) * scale + 0.5, rng.normal(size=(150, dim)) * 2.0])
    weight, bias = rng.normal(size=(n_classes, dim)), rng.normal(size=n_classes)
    dp = ss.principal_dim(dim)
    state = ss.vim_fit(features, features @ weight.T + bias, weight, bias, dp)
    ours = ss.vim_score(test, test @ weight.T + bias, state["origin"], state["basis"], state["alpha"])
    detector = ViM(None, d=dp, w=torch.tensor(weight), b=torch.tensor(bias))
    detector.fit_features(torch.tensor(features, dtype=torch.float32), torch.zeros(n, dtype=torch.long))
    theirs = -detector.predict_features(torch.tensor(test, dtype=torch.float32)).double().numpy()
    assert detector.alpha == pytest.approx(float(state["alpha"]), rel=1e-4)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)
    assert spearmanr(ours, theirs).statistic >= 0.9999


# ---------------------------------------------------------------- NeCo

def test_neco_matches_sklearn_pca():
    rng = np.random.default_rng(4)
    n, dim, d = 80, 10, 4
    features = rng.normal(size=(n, dim)) * np.linspace(3, 0.2, dim) + 2.0
    test = rng.normal(size=(25, dim)) * 2 + 1.0
    logits = rng.normal(size=(25, 3)) + 1.0
    state = ss.neco_fit(features, n_components=d)
    assert state["components"].shape == (d, dim)
    np.testing.assert_allclose(state["mean"], features.mean(axis=0))
    # CNN: the test features are centred with the training mean (the PCA fitted on raw features); the
    # scatter's products are float32 (module docstring, "Precision")
    pca = PCA(svd_solver="full").fit(features)
    expected = np.linalg.norm(pca.transform(test)[:, :d], axis=1) / np.linalg.norm(test - pca.mean_, axis=1)
    np.testing.assert_allclose(ss.neco_score(test, logits, state["mean"], state["components"], centered=True),
                               expected * logits.max(axis=1), rtol=1e-6)
    # ViT (authors' code): PCA fitted on the centred training features, raw h into transform and the norm
    pca_centred = PCA(svd_solver="full").fit(features - features.mean(axis=0))
    expected = np.linalg.norm(pca_centred.transform(test)[:, :d], axis=1) / np.linalg.norm(test, axis=1)
    np.testing.assert_allclose(ss.neco_score(test, logits, state["mean"], state["components"], centered=False),
                               expected * logits.max(axis=1), rtol=1e-6)


def test_neco_components_capped_at_min_n_d():
    rng = np.random.default_rng(5)
    assert ss.neco_fit(rng.normal(size=(3, 7)))["components"].shape == (3, 7)
    assert ss.neco_fit(rng.normal(size=(30, 7)))["components"].shape == (7, 7)


# ---------------------------------------------------------------- KPCA

def test_select_landmarks_hand_case():
    energy = np.array([3.0, 1.0, 2.0, 1.0, 5.0])
    np.testing.assert_array_equal(kpca.select_landmarks(energy, 3), [1, 3, 2])  # tie 1.0: original order
    np.testing.assert_array_equal(kpca.select_landmarks(energy, 10), [1, 3, 2, 0, 4])


@pytest.mark.parametrize("variance, q", [(0.0, 1), (0.39, 1), (0.4, 2), (0.7, 3), (0.85, 3), (0.9, 4), (1.0, 4)])
def test_k_rule_hand_case(variance, q):
    """Eigenvalues 4, 3, 2, 1: ρ = 0.4, 0.7, 0.9, 1.0; q = #{ρ <= v} + 1, capped at L = 4."""
    decomposition = {"landmarks": np.zeros((4, 2)), "normalizer": np.eye(4), "mean": np.zeros(4),
                     "eigenvalues": np.array([4.0, 3.0, 2.0, 1.0]), "eigenvectors": np.eye(4)}
    state = kpca.kpca_truncate(decomposition, variance)
    np.testing.assert_array_equal(state["components"], np.eye(4)[:, :q])


def test_nystrom_with_all_landmarks_is_the_exact_kernel_pca():
    """With L = N the Nyström map is the exact kernel feature map (up to a rotation) on the training
    span: kernel distances are reproduced, the training reconstruction error equals exact KPCA by the
    kernel trick, and any point's error equals PCA on the Cholesky feature map k(x, X) L⁻ᵀ (K = L Lᵀ)."""
    rng = np.random.default_rng(6)
    n, dim, gamma, variance = 15, 6, 0.5, 0.8
    features = rng.normal(size=(n, dim)) + 0.5
    test = np.vstack([rng.normal(size=(10, dim)) + 0.5, rng.normal(size=(10, dim)) * 3])
    energy = rng.normal(size=n)
    state = kpca.kpca_fit(features, energy, gamma, n_landmarks=n, variance=variance)
    unit = _unit(features)
    kernel = rbf_kernel(unit, unit, gamma=gamma)
    psi = rbf_kernel(unit, state["landmarks"], gamma=gamma) @ state["normalizer"].T
    sq_dist = ((psi[:, None, :] - psi[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(sq_dist, np.diag(kernel)[:, None] + np.diag(kernel)[None, :] - 2 * kernel,
                               atol=1e-9)
    np.testing.assert_allclose(state["mean"], psi.mean(axis=0), atol=1e-12)
    # exact KPCA by the kernel trick, on the training points
    one = np.full((n, n), 1.0 / n)
    centred_gram = kernel - one @ kernel - kernel @ one + one @ kernel @ one
    mu, a = np.linalg.eigh(centred_gram)
    mu, a = mu[::-1], a[:, ::-1]
    q = _k_rule(mu, variance)
    assert state["components"].shape == (n, q)
    beta = centred_gram @ (a[:, :q] / np.sqrt(mu[:q]))
    exact = np.sqrt(np.maximum(np.diag(centred_gram) - (beta ** 2).sum(axis=1), 0.0))
    np.testing.assert_allclose(kpca.kpca_score(features, state, gamma), -exact, atol=1e-7)
    # sklearn PCA on an independently built exact feature map, for training and unseen points
    lower = cholesky(kernel, lower=True)
    chol_map = lambda x: solve_triangular(lower, rbf_kernel(_unit(x), unit, gamma=gamma).T, lower=True).T  # noqa: E731
    pca = PCA(svd_solver="full").fit(chol_map(features))
    assert _k_rule(pca.explained_variance_, variance) == q
    pca = PCA(n_components=q, svd_solver="full").fit(chol_map(features))
    for x in (features, test):
        mapped = chol_map(x)
        expected = np.linalg.norm(mapped - pca.inverse_transform(pca.transform(mapped)), axis=1)
        np.testing.assert_allclose(kpca.kpca_score(x, state, gamma), -expected, atol=1e-7)


def _direct_kpca(features, energy, gamma, n_landmarks, variance):
    """The Nyström fit written out on the full N×L matrix (test reference, small N only): unit-normalise,
    take the L points with the smallest T·LSE(z/T) as landmarks, ψ = k(ĥ, X_ref) K_mm^(-1/2), keep the
    top-q eigenvectors of the covariance of ψ."""
    landmarks = _unit(features[np.argsort(energy, kind="stable")[:n_landmarks]])
    values, vectors = np.linalg.eigh(rbf_kernel(landmarks, landmarks, gamma=gamma))
    normalizer = vectors @ np.diag(1 / np.sqrt(np.maximum(values, 1e-12))) @ vectors.T
    psi = rbf_kernel(_unit(features), landmarks, gamma=gamma) @ normalizer.T
    cov_values, cov_vectors = np.linalg.eigh(np.cov(psi, rowvar=False))
    cov_values, cov_vectors = cov_values[::-1], cov_vectors[:, ::-1]
    q = _k_rule(cov_values, variance)
    return landmarks, normalizer, psi.mean(axis=0), cov_vectors[:, :q]


def _direct_centred(x, landmarks, normalizer, mean, gamma):
    """ψ(x) − ψ̄ by the Nyström formula."""
    return rbf_kernel(_unit(x), landmarks, gamma=gamma) @ normalizer.T - mean


@pytest.mark.parametrize("max_condition", [0.0, np.inf], ids=["mapped-rows", "kernel-scatter"])
@pytest.mark.parametrize("block_elements", [None, 64])
def test_kpca_matches_direct_computation(monkeypatch, block_elements, max_condition):
    """Landmarks by the energy rule (L < N); the blockwise fit and score (one block or many), with the
    covariance of ψ from explicitly mapped rows or from the kernel rows' scatter, equal the Nyström
    formulas applied to the whole N×L matrix at once."""
    if block_elements is not None:
        monkeypatch.setattr(blocks, "MAX_BLOCK_ENTRIES", block_elements)
    monkeypatch.setattr(kpca, "SANDWICH_MAX_CONDITION", max_condition)
    rng = np.random.default_rng(7)
    features = rng.normal(size=(90, 5)) + 1.0
    energy = rng.normal(size=90)
    test = rng.normal(size=(30, 5))
    gamma, n_landmarks, variance = 0.7, 25, 0.9
    state = kpca.kpca_fit(features, energy, gamma, n_landmarks, variance)
    landmarks, normalizer, mean, components = _direct_kpca(features, energy, gamma, n_landmarks, variance)
    np.testing.assert_allclose(state["landmarks"], landmarks)
    np.testing.assert_allclose(state["mean"], mean, atol=1e-10)
    assert state["components"].shape == components.shape
    centred = _direct_centred(test, landmarks, normalizer, mean, gamma)
    residual = centred - centred @ components @ components.T
    np.testing.assert_allclose(kpca.kpca_score(test, state, gamma), -np.linalg.norm(residual, axis=1), atol=1e-8)
    psi = rbf_kernel(_unit(test), landmarks, gamma=gamma) @ normalizer.T
    np.testing.assert_allclose(kpca.kpca_score(test, state, gamma, normalized=True),
                               -np.linalg.norm(residual, axis=1) / np.linalg.norm(psi, axis=1), rtol=1e-7)


def test_kernel_scatter_is_used_only_for_a_well_conditioned_landmark_kernel():
    """Cov(ψ) comes from the kernel rows' scatter only when K_mm's condition number is at most
    SANDWICH_MAX_CONDITION and the eigenvalue floor is inactive (duplicated landmarks make it
    singular); otherwise rows are mapped explicitly."""
    rng = np.random.default_rng(11)
    unit = _unit(rng.normal(size=(30, 4)) + 1.0)
    spread = np.linalg.eigvalsh(rbf_kernel(unit, unit, gamma=0.5))[::-1]
    duplicated = np.linalg.eigvalsh(rbf_kernel(np.repeat(unit, 2, axis=0), np.repeat(unit, 2, axis=0), gamma=0.5))
    # 30 close points on a 4-sphere: above the floor, but λ_max/λ_min ≈ 1.2e7 exceeds the threshold
    assert spread[-1] > kpca.EIGENVALUE_FLOOR and spread[0] / spread[-1] > kpca.SANDWICH_MAX_CONDITION
    assert not kpca.kernel_scatter_is_safe(spread)
    assert not kpca.kernel_scatter_is_safe(duplicated[::-1])
    assert kpca.kernel_scatter_is_safe(np.array([2.0, 1.0, 1e-5]))
    assert not kpca.kernel_scatter_is_safe(np.array([2.0, 1.0, 1e-7]))


def test_decomposition_reuse_equals_refit():
    rng = np.random.default_rng(8)
    features, energy = rng.normal(size=(60, 4)), rng.normal(size=60)
    decomposition = kpca.kpca_decompose(features, energy, 0.4, 30)
    for variance in (0.85, 0.95):
        reused, refit = kpca.kpca_truncate(decomposition, variance), kpca.kpca_fit(features, energy, 0.4, 30, variance)
        assert reused.keys() == refit.keys()
        for key in refit:
            np.testing.assert_array_equal(reused[key], refit[key])


def test_kpca_class_mode():
    rng = np.random.default_rng(9)
    sizes, dim, gamma, variance = (30, 25, 20), 5, 0.6, 0.8
    labels = np.repeat(np.arange(3), sizes)
    features = rng.normal(size=(labels.size, dim)) + 2.0 * np.eye(dim)[labels]
    energy = rng.normal(size=labels.size)
    test = rng.normal(size=(40, dim)) + 1.0
    pred = rng.integers(0, 3, size=40)
    state = kpca.kpca_fit_classes(features, labels, energy, 3, gamma, n_landmarks=50, variance=variance)
    assert state["landmarks"].shape == (3, 20, dim)  # L_c = min(50, smallest class) = 20
    assert state["normalizer"].shape == (3, 20, 20) and state["mean"].shape == (3, 20)
    assert state["q"].dtype == np.int64 and state["components"].shape == (3, 20, state["q"].max())
    per_class, centred, projected = [], [], []
    for c in range(3):
        members = labels == c
        single = kpca.kpca_fit(features[members], energy[members], gamma, 20, variance)
        q = state["q"][c]
        np.testing.assert_allclose(state["components"][c, :, :q], single["components"])
        assert not state["components"][c, :, q:].any()
        per_class.append(kpca.kpca_score(test, single, gamma))
        centred.append(_direct_centred(test, single["landmarks"], single["normalizer"], single["mean"], gamma))
        projected.append(centred[-1] @ single["components"] @ single["components"].T)
    per_class = np.stack(per_class, axis=1)
    scores = kpca.kpca_score_classes(test, state, gamma, pred)
    np.testing.assert_allclose(scores["class"], per_class.max(axis=1), atol=1e-10)
    np.testing.assert_allclose(scores["class_pred"], per_class[np.arange(40), pred], atol=1e-10)
    avg = -np.linalg.norm(np.mean(projected, axis=0) - np.mean(centred, axis=0), axis=1)  # class_avg score
    np.testing.assert_allclose(scores["class_avg"], avg, atol=1e-8)


# ---------------------------------------------------------------- orientation (OOD below ID on average)

@pytest.fixture(scope="module")
def orientation_scores():
    """ID: three Gaussian classes in a 4-d subspace of D = 32 (plus small isotropic noise) with the
    class means as a linear head.  OOD: half off the subspace, half far away along random directions."""
    rng = np.random.default_rng(10)
    dim, sub_dim, n_classes = 32, 4, 3
    basis = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    inside, outside = basis[:, :sub_dim], basis[:, sub_dim:]
    means = 4.0 * inside[:, :n_classes].T

    def id_samples(n):
        y = rng.integers(0, n_classes, n)
        return means[y] + 0.7 * rng.normal(size=(n, sub_dim)) @ inside.T + 0.05 * rng.normal(size=(n, dim)), y

    weight, bias = means.copy(), np.zeros(n_classes)
    train, labels = id_samples(600)
    id_test, _ = id_samples(200)
    off_subspace = 0.8 * rng.normal(size=(100, dim - sub_dim)) @ outside.T + 0.5 * means[rng.integers(0, 3, 100)]
    far = 20.0 * rng.normal(size=(100, dim))
    ood = np.vstack([off_subspace, far])
    train_logits = train @ weight.T + bias
    vim = ss.vim_fit(train, train_logits, weight, bias, ss.principal_dim(dim))
    neco = ss.neco_fit(train, n_components=sub_dim)
    energy = logsumexp(train_logits, axis=1)
    gamma = 0.5
    kpca_global = kpca.kpca_fit(train, energy, gamma, 200, 0.9)
    kpca_class = kpca.kpca_fit_classes(train, labels, energy, n_classes, gamma, 100, 0.9)

    def all_scores(h):
        z = h @ weight.T + bias
        scores = {"residual": ss.residual_score(h, vim["origin"], vim["basis"]),
                  "vim": ss.vim_score(h, z, vim["origin"], vim["basis"], vim["alpha"]),
                  "neco_cnn": ss.neco_score(h, z, neco["mean"], neco["components"], centered=True),
                  "neco_vit": ss.neco_score(h, z, neco["mean"], neco["components"], centered=False),
                  "kpca": kpca.kpca_score(h, kpca_global, gamma),
                  "kpca_normalized": kpca.kpca_score(h, kpca_global, gamma, normalized=True)}
        class_scores = kpca.kpca_score_classes(h, kpca_class, gamma, z.argmax(axis=1))
        return scores | {f"kpca_{key}": value for key, value in class_scores.items()}

    return all_scores(id_test), all_scores(ood)


@pytest.mark.parametrize("name", ["residual", "vim", "neco_cnn", "neco_vit", "kpca", "kpca_normalized",
                                  "kpca_class", "kpca_class_pred", "kpca_class_avg"])
def test_ood_gets_lower_confidence(orientation_scores, name):
    id_scores, ood_scores = orientation_scores
    assert id_scores[name].shape == (200,) and id_scores[name].dtype == np.float64
    assert ood_scores[name].mean() < id_scores[name].mean()


# ---------------------------------------------------------------- bad input

_RNG = np.random.default_rng(11)
_H = _RNG.normal(size=(20, 6))
_W, _B = _RNG.normal(size=(3, 6)), _RNG.normal(size=3)
_Z = _H @ _W.T + _B
_E = logsumexp(_Z, axis=1)
_NAN = _H.copy()
_NAN[3, 2] = np.nan
_INF = _H.copy()
_INF[7, 0] = -np.inf
_LABELS = np.repeat(np.arange(3), [9, 10, 1])


@pytest.mark.parametrize("call, message", [
    (lambda: ss.vim_fit(_H[:1], _Z[:1], _W, _B, 3), "at least 2 rows"),
    (lambda: ss.vim_fit(_H[:3], _Z[:3], _W, _B, 3), "no residual"),
    (lambda: ss.vim_fit(_NAN, _Z, _W, _B, 3), "NaN"),
    (lambda: ss.vim_fit(_H, _Z[:5], _W, _B, 3), "one row per feature row"),
    (lambda: ss.vim_fit(_H, _Z, _W, _B, 6), "principal_dim"),
    (lambda: ss.residual_score(_NAN, np.zeros(6), np.eye(6)[:, 3:]), "NaN"),
    (lambda: ss.residual_score(_INF, np.zeros(6), np.eye(6)[:, 3:]), "1 NaN/Inf"),
    (lambda: ss.vim_score(_INF.astype(np.float32), _Z, np.zeros(6), np.eye(6)[:, 3:], 1.0), "1 NaN/Inf"),
    (lambda: ss.vim_fit(_INF, _Z, _W, _B, 3), "1 NaN/Inf"),
    (lambda: ss.vim_fit(_H * 1e200, _Z, _W, _B, 3), "too large"),
    (lambda: ss.vim_score(_H * 1e200, _Z, np.zeros(6), np.eye(6)[:, 3:], 1.0), "too large"),
    (lambda: ss.residual_score(_H[:, :5], np.zeros(6), np.eye(6)[:, 3:]), "6 columns"),
    (lambda: ss.neco_fit(_H[:1]), "at least 2 rows"),
    (lambda: ss.neco_fit(_NAN), "NaN"),
    (lambda: ss.neco_fit(_H * 1e200), "too large"),
    (lambda: ss.neco_score(_H, _Z[:, :2] * np.nan, _H.mean(0), np.eye(6)[:2], True), "NaN"),
    (lambda: ss.principal_dim(1), "feature_dim"),
    (lambda: kpca.kpca_fit(_H[:1], _E[:1], 0.5, 10, 0.9), "at least 2 rows"),
    (lambda: kpca.kpca_fit(_NAN, _E, 0.5, 10, 0.9), "NaN"),
    (lambda: kpca.kpca_fit(_H, _E[:5], 0.5, 10, 0.9), "length 20"),
    (lambda: kpca.kpca_fit(_H, _E, 0.0, 10, 0.9), "gamma"),
    (lambda: kpca.kpca_fit(_H, _E, 0.5, 0, 0.9), "n_landmarks"),
    (lambda: kpca.kpca_fit(_H, _E, 0.5, 10, 1.5), "variance"),
    (lambda: kpca.kpca_fit(np.ones((5, 6)), _E[:5], 0.5, 3, 0.9), "zero variance"),
    (lambda: kpca.kpca_fit_classes(_H, _LABELS, _E, 3, 0.5, 10, 0.9), "per class"),
    (lambda: kpca.kpca_fit_classes(_H, _LABELS, _E, 2, 0.5, 10, 0.9), r"\[0, 2\)"),
    (lambda: kpca.kpca_score_classes(_H, kpca.kpca_fit_classes(_H, np.arange(20) % 3, _E, 3, 0.5, 5, 0.9), 0.5,
                                     np.full(20, 3)), "pred"),
])
def test_bad_input_raises_value_error(call, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the ValueError names the problem; no numpy RuntimeWarning comes first
        with pytest.raises(ValueError, match=message):
            call()
