"""ReAct, ASH-P/-B/-S, SCALE and DICE (csfbench.csf.feature_shaping): hand-computed values, orientation,
and agreement with pytorch-ood 0.4.0's ReAct, ASH, SCALE and DICE.

pytorch-ood's feature-map detectors take B×D×1×1 maps and percentiles as fractions; its head is the
float32 ``Linear`` applied to the flattened map.  Each returns the negated energy, so ours = −theirs.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from csfbench.csf.feature_shaping import (ASH_GRID, ASH_VARIANTS, DICE_GRID, REACT_GRID, SCALE_GRID, ash_score,
                                          dice_fit, dice_score, percentile_of_all, react_fit, react_score,
                                          scale_score)

from tests.helpers.posthoc_data import (FLOAT32, FLOAT32_EXP, agree, gaussian_outputs, outlier, pytorch_ood, separation,
                                        torch_head)


def _lse(values) -> float:
    return math.log(sum(math.exp(v) for v in values))


@pytest.fixture(scope="module")
def data():
    return gaussian_outputs()


def test_react_by_hand():
    train = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    state = react_fit(train, 50)
    assert float(state["threshold"]) == 2.5  # the median of 0..5, over every entry of every row
    bias = np.array([0.0, 0.5, -1.0])
    score = react_score(state, np.array([[1.0, 3.0, 5.0]]), np.eye(3), bias)
    assert score[0] == pytest.approx(_lse([1.0, 2.5 + 0.5, 2.5 - 1.0]), rel=FLOAT32_EXP)


@pytest.mark.parametrize("percentile", [0, 37.5, 90, 100])
def test_percentile_of_all_is_numpys(percentile):
    rng = np.random.default_rng(3)
    relu = np.maximum(rng.normal(size=(3000, 100)), 0).astype(np.float32)  # ties at 0
    periodic = rng.random(1 << 20)
    periodic[::4] = 5.0  # the strided sample sees only 5.0: below the 75th percentile its bracket misses
    for x in (relu, periodic, np.array([[2.0]])):
        expected = float(np.percentile(x.astype(np.float64), percentile))
        assert percentile_of_all(x, percentile) == pytest.approx(expected, rel=1e-13)


H = [4.0, 1.0, 3.0, 2.0]
BIAS = [0.0, 0.5, -0.5, 1.0]
# p = 50 keeps k = 4 - round(2) = 2 units, {4, 3}: s1 = 10, s2 = 7
SHAPED = {"p": [4.0, 0.0, 3.0, 0.0], "b": [5.0, 0.0, 5.0, 0.0],
          "s": [4.0 * math.exp(10 / 7), 0.0, 3.0 * math.exp(10 / 7), 0.0]}


@pytest.mark.parametrize("variant", ASH_VARIANTS)
def test_ash_by_hand(variant):
    score = ash_score(np.array([H]), np.eye(4), np.array(BIAS), 50, variant)
    assert score[0] == pytest.approx(_lse([h + b for h, b in zip(SHAPED[variant], BIAS)]), rel=FLOAT32_EXP)


def test_ash_keeps_d_minus_round_dp_units():
    # p = 65 of D = 4: round(2.6) = 3 pruned, k = 1 kept
    score = ash_score(np.array([H]), np.eye(4), np.zeros(4), 65, "p")
    assert score[0] == pytest.approx(_lse([4.0, 0.0, 0.0, 0.0]), rel=FLOAT32_EXP)
    with pytest.raises(ValueError, match="keeps no unit"):
        ash_score(np.array([H]), np.eye(4), np.zeros(4), 100, "p")


def test_scale_by_hand():
    score = scale_score(np.array([H]), np.eye(4), np.array(BIAS), 50)
    assert score[0] == pytest.approx(_lse([h * math.exp(10 / 7) + b for h, b in zip(H, BIAS)]), rel=FLOAT32_EXP)


def test_an_all_zero_row_is_shaped_to_itself():
    bias = np.array(BIAS)
    for score in [scale_score(np.zeros((1, 4)), np.eye(4), bias, 50),
                  *(ash_score(np.zeros((1, 4)), np.eye(4), bias, 50, v) for v in ASH_VARIANTS)]:
        assert score[0] == pytest.approx(_lse(BIAS), rel=FLOAT32_EXP)


def test_dice_by_hand():
    train = np.array([[1.0, 2.0], [3.0, 2.0]])            # mean [2, 2]
    weight = np.array([[1.0, -1.0], [2.0, 0.5]])          # contributions [[2, -2], [4, 1]]
    state = dice_fit(train, weight, 50)                   # median of {-2, 1, 2, 4} = 1.5: keep 2 and 4
    np.testing.assert_array_equal(state["weight"], [[1.0, 0.0], [2.0, 0.0]])
    score = dice_score(state, np.array([[1.0, 1.0]]), np.array([0.0, -1.0]))
    assert score[0] == pytest.approx(_lse([1.0, 2.0 - 1.0]), rel=FLOAT32_EXP)


def test_grids_are_iconic_table_7():
    assert REACT_GRID == {"percentile": (70, 80, 85, 90, 95, 99)}
    assert ASH_GRID == SCALE_GRID == {"percentile": (65, 70, 75, 80, 85, 90, 95)}
    assert DICE_GRID == {"percentile": (10, 30, 50, 70, 90)}


def _scores(data) -> dict[str, np.ndarray]:
    w, b, test = data["weight"], data["bias"], data["test"]
    return {"ReAct": react_score(react_fit(data["train"], 90), test, w, b),
            **{f"ASH-{v.upper()}": ash_score(test, w, b, 65, v) for v in ASH_VARIANTS},
            "SCALE": scale_score(test, w, b, 65),
            "DICE": dice_score(dice_fit(data["train"], w, 70), test, b)}


def test_orientation(data):
    for name, scores in _scores(data).items():
        assert separation(scores) > 0.95, name


def test_agree_with_pytorch_ood(data):
    import torch

    ood = pytorch_ood()
    head = torch_head(data["weight"], data["bias"])

    def head_of_maps(x):
        return head(x.flatten(1))

    maps = torch.tensor(data["test"])[:, :, None, None]
    ours = _scores(data)
    react = ood.ReAct(None, head_of_maps, percentile=0.9)
    react.fit_feature_maps(torch.tensor(data["train"])[:, :, None, None], torch.tensor(data["y_train"]))
    agree(ours["ReAct"], outlier(react.predict_feature_maps(maps)), FLOAT32)
    for variant in ASH_VARIANTS:
        detector = ood.ASH(None, head_of_maps, variant=f"ash-{variant}", percentile=0.65)
        agree(ours[f"ASH-{variant.upper()}"], outlier(detector.predict_feature_maps(maps)), FLOAT32)
    agree(ours["SCALE"], outlier(ood.SCALE(None, head_of_maps, percentile=0.65).predict_feature_maps(maps)), FLOAT32)
    dice = ood.DICE(None, w=head.weight, b=head.bias, p=0.7)
    dice.fit_features(torch.tensor(data["train"]), torch.tensor(data["y_train"]))
    agree(ours["DICE"], outlier(dice.predict_features(torch.tensor(data["test"]))), FLOAT32)


def test_top_mask_keeps_exactly_k_units_with_ties_broken_by_column():
    from csfbench.csf.feature_shaping import top_mask

    h = np.array([[0.0, 3.0, 1.0, 3.0, 2.0],    # ties at the 2nd largest value: both 3s, then nothing
                  [1.0, 1.0, 1.0, 0.0, 1.0],    # four tied 1s for two places: the first two columns
                  [0.0, 0.0, 0.0, 0.0, 5.0]])   # zeros tied for the second place: column 0
    assert top_mask(h, 2).tolist() == [[False, True, False, True, False], [True, True, False, False, False],
                                       [True, False, False, False, True]]
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(300, 64))  # no ties: the set of argpartition's k largest
    for kept in (1, 7, 32, 64):
        top = np.argpartition(dense, 64 - kept, axis=1)[:, 64 - kept:]
        expected = np.zeros(dense.shape, dtype=bool)
        np.put_along_axis(expected, top, True, axis=1)
        np.testing.assert_array_equal(top_mask(dense, kept), expected)
    tied = np.maximum(np.round(rng.normal(size=(300, 64)), 1), 0)  # ReLU-like: many zeros and repeats
    for kept in (1, 7, 40, 64):
        mask = top_mask(tied, kept)
        assert (mask.sum(axis=1) == kept).all()
        np.testing.assert_array_equal(np.sort(np.where(mask, tied, -np.inf), axis=1)[:, -kept:],
                                      np.sort(tied, axis=1)[:, -kept:])
