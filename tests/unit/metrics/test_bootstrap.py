"""csfbench.metrics.bootstrap: weighted replicates equal the metric on the explicit resample; percentile
intervals cover the true value of a binormal model at the nominal rate; validation."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from csfbench.metrics import MetricInputError, UndefinedMetricError, UnknownMetricError, metric
from csfbench.metrics.bootstrap import CHUNK, SUPPORTED, _draw, _replicate_values, _Sorted, interval, replicates


def as_counts(picks: np.ndarray, n: int) -> np.ndarray:
    """Drawn sample indices (replicates × draws) as count vectors (replicates × n)."""
    return np.array([np.bincount(row, minlength=n) for row in picks])


def tied_data(n: int = 60, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Confidences on a grid of 0.5 (ties within and across classes), labels with both classes, and a failure in
    the most confident tie group (so the start of the risk–coverage curves carries a non-zero risk)."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.35).astype(float)
    confidence = np.round(rng.normal(0.5 * (1.0 - labels), 1.0) * 2) / 2
    labels[np.argmax(confidence)] = 1.0
    return confidence, labels


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_weighted_replicate_equals_metric_on_explicit_resample(name):
    confidence, labels = tied_data()
    rng = np.random.default_rng(7)
    counts = rng.multinomial(confidence.size, np.full(confidence.size, 1 / confidence.size), size=150)
    kept = [c for c in counts if labels[c > 0].min() == 0 and labels[c > 0].max() == 1]
    counts = np.array(kept)
    fast = replicates(name, confidence, labels, counts)
    explicit = [metric(name)(np.repeat(confidence, c), np.repeat(labels, c)) for c in counts]
    np.testing.assert_allclose(fast, explicit, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SUPPORTED))
@pytest.mark.parametrize("stratify", [True, False])
def test_interval_replicates_equal_metric_on_the_drawn_resample(name, stratify):
    # the path interval() takes (drawn indices -> one bincount per chunk) against the explicit resample of
    # the same draws, over more than one chunk
    confidence, labels = tied_data(n=80, seed=3)
    members = ([np.flatnonzero(labels == 0), np.flatnonzero(labels == 1)] if stratify
               else [np.arange(labels.size)])
    n_boot = CHUNK + 16
    fast = _replicate_values((name,), _Sorted(confidence, labels), np.random.default_rng(0), n_boot, members)[name]
    rng = np.random.default_rng(0)
    picks = np.concatenate([_draw(rng, min(CHUNK, n_boot - i), members) for i in range(0, n_boot, CHUNK)])
    explicit = [metric(name)(confidence[p], labels[p]) for p in picks]
    np.testing.assert_allclose(fast, explicit, rtol=0, atol=1e-12)
    counts = as_counts(picks, labels.size)
    np.testing.assert_allclose(replicates(name, confidence, labels, counts), explicit, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_counts_of_ones_reproduce_the_metric(name):
    confidence, labels = tied_data(n=101, seed=5)
    ones = np.ones((1, confidence.size), dtype=int)
    assert replicates(name, confidence, labels, ones)[0] == pytest.approx(metric(name)(confidence, labels), abs=1e-12)


def test_stratification_keeps_class_sizes():
    confidence, labels = tied_data(n=90, seed=2)
    members = [np.flatnonzero(labels == 0), np.flatnonzero(labels == 1)]
    counts = as_counts(_draw(np.random.default_rng(4), 300, members), confidence.size)
    np.testing.assert_array_equal(counts[:, labels == 0].sum(axis=1), np.count_nonzero(labels == 0))
    np.testing.assert_array_equal(counts[:, labels == 1].sum(axis=1), np.count_nonzero(labels == 1))
    assert not np.array_equal(counts[0], counts[1])  # the draws differ between replicates
    unstratified = as_counts(_draw(np.random.default_rng(4), 300, [np.arange(confidence.size)]), confidence.size)
    np.testing.assert_array_equal(unstratified.sum(axis=1), confidence.size)
    assert np.unique(unstratified[:, labels == 1].sum(axis=1)).size > 1


def test_interval_is_deterministic_ordered_and_brackets_the_estimate():
    confidence, labels = tied_data(n=200, seed=8)
    first = interval("auroc", confidence, labels, n_boot=300, seed=11)
    assert first == interval("auroc", confidence, labels, n_boot=300, seed=11)
    assert first != interval("auroc", confidence, labels, n_boot=300, seed=12)
    assert first[0] < metric("auroc")(confidence, labels) < first[1]
    narrow = interval("auroc", confidence, labels, n_boot=300, seed=11, level=0.5)
    assert first[0] < narrow[0] < narrow[1] < first[1]
    low, high = interval("augrc", confidence, labels, n_boot=100, stratify=False)
    assert low < high


def _coverage(true: float, name: str, n_good: int, n_bad: int, shift: float, trials: int = 400) -> float:
    labels = np.r_[np.zeros(n_good), np.ones(n_bad)]
    hits = 0
    for trial in range(trials):
        rng = np.random.default_rng(1000 + trial)
        confidence = np.r_[rng.normal(shift, 1.0, n_good), rng.normal(0.0, 1.0, n_bad)]
        low, high = interval(name, confidence, labels, n_boot=500, seed=trial)
        hits += low <= true <= high
    return hits / trials


def test_auroc_interval_covers_the_binormal_auroc():
    # ID ~ N(d, 1), OOD ~ N(0, 1): AUROC = Φ(d / √2)
    d = 1.0
    assert 0.93 <= _coverage(float(norm.cdf(d / np.sqrt(2))), "auroc", 200, 200, d) <= 0.97


def test_augrc_interval_covers_the_binormal_augrc():
    # correct ~ N(d, 1), failures ~ N(0, 1), failure rate π: AUGRC = π(1 − π)(1 − AUROC) + π²/2 (the
    # generalized risk integrated over coverage, Traub et al. 2024); checked against a simulation of 2 × 10⁶
    # samples.  With stratified resampling π is fixed, so AUGRC is a decreasing affine map of AUROC here.
    d, n_good, n_bad = 1.5, 300, 100
    pi = n_bad / (n_good + n_bad)
    true = pi * (1 - pi) * (1 - float(norm.cdf(d / np.sqrt(2)))) + pi * pi / 2
    rng = np.random.default_rng(99)
    big_good, big_bad = 1_500_000, 500_000
    simulated = metric("augrc")(np.r_[rng.normal(d, 1.0, big_good), rng.normal(0.0, 1.0, big_bad)],
                                np.r_[np.zeros(big_good), np.ones(big_bad)])
    assert simulated == pytest.approx(true, abs=2e-4)
    assert 0.93 <= _coverage(true, "augrc", n_good, n_bad, d) <= 0.97


def test_validation_errors():
    confidence, labels = tied_data()
    with pytest.raises(MetricInputError, match="length mismatch"):
        interval("auroc", confidence[:-1], labels)
    with pytest.raises(UndefinedMetricError, match="no failures"):
        interval("auroc", confidence, np.zeros_like(labels))
    with pytest.raises(MetricInputError, match="non-finite"):
        interval("auroc", np.r_[np.nan, confidence[1:]], labels)
    with pytest.raises(MetricInputError, match="binary"):
        interval("auroc", confidence, labels * 0.5)
    for level in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="level"):
            interval("auroc", confidence, labels, level=level)
    for n_boot in (0, -3, 2.5):
        with pytest.raises(ValueError, match="n_boot"):
            interval("auroc", confidence, labels, n_boot=n_boot)
    with pytest.raises(ValueError, match="context array"):
        interval("oscr", confidence, labels)
    with pytest.raises(ValueError, match="not available"):
        interval("aurc@torch-uncertainty", confidence, labels)
    with pytest.raises(UnknownMetricError):
        interval("no_such_metric", confidence, labels)
    with pytest.raises(MetricInputError, match="shape"):
        replicates("auroc", confidence, labels, np.ones((2, confidence.size + 1), dtype=int))
    with pytest.raises(MetricInputError, match="non-negative integers"):
        replicates("auroc", confidence, labels, -np.ones((2, confidence.size), dtype=int))
    only_correct = np.where(labels == 0, 1, 0)[None, :]
    with pytest.raises(UndefinedMetricError, match="lack one label class"):
        replicates("auroc", confidence, labels, only_correct)
