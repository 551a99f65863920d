"""Open-set metrics: AUTC, OSCR and CCR@FPR — hand-computed values, orientation, ties, bad input, and
golden tests against pytorch-ood 0.4 (AUTC, OSCR) and a transcription of OpenOOD (CCR@FPR)."""
import math

import numpy as np
import pytest

from csfbench.metrics import MetricInputError, UndefinedMetricError
from csfbench.metrics.open_set import autc, ccr_at_fpr, oscr

# failure-scheme set of 5 samples: A correct ID, B OOD, C correct ID, D misclassified ID, E OOD
CONF = [0.9, 0.8, 0.7, 0.6, 0.5]
RES = [0, 1, 0, 1, 1]
SHIFTED = [0, 1, 0, 0, 1]


def pytorch_ood_functional():
    from csfbench.torch_compat import ensure_torchvision

    ensure_torchvision()
    return pytest.importorskip("pytorch_ood.metrics.functional", reason="pytorch-ood (test extra) is not installed")


def random_failure_set(rng, n, decimals):
    """Confidences rounded to ``decimals`` (many ties), ~30 % OOD, ~25 % of the ID samples misclassified."""
    conf = np.round(rng.random(n), decimals)
    shifted = rng.random(n) < 0.3
    shifted[:2] = [True, False]  # both groups present
    res = (shifted | (rng.random(n) < 0.25)).astype(float)
    return conf, res, shifted


# ---------------------------------------------------------------- AUTC


def test_autc_hand_computed():
    # min 0.1, max 0.9: s = (0.9 - c) / 0.8 = [0, 0.25, 0.5, 1]; ID mean s = 0.125,
    # OOD mean (1 - s) = (0.5 + 0) / 2 = 0.25; AUTC = (0.125 + 0.25) / 2 = 0.1875
    assert autc([0.9, 0.7, 0.5, 0.1], [0, 0, 1, 1]) == pytest.approx(0.1875, abs=1e-15)


def test_autc_extremes_and_orientation():
    assert autc([1.0, 1.0, 0.0, 0.0], [0, 0, 1, 1]) == 0.0
    assert autc([0.0, 0.0, 1.0, 1.0], [0, 0, 1, 1]) == 1.0
    # same four values, ID given the two largest (s = [0, 0.375 | 0.625, 1]) -> (0.1875 + 0.1875) / 2
    good = autc([0.9, 0.6, 0.4, 0.1], [0, 0, 1, 1])
    # ID given 0.9 and 0.4 (s = [0, 0.625 | 0.375, 1]) -> (0.3125 + 0.3125) / 2
    bad = autc([0.9, 0.4, 0.6, 0.1], [0, 0, 1, 1])
    assert good == pytest.approx(0.1875) and bad == pytest.approx(0.3125)
    assert good < bad


def test_autc_ties():
    # the ID and OOD sample at 0.8 tie: s = (0.8 - c) / 0.8 = [0, 0, 0.5, 1]; ID s = [0, 0.5] -> 0.25,
    # OOD 1 - s = [1, 0] -> 0.5; AUTC = 0.375, whatever the order of the samples
    conf, res = np.array([0.8, 0.8, 0.4, 0.0]), np.array([0, 1, 0, 1])
    assert autc(conf, res) == pytest.approx(0.375, abs=1e-15)
    perm = [3, 1, 2, 0]
    assert autc(conf[perm], res[perm]) == pytest.approx(0.375, abs=1e-15)


def test_autc_bad_input():
    with pytest.raises(UndefinedMetricError, match="constant"):
        autc([0.5, 0.5, 0.5], [0, 1, 1])
    with pytest.raises(UndefinedMetricError, match="no failures"):
        autc([0.1, 0.2], [0, 0])
    with pytest.raises(UndefinedMetricError, match="no successes"):
        autc([0.1, 0.2], [1, 1])
    with pytest.raises(MetricInputError, match="binary"):
        autc([0.1, 0.2, 0.3], [0, 0.5, 1])
    with pytest.raises(MetricInputError, match="length mismatch"):
        autc([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(MetricInputError, match="non-finite"):
        autc([0.1, np.nan, 0.3], [0, 1, 1])


@pytest.mark.parametrize("seed", range(6))
def test_autc_matches_pytorch_ood(seed):
    """Golden: pytorch_ood.metrics.functional.autc (0.4.0) on scores -confidence, labels -1 = OOD."""
    functional = pytorch_ood_functional()
    import torch

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    conf = np.round(rng.normal(size=n) * 3, int(rng.integers(0, 3)))  # any range, many ties
    res = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(float)
    res[:2] = [0, 1]
    labels = torch.tensor(np.where(res == 1, -1, 0))
    want = float(functional.autc(torch.tensor(-conf, dtype=torch.float64), labels))
    assert autc(conf, res) == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------- OSCR


def test_oscr_hand_computed():
    # n_ID = 3 (A, C, D), n_OOD = 2 (B, E). Accepting by descending confidence, (FPR, CCR):
    # 0.9 -> (0, 1/3); 0.8 -> (1/2, 1/3); 0.7 -> (1/2, 2/3); 0.6 -> (1/2, 2/3); 0.5 -> (1, 2/3).
    # Area = 1/2 * 1/3 + 1/2 * 2/3 = 1/2 (ID accuracy 2/3)
    assert oscr(CONF, RES, shifted=SHIFTED) == pytest.approx(0.5, abs=1e-15)


def test_oscr_ties_follow_pytorch_ood_not_the_paper():
    # B (OOD) ties with A (correct ID) at 0.9: CCR and FPR step together, (0, 0) -> (1/2, 1/3),
    # a diagonal of area 1/2 * 1/6 = 1/12; then (1/2, 2/3) and (1, 2/3): + 1/3. Total 5/12.
    # The paper's pessimistic rule (OOD of the tie first) would give 0 + 1/3 = 4/12.
    conf = [0.9, 0.9, 0.7, 0.6, 0.5]
    assert oscr(conf, RES, shifted=SHIFTED) == pytest.approx(5 / 12, abs=1e-15)
    # a constant confidence is one diagonal (0, 0) -> (1, 2/3): half the ID accuracy
    assert oscr([0.5] * 5, RES, shifted=SHIFTED) == pytest.approx(1 / 3, abs=1e-15)


def test_oscr_orientation_and_bounds():
    # perfect: both correct ID above every OOD sample -> CCR 2/3 at FPR 0 -> OSCR = accuracy 2/3
    best = oscr([0.9, 0.2, 0.8, 0.5, 0.1], RES, shifted=SHIFTED)
    worst = oscr([0.1, 0.9, 0.2, 0.5, 0.8], RES, shifted=SHIFTED)
    assert best == pytest.approx(2 / 3, abs=1e-15)
    assert worst == pytest.approx(0.0, abs=1e-15)
    assert worst < oscr(CONF, RES, shifted=SHIFTED) < best


@pytest.mark.parametrize("seed", range(8))
def test_oscr_matches_pytorch_ood(seed):
    """Golden: pytorch_ood.metrics.functional.oscr_score (0.4.0) with outlier score -confidence, label 0
    for ID and -1 for OOD, prediction 0 for a correct and 1 for a misclassified ID sample."""
    functional = pytorch_ood_functional()
    import torch

    rng = np.random.default_rng(100 + seed)
    conf, res, shifted = random_failure_set(rng, int(rng.integers(20, 400)), 1 + seed % 2)
    labels = torch.tensor(np.where(shifted, -1, 0))
    predictions = torch.tensor(np.where(shifted | (res == 0), 0, 1))
    want = functional.oscr_score(torch.tensor(-conf, dtype=torch.float64), predictions, labels)
    assert oscr(conf, res, shifted=shifted) == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------- CCR@FPR


def openood_ccr_fpr(conf, fpr, pred, label):
    """Plain-Python transcription of OpenOOD's ``ccr_fpr`` (openood/evaluators/metrics.py at commit
    3c35632ee91b54b09d1f085d04f94744cece7d0b): threshold = np.sort(ood_conf)[-ceil(fpr * n_ood)],
    CCR = #(ID with conf > threshold and pred == label) / n_ID."""
    ind = [i for i in range(len(conf)) if label[i] != -1]
    ood_conf = sorted(conf[i] for i in range(len(conf)) if label[i] == -1)
    fp_num = int(math.ceil(fpr * len(ood_conf)))
    thresh = ood_conf[-fp_num]
    num_tp = sum(1 for i in ind if conf[i] > thresh and pred[i] == label[i])
    return num_tp / len(ind)


def test_ccr_at_fpr_hand_computed():
    # OOD confidences [0.5, 0.8]; correct ID at 0.9 (A) and 0.7 (C), n_ID = 3
    # fpr 0.5: k = 1, threshold 0.8 -> only A above -> 1/3; fpr 0.3: k = ceil(0.6) = 1 -> 1/3
    # fpr 1: k = 2, threshold 0.5 -> A and C above (D is misclassified) -> 2/3
    assert ccr_at_fpr(CONF, RES, shifted=SHIFTED, fpr=0.5) == pytest.approx(1 / 3, abs=1e-15)
    assert ccr_at_fpr(CONF, RES, shifted=SHIFTED, fpr=0.3) == pytest.approx(1 / 3, abs=1e-15)
    assert ccr_at_fpr(CONF, RES, shifted=SHIFTED, fpr=1.0) == pytest.approx(2 / 3, abs=1e-15)


def test_ccr_at_fpr_ties_are_rejected():
    # A (correct ID) ties with the threshold OOD confidence 0.8: strict ">" rejects it -> 0
    conf = [0.8, 0.8, 0.7, 0.6, 0.5]
    assert ccr_at_fpr(conf, RES, shifted=SHIFTED, fpr=0.5) == 0.0
    assert ccr_at_fpr(conf, RES, shifted=SHIFTED, fpr=1.0) == pytest.approx(2 / 3, abs=1e-15)
    # tied OOD confidences [0.8, 0.8]: fpr 0.5 gives threshold 0.8 and accepts no OOD sample at all
    conf_ood_tie = [0.9, 0.8, 0.7, 0.6, 0.8]
    assert ccr_at_fpr(conf_ood_tie, RES, shifted=SHIFTED, fpr=0.5) == pytest.approx(1 / 3, abs=1e-15)


def test_ccr_at_fpr_orientation():
    good = ccr_at_fpr([0.9, 0.2, 0.8, 0.5, 0.1], RES, shifted=SHIFTED, fpr=0.5)  # both correct above OOD
    bad = ccr_at_fpr([0.1, 0.9, 0.2, 0.5, 0.8], RES, shifted=SHIFTED, fpr=0.5)
    assert good == pytest.approx(2 / 3, abs=1e-15) and bad == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_ccr_at_fpr_matches_openood(seed):
    """Golden: the transcription of OpenOOD's ccr_fpr (see openood_ccr_fpr), ties included; pred 0 for a
    correct and 1 for a misclassified ID sample, label 0 for ID and -1 for OOD.  The n_OOD and fpr
    values are chosen so that fpr * n_OOD carries no rounding artefact (see the test below)."""
    rng = np.random.default_rng(200 + seed)
    n_ood = [20, 37, 40, 53, 100, 7][seed]
    n_id = int(rng.integers(10, 200))
    conf = np.round(rng.random(n_id + n_ood), 1 + seed % 2)
    shifted = np.r_[np.zeros(n_id, bool), np.ones(n_ood, bool)]
    res = (shifted | (rng.random(n_id + n_ood) < 0.25)).astype(float)
    label = np.where(shifted, -1, 0)
    pred = np.where(shifted | (res == 0), 0, 1)
    for fpr in (0.01, 0.05, 0.1, 0.2, 0.25, 0.5, 0.9, 0.95, 1.0):
        want = openood_ccr_fpr(conf.tolist(), fpr, pred.tolist(), label.tolist())
        assert ccr_at_fpr(conf, res, shifted=shifted, fpr=fpr) == pytest.approx(want, abs=1e-12), fpr


def test_ccr_at_fpr_absorbs_float_rounding_unlike_openood():
    # 100 OOD at 0.01 ... 1.00 and one correct ID sample at 0.935, between the 7th (0.94) and
    # 8th (0.93) largest OOD confidences. 0.07 * 100 = 7.000000000000001 in floats: OpenOOD takes
    # k = 8 (threshold 0.93, the ID sample is accepted), csfbench k = 7 (threshold 0.94, rejected).
    conf = np.r_[0.935, np.arange(1, 101) / 100]
    shifted = np.r_[False, np.ones(100, bool)]
    res = shifted.astype(float)
    pred, label = [0] * 101, np.where(shifted, -1, 0).tolist()
    assert openood_ccr_fpr(conf.tolist(), 0.07, pred, label) == 1.0
    assert ccr_at_fpr(conf, res, shifted=shifted, fpr=0.07) == 0.0
    assert ccr_at_fpr(conf, res, shifted=shifted, fpr=0.07) == openood_ccr_fpr(conf.tolist(), 0.065, pred, label)


@pytest.mark.parametrize("fpr", [0.0, -0.1, 1.5, float("nan"), True, "0.1", None])
def test_ccr_at_fpr_bad_fpr(fpr):
    with pytest.raises(ValueError, match="fpr"):
        ccr_at_fpr(CONF, RES, shifted=SHIFTED, fpr=fpr)


def test_ccr_at_fpr_refuses_zero_and_says_why():
    with pytest.raises(ValueError, match=r"smallest OOD confidence"):
        ccr_at_fpr(CONF, RES, shifted=SHIFTED, fpr=0)


# ---------------------------------------------------------------- shared bad input of OSCR and CCR@FPR


def call(metric, conf, res, shifted):
    if metric == "oscr":
        return oscr(conf, res, shifted=shifted)
    return ccr_at_fpr(conf, res, shifted=shifted, fpr=0.5)


@pytest.mark.parametrize("metric", ["oscr", "ccr_at_fpr"])
def test_shifted_accepts_bool_and_01(metric):
    as_bool = call(metric, CONF, RES, np.array(SHIFTED, bool))
    assert as_bool == call(metric, CONF, RES, SHIFTED) == call(metric, CONF, RES, np.array(SHIFTED, float))


@pytest.mark.parametrize("metric", ["oscr", "ccr_at_fpr"])
@pytest.mark.parametrize("shifted, match", [
    ([0, 1, 0, 0], "one value per sample"),
    ([[0, 1, 0, 0, 1]], "one value per sample"),
    ([0, 2, 0, 0, 1], "only 0/1"),
    ([0, 0.5, 0, 0, 1], "only 0/1"),
    ([0, np.nan, 0, 0, 1], "non-finite"),
    (["a", "b", "a", "a", "b"], "dtype"),
    ([1, 1, 0, 0, 1], "residual 0"),
])
def test_bad_shifted(metric, shifted, match):
    with pytest.raises(MetricInputError, match=match):
        call(metric, CONF, RES, shifted)


@pytest.mark.parametrize("metric", ["oscr", "ccr_at_fpr"])
def test_single_group_is_undefined(metric):
    with pytest.raises(UndefinedMetricError, match="no shifted"):
        call(metric, CONF, RES, [0] * 5)
    with pytest.raises(UndefinedMetricError, match="no ID"):
        call(metric, CONF, [1] * 5, [1] * 5)


@pytest.mark.parametrize("metric", ["oscr", "ccr_at_fpr"])
def test_bad_pair(metric):
    with pytest.raises(MetricInputError, match="length mismatch"):
        call(metric, CONF[:4], RES, SHIFTED)
    with pytest.raises(MetricInputError, match="non-finite"):
        call(metric, [0.9, np.nan, 0.7, 0.6, 0.5], RES, SHIFTED)
    with pytest.raises(MetricInputError, match="binary"):
        call(metric, CONF, [0, 1, 0.5, 1, 1], SHIFTED)
