"""The four distances between an OOD set and its source in an encoder's embedding space
(Claros-Olivares & Brockmeier, §3.3, App. B).

All four are oriented lower = closer to the source. Inputs are ``N × E`` arrays of image embeddings from
any encoder (open_clip, the workflow's own ViT, ...); the source set is the ID *training* split (as in the authors'
``clip_proximity.py``).

* ``fd`` — the **squared** Fréchet distance between Gaussian fits (unbiased covariances, no square
  root: the paper's Table 4 column "FD" holds the squared distance):
  ``‖μ_s − μ_o‖² + tr(Σ_s + Σ_o − 2 (Σ_s^{1/2} Σ_o Σ_s^{1/2})^{1/2})``. The trace of the matrix
  square root is computed from the eigenvalues of the symmetric PSD matrix
  ``Σ_s^{1/2} Σ_o Σ_s^{1/2}`` (negative round-off eigenvalues clipped to 0), which has the same trace as
  the authors' ``sqrtm(Σ_s Σ_o)`` but never goes complex and stays stable for singular covariances
  (``N < E``).
* ``mmd`` — the unbiased MMD² with the KID polynomial kernel ``k(u, v) = (u·v / E + 1)³`` (the
  authors' code; the paper leaves c and d of (uᵀv + c)^d open),
  averaged over ``n_subsets`` random subset pairs. Each pair draws, from one
  ``numpy.random.RandomState(seed)`` and in this order, ``min(subset_size, N_source)`` source rows and
  then ``min(subset_size, N_ood)`` OOD rows without replacement (the authors' order). It may be slightly
  negative for sets from the same distribution.
* ``centroid_distance`` — the mean over the OOD set of the chordal distance to the nearest source-class
  centroid, ``sqrt(2 (1 − max_c cos(z, μ_c)))`` (the authors' code and the
  published values above 1; the paper writes 1 − max cos); ``μ_c`` is the L2-normalised mean of the
  L2-normalised source embeddings of class ``c`` (one centroid per distinct label present).
* ``text_alignment`` — ``1 − mean_j max_c cos(z_j, t_c)`` against the text embeddings of the class names
  (prompt-ensembled by the caller). Only when ``text_emb`` is given; otherwise the key is absent.

Normalisation: with ``normalize=True`` (the default, as in the paper, whose CLIP embeddings are
L2-normalised) every image and text embedding is scaled to unit norm first, so FD and MMD see unit
vectors too. With ``normalize=False`` FD and MMD use the embeddings as given; the two cosine-based
distances always normalise (a cosine needs unit vectors).
"""
from __future__ import annotations

import numpy as np

MMD = "mmd"
FD = "fd"
TEXT_ALIGNMENT = "text_alignment"
CENTROID_DISTANCE = "centroid_distance"
#: distance names in the paper's column order (Table 4: Kernel MMD | FD | Label-Text | Image Centroid)
DISTANCE_COLUMNS = (MMD, FD, TEXT_ALIGNMENT, CENTROID_DISTANCE)

DEFAULT_MMD_SUBSETS = 50
DEFAULT_MMD_SUBSET_SIZE = 1000
KID_DEGREE = 3


def _as_embeddings(x, name: str, min_rows: int = 1, dim: int | None = None) -> np.ndarray:
    """``x`` as a finite float64 ``N × E`` array with at least ``min_rows`` rows (ValueError otherwise)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected a numeric N × E array, could not convert ({exc})") from None
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D N × E array, got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name}: embeddings have dimension 0")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name}: needs at least {min_rows} samples, got {arr.shape[0]}")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name}: embedding dimension {arr.shape[1]} does not match the source's {dim}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr).all(axis=1)))
        raise ValueError(f"{name}: contains NaN or infinite values ({bad} of {arr.shape[0]} rows)")
    return arr


def _unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"{name}: {int(np.count_nonzero(norms == 0))} row(s) have zero norm; cannot L2-normalise")
    return x / norms


def _psd_sqrt(s: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(s)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def frechet_distance(x, y) -> float:
    """Squared Fréchet distance between Gaussian fits of ``x`` and ``y`` (both ``N × E``, ``N ≥ 2``).

    Symmetric in its arguments; 0 for identical sets (up to round-off, clipped at 0)."""
    x = _as_embeddings(x, "frechet_distance: x", min_rows=2)
    y = _as_embeddings(y, "frechet_distance: y", min_rows=2, dim=x.shape[1])
    diff = x.mean(axis=0) - y.mean(axis=0)
    sx = np.atleast_2d(np.cov(x, rowvar=False))
    sy = np.atleast_2d(np.cov(y, rowvar=False))
    root = _psd_sqrt(sx)
    middle = root @ sy @ root
    eig = np.linalg.eigvalsh((middle + middle.T) / 2.0)
    tr_covmean = float(np.sum(np.sqrt(np.clip(eig, 0.0, None))))
    fd = float(diff @ diff) + float(np.trace(sx) + np.trace(sy)) - 2.0 * tr_covmean
    return max(fd, 0.0)


def _kid_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a @ b.T / a.shape[1] + 1.0) ** KID_DEGREE


def unbiased_mmd2(x, y) -> float:
    """Unbiased MMD² between ``x`` and ``y`` (``≥ 2`` rows each) with the KID polynomial kernel, no subsampling."""
    x = _as_embeddings(x, "unbiased_mmd2: x", min_rows=2)
    y = _as_embeddings(y, "unbiased_mmd2: y", min_rows=2, dim=x.shape[1])
    return _mmd2(x, y)


def _mmd2(x: np.ndarray, y: np.ndarray) -> float:
    n, m = x.shape[0], y.shape[0]
    kxx = _kid_kernel(x, x)
    kyy = _kid_kernel(y, y)
    kxy = _kid_kernel(x, y)
    sxx = (kxx.sum() - np.trace(kxx)) / (n * (n - 1))
    syy = (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
    return float(sxx + syy - 2.0 * kxy.mean())


def kid_mmd2(source, ood, n_subsets: int = DEFAULT_MMD_SUBSETS, subset_size: int = DEFAULT_MMD_SUBSET_SIZE,
             seed: int = 0) -> float:
    """Mean unbiased MMD² (KID kernel) over ``n_subsets`` seeded subset pairs (see the module docstring).

    ``subset_size`` is capped at each set's size; both sets need at least 2 samples."""
    if int(n_subsets) != n_subsets or n_subsets < 1:
        raise ValueError(f"kid_mmd2: n_subsets must be a positive integer, got {n_subsets!r}")
    if int(subset_size) != subset_size or subset_size < 2:
        raise ValueError(f"kid_mmd2: subset_size must be an integer ≥ 2, got {subset_size!r}")
    x = _as_embeddings(source, "kid_mmd2: source", min_rows=2)
    y = _as_embeddings(ood, "kid_mmd2: ood", min_rows=2, dim=x.shape[1])
    rng = np.random.RandomState(seed)
    nx, ny = min(int(subset_size), x.shape[0]), min(int(subset_size), y.shape[0])
    values = []
    for _ in range(int(n_subsets)):
        ix = rng.choice(x.shape[0], size=nx, replace=False)
        iy = rng.choice(y.shape[0], size=ny, replace=False)
        values.append(_mmd2(x[ix], y[iy]))
    return float(np.mean(values))


def class_centroids(source_emb, source_labels) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, centroids)``: the sorted distinct labels and, per label, the L2-normalised mean of the
    L2-normalised source embeddings of that class (``C × E``)."""
    x = _unit_rows(_as_embeddings(source_emb, "source_emb"), "source_emb")
    labels = np.asarray(source_labels)
    if labels.ndim != 1 or labels.shape[0] != x.shape[0]:
        raise ValueError(f"source_labels: expected {x.shape[0]} labels (one per source embedding), "
                         f"got shape {labels.shape}")
    if labels.dtype.kind == "f" and np.any(np.isnan(labels)):
        raise ValueError("source_labels: contains NaN")
    classes, inverse = np.unique(labels, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    counts = np.bincount(inverse, minlength=classes.size)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    means = np.add.reduceat(x[order], starts, axis=0) / counts[:, None]
    norms = np.linalg.norm(means, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"class centroid of label(s) {classes[norms == 0].tolist()} has zero norm")
    return classes, means / norms[:, None]


def nearest_centroid_distances(ood_emb, centroids) -> np.ndarray:
    """Per-sample chordal distance ``sqrt(2 (1 − max_c cos))`` to the nearest (unit) centroid."""
    z = _unit_rows(_as_embeddings(ood_emb, "ood_emb"), "ood_emb")
    c = _as_embeddings(centroids, "centroids", dim=z.shape[1])
    best = (z @ c.T).max(axis=1)
    return np.sqrt(np.clip(2.0 * (1.0 - best), 0.0, None))


def text_alignment_distance(ood_emb, text_emb) -> float:
    """``1 − mean_j max_c cos(z_j, t_c)`` between image embeddings and class-name text embeddings."""
    z = _unit_rows(_as_embeddings(ood_emb, "ood_emb"), "ood_emb")
    t = _unit_rows(_as_embeddings(text_emb, "text_emb", dim=z.shape[1]), "text_emb")
    return float(1.0 - (z @ t.T).max(axis=1).mean())


def ood_distances(ood_emb, source_emb, source_labels, text_emb=None, seed: int = 0, *,
                  n_subsets: int = DEFAULT_MMD_SUBSETS, subset_size: int = DEFAULT_MMD_SUBSET_SIZE,
                  normalize: bool = True) -> dict[str, float]:
    """The four distances between one OOD set and the source, as ``{name: float}``.

    ``ood_emb`` (``M × E``) and ``source_emb`` (``N × E``, the ID training split) need at least 2 rows;
    ``source_labels`` gives the class of each source row; ``text_emb`` (``C × E``, optional) the text
    embeddings of the class names. Keys, in :data:`DISTANCE_COLUMNS` order: ``mmd``, ``fd``,
    ``text_alignment`` (only when ``text_emb`` is given) and ``centroid_distance``. Deterministic for a
    fixed ``seed`` (only the MMD subsets are random). Raises ValueError on malformed input.
    """
    src = _as_embeddings(source_emb, "source_emb", min_rows=2)
    ood = _as_embeddings(ood_emb, "ood_emb", min_rows=2, dim=src.shape[1])
    if text_emb is not None:
        text = _as_embeddings(text_emb, "text_emb", dim=src.shape[1])
    unit_src, unit_ood = _unit_rows(src, "source_emb"), _unit_rows(ood, "ood_emb")
    gx, gy = (unit_src, unit_ood) if normalize else (src, ood)
    _, centroids = class_centroids(unit_src, source_labels)
    out = {
        MMD: kid_mmd2(gx, gy, n_subsets=n_subsets, subset_size=subset_size, seed=seed),
        FD: frechet_distance(gx, gy),
    }
    if text_emb is not None:
        out[TEXT_ALIGNMENT] = text_alignment_distance(unit_ood, text)
    out[CENTROID_DISTANCE] = float(nearest_centroid_distances(unit_ood, centroids).mean())
    return out


def distance_table(ood_sets, source_emb, source_labels, text_emb=None, seed: int = 0, **kwargs):
    """A ``pandas.DataFrame`` of :func:`ood_distances` for each ``{name: M × E array}`` in ``ood_sets``:
    one row per OOD set (index = set names, in the given order), columns in :data:`DISTANCE_COLUMNS`
    order (without ``text_alignment`` when ``text_emb`` is None). The same ``seed`` is used for every set.
    Do not include the ID test split here: the clustering of :mod:`csfbench.proximity.regimes` expects OOD
    sets only."""
    import pandas as pd

    if not ood_sets:
        raise ValueError("distance_table: no OOD set given")
    rows = {}
    for name, emb in ood_sets.items():
        try:
            rows[name] = ood_distances(emb, source_emb, source_labels, text_emb, seed=seed, **kwargs)
        except ValueError as exc:
            raise ValueError(f"OOD set {name!r}: {exc}") from None
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table[[c for c in DISTANCE_COLUMNS if c in table.columns]]
