"""The peers' metric conventions, each against the peer's own formula on the same arrays, and the metric registry.

Peer formulas are transcribed from their source (the line quoted in each oracle), at these commits:
OpenOOD 3c35632ee91b54b09d1f085d04f94744cece7d0b, openood/evaluators/metrics.py ``auc_and_fpr_recall``;
FD-Shifts c4467aec134e99691359da209f811d91283fc1e3, fd_shifts/analysis/metrics.py ``fpr_at_95_tpr`` and
``StatsCache.calibration_stats``.  Both call scikit-learn, which the oracles call the same way.  pytorch-ood 0.4's
functional metrics run unchanged.
"""
import math

import numpy as np
import pytest
from sklearn import metrics as skm

from csfbench import metrics as m
from csfbench.metrics import registry

SEEDS = range(6)


def tied_case(seed, n=400, levels=12):
    """Confidences on a coarse grid (many ties, equal steps), a mix of successes and failures."""
    rng = np.random.default_rng(seed)
    residual = (rng.random(n) < rng.uniform(0.15, 0.6)).astype(float)
    confidence = np.round(rng.integers(0, levels, n) / levels + 0.3 * (1 - residual) * rng.random(n), 1)
    return np.clip(confidence, 0, 1), residual


def openood_fpr(confidence, residual, tpr=0.95):
    """OpenOOD: ``fpr_list, tpr_list, _ = metrics.roc_curve(ood_indicator, -conf)``;
    ``fpr = fpr_list[np.argmax(tpr_list >= tpr_th)]``."""
    fpr_list, tpr_list, _ = skm.roc_curve(residual, -confidence)
    return fpr_list[np.argmax(tpr_list >= tpr)]


def openood_aupr(confidence, residual):
    """OpenOOD: ``metrics.auc(recall_in, precision_in)`` of ``precision_recall_curve(1 - ood_indicator, conf)``
    and the same with ``(ood_indicator, -conf)``."""
    p_in, r_in, _ = skm.precision_recall_curve(1 - residual, confidence)
    p_out, r_out, _ = skm.precision_recall_curve(residual, -confidence)
    return skm.auc(r_in, p_in), skm.auc(r_out, p_out)


def fd_shifts_fpr(confidence, residual):
    """FD-Shifts: ``fpr, tpr, _ = skm.roc_curve(correct, confids)``; ``np.min(fpr[np.argwhere(tpr >= 0.9495)])``."""
    fpr, tpr, _ = skm.roc_curve(1 - residual, confidence)
    return np.min(fpr[np.argwhere(tpr >= 0.9495)])


def fd_shifts_calibration(confidence, residual, n_bins=20):
    """FD-Shifts' ``calibration_stats`` then ``ece = dot(|acc - conf|, share)`` and ``mce = max |acc - conf|``."""
    prob = np.clip(confidence, 0, 1)
    correct = 1 - residual
    bins = np.linspace(0.0, 1.0 + 1e-8, n_bins + 1)
    ids = np.digitize(prob, bins) - 1
    sums = np.bincount(ids, weights=prob, minlength=len(bins))
    true = np.bincount(ids, weights=correct, minlength=len(bins))
    total = np.bincount(ids, minlength=len(bins))
    nz = total != 0
    gaps = np.abs(true[nz] / total[nz] - sums[nz] / total[nz])
    return float(np.dot(gaps, total[nz] / total.sum())), float(gaps.max())


@pytest.mark.parametrize("seed", SEEDS)
def test_openood_conventions_equal_its_evaluator(seed):
    conf, res = tied_case(seed)
    assert m.metric("fpr95@openood")(conf, res) == pytest.approx(openood_fpr(conf, res), abs=1e-12)
    assert m.metric("fpr99@openood")(conf, res) == pytest.approx(openood_fpr(conf, res, 0.99), abs=1e-12)
    want_in, want_out = openood_aupr(conf, res)
    assert m.metric("aupr_in@trapezoid")(conf, res) == pytest.approx(want_in, abs=1e-12)
    assert m.metric("aupr_out@trapezoid")(conf, res) == pytest.approx(want_out, abs=1e-12)
    fpr_list, tpr_list, _ = skm.roc_curve(res, -conf)  # OpenOOD: auroc = metrics.auc(fpr_list, tpr_list)
    assert m.metric("auroc")(conf, res) == pytest.approx(skm.auc(fpr_list, tpr_list), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_fd_shifts_conventions_equal_its_code(seed):
    conf, res = tied_case(seed)
    assert m.metric("fpr95@fd-shifts")(conf, res) == pytest.approx(fd_shifts_fpr(conf, res), abs=1e-12)
    ece, mce = fd_shifts_calibration(conf, res)
    assert m.metric("ece@fd-shifts")(conf, res) == pytest.approx(ece, abs=1e-12)
    assert m.metric("mce@fd-shifts")(conf, res) == pytest.approx(mce, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_pytorch_ood_functional_metrics_equal_the_preset_names(seed):
    from csfbench.torch_compat import ensure_torchvision

    ensure_torchvision()
    functional = pytest.importorskip("pytorch_ood.metrics.functional", reason="pytorch-ood (test extra) missing")
    import torch

    conf, res = tied_case(seed)
    outlier, labels = torch.as_tensor(-conf), torch.as_tensor(np.where(res == 1, -1, 0))
    assert m.metric("auroc")(conf, res) == pytest.approx(float(functional.auroc(outlier, labels)), abs=1e-12)
    assert m.metric("fpr95_failure_positive")(conf, res) == pytest.approx(
        float(functional.fpr_at_tpr(outlier, labels, 0.95)), abs=1e-12)
    assert m.metric("aupr_out@trapezoid")(conf, res) == pytest.approx(
        float(functional.aupr(outlier, labels, positive="ood")), abs=1e-12)
    assert m.metric("aupr_in@trapezoid")(conf, res) == pytest.approx(
        float(functional.aupr(outlier, labels, positive="id")), abs=1e-12)


def test_step_average_precision_stays_scikit_learn():
    conf, res = tied_case(1)
    assert m.aupr_in(conf, res) == pytest.approx(skm.average_precision_score(1 - res, conf), abs=1e-12)
    assert m.aupr_out(conf, res) == pytest.approx(skm.average_precision_score(res, -conf), abs=1e-12)


def test_trapezoid_aupr_hand_case():
    # successes scored 0.9, 0.7; failure 0.8: points (R, P) = (0.5, 1), (0.5, 0.5), (1, 2/3) after (0, 1)
    # trapezoids: 0.5·(1 + 1)/2 + 0 + 0.5·(0.5 + 2/3)/2 = 0.5 + 0.291667 = 0.791667; step AP: 0.5·1 + 0.5·2/3
    conf, res = [0.9, 0.8, 0.7], [0, 1, 0]
    assert m.aupr_in(conf, res, integration="trapezoid") == pytest.approx(0.5 + 0.5 * (0.5 + 2 / 3) / 2, abs=1e-12)
    assert m.aupr_in(conf, res) == pytest.approx(0.5 + 0.5 * 2 / 3, abs=1e-12)


def test_fd_shifts_tolerance_constructed_case():
    # 9,499 of 10,000 successes above every failure, 501 below them all: TPR 0.9499 is reached with no failure
    # accepted, which FD-Shifts' 0.9495 accepts (FPR 0); csfbench needs 0.95 and must accept every failure (FPR 1)
    conf = np.r_[np.full(9499, 0.9), np.full(501, 0.1), np.full(50, 0.5)]
    res = np.r_[np.zeros(10000), np.ones(50)]
    assert m.metric("fpr95")(conf, res) == 1.0
    assert m.metric("fpr95@fd-shifts")(conf, res) == 0.0
    assert fd_shifts_fpr(conf, res) == 0.0


def test_drop_intermediate_skips_a_collinear_point():
    # OOD (residual 1) flagged by ascending confidence in four equal steps of (1 OOD, 1 ID): the ROC points
    # (0.25, 0.25) … (1, 1) are collinear, so scikit-learn keeps only the ends and OpenOOD's first point with
    # TPR >= 0.5 is (1, 1), where every threshold reaching 0.5 of csfbench's curve has FPR 0.5
    conf = np.repeat([0.1, 0.2, 0.3, 0.4], 2)
    res = np.tile([1.0, 0.0], 4)
    assert m.fpr_at_tpr(conf, res, 0.5, positive="failure") == 0.5
    assert m.fpr_at_tpr(conf, res, 0.5, positive="failure", rule="openood") == 1.0
    assert openood_fpr(conf, res, 0.5) == 1.0


def test_calibration_bin_edge_rule():
    # 0.5 lies on the edge of bins [0.45, 0.5) and [0.5, 0.55): csfbench puts it in the upper bin with 0.52,
    # FD-Shifts in the lower one with 0.46
    conf, res = [0.46, 0.5, 0.52], [1, 0, 0]
    # csfbench: bins {0.46: acc 0} and {0.5, 0.52: acc 1}: (1/3)·0.46 + (2/3)·|1 − 0.51| = 0.48
    assert m.ece(conf, res) == pytest.approx(0.46 / 3 + 2 / 3 * 0.49, abs=1e-12)
    # FD-Shifts: {0.46, 0.5: acc 0.5, conf 0.48} and {0.52: acc 1}: (2/3)·0.02 + (1/3)·0.48 = 0.173333
    assert m.ece(conf, res, binning="fd-shifts") == pytest.approx(2 / 3 * 0.02 + 0.48 / 3, abs=1e-12)
    assert m.mce(conf, res, binning="fd-shifts") == pytest.approx(0.48, abs=1e-12)


def test_bad_convention_arguments():
    with pytest.raises(ValueError, match="rule must be one of"):
        m.fpr_at_tpr([0.1, 0.2], [0, 1], rule="sklearn")
    with pytest.raises(ValueError, match="integration must be one of"):
        m.aupr_in([0.1, 0.2], [0, 1], integration="spline")
    with pytest.raises(ValueError, match="binning must be one of"):
        m.ece([0.1, 0.2], [0, 1], binning="lower")


# ---------------------------------------------------------------- the registry

def _joint_case(seed=0, n_id=300, n_ood=200):
    """A ``failure`` scheme set with a separating confidence: correct ID high, errors mid, OOD low."""
    rng = np.random.default_rng(seed)
    correct = rng.random(n_id) < 0.7
    id_conf = np.where(correct, 0.6 + 0.4 * rng.random(n_id), 0.3 + 0.4 * rng.random(n_id))
    ood_conf = 0.5 * rng.random(n_ood)
    labels = rng.integers(0, 4, n_id)
    return id_conf, correct, ood_conf, labels


def _all_names():
    names = {name for preset in registry.PRESETS.values() for name in preset}
    names |= {"brier", "sgr_coverage@risk0.2_delta0.01", "risk@coverage0.5", "coverage@risk0.1",
              "scod_aurc@cost0.3", "ccr@fpr0.05", "auroc@dkwm@0.05", "fpr95_failure_positive@simes@0.1",
              "fpr99", "fpr99_failure_positive", "fpr99@openood"}
    return sorted(names)


@pytest.mark.parametrize("name", _all_names())
def test_every_metric_is_oriented(name):
    """Orientation of every metric name: the separating confidence beats its reverse, in the direction
    :func:`higher_is_better` states."""
    id_conf, correct, ood_conf, labels = _joint_case()
    spec = m.metric_spec(name)
    scheme = "misclf" if "labels" in spec.needs else "failure"
    good = m.build_scheme(scheme, id_conf, correct, None if scheme == "misclf" else ood_conf,
                          id_labels=labels if scheme == "misclf" else None)
    if spec.probability:
        flipped = 1 - good.confidence
    else:
        flipped = -good.confidence
    context = {need: getattr(good, need) for need in spec.needs}
    better = spec.function(good.confidence, good.residual, **context)
    worse = spec.function(flipped, good.residual, **context)
    assert math.isfinite(better) and math.isfinite(worse)
    if spec.higher_is_better:
        assert better > worse, (name, better, worse)
    else:
        assert better < worse, (name, better, worse)


def test_metric_names_resolve_presets_in_order_without_repeats():
    names = m.metric_names(("csfbench", "openood"), ("brier", "auroc"))
    assert names[:13] == m.DEFAULT_METRICS
    assert names[13:] == ("aupr_in@trapezoid", "aupr_out@trapezoid", "fpr95@openood", "ccr@fpr0.0001",
                          "ccr@fpr0.001", "ccr@fpr0.01", "ccr@fpr0.1", "brier")
    with pytest.raises(ValueError, match="unknown convention"):
        m.metric_names(("sklearn",))


def test_unknown_and_out_of_range_names_are_errors_listing_the_known_ones():
    with pytest.raises(m.UnknownMetricError, match=r"unknown metric 'fpr95@sklearn'.*fpr95@openood"):
        m.metric("fpr95@sklearn")
    with pytest.raises(m.UnknownMetricError, match="outside"):
        m.metric("risk@coverage1.5")
    with pytest.raises(m.UnknownMetricError, match="outside"):
        m.metric("ccr@fpr0")
    with pytest.raises(m.UnknownMetricError, match="unknown metric"):
        m.metric("auroc@dkwm@2")


def test_conformal_names_are_the_conformal_functions():
    from csfbench.metrics.conformal import conformal_auroc, conformal_fpr_at_tpr

    id_conf, _, ood_conf, _ = _joint_case()
    conf, res = np.r_[id_conf, ood_conf], np.r_[np.zeros(id_conf.size), np.ones(ood_conf.size)]
    assert m.metric("auroc@dkwm@0.05")(conf, res) == conformal_auroc(id_conf, ood_conf, 0.05, "dkwm")
    assert m.metric("fpr99_failure_positive@simes@0.1")(conf, res) == conformal_fpr_at_tpr(
        id_conf, ood_conf, 0.1, "simes", 0.99)
    assert m.higher_is_better("auroc@dkwm@0.05") and not m.higher_is_better("fpr95_failure_positive@dkwm@0.05")


def test_evaluate_computes_every_preset_where_it_applies():
    id_conf, correct, ood_conf, labels = _joint_case()
    names = m.metric_names(tuple(registry.PRESETS))
    failure = m.evaluate(m.build_scheme("failure", id_conf, correct, ood_conf), names)
    misclf = m.evaluate(m.build_scheme("misclf", id_conf, correct, id_labels=labels), names)
    joint = {n for n in names if m.metric_spec(n).schemes}
    needs_labels = {n for n in names if "labels" in m.metric_spec(n).needs}
    assert set(failure) == set(names) - needs_labels
    assert set(misclf) == set(names) - joint
    # the weighted AUROC of the failure scheme, the same value through the registry
    built = m.build_scheme("failure", id_conf, correct, ood_conf)
    assert failure["auroc"] == m.auroc(built.confidence, built.residual, sample_weight=built.weight)


def test_default_rows_are_unchanged_by_the_registry():
    """The thirteen default names give the values the functions give directly (the results table's rows)."""
    id_conf, correct, ood_conf, _ = _joint_case(3)
    built = m.build_scheme("correct_vs_ood", id_conf, correct, ood_conf)
    got = m.evaluate(built)
    assert tuple(got) == m.DEFAULT_METRICS
    assert got["fpr95"] == m.fpr_at_tpr(built.confidence, built.residual, 0.95)
    assert got["aupr_out"] == m.aupr_out(built.confidence, built.residual)
    assert got["ece"] == m.ece(built.confidence, built.residual)
