import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from csfbench.training.losses import (confidnet_loss, deep_gamblers_loss, devries_loss,
                                      update_devries_lambda)


def test_deep_gamblers_equals_cross_entropy_without_abstention_mass():
    logits = torch.tensor([[2.0, -1.0, 0.5], [0.1, 0.2, 0.3]])
    target = torch.tensor([0, 2])
    with_abstention = torch.cat([logits, torch.full((2, 1), -1e4)], dim=1)
    assert torch.allclose(deep_gamblers_loss(with_abstention, target, reward=2.2), F.cross_entropy(logits, target),
                          atol=1e-6)


def test_deep_gamblers_hand_computed():
    # softmax of [0, 0, 0] over K+1 = 3 outputs: p_y = p_abstain = 1/3; loss = -log(1/3 + (1/3)/o)
    loss = deep_gamblers_loss(torch.zeros(1, 3), torch.tensor([1]), reward=2.0)
    assert loss.item() == pytest.approx(-math.log(1 / 3 + 1 / 6), rel=1e-6)
    # the paper's form −log(o·p_y + p_abs) differs only by the constant log o
    paper = -math.log(2.0 * (1 / 3) + 1 / 3)
    assert loss.item() == pytest.approx(paper + math.log(2.0), rel=1e-6)


def test_deep_gamblers_rejects_reward_not_above_one():
    with pytest.raises(ValueError, match="reward"):
        deep_gamblers_loss(torch.zeros(1, 3), torch.tensor([0]), reward=1.0)


def test_devries_without_hints_is_cross_entropy_plus_penalty():
    logits = torch.tensor([[1.0, 0.0], [0.0, 3.0]])
    conf_logit = torch.tensor([0.0, 2.0])
    target = torch.tensor([0, 0])
    total, penalty = devries_loss(logits, conf_logit, target, lam=0.5, hint=torch.tensor([False, False]))
    c = torch.sigmoid(conf_logit)
    assert penalty.item() == pytest.approx(float(-torch.log(c).mean()), rel=1e-6)
    assert total.item() == pytest.approx(float(F.cross_entropy(logits, target) + 0.5 * penalty), rel=1e-6)


def test_devries_hint_interpolates_towards_the_label():
    logits = torch.tensor([[0.0, 0.0]])  # p = (0.5, 0.5)
    conf_logit = torch.tensor([0.0])     # c = 0.5 -> p'_y = 0.5*0.5 + 0.5 = 0.75
    total, penalty = devries_loss(logits, conf_logit, torch.tensor([0]), lam=0.0, hint=torch.tensor([True]))
    assert total.item() == pytest.approx(-math.log(0.75), rel=1e-6)
    assert penalty.item() == pytest.approx(math.log(2), rel=1e-6)


def test_devries_budget_rule():
    assert update_devries_lambda(0.1, penalty=0.1, budget=0.3) == pytest.approx(0.1 / 1.01)
    assert update_devries_lambda(0.1, penalty=0.5, budget=0.3) == pytest.approx(0.1 / 0.99)


def test_confidnet_regresses_true_class_probability():
    logits = torch.tensor([[np.log(3.0), 0.0], [0.0, 0.0]])  # p = (0.75, 0.25), (0.5, 0.5)
    target = torch.tensor([0, 1])
    conf_logit = torch.tensor([0.0, 0.0])                    # sigmoid = 0.5
    expected = ((0.5 - 0.75) ** 2 + (0.5 - 0.5) ** 2) / 2
    assert confidnet_loss(conf_logit, logits, target).item() == pytest.approx(expected, rel=1e-6)
