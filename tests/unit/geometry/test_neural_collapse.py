"""Neural-collapse metrics of Claros-Olivares & Brockmeier, *A Systematic Analysis of Out-of-Distribution
Detection Under Representation and Training Paradigm Shifts* (preprint; no year or arXiv id in its text),
§3.4 and App. D (Table 7), after Papyan et al. (2020). The within-class covariance Σ_W is taken about
the class means (as in Papyan et al.; the paper's printed formula uses the global mean), with the
authors' 1/(N·C) normaliser by default and Papyan's 1/N as the alternative.

References are independent of the implementation: a constructed simplex-ETF geometry (every metric
at its ideal value 0), closed forms derived by hand (a 3-class 2-D example and an isotropic ETF),
and NC1 from explicit D×D covariances with numpy's pinv (the module never forms them).
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from csfbench.csf.projection import ClassSubspaces, Pca, class_fit_data, class_views, project
from csfbench.geometry import neural_collapse as nc

SQ2, SQ3, SQ5, SQ7 = np.sqrt(2), np.sqrt(3), np.sqrt(5), np.sqrt(7)


def _etf(n_classes: int, dim: int, rng) -> np.ndarray:
    """C unit rows in R^D forming a centred simplex ETF: cos = −1/(C−1), Σ rows = 0 (needs D ≥ C−1)."""
    centring = np.eye(n_classes) - 1.0 / n_classes
    q = np.linalg.svd(centring)[0][:, :n_classes - 1]             # orthonormal basis ⊥ 1
    rot = np.linalg.qr(rng.normal(size=(dim, n_classes - 1)))[0].T  # (C−1)×D, orthonormal rows
    return np.sqrt(n_classes / (n_classes - 1)) * q @ rot


def _random_case(rng, n_classes=4, dim=6, n=48, balanced=False):
    labels = np.tile(np.arange(n_classes), n // n_classes) if balanced else \
        np.r_[np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)]
    centres = rng.normal(size=(n_classes, dim)) * 3
    features = centres[labels] + rng.normal(size=(n, dim)) * rng.uniform(0.5, 2, dim) + 1.5
    weight = centres + rng.normal(size=(n_classes, dim))
    return features, labels, weight, rng.normal(size=n_classes)


def _reference_nc1(features, labels, n_classes, normalizer):
    """NC1 = (1/C) Tr(Σ_W Σ_B†) (Claros-Olivares & Brockmeier, §3.4) literally: explicit Σ_B, Σ_W (class
    means) and numpy's pinv."""
    mu = features.mean(0)
    means = np.stack([features[labels == c].mean(0) for c in range(n_classes)])
    sigma_b = sum(np.outer(m - mu, m - mu) for m in means) / n_classes
    dev = features - means[labels]
    z = len(features) * (n_classes if normalizer == "authors" else 1)
    sigma_w = dev.T @ dev / z
    return np.trace(sigma_w @ np.linalg.pinv(sigma_b, rcond=1e-10, hermitian=True)) / n_classes


# ---------------------------------------------------------------- ideal geometry

@pytest.mark.parametrize("n_classes, dim", [(2, 1), (3, 2), (5, 4), (10, 16), (7, 40)])
def test_simplex_etf_gives_ideal_values(n_classes, dim):
    """Means α·ETF + offset, zero within-class variability, W = β·M (equal norms, self-dual):
    every metric takes its ideal value 0 (EqNorm: equal norms; EqAng: equal cosines; max-EqAng:
    cosines = −1/(C−1); Var Collapse: Σ_W = 0; Self Duality: W ∝ M)."""
    rng = np.random.default_rng(n_classes * 100 + dim)
    means = 4.0 * _etf(n_classes, dim, rng) + rng.normal(size=dim) * 10
    labels = np.repeat(np.arange(n_classes), 5)
    features = means[labels]
    weight = 0.3 * (means - features.mean(0))
    metrics = nc.nc_metrics(features, labels, weight, np.zeros(n_classes))
    assert list(metrics) == list(nc.METRICS)
    assert nc.IDEAL == {name: 0.0 for name in nc.METRICS}
    for name, value in metrics.items():
        assert value == pytest.approx(nc.IDEAL[name], abs=1e-12), name


def test_simplex_etf_with_tiny_noise_is_near_ideal():
    rng = np.random.default_rng(0)
    n_classes, dim, per_class = 10, 32, 20
    means = _etf(n_classes, dim, rng)
    labels = np.repeat(np.arange(n_classes), per_class)
    features = (means[labels] + 1e-6 * rng.normal(size=(len(labels), dim))).astype(np.float32)
    weight = 2.0 * means
    metrics = nc.nc_metrics(features, labels, weight, np.zeros(n_classes))
    for name in nc.WEIGHT_METRICS:
        assert metrics[name] == pytest.approx(0.0, abs=1e-12), name
    for name in (nc.EQNORM_MEANS, nc.EQANG_MEANS, nc.MAX_EQANG_MEANS, nc.SELF_DUALITY):
        assert 0 < metrics[name] < 1e-5, name
    assert 0 < metrics[nc.VAR_COLLAPSE] < 1e-10


@pytest.mark.parametrize("n_classes, dim", [(4, 5), (6, 5), (3, 12)])
def test_isotropic_etf_closed_form(n_classes, dim):
    """Means α·ETF, deviations ±s·e_j (j = 1..D) per class: Σ_W(papyan) = s²/D·I = σ²I and
    Σ_B = α²/(C−1)·P (P the projector on the C−1 ETF directions), so
    NC1(papyan) = σ²(C−1)²/(C α²) — the variance outside span(Σ_B) does not count — and
    NC1(authors) = NC1(papyan)/C."""
    rng = np.random.default_rng(dim)
    alpha, sigma = 3.0, 0.2
    means = alpha * _etf(n_classes, dim, rng) - 7.0
    devs = sigma * np.sqrt(dim) * np.vstack([np.eye(dim), -np.eye(dim)])
    features = np.vstack([m + devs for m in means])
    labels = np.repeat(np.arange(n_classes), 2 * dim)
    weight = means + 7.0
    expected = sigma ** 2 * (n_classes - 1) ** 2 / (n_classes * alpha ** 2)
    assert nc.var_collapse(features, labels, normalizer="papyan") == pytest.approx(expected, rel=1e-12)
    assert nc.var_collapse(features, labels) == pytest.approx(expected / n_classes, rel=1e-12)
    metrics = nc.nc_metrics(features, labels, weight, None)
    assert metrics[nc.VAR_COLLAPSE] == pytest.approx(expected / n_classes, rel=1e-12)
    assert metrics[nc.SELF_DUALITY] == pytest.approx(0.0, abs=1e-14)


# ---------------------------------------------------------------- hand-computed example

def _hand_case():
    """3 classes in 2-D, 2 samples each, global mean 0.
    class 0: (2, 1), (2, −1)  → μ0 = (2, 0),  deviations (0, ±1)
    class 1: (0, 1), (−2, 1)  → μ1 = (−1, 1), deviations (±1, 0)
    class 2: (−1, −1) twice   → μ2 = (−1, −1), no deviation
    W rows (2, 0), (−1, 2), (−1, −2)."""
    features = np.array([[2, 1], [2, -1], [0, 1], [-2, 1], [-1, -1], [-1, -1]], dtype=np.float64)
    labels = np.array([0, 0, 1, 1, 2, 2])
    weight = np.array([[2.0, 0.0], [-1.0, 2.0], [-1.0, -2.0]])
    return features, labels, weight


HAND_EXPECTED = {
    # norms 2, √2, √2: values (x, y, y) have unbiased std |x − y|/√3 and mean (x + 2y)/3
    nc.EQNORM_MEANS: ((2 - SQ2) / SQ3) / ((2 + 2 * SQ2) / 3),
    # norms 2, √5, √5
    nc.EQNORM_WEIGHTS: ((SQ5 - 2) / SQ3) / ((2 + 2 * SQ5) / 3),
    # cosines −1/√2 (pairs 01, 02), 0 (pair 12), each twice: unbiased std √(2/15)
    nc.EQANG_MEANS: np.sqrt(2 / 15),
    # cosines a = −1/√5 (01, 02), b = −3/5 (12): unbiased std 2|a − b|/√15
    nc.EQANG_WEIGHTS: 2 * (3 / 5 - 1 / SQ5) / np.sqrt(15),
    # |cos + 1/2|: 4 × (1/√2 − 1/2) and 2 × 1/2, averaged
    nc.MAX_EQANG_MEANS: (2 * SQ2 - 1) / 6,
    # 4 × (1/2 − 1/√5) and 2 × 1/10
    nc.MAX_EQANG_WEIGHTS: (2.2 - 4 / SQ5) / 6,
    # Σ (h − μ_c)(h − μ_c)ᵀ = 2I, N = 6, C = 3: Σ_W = 2I/18 = I/9; Σ_B = diag(2, 2/3);
    # NC1 = (1/3)·(1/9)·(1/2 + 3/2) = 2/27
    nc.VAR_COLLAPSE: 2 / 27,
    # ‖M‖² = 8, ‖W‖² = 14, ⟨W, M⟩ = 4 + 3 + 3 = 10: 2 − 20/√112 = 2 − 5/√7
    nc.SELF_DUALITY: 2 - 5 / SQ7,
}


def test_hand_computed_three_class_example():
    features, labels, weight = _hand_case()
    metrics = nc.nc_metrics(features, labels, weight, np.zeros(3))
    assert set(metrics) == set(HAND_EXPECTED)
    for name, value in HAND_EXPECTED.items():
        assert metrics[name] == pytest.approx(value, rel=1e-12), name
    papyan = nc.nc_metrics(features, labels, weight, np.zeros(3), normalizer="papyan")
    assert papyan[nc.VAR_COLLAPSE] == pytest.approx(2 / 9, rel=1e-12)      # Σ_W = 2I/6
    assert {k: v for k, v in papyan.items() if k != nc.VAR_COLLAPSE} == \
        {k: v for k, v in metrics.items() if k != nc.VAR_COLLAPSE}


def test_hand_example_single_functions():
    features, labels, weight = _hand_case()
    stats = nc.class_statistics(features, labels)
    np.testing.assert_allclose(stats.counts, [2, 2, 2])
    np.testing.assert_allclose(stats.global_mean, [0, 0], atol=1e-15)
    np.testing.assert_allclose(stats.centred, [[2, 0], [-1, 1], [-1, -1]], atol=1e-15)
    m = stats.centred
    assert nc.equinorm(m) == pytest.approx(HAND_EXPECTED[nc.EQNORM_MEANS], rel=1e-12)
    assert nc.equinorm(weight) == pytest.approx(HAND_EXPECTED[nc.EQNORM_WEIGHTS], rel=1e-12)
    assert nc.equiangularity(m) == pytest.approx(HAND_EXPECTED[nc.EQANG_MEANS], rel=1e-12)
    assert nc.equiangularity(weight) == pytest.approx(HAND_EXPECTED[nc.EQANG_WEIGHTS], rel=1e-12)
    assert nc.max_equiangularity(m) == pytest.approx(HAND_EXPECTED[nc.MAX_EQANG_MEANS], rel=1e-12)
    assert nc.max_equiangularity(weight) == pytest.approx(HAND_EXPECTED[nc.MAX_EQANG_WEIGHTS], rel=1e-12)
    assert nc.var_collapse(features, labels) == pytest.approx(2 / 27, rel=1e-12)
    assert nc.self_duality(weight, m) == pytest.approx(HAND_EXPECTED[nc.SELF_DUALITY], rel=1e-12)
    # the paper's trace form (Claros-Olivares & Brockmeier, §3.4): 2 − 2 Tr(W Mᵀ)/(‖W‖_F ‖M‖_F)
    assert nc.self_duality(weight, m) == pytest.approx(
        2 - 2 * np.trace(weight @ m.T) / (np.linalg.norm(weight) * np.linalg.norm(m)), rel=1e-12)


# ---------------------------------------------------------------- normaliser, reference, invariances

@pytest.mark.parametrize("seed", range(3))
def test_papyan_normaliser_is_exactly_c_times_authors(seed):
    rng = np.random.default_rng(seed)
    n_classes = 3 + seed * 4
    features, labels, weight, bias = _random_case(rng, n_classes, dim=8, n=12 * n_classes)
    authors = nc.nc_metrics(features, labels, weight, bias)
    papyan = nc.nc_metrics(features, labels, weight, bias, normalizer="papyan")
    assert papyan[nc.VAR_COLLAPSE] == pytest.approx(n_classes * authors[nc.VAR_COLLAPSE], rel=1e-13)
    assert all(papyan[k] == authors[k] for k in nc.METRICS if k != nc.VAR_COLLAPSE)


@pytest.mark.parametrize("n_classes, dim, balanced", [(4, 6, False), (4, 6, True), (8, 3, False), (5, 30, False)])
@pytest.mark.parametrize("normalizer", nc.NORMALIZERS)
def test_nc1_matches_explicit_covariances(n_classes, dim, balanced, normalizer):
    """Unbalanced classes (the global mean weights the classes by size), D < C − 1 (Σ_B of rank D) and D > C."""
    rng = np.random.default_rng(n_classes + dim)
    features, labels, _, _ = _random_case(rng, n_classes, dim, n=10 * n_classes, balanced=balanced)
    assert nc.var_collapse(features, labels, normalizer=normalizer) == pytest.approx(
        _reference_nc1(features, labels, n_classes, normalizer), rel=1e-9)


def test_float32_features_match_float64():
    rng = np.random.default_rng(5)
    features, labels, weight, bias = _random_case(rng, 5, 10, 200)
    f32 = features.astype(np.float32)
    a = nc.nc_metrics(f32, labels, weight, bias)
    b = nc.nc_metrics(f32.astype(np.float64), labels, weight, bias)
    assert a == pytest.approx(b, rel=1e-12)


def test_invariances():
    rng = np.random.default_rng(11)
    features, labels, weight, bias = _random_case(rng, 5, 7, 60)
    base = nc.nc_metrics(features, labels, weight, bias)
    mean_metrics = [k for k in nc.METRICS if k != nc.SELF_DUALITY]

    # translation and a positive global scaling of the features: every metric
    assert nc.nc_metrics(3.7 * features - 12.0, labels, weight, bias) == pytest.approx(base, rel=1e-10)
    # a negative scaling flips M: all but Self Duality
    flipped = nc.nc_metrics(-2.0 * features, labels, weight, bias)
    assert {k: flipped[k] for k in mean_metrics} == pytest.approx({k: base[k] for k in mean_metrics}, rel=1e-10)
    assert flipped[nc.SELF_DUALITY] != pytest.approx(base[nc.SELF_DUALITY])
    # positive scaling of W, any bias: every metric
    assert nc.nc_metrics(features, labels, 0.01 * weight, bias + 5) == pytest.approx(base, rel=1e-10)
    # a rotation applied to features and W together
    rot = np.linalg.qr(rng.normal(size=(7, 7)))[0]
    assert nc.nc_metrics(features @ rot, labels, weight @ rot, bias) == pytest.approx(base, rel=1e-10)
    # the order of the samples
    order = rng.permutation(len(labels))
    assert nc.nc_metrics(features[order], labels[order], weight, bias) == pytest.approx(base, rel=1e-10)
    # renaming the classes (labels and the rows of W together)
    perm = rng.permutation(5)
    assert nc.nc_metrics(features, perm[labels], weight[np.argsort(perm)], bias) == pytest.approx(base, rel=1e-10)


def test_row_chunking_does_not_change_the_result(monkeypatch):
    rng = np.random.default_rng(2)
    features, labels, weight, bias = _random_case(rng, 6, 9, 300)
    whole = nc.nc_metrics(features, labels, weight, bias)
    monkeypatch.setattr(nc, "CHUNK_ROWS", 7)
    assert nc.nc_metrics(features, labels, weight, bias) == pytest.approx(whole, rel=1e-12)


def test_dg_abstention_row_dropped_with_n_classes():
    rng = np.random.default_rng(3)
    features, labels, weight, bias = _random_case(rng, 4, 6, 40)
    dg_weight, dg_bias = np.vstack([weight, rng.normal(size=6)]), np.r_[bias, 0.5]
    assert nc.nc_metrics(features, labels, dg_weight, dg_bias, n_classes=4) == \
        nc.nc_metrics(features, labels, weight, bias)


# ---------------------------------------------------------------- regimes

def _regime_case(seed=7):
    rng = np.random.default_rng(seed)
    n_classes, dim, n = 4, 10, 200
    centres = rng.normal(size=(n_classes, dim)) * 2
    labels = np.r_[np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)]
    scales = np.linspace(2, 0.1, dim)
    features = centres[labels] + rng.normal(size=(n, dim)) * scales
    weight, bias = centres + 0.1 * rng.normal(size=(n_classes, dim)), np.zeros(n_classes)
    pred = np.argmax(features @ weight.T + bias, axis=1)
    return features, labels, pred, weight, bias


def test_nc_regimes_reuse_the_csf_projections():
    features, labels, pred, weight, bias = _regime_case()
    assert (pred != labels).any() and (pred == labels).any()
    out = nc.nc_regimes(features, labels, pred, weight, bias, {"global": 0.8, "class": 0.7})
    assert tuple(out) == nc.REGIMES
    assert out["none"] == nc.nc_metrics(features, labels, weight, bias)

    correct = pred == labels
    pca = Pca.fit(features[correct])
    global_view = project(features, pca.mean, pca.basis(0.8))
    assert out["global"] == pytest.approx(nc.nc_metrics(global_view, labels, weight, bias), rel=1e-12)

    pcas = [Pca.fit(features[rows]) for rows in class_fit_data(features, labels, correct, 4)]
    subspaces = ClassSubspaces.from_pcas(pcas, 0.7)
    pred_view = class_views(features, pred, subspaces, weight, bias).pred
    np.testing.assert_allclose(nc.class_pred_projection(features, labels, pred, 0.7, 4), pred_view, atol=1e-10)
    np.testing.assert_allclose(nc.project_predicted(features, pred, subspaces), pred_view, atol=1e-10)
    assert out["class_pred"] == pytest.approx(nc.nc_metrics(pred_view, labels, weight, bias), rel=1e-8)

    for regime in nc.REGIMES:   # the weight metrics do not depend on the regime
        assert {k: out[regime][k] for k in nc.WEIGHT_METRICS} == {k: out["none"][k] for k in nc.WEIGHT_METRICS}
    assert out["global"][nc.VAR_COLLAPSE] != pytest.approx(out["none"][nc.VAR_COLLAPSE])


def test_nc_regimes_with_all_variance_kept_is_the_identity():
    features, labels, pred, weight, bias = _regime_case(8)
    out = nc.nc_regimes(features, labels, pred, weight, bias, 1.0, normalizer="papyan")
    for regime in ("global", "class_pred"):
        assert out[regime] == pytest.approx(out["none"], rel=1e-8), regime


@pytest.mark.parametrize("variance, match", [(0.0, "variance must be in"), (1.5, "variance must be in"),
                                             ({"global": 0.9}, "no variance .* for the class projection"),
                                             (None, "no variance .* for the global projection")])
def test_nc_regimes_bad_variance(variance, match):
    features, labels, pred, weight, bias = _regime_case()
    with pytest.raises(ValueError, match=match):
        nc.nc_regimes(features, labels, pred, weight, bias, variance)


def test_nc_regimes_with_fitted_projection_states():
    """The CSF engine's projection states (as fit_projection returns and fit.h5 stores them) give the
    same result as refitting with their variances; groups can be mixed."""
    features, labels, pred, weight, bias = _regime_case(9)
    correct = pred == labels
    pca = Pca.fit(features[correct])
    pcas = [Pca.fit(features[rows]) for rows in class_fit_data(features, labels, correct, 4)]
    states = {"global": {"group": "global", "variance": 0.85, "mean": pca.mean, "basis": pca.basis(0.85)},
              "class": {"group": "class", "variance": 0.6, "subspaces": ClassSubspaces.from_pcas(pcas, 0.6)}}
    refit = nc.nc_regimes(features, labels, pred, weight, bias, {"global": 0.85, "class": 0.6})
    given = nc.nc_regimes(features, labels, pred, weight, bias, projections=states)
    mixed = nc.nc_regimes(features, labels, pred, weight, bias, {"class": 0.6},
                          projections={"global": states["global"]})
    for regime in nc.REGIMES:
        assert given[regime] == pytest.approx(refit[regime], rel=1e-12)
        assert mixed[regime] == pytest.approx(refit[regime], rel=1e-12)
    with pytest.raises(ValueError, match="needs 'mean' and 'basis'"):
        nc.nc_regimes(features, labels, pred, weight, bias, 0.9, projections={"global": {"basis": pca.basis(0.9)}})
    with pytest.raises(ValueError, match="feature dimension D = 10"):
        nc.nc_regimes(features, labels, pred, weight, bias, 0.9,
                      projections={"global": {"mean": pca.mean[:3], "basis": pca.basis(0.9)}})
    with pytest.raises(ValueError, match="unknown keys"):
        nc.nc_regimes(features, labels, pred, weight, bias, 0.9, projections={"class_pred": states["class"]})


def test_nc_regimes_bad_pred():
    features, labels, pred, weight, bias = _regime_case()
    with pytest.raises(ValueError, match="pred must be 1-D"):
        nc.nc_regimes(features, labels, pred[:-1], weight, bias, 0.9)
    with pytest.raises(ValueError, match=r"pred must lie in \[0, 4\)"):
        nc.nc_regimes(features, labels, np.where(pred == 0, 4, pred), weight, bias, 0.9)


# ---------------------------------------------------------------- bad input

def _bad(**changes):
    features, labels, weight = _hand_case()
    kwargs = {"features": features, "labels": labels, "weight": weight, "bias": np.zeros(3)}
    kwargs.update(changes)
    return kwargs


@pytest.mark.parametrize("kwargs, match", [
    (_bad(labels=np.array([0, 0, 2, 2, 2, 2])), r"class\(es\) 1 of C = 3 have no training sample"),
    (_bad(labels=np.array([0, 0, 1, 1, 2])), "one entry per feature row"),
    (_bad(labels=np.array([0, 0, 1, 1, 2, -1])), r"labels must lie in \[0, 3\)"),
    (_bad(labels=np.array([0, 0, 1, 1, 2, 3])), r"labels must lie in \[0, 3\)"),
    (_bad(labels=np.array([0, 0, 1, 1, 2, np.nan])), "integer class indices"),
    (_bad(labels=np.array([0, 0, 1, 1, 2, 1.5])), "integer class indices"),
    (_bad(features=np.ones(6)), "2-D array"),
    (_bad(features=np.ones((6, 3))), "weight has 2 columns but the features have D = 3"),
    (_bad(features=np.where(np.eye(6, 2, -3) > 0, np.nan, _hand_case()[0])), "NaN or infinite values .*row 3"),
    (_bad(features=np.full((6, 2), np.inf)), "NaN or infinite"),
    (_bad(features=np.array([["a", "b"]] * 6)), "real numbers"),
    (_bad(weight=np.array([[np.nan, 0.0], [1, 1], [2, 2]])), "weight contains NaN"),
    (_bad(weight=np.ones(3)), "weight must be a 2-D array"),
    (_bad(bias=np.zeros(2)), r"bias must have shape \(3,\)"),
    (_bad(normalizer="mean"), "normalizer must be one of"),
    (_bad(n_classes=4), r"n_classes must be in \[2, 3\]"),
    (_bad(labels=np.zeros(6, int), weight=np.ones((1, 2)), bias=np.zeros(1)), "at least 2 classes"),
    (_bad(features=np.ones((6, 2))), "all class means coincide"),
    # class 2's mean equals the global mean: its cosines are undefined
    (_bad(features=np.array([[1.0, 0], [1, 0], [-1, 0], [-1, 0], [0, 5], [0, -5]])), "row 2 is zero"),
])
def test_bad_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nc.nc_metrics(**kwargs)


def test_bad_input_single_functions():
    features, labels, weight = _hand_case()
    with pytest.raises(ValueError, match="no training sample"):
        nc.var_collapse(features, np.array([0, 0, 2, 2, 2, 2]))
    with pytest.raises(ValueError, match="class means coincide"):
        nc.var_collapse(np.ones((6, 2)), labels)
    with pytest.raises(ValueError, match="normalizer"):
        nc.var_collapse(features, labels, normalizer="N")
    with pytest.raises(ValueError, match="same shape"):
        nc.self_duality(weight, weight[:2])
    with pytest.raises(ValueError, match="at least 2 rows"):
        nc.equinorm(weight[:1])
    with pytest.raises(ValueError, match="all rows are zero"):
        nc.equinorm(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN"):
        nc.equiangularity(np.array([[1.0, np.nan], [1, 0]]))


# ---------------------------------------------------------------- scale

def test_memory_bounded_at_paper_scale():
    """N = 50,000, D = 512, C = 100 (float32): no N×N or N×D float64 copy; peak allocation besides
    the input stays far below one N×D float64 array (205 MB): ≈ 43 MB with 4096-row chunks."""
    rng = np.random.default_rng(0)
    n, dim, n_classes = 50_000, 512, 100
    labels = np.arange(n) % n_classes
    features = rng.standard_normal((n, dim), dtype=np.float32)
    features += rng.standard_normal((n_classes, dim), dtype=np.float32)[labels]
    weight = rng.standard_normal((n_classes, dim))
    tracemalloc.start()
    try:
        metrics = nc.nc_metrics(features, labels, weight, np.zeros(n_classes))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(np.isfinite(v) and v >= 0 for v in metrics.values())
    assert peak < 60e6, f"peak allocation {peak / 1e6:.0f} MB"
