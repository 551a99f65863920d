"""White-box L∞ attacks in pixel space: PGD (Kurakin et al. 2017's iterative attack, optional random
start as in Madry et al.) and FGSM (Goodfellow et al.), untargeted.

Written here rather than taken from torchattacks: torchattacks 3.5.1 pins ``requests~=2.25.1`` and
would downgrade requests/urllib3 in the pinned environment.

``forward`` maps a pixel batch (N×3×H×W, values in [0, 1], before normalisation) to class logits
(N×C); the attack maximises the cross-entropy of the true labels.  ε and the step size are in pixel
units of [0, 1] (ε = 8/255 is ``8 / 255``).  Every iterate stays inside the ε-ball around the clean
batch and inside [0, 1].
"""
from __future__ import annotations

from typing import Callable

import torch
from torch.nn import functional as F

Forward = Callable[[torch.Tensor], torch.Tensor]


def _project(x_adv: torch.Tensor, x: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.min(torch.max(x_adv, x - eps), x + eps).clamp_(0.0, 1.0)


def pgd_linf(forward: Forward, x: torch.Tensor, y: torch.Tensor, eps: float, steps: int, step_size: float,
             random_start: bool = False, generator: torch.Generator | None = None) -> torch.Tensor:
    """``steps`` signed-gradient ascent steps of size ``step_size`` on the CE loss, projected each time.

    ``random_start`` draws the start uniformly in the ε-ball from ``generator`` (on the CPU, so the
    start does not depend on the device).  ``eps = 0`` returns the clean batch.
    """
    if eps < 0 or steps < 1 or step_size <= 0:
        raise ValueError(f"pgd_linf: need eps >= 0, steps >= 1, step_size > 0; got {eps}, {steps}, {step_size}")
    x = x.detach()
    if eps == 0:
        return x.clone()
    x_adv = x.clone()
    if random_start:
        noise = torch.rand(x.shape, generator=generator).to(x.device) * 2 - 1
        x_adv = _project(x + eps * noise, x, eps)
    for _ in range(steps):
        x_adv.requires_grad_(True)
        loss = F.cross_entropy(forward(x_adv).float(), y)
        (grad,) = torch.autograd.grad(loss, x_adv)
        x_adv = _project(x_adv.detach() + step_size * grad.sign(), x, eps)
    return x_adv.detach()


def fgsm(forward: Forward, x: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
    """One signed-gradient step of size ε from the clean batch (PGD with one step, no random start)."""
    return pgd_linf(forward, x, y, eps, steps=1, step_size=max(eps, 1e-12))
