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


def test_inverse_frequency_weights_by_hand():
    from csfbench.training.losses import inverse_frequency_weights

    labels = np.array([0, 0, 0, 1, 2, 2])  # f = (1/2, 1/6, 1/3) -> 1/f = (2, 6, 3), mean 11/3
    w = inverse_frequency_weights(labels, 3)
    assert w.dtype == torch.float32
    assert w.tolist() == pytest.approx([6 / 11, 18 / 11, 9 / 11], rel=1e-6)
    assert float(w.mean()) == pytest.approx(1.0)
    assert torch.equal(inverse_frequency_weights(torch.tensor([1, 0, 1, 1]), 2),
                       inverse_frequency_weights([1, 0, 1, 1], 2))
    assert inverse_frequency_weights([0, 1, 2], 3).tolist() == [1.0, 1.0, 1.0]  # balanced: plain cross-entropy


@pytest.mark.parametrize("labels,n,match", [([0, 0, 2], 3, r"classes \[1\]"), ([0, 3], 3, r"labels \[3\]"),
                                            ([-1, 0], 2, r"labels \[-1\]"), ([], 2, "non-empty")])
def test_inverse_frequency_weights_refuse_absent_classes_and_bad_labels(labels, n, match):
    from csfbench.training.losses import inverse_frequency_weights

    with pytest.raises(ValueError, match=match):
        inverse_frequency_weights(np.asarray(labels, dtype=np.int64), n)


def test_weighted_cross_entropy_equals_torch_and_the_weighted_mean_by_hand():
    from csfbench.training.losses import cross_entropy, inverse_frequency_weights

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 3, generator=g)
    target = torch.tensor([0, 0, 0, 1, 2, 2])
    w = inverse_frequency_weights(target, 3)
    loss = cross_entropy(logits, target, w)
    assert torch.allclose(loss, F.cross_entropy(logits, target, weight=w))
    per_sample = -torch.log_softmax(logits, 1)[torch.arange(6), target]
    assert loss.item() == pytest.approx(float((w[target] * per_sample).sum() / w[target].sum()), rel=1e-6)
    assert torch.allclose(cross_entropy(logits, target), F.cross_entropy(logits, target))
    assert cross_entropy(logits.half(), target, w).dtype == torch.float32
    with pytest.raises(ValueError, match="2 class weights for 3 logits"):
        cross_entropy(logits, target, torch.ones(2))
