"""The inputs one CSF variant sees: features, logits and temperature of a projection variant
(Claros-Olivares & Brockmeier, §3.2, App. A.4, Table 3; docs/methods.md).

A :class:`View` is built per (split, variant) by :func:`build_views` from the fitted projection
state; all CSFs of that variant share it, so projections and class-projected logits are computed
once per (model, fit group), not once per CSF.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from csfbench.csf.inputs import SplitData
from csfbench.csf.logit_scores import softmax
from csfbench.csf.projection import ClassSubspaces, class_views, project, rec_confidence


@dataclass
class View:
    """One split seen through one projection variant.

    ``features`` is the variant's feature vector (N×D; None for ``class``, which has per-class
    columns in ``columns``); ``logits`` the variant's logits (N×C); ``temperature`` its fitted T.
    ``class_logits`` are the class-projected logits ĝ^class, kept for the authors'-code quirks of
    the class_avg/class_pred variants.  ``split`` holds the unprojected inputs of the same split.
    """

    variant: str
    split: SplitData
    features: np.ndarray | None
    logits: np.ndarray
    temperature: float
    columns: dict | None = None
    class_logits: np.ndarray | None = None

    @cached_property
    def probs(self) -> np.ndarray:
        """softmax(z / T); in MC-dropout mode the unprojected view uses the mean of the per-pass softmaxes
        (the input of the probability CSFs; GradNorm takes softmax(z̄ / T) of the mean logits instead).

        Computed once per view and shared by every probability-based CSF of the variant and by
        every tuning probe on it (callers must not modify it in place).
        """
        if self.variant == "none" and self.split.pass_logits is not None:
            return softmax(self.split.pass_logits, self.temperature).mean(1)
        return softmax(self.logits, self.temperature)

    @property
    def rec(self) -> np.ndarray:
        """PCA RecError confidence of this variant (−‖h − ĥ‖/‖h‖; max over classes for ``class``)."""
        if self.variant == "class":
            return self.columns["rec"].max(1)
        return rec_confidence(self.split.features, self.features)


def variant_logits(split: SplitData, projection: dict, weight: np.ndarray, bias: np.ndarray) -> dict:
    """Features and logits of every variant of a fit group for ``split`` (temperatures not applied).

    ``projection`` is the fitted state: {"group": ..., and for global: "mean", "basis"; for class: a
    :class:`ClassSubspaces` under "subspaces" and "mean_targets"}.
    """
    group = projection["group"]
    if group == "none":
        return {"none": (split.features, split.logits, None)}
    if group == "global":
        h = project(split.features, projection["mean"], projection["basis"])
        return {"global": (h, h @ weight.T + bias, None)}
    subspaces: ClassSubspaces = projection["subspaces"]
    cv = class_views(split.features, split.pred, subspaces, weight, bias, projection["mean_targets"])
    columns = {"cos_weight": cv.cos_weight, "cos_mean": cv.cos_mean, "rec": cv.rec}
    return {"class": (None, cv.logits, columns),
            "class_avg": (cv.avg, cv.avg @ weight.T + bias, None),
            "class_pred": (cv.pred, cv.pred @ weight.T + bias, None),
            "_class_logits": cv.logits}


def build_views(split: SplitData, projection: dict, weight: np.ndarray, bias: np.ndarray,
                temperatures: dict[str, float], parts: dict | None = None) -> dict[str, View]:
    """A :class:`View` per variant of the fit group, with its temperature.

    ``parts`` may pass :func:`variant_logits` of the same split when the caller already has them.
    """
    parts = dict(parts if parts is not None else variant_logits(split, projection, weight, bias))
    class_logits = parts.pop("_class_logits", None)
    return {variant: View(variant, split, feats, logits, temperatures[variant], columns, class_logits)
            for variant, (feats, logits, columns) in parts.items()}
