"""OpenMax (Bendale & Boult, "Towards Open Set Deep Networks", CVPR 2016, arXiv 1511.06233, §3,
Algorithms 1 and 2), on stored logits, as OpenOOD v1.5 runs it (ICONIC-444's code base).

Fit (Algorithm 1), on the **correctly classified** training rows (argmax z = label): per class k, the
mean activation vector μ_k (the mean logit vector of those rows), their Euclidean distances to μ_k,
and a Weibull distribution fitted to the ``tail_size`` largest distances in libMR's ``FitHigh`` form:
the tail is shifted by ``TRANSLATION − min(tail)`` (libMR's ``translate_amount`` of 10,000) and a
two-parameter Weibull (location 0) is fitted by maximum likelihood with
:meth:`scipy.stats.weibull_min.fit` (pytorch-ood fits the same model with ``exponweib``, a = 1).

Score (Algorithm 2): for a logit vector z, its α largest classes get the weights
ω = (α − r + 1)/α by rank r = 1..α (0 for the others); with w_k the Weibull CDF (libMR's ``w_score``)
of the shifted distance ‖z − μ_k‖, the revised activations are v_k = z_k (1 − ω_k w_k) and
v_0 = Σ_k z_k ω_k w_k (the unknown class), and the OpenMax probabilities are the softmax of
(v_1, …, v_C, v_0) — the unknown class last, as in OpenOOD.  Two confidences (float64 (N,), higher =
more in-distribution):

* ``"max"`` — the largest of the C + 1 OpenMax probabilities, *the unknown one included*: OpenOOD
  v1.5's ``OpenMax.postprocess`` and ImageNet-OOD (Yang, Zhang & Russakovsky, ICLR 2024,
  arXiv 2310.01755, App. D), in [1/(C+1), 1];
* ``"unknown"`` — minus the unknown-class probability (pytorch-ood's outlier score, Bendale & Boult's
  rejection rule), in [−1, 0].

Neither rule is monotone in "how far from the training data" in general, as written: under ``"max"`` a
row whose unknown probability dominates counts as confident, and a row whose top logits are
*negative* and far from every class centre (w_k ≈ 1) has them revised upwards, towards 0, which lowers
its unknown probability.  Both follow the reference code; tests/unit/csf/test_posthoc_openmax.py shows the
shift each rule does detect.

The hyper-parameters are fixed, as in OpenOOD (ICONIC-444, Krumpl, Avenhaus & Possegger,
arXiv 2601.10802, Table 7: "—"): tail size 20 (:data:`TAIL_SIZE`) and α = 3 revised ranks
(:data:`ALPHA`), Euclidean distance.  Shapes: ``logits`` N×C, ``labels`` N integers in [0, C).
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.blocks import is_row_source, map_row_blocks, row_argmax, row_blocks
from csfbench.csf.distance_scores import check_labels, grouped_sums
from csfbench.csf.logit_scores import as_rows, softmax

OPENMAX_GRID: dict[str, tuple] = {}
#: OpenOOD's ``weibull_tail``: the largest distances of each class that the Weibull is fitted to
TAIL_SIZE = 20
#: OpenOOD's ``weibull_alpha``: the number of top-ranked classes whose activations are revised
ALPHA = 3
#: libMR's ``translate_amount``: the fitted tail is shifted to start at this value
TRANSLATION = 10_000.0
#: the confidences of :func:`openmax_score`
RULES = ("max", "unknown")


def _weibull_min():
    """scipy.stats' Weibull distribution, imported on first use: scipy.stats takes ~0.4 s to import and
    the CSF registry (imported whenever a config is validated) would otherwise pay it every time."""
    from scipy.stats import weibull_min
    return weibull_min


def _weibull_cdf(x: np.ndarray, shape: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The two-parameter Weibull CDF 1 − exp(−(x/λ)^k) (0 for x < 0), as ``weibull_min.cdf(x, k, scale=λ)``."""
    return -np.expm1(-(np.maximum(x, 0.0) / scale) ** shape)


def openmax_fit(logits: np.ndarray, labels: np.ndarray, tail_size: int = TAIL_SIZE) -> dict[str, np.ndarray]:
    """Per class: ``means`` (C×C mean logit vectors), and the Weibull ``shape``, ``scale`` and the
    tail's smallest distance ``tail_min`` (each (C,)).  ValueError for a class whose correctly
    classified rows give fewer than two distinct tail distances."""
    logits = logits if is_row_source(logits) else as_rows(logits)  # an array or a row source
    n_classes = logits.shape[1]
    labels = check_labels(labels, len(logits), n_classes)
    if tail_size < 2:
        raise ValueError(f"OpenMax tail size must be >= 2, got {tail_size}")
    correct = row_argmax(logits) == labels
    # two passes over row blocks: the class means of the correct rows (float64 sums), then every row's
    # distance to its class mean; only the correct rows' distances are kept
    sums = grouped_sums(logits, np.where(correct, labels, n_classes), n_classes + 1)[:n_classes]
    counts = sums[:, -1]
    means = np.divide(sums[:, :-1], counts[:, None], out=np.zeros((n_classes, n_classes)), where=counts[:, None] > 0)
    distances = np.empty(len(labels))

    def block(rows: slice) -> None:
        distances[rows] = np.linalg.norm(np.asarray(logits[rows], dtype=np.float64) - means[labels[rows]], axis=1)

    map_row_blocks(block, len(labels), n_classes)
    state = {"means": means, "shape": np.empty(n_classes), "scale": np.empty(n_classes),
             "tail_min": np.empty(n_classes)}
    kept = np.flatnonzero(correct)
    by_class = kept[np.argsort(labels[kept], kind="stable")]
    bounds = np.searchsorted(labels[by_class], np.arange(n_classes + 1))
    for k in range(n_classes):
        tail = np.sort(distances[by_class[bounds[k]:bounds[k + 1]]])[-tail_size:]
        if len(np.unique(tail)) < 2:
            raise ValueError(f"OpenMax: class {k} has {int(counts[k])} correctly classified training rows, "
                             "too few for a Weibull fit")
        shape, _, scale = _weibull_min().fit(tail + (TRANSLATION - tail[0]), floc=0.0)
        state["shape"][k], state["scale"][k], state["tail_min"][k] = shape, scale, tail[0]
    return state


def openmax_probabilities(state: dict[str, np.ndarray], logits: np.ndarray, alpha: int = ALPHA) -> np.ndarray:
    """The OpenMax probabilities, N×(C+1): the C revised classes, then the unknown class."""
    logits = as_rows(logits)
    means = np.asarray(state["means"], dtype=np.float64)
    n_classes = means.shape[0]
    if logits.shape[1] != n_classes:
        raise ValueError(f"expected N×{n_classes} logits, got shape {logits.shape}")
    if not 1 <= alpha <= n_classes:
        raise ValueError(f"OpenMax alpha must lie in [1, {n_classes}], got {alpha}")
    rank_weights = (alpha - np.arange(alpha)) / alpha
    revised = np.empty((len(logits), n_classes + 1))
    for rows in row_blocks(len(logits), alpha * n_classes):
        z = logits[rows]
        top = np.argpartition(-z, alpha - 1, axis=1)[:, :alpha]
        top = np.take_along_axis(top, np.argsort(-np.take_along_axis(z, top, axis=1), axis=1), axis=1)
        distance = np.linalg.norm(z[:, None, :] - means[top], axis=2)
        w_score = _weibull_cdf(distance + (TRANSLATION - state["tail_min"][top]), state["shape"][top],
                               state["scale"][top])
        removed = np.take_along_axis(z, top, axis=1) * rank_weights * w_score
        out = revised[rows]
        out[:, :n_classes] = z
        np.put_along_axis(out[:, :n_classes], top, np.take_along_axis(z, top, axis=1) - removed, axis=1)
        out[:, n_classes] = removed.sum(axis=1)
    return softmax(revised)


def openmax_score(state: dict[str, np.ndarray], logits: np.ndarray, alpha: int = ALPHA,
                  rule: str = "max") -> np.ndarray:
    """OpenMax confidence by ``rule`` (module docstring): ``"max"`` the largest of the C + 1
    probabilities, ``"unknown"`` minus the unknown-class probability."""
    if rule not in RULES:
        raise ValueError(f"OpenMax rule must be one of {RULES}, got {rule!r}")
    probs = openmax_probabilities(state, logits, alpha)
    return probs.max(axis=1) if rule == "max" else -probs[:, -1]
