"""Cross-check of the CSF kernels against pytorch-ood 0.4.0 detectors (test-only oracle).

pytorch-ood returns *outlier* scores (higher = OOD); every comparison negates them and, where the two
definitions differ by a known constant, applies that affine map and requires ``allclose``; a
Spearman correlation >= 0.9999 is required in addition.  Differences that are aligned, not ignored:

* MaxLogit has no temperature: ours is ``max z / T``, so ours = -theirs / T.
* Entropy uses no temperature and clips p to [1e-7, 1]; logits are kept moderate so no p is clipped.
* GEN averages (not sums) the top-M terms and clamps p to [1e-7, 1 - 1e-7]: ours = -M · theirs, with
  moderate logits so that the clamp is inactive.
* Mahalanobis uses the *unnormalised* scatter S plus a 1e-6 ridge, ``inv`` instead of ``pinv``, and
  half the squared distance: with Σ = S / (N-1), ours = -2 (N-1) · theirs (ridge negligible here).
* GradNorm averages the per-class losses (cross-entropy to uniform): ours = C · (-theirs).  Its
  gradient is taken w.r.t. the head weight only (``param_filter``), as GradNorm's definition (Huang et al., NeurIPS 2021) has it.
* NNGuide keeps *every* fitted feature in its bank; it is fitted on exactly the rows that
  :func:`nnguide_bank` drew (recovered from the bank rows), so both search the same bank.
* PNML has no bias augmentation and no ``P_perp`` branch (its exponent is always ``a / (1 + a)``).
  It is given x̃ = [1, h/||h||] as the "feature" (it rescales that to x̃/√2, which scales its
  projector by 2 and leaves ``x̃ᵀP⁺x̃`` unchanged) and a bias-free head √2·[b, W], so its logits are
  ``W h/||h|| + b``.  The training features are full rank, and the test asserts that the ``P_perp``
  term never wins the max rule, which is the only case where both definitions coincide.
* fDBD computes its own logits from the head; the same head's logits are passed to ours.

pytorch-ood has no mutual-information (MCD) detector (its ``MCD`` scores the mean max-softmax and the
mean variance), so MI is checked only in ``test_csf_kernels.py``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from csfbench.csf.distance_scores import maha_fit, maha_score
from csfbench.csf.fdbd import fdbd
from csfbench.csf.gradnorm import gradnorm
from csfbench.csf.logit_scores import energy, gen, mls, msr, pe, softmax
from csfbench.csf.nnguide import nnguide_bank, nnguide_score
from csfbench.csf.pnml import pnml_fit, pnml_score
from csfbench.torch_compat import ensure_torchvision

ensure_torchvision()
ood = pytest.importorskip("pytorch_ood.detector", reason="pytorch-ood (test extra) is not installed")

N_TRAIN, N_TEST, D, C, T = 400, 300, 16, 6, 1.7
#: tolerance where pytorch-ood computes in float32 (observed differences <= 1.5e-6 of the score range)
FLOAT32 = 1e-5


def _agree(ours: np.ndarray, theirs_confidence: np.ndarray, rtol: float) -> None:
    """``allclose`` (relative to the score range) and Spearman >= 0.9999 between two confidences."""
    theirs_confidence = np.asarray(theirs_confidence, dtype=np.float64)
    assert np.allclose(ours, theirs_confidence, rtol=rtol, atol=rtol * np.abs(ours).max())
    assert spearmanr(ours, theirs_confidence).statistic >= 0.9999


@pytest.fixture(scope="module")
def data():
    """Gaussian classes in D = 16 with a linear head (float32 weights), ID train/test + shifted points."""
    rng = np.random.default_rng(2024)
    centres = rng.normal(scale=2.0, size=(C, D))
    y_train = np.arange(N_TRAIN) % C
    train = (centres[y_train] + rng.normal(size=(N_TRAIN, D))).astype(np.float32)
    test = np.vstack([centres[np.arange(N_TEST // 2) % C] + rng.normal(size=(N_TEST // 2, D)),
                      rng.normal(scale=2.5, size=(N_TEST - N_TEST // 2, D))]).astype(np.float32)
    head = torch.nn.Linear(D, C)
    with torch.no_grad():
        head.weight.copy_(torch.tensor(0.1 * centres, dtype=torch.float32))
        head.bias.copy_(torch.tensor(rng.normal(scale=0.5, size=C), dtype=torch.float32))
    weight = head.weight.detach().numpy().astype(np.float64)
    bias = head.bias.detach().numpy().astype(np.float64)
    probs = softmax(test @ weight.T + bias)
    assert probs.min() > 1e-7 and probs.max() < 1 - 1e-7  # neither Entropy's clip nor GEN's clamp acts
    return {"train": train, "y_train": y_train, "test": test, "head": head, "weight": weight, "bias": bias,
            "z_train": train @ weight.T + bias, "z_test": test @ weight.T + bias}


def _outlier(scores: torch.Tensor) -> np.ndarray:
    """pytorch-ood outlier score → confidence (float64)."""
    return -scores.detach().numpy().astype(np.float64)


def test_logit_scores_agree(data):
    z = data["z_test"]
    logits = torch.tensor(z)
    _agree(msr(softmax(z, T)), _outlier(ood.MaxSoftmax(None, t=T).predict_logits(logits)), 1e-12)
    _agree(mls(z, T), _outlier(ood.MaxLogit(None).predict_logits(logits)) / T, 1e-12)
    # float32 exponentials (logit_scores.energy)
    _agree(energy(z, T), _outlier(ood.EnergyBased(None, t=T).predict_logits(logits)), 1e-6)
    _agree(pe(softmax(z)), _outlier(ood.Entropy(None).predict_logits(logits)), 1e-12)


@pytest.mark.parametrize("m", [1, 3, C])
@pytest.mark.parametrize("gamma", [0.1, 0.7])
def test_gen_agrees(data, m, gamma):
    z = data["z_test"]
    theirs = ood.GEN(None, gamma=gamma, M=m).predict_logits(torch.tensor(z))
    _agree(gen(softmax(z), m, gamma), m * _outlier(theirs), 1e-12)


def test_mahalanobis_agrees(data):
    detector = ood.Mahalanobis(None).fit_features(torch.tensor(data["train"]), torch.tensor(data["y_train"]))
    theirs = _outlier(detector.predict_features(torch.tensor(data["test"])))
    fit = maha_fit(data["train"], data["y_train"], C)
    _agree(maha_score(data["test"], **fit), 2 * (N_TRAIN - 1) * theirs, FLOAT32)


def test_gradnorm_agrees(data):
    model = torch.nn.Linear(D, C).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor(data["weight"]))
        model.bias.copy_(torch.tensor(data["bias"]))
    detector = ood.GradNorm(model, param_filter=lambda name: name == "weight", temperature=T)
    theirs = _outlier(detector.predict(torch.tensor(data["test"], dtype=torch.float64)))
    _agree(gradnorm(data["test"], softmax(data["z_test"], T), T), C * theirs, 1e-10)


@pytest.mark.parametrize("alpha", [0.3, 1.0])
def test_nnguide_agrees(data, alpha):
    k = 15
    bank = nnguide_bank(data["train"], data["z_train"], data["y_train"], C, alpha)
    scaled = (data["train"] / np.linalg.norm(data["train"], axis=1, keepdims=True)
              * np.log(np.exp(data["z_train"]).sum(axis=1, keepdims=True)))
    rows = np.array([np.argmin(np.linalg.norm(scaled - b, axis=1)) for b in bank])
    assert len(set(rows.tolist())) == len(bank) == C * math.floor(N_TRAIN / C * alpha)
    detector = ood.NNGuide(None, head=data["head"], k=k)
    detector.fit_features(torch.tensor(data["train"][rows]), torch.tensor(data["y_train"][rows]))
    theirs = _outlier(detector.predict_features(torch.tensor(data["test"])))
    _agree(nnguide_score(data["test"], data["z_test"], bank, k), theirs, FLOAT32)


def test_pnml_agrees(data):
    weight, bias = data["weight"], data["bias"]

    def augmented(h):
        return np.hstack([np.ones((len(h), 1)), h / np.linalg.norm(h, axis=1, keepdims=True)])

    fit = pnml_fit(data["train"])
    x_test = augmented(data["test"].astype(np.float64))
    parallel = np.sum((x_test @ fit["plus_factor"]) ** 2, axis=1)
    perpendicular = np.sum((x_test @ fit["perp_factor"]) ** 2, axis=1)
    assert np.all(perpendicular < parallel / (1 + parallel))  # the only case pytorch-ood covers

    head = torch.nn.Linear(D + 1, C, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.tensor(math.sqrt(2) * np.hstack([bias[:, None], weight]), dtype=torch.float32))
    detector = ood.PNML(None, head=head)
    detector.fit_features(torch.tensor(augmented(data["train"]), dtype=torch.float32),
                          torch.tensor(data["y_train"]))
    theirs = _outlier(detector.predict_features(torch.tensor(x_test, dtype=torch.float32)))
    _agree(pnml_score(data["test"], weight, bias, **fit), theirs, FLOAT32)


def test_fdbd_agrees(data):
    detector = ood.fDBD(None, head=data["head"])
    detector.fit_features(torch.tensor(data["train"]))
    theirs = _outlier(detector.predict_features(torch.tensor(data["test"])))
    ours = fdbd(data["test"], data["z_test"], data["weight"], data["train"].astype(np.float64).mean(axis=0))
    _agree(ours, theirs, FLOAT32)
