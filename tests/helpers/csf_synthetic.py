"""Synthetic model outputs for CSF engine tests: ID classes in a low-dimensional subspace, OOD far away.

ID features h = μ_y + noise that is large along the class's own logit direction e_y and a
class-specific direction, small elsewhere in an 8-dimensional subspace, tiny outside it (so the
classes have distinct PCA subspaces, as penultimate features of trained networks do);
the head is W = μ / ‖μ‖ · 2, b = 0, so logits are informative and some ID samples are misclassified.
OOD features are isotropic around the origin in all D dimensions: far from every class mean, off
the ID subspace, with near-uniform softmax — every CSF must give them lower confidence.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.engine import TuningSettings
from csfbench.csf.inputs import SplitData
from csfbench.csf.registry import ModelContext

SIZES = {"train": 800, "val": 400, "test": 400, "ood": 400}

# every tunable parameter fixed: the orientation and storage tests check the scores, not the search
FIXED = {"projection": {"variance": 0.9}, "GEN": {"m": 3, "gamma": 0.1}, "REN": {"m": 3, "gamma": 0.5},
         "NNGuide": {"k": 10, "alpha": 0.3}, "KPCA RecError": {"variance": 0.9, "gamma": 0.1, "n_landmarks": 50},
         "ODIN": {"temperature": 10.0}, "KNN": {"k": 5}, "ReAct": {"percentile": 90.0},
         **{name: {"percentile": 80.0} for name in ("ASH-S", "ASH-B", "ASH-P", "SCALE")}, "DICE": {"percentile": 50.0}}
FIXED_TUNING = TuningSettings(init_points=1, n_iter=0, seed=1, fixed=FIXED)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def make_splits(n_classes: int = 5, dim: int = 32, passes: int = 0, seed: int = 0, paradigm: str = "devries",
                backbone: str = "vgg13") -> tuple[dict[str, SplitData], ModelContext]:
    rng = np.random.default_rng(seed)
    means = np.zeros((n_classes, dim))
    means[np.arange(n_classes), np.arange(n_classes)] = 6.0
    means[:, n_classes:8] = rng.normal(size=(n_classes, 8 - n_classes))
    own = np.zeros((n_classes, dim))  # a class-specific direction of variation in dims 5..7
    own[:, n_classes:8] = rng.normal(size=(n_classes, 8 - n_classes))
    weight = 2 * means / np.linalg.norm(means, axis=1, keepdims=True)
    bias = np.zeros(n_classes)
    splits = {}
    for name, n in SIZES.items():
        if name == "ood":
            labels = -np.ones(n, dtype=np.int64)
            h = rng.normal(size=(n, dim)) * 0.5
        else:
            labels = rng.integers(0, n_classes, n)
            noise = np.concatenate([rng.normal(size=(n, 8)) * 0.3, rng.normal(size=(n, dim - 8)) * 0.05], 1)
            noise[np.arange(n), labels] += rng.normal(size=n) * 2.5
            noise += rng.normal(size=(n, 1)) * own[labels]
            h = means[labels] + noise
            flip = rng.random(n) < 0.1  # label noise: about 10 % of ID samples are misclassified
            labels = np.where(flip, (labels + rng.integers(1, n_classes, n)) % n_classes, labels)
        z = h @ weight.T + bias
        pass_logits = z[:, None, :] + rng.normal(size=(n, passes, n_classes)) * 0.3 if passes else None
        logits = pass_logits.mean(1) if passes else z
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        pred = probs.argmax(1)
        top2 = np.sort(logits, 1)[:, -2:]
        confidence = _sigmoid(top2[:, 1] - top2[:, 0] - 1.0)
        splits[name] = SplitData(name, "mcd" if passes else "det", h, logits, logits, labels, pred, confidence,
                                 pass_logits)
    ctx = ModelContext(n_classes, backbone, paradigm, weight, bias, weight, bias)
    return splits, ctx


def with_abstention_row(splits: dict[str, SplitData], ctx: ModelContext) -> None:
    """Give ``ctx`` and ``splits`` a Deep Gamblers head: an extra abstention output, which the strict form
    drops and the authors'-code quirks keep (in place)."""
    rng = np.random.default_rng(5)
    abstain = ctx.weight.mean(0) * 1.5 + rng.normal(size=ctx.weight.shape[1]) * 0.1
    ctx.weight_full = np.vstack([ctx.weight, abstain])
    ctx.bias_full = np.r_[ctx.bias, 2.0]
    for split in splits.values():
        split.logits_full = np.c_[split.logits, split.features @ abstain + 2.0]
