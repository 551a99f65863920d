"""Distance-controlled AUROC (Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering Modern
Out-of-Distribution Detection Algorithms", ICLR 2024, §4.2, Fig. 10, App. C): exact nearest-neighbour
distances against scipy's brute force, equal-count bins and per-bin AUROC on fixtures with known
answers and against scikit-learn, OLS standard errors against statsmodels and scipy."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import linregress
from sklearn.metrics import roc_auc_score

from csfbench import metrics as m
from csfbench.analysis import distance as dist
from csfbench.csf.knn import knn_fit, knn_score


def brute_nearest(query, reference):
    d = cdist(np.asarray(query, np.float64), np.asarray(reference, np.float64))
    return d.min(axis=1), d.argmin(axis=1)


# ---------------------------------------------------------------- nearest neighbours


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nearest_distance_matches_brute_force(dtype):
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(700, 24)).astype(dtype)
    query = rng.normal(size=(1100, 24)).astype(dtype)  # several blocks
    got, index = dist.nearest_neighbour_distance(query, reference, return_index=True)
    want, want_index = brute_nearest(query, reference)
    np.testing.assert_array_equal(index, want_index)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert got.dtype == np.float64 and index.dtype == np.int64


def test_nearest_distance_is_exact_far_from_the_origin():
    """Centring on the reference mean: a large common offset does not cost precision."""
    rng = np.random.default_rng(1)
    base = rng.normal(size=(300, 16))
    query = base[:50] + rng.normal(scale=1e-3, size=(50, 16))
    offset = 1e4
    got, index = dist.nearest_neighbour_distance(query + offset, base + offset, return_index=True)
    want, want_index = brute_nearest(query, base)
    np.testing.assert_array_equal(index, want_index)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_nearest_distance_normalized_matches_knn_with_k1():
    rng = np.random.default_rng(2)
    reference = rng.normal(size=(400, 32)).astype(np.float32)
    query = rng.normal(size=(90, 32)).astype(np.float32)
    got = dist.nearest_neighbour_distance(query, reference, normalize=True)
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    want = brute_nearest(unit(query.astype(np.float64)), unit(reference.astype(np.float64)))[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, -knn_score(knn_fit(reference), query, k=1), atol=1e-5)


def test_nearest_distance_zero_for_members_and_errors():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=(50, 8))
    got, index = dist.nearest_neighbour_distance(reference[[4, 9]], reference, return_index=True)
    np.testing.assert_array_equal(index, [4, 9])
    np.testing.assert_array_equal(got, [0.0, 0.0])
    with pytest.raises(ValueError, match="dimension 7"):
        dist.nearest_neighbour_distance(np.zeros((3, 7)), reference)
    with pytest.raises(ValueError, match="non-empty"):
        dist.nearest_neighbour_distance(np.zeros((0, 8)), reference)


# ---------------------------------------------------------------- bins and AUROC


def test_equal_count_bins_known_answer():
    d = np.array([9.0, 3.0, 5.0, 1.0, 7.0, 2.0, 8.0, 4.0, 6.0, 0.0])
    # sorted: 0 1 2 3 | 4 5 6 | 7 8 9  (np.array_split: 4, 3, 3)
    labels = dist.equal_count_bins(d, 3)
    np.testing.assert_array_equal(labels, [2, 0, 1, 0, 2, 0, 2, 1, 1, 0])
    ties = dist.equal_count_bins([1.0, 1.0, 1.0, 1.0], 2)  # stable: input order splits the tie
    np.testing.assert_array_equal(ties, [0, 0, 1, 1])
    with pytest.raises(ValueError, match="cannot fill"):
        dist.equal_count_bins([1.0, 2.0], 3)
    with pytest.raises(ValueError, match="positive integer"):
        dist.equal_count_bins([1.0, 2.0], 0)


def test_binned_auroc_known_answer():
    id_conf = [0.0, 1.0, 2.0, 3.0]
    # distances 1..6 (shuffled), two samples per bin
    query_dist = np.array([6.0, 1.0, 3.0, 5.0, 2.0, 4.0])
    query_conf = np.array([1.0, 10.0, 1.5, -1.0, 10.0, 1.5])
    frame = dist.binned_auroc(id_conf, query_conf, query_dist, n_bins=3)
    np.testing.assert_array_equal(frame["n"], [2, 2, 2])
    np.testing.assert_allclose(frame["distance_mean"], [1.5, 3.5, 5.5])
    np.testing.assert_allclose(frame["distance_min"], [1.0, 3.0, 5.0])
    np.testing.assert_allclose(frame["distance_max"], [2.0, 4.0, 6.0])
    # bin 0: both at 10 -> 0; bin 1: both at 1.5 -> 2/4; bin 2: -1 -> 1, 1 -> (2 + ½)/4
    np.testing.assert_allclose(frame["auroc"], [0.0, 0.5, (1.0 + 0.625) / 2])


@pytest.mark.parametrize("seed", range(3))
def test_binned_auroc_matches_sklearn_per_bin(seed):
    rng = np.random.default_rng(seed)
    id_conf = rng.integers(0, 12, 400) / 12
    query_conf = rng.integers(0, 12, 337) / 12 - 0.2
    query_dist = rng.gamma(2.0, size=337)
    frame = dist.binned_auroc(id_conf, query_conf, query_dist, n_bins=10)
    labels = dist.equal_count_bins(query_dist, 10)
    for k in range(10):
        chunk = query_conf[labels == k]
        want = roc_auc_score(np.r_[np.ones(400), np.zeros(chunk.size)], np.r_[id_conf, chunk])
        assert frame.loc[k, "auroc"] == pytest.approx(want, abs=1e-12)
    whole = dist.auroc_against(id_conf, query_conf)
    data = m.build_scheme("shiftdetect", id_conf, None, query_conf)
    assert whole == pytest.approx(m.auroc(data.confidence, data.residual), abs=1e-12)


# ---------------------------------------------------------------- OLS


def test_ols_matches_statsmodels_and_scipy():
    import statsmodels.api as sm  # a test dependency (pyproject.toml)
    rng = np.random.default_rng(4)
    x = rng.uniform(0.4, 1.0, 100)
    y = 0.8 + 0.05 * x + rng.normal(0, 0.02, 100)
    fit = dist.ols_fit(x, y)
    model = sm.OLS(y, sm.add_constant(x)).fit()
    np.testing.assert_allclose([fit.intercept, fit.slope], model.params, rtol=1e-10)
    np.testing.assert_allclose([fit.intercept_se, fit.slope_se], model.bse, rtol=1e-10)
    assert fit.r_squared == pytest.approx(model.rsquared, rel=1e-10)
    ref = linregress(x, y)
    assert (fit.slope, fit.intercept) == pytest.approx((ref.slope, ref.intercept), rel=1e-10)
    assert (fit.slope_se, fit.intercept_se) == pytest.approx((ref.stderr, ref.intercept_stderr), rel=1e-10)
    grid = np.linspace(0.3, 1.1, 7)
    lower, upper = dist.confidence_band(fit, grid)
    frame = model.get_prediction(sm.add_constant(grid)).summary_frame(alpha=0.05)
    np.testing.assert_allclose(lower, frame["mean_ci_lower"], rtol=1e-10)
    np.testing.assert_allclose(upper, frame["mean_ci_upper"], rtol=1e-10)


def test_ols_hand_values_and_errors():
    fit = dist.ols_fit([0.0, 1.0, 2.0], [1.0, 3.0, 2.0])
    # slope 0.5, intercept 1.5, residuals -0.5, 1, -0.5: SSR 1.5, sigma² 1.5, Sxx 2
    assert (fit.slope, fit.intercept) == pytest.approx((0.5, 1.5))
    assert fit.slope_se == pytest.approx(np.sqrt(1.5 / 2))
    assert fit.intercept_se == pytest.approx(np.sqrt(1.5 * (1 / 3 + 1 / 2)))
    assert fit.interval("slope", 2.0) == pytest.approx((0.5 - 2 * fit.slope_se, 0.5 + 2 * fit.slope_se))
    with pytest.raises(ValueError, match="at least 3"):
        dist.ols_fit([0.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="every x is the same"):
        dist.ols_fit([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="parameter"):
        fit.interval("slop")


def _fit(intercept, intercept_se, slope=0.0, slope_se=0.01):
    return dist.OLSFit(slope=slope, intercept=intercept, slope_se=slope_se, intercept_se=intercept_se, n=100,
                       sigma=0.0, x_mean=0.7, sxx=1.0, r_squared=0.0)


@pytest.mark.parametrize("r, ood, overlap", [
    ((0.804, 0.007), (0.791, 0.007), True),    # MSP (Fig. 10): (0.790, 0.818) vs (0.777, 0.805)
    ((0.862, 0.006), (0.767, 0.006), False),   # Energy: App. C's (0.85, 0.874) vs (0.755, 0.779)
    ((0.812, 0.005), (0.701, 0.007), False),   # ViM
    ((0.738, 0.007), (0.402, 0.016), False),   # ReAct
])
def test_intercept_overlap_on_the_papers_fig10_values(r, ood, overlap):
    assert dist.intervals_overlap(_fit(*r), _fit(*ood)) is overlap
    assert dist.intervals_overlap(_fit(0.5, 0.01), _fit(0.54, 0.01))  # touching at 0.52 counts


def test_distance_controlled_auroc_known_line():
    """ID scores all 0; in bin k (distance ≈ k + 1) a fraction 0.2 + 0.1·k of the query scores lie below
    (AUROC credit 1) and the rest above (credit 0): AUROC = 0.1 + 0.1·distance exactly."""
    id_scores = {"A": np.zeros(30), "B": np.zeros(30)}
    distances, conf_a = [], []
    for k in range(5):
        below = 2 + k
        distances += [k + 1 + 1e-3 * j for j in range(10)]
        conf_a += [-1.0] * below + [1.0] * (10 - below)
    distances = np.array(distances) - 0.0045  # bin means exactly k + 1
    conf_a = np.array(conf_a)
    queries = {"near": (distances, {"A": conf_a, "B": -conf_a}), "far": (distances + 1, {"A": conf_a, "B": conf_a})}
    bins, fits = dist.distance_controlled_auroc(id_scores, queries, n_bins=5)
    assert len(bins) == 2 * 2 * 5 and list(bins.columns[:2]) == ["query_set", "csf"]
    assert tuple(fits.columns) == dist.FIT_COLUMNS
    assert tuple(dist.distance_controlled_auroc(id_scores, {})[1].columns) == dist.FIT_COLUMNS  # no query set
    near_a = bins[(bins.query_set == "near") & (bins.csf == "A")]
    np.testing.assert_allclose(near_a["distance_mean"], [1, 2, 3, 4, 5])
    np.testing.assert_allclose(near_a["auroc"], [0.2, 0.3, 0.4, 0.5, 0.6])
    row = fits.set_index(["query_set", "csf"]).loc[("near", "A")]
    assert (row["slope"], row["intercept"]) == pytest.approx((0.1, 0.1))
    assert row["slope_se"] == pytest.approx(0.0, abs=1e-12) and row["intercept_se"] == pytest.approx(0.0, abs=1e-12)
    far = fits.set_index(["query_set", "csf"]).loc[("far", "A")]
    assert (far["slope"], far["intercept"]) == pytest.approx((0.1, 0.0))  # shifted by one distance unit
    flags = dist.overlap_table(fits)  # query sets compared per CSF
    assert list(flags["csf"]) == ["A", "B"] and not flags.loc[0, "overlap"]
    by_set = dist.overlap_table(fits, compare="csf", within="query_set", parameter="slope")
    assert list(by_set["query_set"]) == ["near", "far"]
    assert not by_set.loc[0, "overlap"]  # near: +0.1 vs -0.1 with zero SE
    assert by_set.loc[1, "overlap"]  # far: identical fits
    with pytest.raises(ValueError, match="lacks scores"):
        dist.distance_controlled_auroc({"A": np.zeros(3), "C": np.zeros(3)}, queries, n_bins=5)
