"""The training stages of each paradigm (Claros-Olivares & Brockmeier, App. A.2; FD-Shifts' schedules) as data: what
trains, with what, how long.

* ``ce`` (ViT fine-tuning): one stage, cross-entropy, SGD + warm-up + cosine.
* ``dg``: one stage; cross-entropy on the first C outputs for ``pretrain_epochs``, then the Deep
  Gamblers loss with reward o.
* ``devries``: one stage, the learned-confidence loss with the budget-adapted λ.
* ``confidnet``: (1) backbone cross-entropy; (2) ConfidNet head on a frozen copy of the encoder,
  Adam, MSE to the true-class probability; (3) fine-tuning of the encoder copy with Adam at a tiny
  learning rate, dropout disabled.  The classifier itself is never modified after stage 1.
* ``logitnorm``: one stage, the cross-entropy of the logits divided by τ·‖z‖₂ (Wei, Xie, Cheng, Feng, An & Li,
  "Mitigating Neural Network Overconfidence with Logit Normalization", ICML 2022, arXiv 2205.09310, §3), SGD.
* ``oe``: one stage, Outlier Exposure (Hendrycks, Mazeika & Dietterich, "Deep Anomaly Detection with Outlier
  Exposure", ICLR 2019, arXiv 1812.04606, §3, §4.2): each step draws ``outlier_batch_size`` images of the auxiliary
  outlier set with the ID batch (:attr:`Stage.outlier_batch_size`); loss = cross-entropy of the ID batch + λ·the
  cross-entropy to the uniform distribution of the outliers, SGD.

Neither ``logitnorm`` nor ``oe`` adds a confidence head: the model is evaluated on its raw logits.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from csfbench.heads import class_outputs
from csfbench.models.network import Classifier
from csfbench.training.losses import (confidnet_loss, cross_entropy, deep_gamblers_loss, devries_loss,
                                      inverse_frequency_weights, logit_norm_loss, outlier_exposure_loss,
                                      update_devries_lambda)
from csfbench.specs import ModelSpec

LossFn = Callable[[Classifier, torch.Tensor, torch.Tensor, int, dict], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class Stage:
    """One optimisation stage.

    ``loss(model, x, y, epoch, state) -> (loss, logits_for_accuracy)``; ``state`` holds values the
    stage adapts during training (DeVries' λ) and is saved in the resume file.  ``outlier_batch_size`` > 0: each
    training step draws that many images of the auxiliary outlier set (:func:`csfbench.training.loop.train_model`'s
    ``outlier_set``) and hands them to ``loss`` after the batch, so ``x`` holds the ``len(y)`` labelled images
    first, then the outliers (none at validation); ``logits_for_accuracy`` are those of the labelled images.
    """

    name: str
    epochs: int
    params: Callable[[Classifier], list[nn.Parameter]]
    train_modules: Callable[[Classifier], list[nn.Module]]
    optimizer: Callable[[list[nn.Parameter]], torch.optim.Optimizer]
    loss: LossFn
    max_steps: int | None = None
    warmup_steps: int = 0
    on_start: Callable[[Classifier], None] = lambda model: None
    state: dict = field(default_factory=dict)
    outlier_batch_size: int = 0


def _sgd(optim: dict, lr: float | None = None, nesterov: bool | None = None):
    def make(params):
        return torch.optim.SGD(params, lr=lr if lr is not None else optim["lr"],
                               momentum=float(optim["momentum"]),
                               weight_decay=float(optim["weight_decay"]),
                               nesterov=bool(optim["nesterov"] if nesterov is None else nesterov))
    return make


def _adam(lr: float):
    return lambda params: torch.optim.Adam(params, lr=lr)


def _ce_loss(class_weights: torch.Tensor | None = None):
    """Plain or class-weighted cross-entropy of the class logits (:func:`csfbench.training.losses.cross_entropy`)."""
    def loss(model, x, y, epoch, state):
        logits = class_outputs(model.head(model.encoder(x)), model.n_classes)
        return cross_entropy(logits, y, class_weights), logits
    return loss


def _classifier_params(model: Classifier) -> list[nn.Parameter]:
    return list(model.encoder.parameters()) + list(model.head.parameters())


def _classifier_modules(model: Classifier) -> list[nn.Module]:
    return [model.encoder, model.head]


def _epochs(params: dict, steps_per_epoch: int) -> tuple[int, int | None]:
    if "steps" in params:
        steps = int(params["steps"])
        return -(-steps // steps_per_epoch), steps
    return int(params["epochs"]), None


def build_stages(spec: ModelSpec, steps_per_epoch: int, train_labels=None) -> list[Stage]:
    """The stages of ``spec.paradigm`` with the hyper-parameters of the resolved spec; ``train_labels`` (the
    training split's labels) set the class weights of ``ce`` with ``class_weights: inverse_frequency``."""
    optim, params, paradigm = spec.optim, spec.paradigm_params, spec.paradigm
    if paradigm == "ce":
        epochs, max_steps = _epochs(params, steps_per_epoch)
        weights = None
        if params.get("class_weights", "none") == "inverse_frequency":
            if train_labels is None:
                raise ValueError("class_weights inverse_frequency needs the training labels")
            weights = inverse_frequency_weights(train_labels, spec.n_classes)
        return [Stage("ce", epochs, _classifier_params, _classifier_modules, _sgd(optim), _ce_loss(weights),
                      max_steps=max_steps, warmup_steps=int(params["warmup_steps"]))]
    if paradigm == "dg":
        pretrain, reward = int(params["pretrain_epochs"]), float(spec.reward)

        def dg_loss(model, x, y, epoch, state):
            logits = model.head(model.encoder(x))
            classes = class_outputs(logits, model.n_classes)
            if epoch < pretrain:
                return F.cross_entropy(classes.float(), y), classes
            return deep_gamblers_loss(logits, y, reward), classes

        return [Stage("dg", int(params["epochs"]), _classifier_params, _classifier_modules,
                      _sgd(optim, nesterov=False), dg_loss)]
    if paradigm == "devries":
        budget = float(params["budget"])

        def dv_loss(model, x, y, epoch, state):
            features = model.encoder(x)
            logits = model.head(features)
            hint = torch.rand(len(y), device=y.device) < 0.5
            total, penalty = devries_loss(logits, model.confidence_logit(x, features), y, state["lambda"], hint)
            state["lambda"] = update_devries_lambda(state["lambda"], float(penalty.detach()), budget)
            return total, logits

        stage = Stage("devries", int(params["epochs"]),
                      lambda m: _classifier_params(m) + list(m.conf_head.parameters()),
                      lambda m: [m.encoder, m.head, m.conf_head],
                      _sgd(optim), dv_loss)  # devries.nesterov is merged into optim
        stage.state["lambda"] = float(params["lambda_init"])
        return [stage]
    if paradigm == "confidnet":
        def tcp_loss(model, x, y, epoch, state):
            with torch.no_grad():
                logits = model.head(model.encoder(x))
            return confidnet_loss(model.conf_head(model.conf_encoder(x)), logits, y), logits

        def sync_copy(model):
            model.conf_encoder.load_state_dict(model.encoder.state_dict())

        stages = [
            Stage("backbone", int(params["epochs_backbone"]), _classifier_params, _classifier_modules,
                  _sgd(optim), _ce_loss()),
            Stage("confidnet", int(params["epochs_head"]), lambda m: list(m.conf_head.parameters()),
                  lambda m: [m.conf_head], _adam(float(params["head_lr"])), tcp_loss,
                  on_start=sync_copy),
        ]
        if int(params["epochs_finetune"]) > 0:
            stages.append(Stage("finetune", int(params["epochs_finetune"]),
                                lambda m: list(m.conf_encoder.parameters()) + list(m.conf_head.parameters()),
                                lambda m: [m.conf_head], _adam(float(params["finetune_lr"])), tcp_loss))
        return stages
    if paradigm == "logitnorm":
        tau = float(params["tau"])

        def ln_loss(model, x, y, epoch, state):
            logits = class_outputs(model.head(model.encoder(x)), model.n_classes)
            return logit_norm_loss(logits, y, tau), logits

        return [Stage("logitnorm", int(params["epochs"]), _classifier_params, _classifier_modules, _sgd(optim),
                      ln_loss)]
    if paradigm == "oe":
        lam = float(params["lambda"])

        def oe_loss(model, x, y, epoch, state):
            # one forward pass of the ID images and the outliers after them, as the authors' code (BatchNorm sees both)
            logits = class_outputs(model.head(model.encoder(x)), model.n_classes)
            total, _ = outlier_exposure_loss(logits[:len(y)], y, logits[len(y):], lam)
            return total, logits[:len(y)]

        return [Stage("oe", int(params["epochs"]), _classifier_params, _classifier_modules, _sgd(optim), oe_loss,
                      outlier_batch_size=int(params["outlier_batch_size"]))]
    raise ValueError(f"unknown paradigm '{paradigm}' (known: ce, dg, devries, confidnet, logitnorm, oe)")


def warmup_cosine(total_steps: int, warmup_steps: int) -> Callable[[int], float]:
    """LR multiplier: linear warm-up over ``warmup_steps`` then cosine decay to 0 at ``total_steps``."""
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1.0 + torch.cos(torch.tensor(min(progress, 1.0) * torch.pi)).item())
    return factor
