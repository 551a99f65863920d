"""A classifier = encoder h(x) + linear head g(h) + optionally the paradigm's confidence head.

``forward`` returns :class:`Output` with ``logits`` (N×C, or N×(C+1) for Deep Gamblers),
``features`` (N×D penultimate) and ``confidence`` (N, the paradigm's own score in [0, 1], higher =
more confident; ``None`` for plain cross-entropy).  :meth:`Classifier.block_maps` and
:meth:`Classifier.logits_from_last_block` expose the per-block activations the detectors that need the
network read (``csfbench.network_csf``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from csfbench.heads import class_outputs


@dataclass
class Output:
    logits: torch.Tensor
    features: torch.Tensor
    confidence: torch.Tensor | None


class ConfidNetHead(nn.Module):
    """MLP on encoder features regressing the true-class probability; sigmoid output in [0, 1]."""

    def __init__(self, in_dim: int, hidden: int = 400, layers: int = 5):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1)
        blocks: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            blocks += [nn.Linear(a, b), nn.ReLU(inplace=True)]
        blocks.append(nn.Linear(dims[-1], 1))
        self.mlp = nn.Sequential(*blocks)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.mlp(h).squeeze(-1)


class Classifier(nn.Module):
    """Encoder + head, with the confidence branch of the paradigm.

    * ``confidnet``: a copy of the encoder (``conf_encoder``) feeds a :class:`ConfidNetHead`;
      the copy is synchronised with the trained encoder when the ConfidNet stage starts.
    * ``devries``: a linear confidence branch on the features, sigmoid.
    * ``dg``: ``n_classes + 1`` outputs; confidence = 1 − softmax(z)[C] (abstention mass).
    * ``ce``, ``logitnorm``, ``oe``: no confidence head (the logits only).
    """

    def __init__(self, encoder: nn.Module, head: nn.Linear, paradigm: str, n_classes: int,
                 confidnet_hidden: int = 400, confidnet_layers: int = 5):
        super().__init__()
        self.encoder = encoder
        self.head = head
        self.paradigm = paradigm
        self.n_classes = n_classes
        self.feature_dim = int(encoder.feature_dim)
        if paradigm == "confidnet":
            self.conf_encoder = copy.deepcopy(encoder)
            self.conf_head = ConfidNetHead(self.feature_dim, confidnet_hidden, confidnet_layers)
        elif paradigm == "devries":
            self.conf_head = nn.Linear(self.feature_dim, 1)

    def confidence_logit(self, x: torch.Tensor, features: torch.Tensor) -> torch.Tensor | None:
        """Pre-sigmoid confidence of ConfidNet / DeVries (N,), ``None`` for the other paradigms."""
        if self.paradigm == "confidnet":
            return self.conf_head(self.conf_encoder(x))
        if self.paradigm == "devries":
            return self.conf_head(features).squeeze(-1)
        return None

    def forward(self, x: torch.Tensor) -> Output:
        features = self.encoder(x)
        logits = self.head(features)
        if self.paradigm == "dg":
            confidence = 1.0 - torch.softmax(logits.float(), dim=-1)[:, -1]
        else:
            conf_logit = self.confidence_logit(x, features)
            confidence = None if conf_logit is None else torch.sigmoid(conf_logit.float())
        return Output(logits=logits, features=features, confidence=confidence)

    def class_logits(self, x: torch.Tensor) -> torch.Tensor:
        """The C class logits (Deep Gamblers' abstention output dropped), without the confidence branch."""
        return class_outputs(self.head(self.encoder(x)), self.n_classes)

    def block_maps(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The encoder's per-block activations, channel-first (N×C×…): VGG-13's five conv stacks before
        their max-pools, a ResNet's four stages ``layer1`` … ``layer4`` (N×C×H×W), a ViT's transformer blocks
        (N×D×T).  Other library architectures raise ``NotImplementedError``
        (:mod:`csfbench.network_csf.architectures`)."""
        return self.encoder.block_maps(x)

    def logits_from_last_block(self, last: torch.Tensor) -> torch.Tensor:
        """The C class logits from the last block map (edited or not): the rest of the forward pass."""
        return class_outputs(self.head(self.encoder.from_last_block(last)), self.n_classes)

    def set_mc_dropout(self, active: bool) -> None:
        """Switch only the Dropout layers to train mode (BatchNorm stays in eval) for MC passes."""
        for module in self.modules():
            if isinstance(module, nn.Dropout):
                module.train(active)
