"""Training losses of the paradigms (Claros-Olivares & Brockmeier, App. A.2), the (class-weighted)
cross-entropy of the ICONIC-444 recipes (Krumpl, Avenhaus & Possegger, "ICONIC-444: ...", arXiv 2601.10802, 2026),
LogitNorm (Wei, Xie, Cheng, Feng, An & Li, "Mitigating Neural Network Overconfidence with Logit Normalization",
ICML 2022, arXiv 2205.09310) and Outlier Exposure (Hendrycks, Mazeika & Dietterich, "Deep Anomaly Detection with
Outlier Exposure", ICLR 2019, arXiv 1812.04606).

All return a scalar mean over the batch (the class-weighted cross-entropy: the weighted mean, see
:func:`cross_entropy`), in nats.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

_EPS = 1e-12
#: the ε of LogitNorm's norm, ‖z‖₂ + ε (Wei et al.'s code, ``LogitNormLoss``: ``torch.norm(x, p=2, dim=-1) + 1e-7``)
LOGIT_NORM_EPS = 1e-7


def inverse_frequency_weights(labels, n_classes: int) -> torch.Tensor:
    """ICONIC-444's class weights: w_c ∝ 1/f_c (f_c = the frequency of class c in the training labels),
    renormalised to mean 1 over the ``n_classes`` classes; float32 tensor of length ``n_classes``.

    ``labels`` are integer class indices 0..C−1 (array, list or tensor).  A class without any training label
    (infinite weight) or a label outside 0..C−1 raises ``ValueError`` naming it.
    """
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels).reshape(-1)
    if y.size == 0 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"class weights need a non-empty integer label vector, got dtype {y.dtype} size {y.size}")
    bad = np.unique(y[(y < 0) | (y >= n_classes)])
    if bad.size:
        raise ValueError(f"labels {bad.tolist()} are outside 0..{n_classes - 1}")
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    absent = np.flatnonzero(counts == 0)
    if absent.size:
        raise ValueError(f"classes {absent.tolist()} have no training label: their weight 1/f_c is infinite")
    inv = 1.0 / counts  # ∝ 1/f_c: the common factor 1/N cancels in the normalisation
    return torch.from_numpy(inv / inv.mean()).float()


def cross_entropy(logits: torch.Tensor, target: torch.Tensor,
                  class_weights: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy of ``logits`` (N×C, computed in float32) against ``target`` (N class indices).

    With ``class_weights`` (length C, e.g. :func:`inverse_frequency_weights`) it is the class-weighted
    cross-entropy of the ICONIC-444 recipes in PyTorch's reduction (``nn.CrossEntropyLoss(weight=w)``):
    Σ_i w_{y_i}·ℓ_i / Σ_i w_{y_i}, the weighted mean.
    """
    if class_weights is not None:
        class_weights = class_weights.to(device=logits.device, dtype=torch.float32)
        if class_weights.shape != (logits.shape[-1],):
            raise ValueError(f"{class_weights.numel()} class weights for {logits.shape[-1]} logits")
    return F.cross_entropy(logits.float(), target, weight=class_weights)


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


def logit_norm_loss(logits: torch.Tensor, target: torch.Tensor, tau: float,
                    eps: float = LOGIT_NORM_EPS) -> torch.Tensor:
    """LogitNorm (Wei et al., ICML 2022, arXiv 2205.09310, §3, Eq. 5–6): the cross-entropy of the normalised logits
    ẑ = z / (τ·(‖z‖₂ + ε)), mean over the batch (computed in float32).

    ``logits`` N×C, ``target`` N class indices; ``tau`` > 0 is the temperature of the unit-norm logit vector
    (dimensionless; ‖ẑ‖₂ ≈ 1/τ, so smaller τ allows a sharper softmax: softmax(ẑ)_y is at most
    1 / (1 + (C−1)·exp(−√(C/(C−1))/τ)) for C classes); ``eps`` keeps a zero logit vector finite (the authors'
    code adds it to the norm).  Only the training loss changes: the network's raw logits z are what it is
    evaluated on.
    """
    if tau <= 0:
        raise ValueError(f"LogitNorm temperature tau must be > 0, got {tau}")
    z = logits.float()
    normed = z / ((torch.linalg.vector_norm(z, ord=2, dim=-1, keepdim=True) + eps) * tau)
    return F.cross_entropy(normed, target)


def uniform_cross_entropy(logits: torch.Tensor) -> torch.Tensor:
    """The cross-entropy from the uniform distribution over the C classes to softmax(z), mean over the rows of
    ``logits`` (N×C, float32): mean_i −(1/C)·Σ_c log softmax(z_i)_c = mean_i (logsumexp(z_i) − mean_c z_ic), in
    nats.  It is ≥ log C, with equality exactly when a row's logits are all equal (a uniform softmax).  An empty
    batch (N = 0) gives 0.
    """
    z = logits.float()
    per_row = torch.logsumexp(z, dim=-1) - z.mean(dim=-1)
    return per_row.sum() / max(per_row.numel(), 1)


def outlier_exposure_loss(logits: torch.Tensor, target: torch.Tensor, outlier_logits: torch.Tensor,
                          lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Outlier Exposure (Hendrycks, Mazeika & Dietterich, ICLR 2019, arXiv 1812.04606, §3 and §4.2) for
    classification; returns (total loss, outlier term).

    total = CE(``logits``, ``target``) + λ·:func:`uniform_cross_entropy`(``outlier_logits``): the mean
    cross-entropy of the N in-distribution images plus λ times the mean cross-entropy to the uniform distribution
    of the M outlier images (``outlier_logits`` M×C; the authors' code: ``0.5 * -(x.mean(1) - logsumexp(x, 1)).mean()``
    with λ = 0.5).  ``lam`` ≥ 0.  The outlier term of M = 0 images is 0 (the validation loss is then the ID
    cross-entropy).
    """
    if lam < 0:
        raise ValueError(f"Outlier Exposure weight lambda must be >= 0, got {lam}")
    outlier = uniform_cross_entropy(outlier_logits)
    return F.cross_entropy(logits.float(), target) + lam * outlier, outlier
