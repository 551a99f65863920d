"""Training losses of the paradigms (Claros-Olivares & Brockmeier, App. A.2).

All return a scalar mean over the batch.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

_EPS = 1e-12


def deep_gamblers_loss(logits: torch.Tensor, target: torch.Tensor, reward: float) -> torch.Tensor:
    """Deep Gamblers: −mean log(p_y + p_{K+1} / o) over softmax of the K+1 outputs.

    This is the paper's −log(o·p_y + p_{K+1}) minus the constant log o (same gradients); with zero
    abstention mass it is exactly the cross-entropy on the first K outputs.  Computed in log space.
    """
    if reward <= 1:
        raise ValueError(f"Deep Gamblers reward o must be > 1, got {reward}")
    log_p = F.log_softmax(logits.float(), dim=-1)
    log_py = log_p.gather(1, target.view(-1, 1)).squeeze(1)
    log_abstain = log_p[:, -1] - math.log(reward)
    return -torch.logaddexp(log_py, log_abstain).mean()


def devries_loss(logits: torch.Tensor, confidence_logit: torch.Tensor, target: torch.Tensor,
                 lam: float, hint: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """DeVries & Taylor learned confidence; returns (total loss, confidence penalty).

    c = σ(confidence_logit); samples with ``hint`` = True get c' = c, the others c' = 1 (no hint);
    p' = c'·softmax(z) + (1 − c')·onehot(y); total = NLL(p') + λ·mean(−log c).
    """
    p = torch.softmax(logits.float(), dim=-1).clamp(_EPS, 1 - _EPS)
    c = torch.sigmoid(confidence_logit.float()).clamp(_EPS, 1 - _EPS)
    c_hint = torch.where(hint, c, torch.ones_like(c)).unsqueeze(1)
    onehot = F.one_hot(target, p.shape[1]).to(p.dtype)
    p_interp = c_hint * p + (1 - c_hint) * onehot
    task = F.nll_loss(torch.log(p_interp), target)
    penalty = -torch.log(c).mean()
    return task + lam * penalty, penalty


def update_devries_lambda(lam: float, penalty: float, budget: float) -> float:
    """Budget rule of DeVries & Taylor: shrink λ while the penalty is under budget, grow it otherwise."""
    return lam / 1.01 if budget > penalty else lam / 0.99


def confidnet_loss(confidence_logit: torch.Tensor, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """ConfidNet: MSE between σ(confidence_logit) and the true-class probability softmax(z)_y."""
    with torch.no_grad():
        tcp = torch.softmax(logits.float(), dim=-1).gather(1, target.view(-1, 1)).squeeze(1)
    return F.mse_loss(torch.sigmoid(confidence_logit.float()), tcp)
