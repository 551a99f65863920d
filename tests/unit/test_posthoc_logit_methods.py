"""MSP and EBO at T = 1, ODIN at ε = 0 (csfbench.csf.logit_methods) and ICONIC-444's GEN grid:
hand-computed values, orientation, and agreement with pytorch-ood 0.4.0's MaxSoftmax, EnergyBased and
ODIN (``eps=0``, through an identity "model" on the logits, so its input gradient step is a no-op)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from csfbench.csf.logit_methods import GEN_GRID, ODIN_GRID, gen_grid, odin
from csfbench.csf.logit_scores import energy, max_softmax, msr, softmax

from tests.helpers.posthoc_data import agree, gaussian_outputs, outlier, pytorch_ood, separation


@pytest.fixture(scope="module")
def data():
    return gaussian_outputs()


def test_odin_by_hand():
    z = [1.0, 2.0, 3.0]
    expected = math.exp(0.3) / sum(math.exp(v / 10) for v in z)
    assert odin(np.array([z]), 10.0)[0] == pytest.approx(expected, rel=1e-14)
    with pytest.raises(ValueError, match="temperature"):
        odin(np.array([z]), 0.0)


def test_msp_and_ebo_at_t1_by_hand():
    z = [1.0, 2.0, 3.0]
    total = sum(math.exp(v) for v in z)
    assert msr(softmax(np.array([z])))[0] == pytest.approx(math.exp(3.0) / total, rel=1e-14)
    assert max_softmax(np.array([z]))[0] == pytest.approx(math.exp(3.0) / total, rel=1e-14)
    assert energy(np.array([z]))[0] == pytest.approx(math.log(total), rel=1e-14)


@pytest.mark.parametrize("temperature", [1.0, 0.7, 1000.0])
def test_max_softmax_is_msr_of_softmax_bit_for_bit(data, temperature):
    # a row far below the others, with terms under the exponential's floor (logit_scores.LOG_FLOOR)
    z = np.vstack([data["z_test"], [[-900.0, -905.0, *[-1000.0] * (data["z_test"].shape[1] - 2)]]])
    np.testing.assert_array_equal(max_softmax(z, temperature), msr(softmax(z, temperature)))
    np.testing.assert_array_equal(max_softmax(z.astype(np.float32), temperature),
                                  msr(softmax(z.astype(np.float32), temperature)))


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
    agree(max_softmax(data["z_test"]), outlier(ood.MaxSoftmax(None).predict_logits(z)), 1e-12)
    agree(energy(data["z_test"]), outlier(ood.EnergyBased(None).predict_logits(z)), 1e-12)
    for t in ODIN_GRID["temperature"]:
        theirs = outlier(ood.ODIN(torch.nn.Identity(), eps=0.0, temperature=t).predict(z))
        agree(odin(data["z_test"], t), theirs, 1e-12)
