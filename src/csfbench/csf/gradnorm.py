"""GradNorm in closed form (Huang et al., 2021; Claros-Olivares & Brockmeier, App. A.3.9).

For a linear head ``z = W h + b`` and the loss ``L = sum_k -log softmax(z / T)_k`` the gradient
with respect to the weights is ``dL/dW = (1/T) (C p - 1) h^T`` with ``p = softmax(z / T)``, so its
entrywise L1 norm factorises into ``(1/T) ||h||_1 sum_j |C p_j - 1|``.  The bias gradient is not
included.  Larger = more peaked prediction = more in-distribution, so the score is returned as is.
As in the authors' code, the loss sums over classes (the paper's 1/C mean only rescales the score) and
the logits are divided by the validation temperature T (the original GradNorm uses T = 1).

Under MC dropout (MCD-GradNorm) the input is h̄, the penultimate features averaged over the dropout
passes, with z̄ = W h̄ + b (the mean of the per-pass logits of the linear head) and p = softmax(z̄ / T):
the authors' code (github.com/cesar-claros/ood_systematic, ``src/utils_funcs.py``) scores
``mcd_function(GradNorm.get_scores, encoded_distribution, temperature=T)``, which averages the features
over the passes and then runs GradNorm's autograd on the head; it neither averages the per-pass
softmaxes nor the per-pass GradNorm scores.
"""
from __future__ import annotations

import numpy as np


def gradnorm(features: np.ndarray, probs: np.ndarray, temperature: float) -> np.ndarray:
    """GradNorm confidence, shape (N,), >= 0.

    ``features`` N×D penultimate features h; ``probs`` N×C, which must be ``softmax(z / T)`` for the
    same ``temperature`` T.  Returns ``(1/T) ||h||_1 sum_j |C p_j - 1|``.
    """
    features = np.asarray(features, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    n_classes = probs.shape[1]
    return np.abs(features).sum(axis=1) * np.abs(n_classes * probs - 1.0).sum(axis=1) / temperature
