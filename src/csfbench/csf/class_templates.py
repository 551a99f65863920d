"""Scores against per-class templates fitted on stored outputs: KLM, SHE, RMDS (and MaxCosine).

Every score is a float64 array (N,), oriented as a **confidence**: higher = more in-distribution.

* **KLM** (KL matching) — Hendrycks, Basart, Mazeika, Zou, Kwon, Mostajabi, Steinhardt & Song,
  "Scaling Out-of-Distribution Detection for Real-World Settings", ICML 2022, arXiv 1911.11132:
  templates d_k = the mean softmax of the fitted rows the model *predicts* as class k (no labels
  needed); confidence ``−min_k KL(p ‖ d_k)`` in nats, <= 0, over the classes predicted for at least
  one fitted row (pytorch-ood's rule; OpenOOD's one-hot template for an unpredicted class gives an
  infinite divergence for any p that is not exactly one-hot, so it never wins the minimum).  OpenOOD
  fits the templates on the ID validation split; the caller chooses the rows.  Entries of d_k that
  underflow to 0 are floored at the smallest normal float64, so the divergence stays finite.
* **SHE** (simplified Hopfield energy) — Zhang, Fu, Chen, Du, Li, Wang, Liu, Han & Zhang,
  "Out-of-Distribution Detection based on In-Distribution Data Patterns Memorization with Modern
  Hopfield Energy", ICLR 2023 (OpenReview KkazG4lgKL): stored patterns S_k = the mean training
  feature of the *correctly classified* rows of class k; confidence ``h · S_ŷ`` with ŷ = argmax z, in
  squared feature units (OpenOOD's default ``inner_product`` metric; pytorch-ood negates it as an
  outlier score).
* **RMDS** (relative Mahalanobis distance) — Ren, Fort, Liu, Roy, Padhy & Lakshminarayanan, "A Simple
  Fix to Mahalanobis Distance for Improving Near-OOD Detection", 2021, arXiv 2106.09022: class
  Gaussians N(μ_k, Σ) with one shared (tied) covariance and a background Gaussian N(μ_0, Σ_0) of all
  training features, both on the labels; confidence ``−min_k (MD_k(h) − MD_0(h))`` with squared
  Mahalanobis distances MD.  The covariances are those of :func:`~csfbench.csf.distance_scores.maha_fit`
  (scatter / (N − 1), pseudo-inverse); OpenOOD divides by N, which scales the score by N/(N − 1) and
  ranks identically.
* **MaxCosine** (ImageNet-OOD's "Max-Cosine": Zhang & Xiang, "Decoupling MaxLogit for
  Out-of-Distribution Detection", CVPR 2023, as implemented by Yang, Zhang & Russakovsky,
  "ImageNet-OOD: Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024,
  arXiv 2310.01755): ``max_k cos(h, w_k)`` over the rows of the head W, no bias, scale 1.  That is
  the CTM kernel :func:`csfbench.csf.distance_scores.max_cosine` with ``directions = W``, reused as is.

Shapes: ``features`` N×D, ``logits`` N×C, ``labels`` N integers in [0, C).  Work over N rows runs in
row blocks (:func:`csfbench.csf.blocks.row_blocks`; KLM's on several threads,
:func:`~csfbench.csf.blocks.map_row_blocks`), in float64.  None of these has a hyper-parameter
(ICONIC-444, Krumpl, Avenhaus & Possegger, arXiv 2601.10802, Table 7: "—"), hence the empty grids.
"""
from __future__ import annotations

import numpy as np

from csfbench.csf.blocks import is_row_source, map_row_blocks, row_argmax, row_blocks, sum_row_blocks
from csfbench.csf.distance_scores import check_labels, class_means, maha_fit, maha_score
from csfbench.csf.logit_scores import _shifted_exp, as_rows

KLM_GRID: dict[str, tuple] = {}
SHE_GRID: dict[str, tuple] = {}
RMDS_GRID: dict[str, tuple] = {}
MAXCOSINE_GRID: dict[str, tuple] = {}


def klm_fit(logits: np.ndarray) -> dict[str, np.ndarray]:
    """KLM templates ``{"templates": K×C}``: the mean softmax of the rows predicted as each of the K
    classes predicted at least once, in class order.

    One pass over row blocks on several threads: each block's softmax, its rows ordered by predicted
    class (a stable sort), and the per-class sums by :func:`numpy.add.reduceat`; the blocks' sums and
    counts are added in row order (:func:`~csfbench.csf.blocks.sum_row_blocks`)."""
    logits = logits if is_row_source(logits) else as_rows(logits)
    n_classes = logits.shape[1]
    if not len(logits):
        raise ValueError("KLM templates need at least one fitted row")

    def block(rows: slice) -> np.ndarray:
        z = logits[rows]
        probs = np.empty(z.shape)
        _, sums = _shifted_exp(z, 1.0, probs)
        probs *= np.reciprocal(sums, out=sums)[:, None]
        predicted = z.argmax(axis=1)
        order = np.argsort(predicted, kind="stable")
        ordered = predicted[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        totals = np.zeros((n_classes, n_classes + 1))  # per class: the sum of its rows' softmax, their count
        totals[ordered[starts], :-1] = np.add.reduceat(probs[order], starts, axis=0)
        totals[:, -1] = np.bincount(predicted, minlength=n_classes)
        return totals

    totals = sum_row_blocks(block, len(logits), n_classes)
    classes = np.flatnonzero(totals[:, -1])
    return {"templates": totals[classes, :-1] / totals[classes, -1:]}


def klm_score(state: dict[str, np.ndarray], logits: np.ndarray) -> np.ndarray:
    """KLM confidence ``−min_k KL(p ‖ d_k) = max_k Σ_c p_c log d_kc − Σ_c p_c log p_c``, nats, <= 0.

    With e = exp(z − s) (the shifts s of :func:`~csfbench.csf.logit_scores.softmax`: each row's
    maximum), S = Σ_c e_c and LSE = s + log S:
    ``p = e / S`` and ``log p = z − LSE``, so the confidence is ``(max_k e · log d_k − e · z) / S + LSE``:
    one exponential per entry, no normalised probabilities, and a probability that underflows to 0
    contributes 0 to Σ p log p.  Row blocks run on several threads."""
    logits = as_rows(logits)
    log_templates = np.log(np.maximum(state["templates"], np.finfo(np.float64).tiny)).T.copy()  # C×K
    scores = np.empty(len(logits))

    def block(rows: slice) -> None:
        z = logits[rows]
        e = np.empty(z.shape)
        shifts, sums = _shifted_exp(z, 1.0, e)
        out = np.max(e @ log_templates, axis=1)
        out -= np.einsum("ij,ij->i", e, z)
        out /= sums
        out += np.log(sums, out=sums)
        out += shifts
        scores[rows] = out

    map_row_blocks(block, len(logits), max(logits.shape[1], log_templates.shape[1]))
    return scores


def she_fit(features: np.ndarray, logits: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """SHE patterns ``{"patterns": C×D}``: the mean feature of the correctly classified (argmax z =
    label) rows of each class, summed in float64 over row blocks (:func:`~csfbench.csf.distance_scores.class_means`;
    arrays or row sources).  ValueError naming the classes without such a row."""
    logits = logits if is_row_source(logits) else as_rows(logits)
    n_classes = logits.shape[1]
    labels = check_labels(labels, len(logits), n_classes)
    correct = row_argmax(logits) == labels
    missing = np.flatnonzero(np.bincount(labels[correct], minlength=n_classes) == 0)
    if len(missing):
        raise ValueError(f"SHE: classes {missing.tolist()} have no correctly classified training row")
    return {"patterns": class_means(features, labels, n_classes, correct)}


def she_score(state: dict[str, np.ndarray], features: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """SHE confidence ``h · S_ŷ``, ŷ = argmax z, shape (N,)."""
    patterns = np.asarray(state["patterns"], dtype=np.float64)
    predicted = as_rows(logits).argmax(axis=1)
    scores = np.empty(len(predicted))
    for rows in row_blocks(len(predicted), patterns.shape[1]):
        scores[rows] = np.einsum("ij,ij->i", np.asarray(features[rows], dtype=np.float64), patterns[predicted[rows]])
    return scores


def rmds_fit(features: np.ndarray, labels: np.ndarray, n_classes: int) -> dict[str, np.ndarray]:
    """RMDS Gaussians: class means and tied precision (``means``, ``precision``) and the background
    mean and precision of all rows (``background_means`` 1×D, ``background_precision``)."""
    classes = maha_fit(features, labels, n_classes)
    background = maha_fit(features, np.zeros(len(features), dtype=np.int64), 1)
    return {**classes, "background_means": background["means"], "background_precision": background["precision"]}


def rmds_score(state: dict[str, np.ndarray], features: np.ndarray) -> np.ndarray:
    """RMDS confidence ``−min_k (MD_k(h) − MD_0(h)) = max_k −MD_k(h) + MD_0(h)``, shape (N,), in
    squared Mahalanobis units (:func:`~csfbench.csf.distance_scores.maha_score` twice)."""
    return (maha_score(features, state["means"], state["precision"])
            - maha_score(features, state["background_means"], state["background_precision"]))
