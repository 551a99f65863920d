"""Two CSF definitions pinned against independent plain-numpy computations.

* CTMmean under the ``class`` projection: max_k cos(m̂_k, ĥᵏ), with m̂_k the mean of the class-k
  projected features ĥᵏ over the class-k training samples (not the head weight w_k of CTM).
* GradNorm under MC dropout: GradNorm of the features averaged over the passes, h̄, with the logits
  of the linear head on them, z̄ = W h̄ + b (the seed paper's authors' ``mcd_function(GradNorm, …)``),
  not of the mean of the per-pass softmaxes.
"""
from __future__ import annotations

import numpy as np
import pytest

from csfbench.csf.engine import fit_mode, score_mode
from csfbench.csf.inputs import SplitData
from csfbench.csf.registry import BY_NAME, ModelContext
from csfbench.csf.views import build_views

from tests.helpers.csf_synthetic import FIXED_TUNING, make_splits


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


@pytest.mark.parametrize("passes", [0, 3])
def test_ctmmean_class_uses_the_projected_class_means_not_the_head_weights(passes):
    splits, ctx = make_splits(passes=passes)
    fitted = fit_mode("class", splits["train"], splits["val"], ctx, FIXED_TUNING)
    scores = score_mode(splits["test"], fitted, ctx)
    subspaces = fitted.projection["subspaces"]
    train, test = splits["train"], splits["test"]

    def project(h, c):  # ĥᶜ = P_c P_cᵀ (h − μ_c) + μ_c, written out
        basis = subspaces.bases[c][:, :subspaces.k[c]]
        return (h - subspaces.means[c]) @ basis @ basis.T + subspaces.means[c]

    # m̂_c: the mean of ĥᶜ over every class-c training sample (CTMmean uses all of them, not only correct ones)
    targets = [project(np.asarray(train.features[train.labels == c], float), c).mean(0) for c in range(ctx.n_classes)]
    expected = np.array([max(_cos(targets[c], project(h[None], c)[0]) for c in range(ctx.n_classes))
                         for h in np.asarray(test.features, float)])
    np.testing.assert_allclose(scores[("CTMmean", "class")], expected, rtol=1e-9, atol=1e-12)
    assert not np.allclose(scores[("CTMmean", "class")], scores[("CTM", "class")])


def _mcd_split(rng, weight, bias, n=60, passes=5, name="test") -> SplitData:
    """MC-dropout outputs of a linear head: per-pass features h⁽ᵗ⁾ and logits z⁽ᵗ⁾ = W h⁽ᵗ⁾ + b."""
    c, d = weight.shape
    centre = rng.normal(size=(n, 1, d)) * 2.0
    pass_features = centre + rng.normal(size=(n, passes, d)) * 1.5  # strong dropout noise: passes disagree
    pass_logits = pass_features @ weight.T + bias
    probs = np.exp(pass_logits - pass_logits.max(2, keepdims=True))
    probs /= probs.sum(2, keepdims=True)
    logits = pass_logits.mean(1)
    return SplitData(name, "mcd", pass_features.mean(1), logits, logits, rng.integers(0, c, n),
                     probs.mean(1).argmax(1), None, pass_logits)


def test_mcd_gradnorm_is_gradnorm_of_the_pass_averaged_features():
    rng = np.random.default_rng(11)
    n_classes, dim, temperature = 4, 6, 1.7
    weight, bias = rng.normal(size=(n_classes, dim)), rng.normal(size=n_classes)
    ctx = ModelContext(n_classes, "vgg13", "devries", weight, bias, weight, bias)
    split = _mcd_split(rng, weight, bias)
    view = build_views(split, {"group": "none"}, weight, bias, {"none": temperature})["none"]
    conf = BY_NAME["GradNorm"].score(None, view, ctx, {})

    expected = []
    for h in split.features:  # h̄: the features averaged over the passes
        z = weight @ h + bias  # the head applied to h̄ (= the mean of the per-pass logits, the head is linear)
        p = np.exp(z / temperature - np.max(z / temperature))
        p /= p.sum()
        # L = Σ_k −log softmax(z/T)_k:  ∂L/∂z_j = (C p_j − 1)/T,  ∂L/∂W = (∂L/∂z) h̄ᵀ; GradNorm = Σ|∂L/∂W|
        grad_w = np.outer((n_classes * p - 1.0) / temperature, h)
        expected.append(np.abs(grad_w).sum())
    np.testing.assert_allclose(conf, expected, rtol=1e-10)

    # the mean of the per-pass softmaxes (the MSR/PE input under MC dropout) gives another score
    p_bar = np.exp(split.pass_logits / temperature - (split.pass_logits / temperature).max(2, keepdims=True))
    p_bar = (p_bar / p_bar.sum(2, keepdims=True)).mean(1)
    other = np.abs(split.features).sum(1) * np.abs(n_classes * p_bar - 1).sum(1) / temperature
    assert not np.allclose(conf, other)
