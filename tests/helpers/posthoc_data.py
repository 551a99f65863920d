"""Shared data and checks of the post-hoc method tests (tests/unit/csf/test_posthoc_*.py).

:func:`gaussian_outputs`: non-negative (softplus) features of Gaussian classes in D = 16 with a
nearest-class-mean linear head held in float32 (as a network's head is), the training split, and a
test split of ID rows followed by as many *shifted* rows (small, class-free activations), which every
method must rank below the ID rows.  Softplus keeps every activation positive and distinct, so the
top-k selections of ASH and SCALE have no ties.

pytorch-ood returns *outlier* scores (higher = OOD): :func:`outlier` negates them into confidences and
:func:`agree` requires ``allclose`` after the documented affine map plus a Spearman correlation
>= 0.9999, as tests/unit/csf/test_csf_pytorch_ood.py does for the older kernels.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

N_TRAIN, N_ID, D, C = 600, 150, 16, 6
#: tolerance where pytorch-ood computes in float32
FLOAT32 = 1e-5
#: tolerance of MSP and of every energy-based score on small logits: their exponentials are float32,
#: added in float64 for MSP (logit_scores._shifted_exp_sums), in float32 for the energy where the row
#: allows it (logit_scores._unshifted_log_sums): a few 2^-24 relative per term and in the energy's sum
FLOAT32_EXP = 1e-6


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def gaussian_outputs(seed: int = 2024) -> dict:
    """``train`` (N_TRAIN×D float32), ``y_train``, ``test`` (2·N_ID rows: ID, then shifted), ``y_test``,
    ``weight`` C×D and ``bias`` (float64 values of float32 numbers), ``z_train``, ``z_test`` (float64)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(C, D))
    y_train = np.arange(N_TRAIN) % C
    y_test = np.arange(N_ID) % C
    train = _softplus(centres[y_train] + rng.normal(size=(N_TRAIN, D))).astype(np.float32)
    test = np.vstack([_softplus(centres[y_test] + rng.normal(size=(N_ID, D))),
                      _softplus(rng.normal(size=(N_ID, D)) - 2.0)]).astype(np.float32)
    means = np.stack([train[y_train == k].mean(0, dtype=np.float64) for k in range(C)])
    weight = (0.3 * means).astype(np.float32).astype(np.float64)
    bias = (-0.15 * np.sum(means**2, axis=1)).astype(np.float32).astype(np.float64)
    return {"train": train, "y_train": y_train, "test": test, "y_test": y_test, "weight": weight, "bias": bias,
            "z_train": train @ weight.T + bias, "z_test": test @ weight.T + bias}


def separation(scores: np.ndarray, n_id: int = N_ID) -> float:
    """The fraction of (ID row, shifted row) pairs in which the ID row has the higher confidence (AUROC)."""
    scores = np.asarray(scores)
    return float(np.mean(scores[:n_id, None] > scores[None, n_id:]))


def agree(ours: np.ndarray, theirs_confidence, rtol: float) -> None:
    """``allclose`` (relative to the score range) and Spearman >= 0.9999 between two confidences."""
    theirs_confidence = np.asarray(theirs_confidence, dtype=np.float64)
    assert np.allclose(ours, theirs_confidence, rtol=rtol, atol=rtol * np.abs(ours).max())
    assert spearmanr(ours, theirs_confidence).statistic >= 0.9999


def pytorch_ood():
    """``pytorch_ood.detector`` (the test extra), after the CPU-torchvision shim; skips without it."""
    from csfbench.torch_compat import ensure_torchvision

    ensure_torchvision()
    return pytest.importorskip("pytorch_ood.detector", reason="pytorch-ood (test extra) is not installed")


def outlier(scores) -> np.ndarray:
    """pytorch-ood outlier score → confidence (float64)."""
    return -scores.detach().numpy().astype(np.float64)


def torch_head(weight: np.ndarray, bias: np.ndarray):
    """The head as a float32 ``torch.nn.Linear``."""
    import torch

    head = torch.nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        head.weight.copy_(torch.tensor(weight, dtype=torch.float32))
        head.bias.copy_(torch.tensor(bias, dtype=torch.float32))
    return head
