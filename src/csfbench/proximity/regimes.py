"""Near/mid/far regimes of a source's OOD sets from their distance table (Claros-Olivares & Brockmeier, §3.3, App. B;
the authors' ``clip_clustering.py``).

Input: one source's distance table, one row per candidate OOD set (index = set names; the ID test split
must **not** be a row) and the distance columns of :mod:`csfbench.proximity.distances` (``mmd``, ``fd``,
``text_alignment``, ``centroid_distance``; other columns are ignored unless named in ``columns``).

:func:`assign_regimes` follows the paper: z-score each distance across the source's OOD sets
(population std, like ``sklearn.preprocessing.StandardScaler``; a constant column becomes 0), run
``KMeans(n_clusters=3, n_init=50, random_state=0)`` and name the clusters ``near`` < ``mid`` < ``far`` by
the ascending mean **raw** FD of their members (ties between cluster means: the cluster holding the
earlier row first). It needs at least 3 distinct rows.

:func:`stratify` is the total version used by the workflow: with at least 3 distinct rows it is
:func:`assign_regimes`; otherwise (a source with 1 or 2 OOD sets, or sets with identical distance rows)
k = 3 clusters do not exist, and :func:`rank_by_fd` is used instead: identical rows form one group,
groups are ordered by FD, and one group is ``near`` while two groups are ``near`` and ``far``. ``mid``
is never given by the fallback (with two sets there is no middle).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from csfbench.proximity.distances import DISTANCE_COLUMNS, FD

REGIMES = ("near", "mid", "far")
N_CLUSTERS = 3
KMEANS_N_INIT = 50
KMEANS_RANDOM_STATE = 0


def _distance_columns(table: pd.DataFrame, columns: Sequence[str] | None) -> list[str]:
    if columns is None:
        cols = [c for c in DISTANCE_COLUMNS if c in table.columns and not table[c].isna().all()]
    else:
        cols = list(columns)
        missing = [c for c in cols if c not in table.columns]
        if missing:
            raise ValueError(f"distance table: missing column(s) {missing}; has {list(table.columns)}")
    if FD not in cols and FD not in table.columns:
        raise ValueError(f"distance table: needs an {FD!r} column (clusters are named by FD); "
                         f"has {list(table.columns)}")
    if not cols:
        raise ValueError("distance table: no distance column to cluster on")
    return cols


def _checked(table: pd.DataFrame, columns: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Validated ``(features, fd, columns)`` of a distance table (ValueError on malformed tables)."""
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"distance table: expected a pandas DataFrame, got {type(table).__name__}")
    if len(table) == 0:
        raise ValueError("distance table: has no row (no OOD set)")
    if not table.index.is_unique:
        dup = table.index[table.index.duplicated()].unique().tolist()
        raise ValueError(f"distance table: duplicate OOD set name(s) {dup}")
    cols = _distance_columns(table, columns)
    values = {}
    for c in dict.fromkeys([*cols, FD]):
        try:
            values[c] = table[c].to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"distance table: column {c!r} is not numeric") from None
        bad = ~np.isfinite(values[c])
        if bad.any():
            raise ValueError(f"distance table: column {c!r} has NaN or infinite value(s) for "
                             f"{table.index[bad].tolist()}")
    return np.column_stack([values[c] for c in cols]), values[FD], cols


def zscore(table: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The distance columns z-scored across the rows (population std; constant column → 0)."""
    x, _, cols = _checked(table, columns)
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std[std == 0] = 1.0
    return pd.DataFrame((x - mean) / std, index=table.index, columns=cols)


def _n_distinct_rows(x: np.ndarray) -> int:
    return int(np.unique(x, axis=0).shape[0])


def _name_groups(labels: np.ndarray, fd: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Name groups (integer labels) by ascending mean FD, ties by first row; ``names`` one per group."""
    groups = list(dict.fromkeys(labels.tolist()))  # order of first appearance
    order = sorted(groups, key=lambda g: (fd[labels == g].mean(), groups.index(g)))
    mapping = {g: names[i] for i, g in enumerate(order)}
    return np.array([mapping[g] for g in labels.tolist()], dtype=object)


def assign_regimes(table: pd.DataFrame, columns: Sequence[str] | None = None, *,
                   n_init: int = KMEANS_N_INIT, random_state: int = KMEANS_RANDOM_STATE) -> pd.Series:
    """Regime (``near``/``mid``/``far``) of each OOD set of one source by z-score + k-means (k = 3).

    ``columns``: the distances to cluster on (default: those of ``DISTANCE_COLUMNS`` present and not
    entirely NaN, e.g. without ``text_alignment`` when no text encoder was used). Returns a Series named
    ``regime`` indexed like ``table``. ValueError with fewer than 3 distinct rows (see :func:`stratify`).
    """
    from sklearn.cluster import KMeans

    z = zscore(table, columns)
    _, fd, _ = _checked(table, columns)
    if _n_distinct_rows(z.to_numpy()) < N_CLUSTERS:
        raise ValueError(f"k-means with k = {N_CLUSTERS} needs at least {N_CLUSTERS} OOD sets with distinct "
                         f"distances, got {len(table)} set(s) ({_n_distinct_rows(z.to_numpy())} distinct); "
                         "use stratify() for the FD-ranking fallback")
    km = KMeans(n_clusters=N_CLUSTERS, n_init=n_init, random_state=random_state).fit(z.to_numpy())
    return pd.Series(_name_groups(km.labels_, fd, REGIMES), index=table.index, name="regime")


def rank_by_fd(table: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.Series:
    """Fallback for fewer than 3 distinct rows: identical rows form a group, groups ordered by FD;
    one group → ``near``, two groups → ``near``/``far``."""
    x, fd, _ = _checked(table, columns)
    _, labels = np.unique(x, axis=0, return_inverse=True)
    labels = labels.reshape(-1)
    n_groups = int(labels.max()) + 1
    if n_groups >= N_CLUSTERS:
        raise ValueError(f"rank_by_fd is the fallback for fewer than {N_CLUSTERS} distinct OOD sets, "
                         f"got {n_groups}; use assign_regimes()")
    names = ("near",) if n_groups == 1 else ("near", "far")
    return pd.Series(_name_groups(labels, fd, names), index=table.index, name="regime")


def stratify(table: pd.DataFrame, columns: Sequence[str] | None = None, **kmeans_kwargs) -> pd.Series:
    """:func:`assign_regimes` when the source has at least 3 distinct OOD sets, else :func:`rank_by_fd`."""
    x, _, _ = _checked(table, columns)
    if _n_distinct_rows(x) >= N_CLUSTERS:
        return assign_regimes(table, columns, **kmeans_kwargs)
    return rank_by_fd(table, columns)


def stratify_sources(tables: Mapping[str, pd.DataFrame], columns: Sequence[str] | None = None,
                     **kmeans_kwargs) -> pd.DataFrame:
    """:func:`stratify` per source (z-scoring and clustering within each source only): a long table with
    columns ``source``, ``dataset``, ``regime``, sources in the given order, sets in table order."""
    frames = []
    for source, table in tables.items():
        try:
            regimes = stratify(table, columns, **kmeans_kwargs)
        except ValueError as exc:
            raise ValueError(f"source {source!r}: {exc}") from None
        frames.append(pd.DataFrame({"source": source, "dataset": regimes.index.astype(str),
                                    "regime": regimes.to_numpy()}))
    if not frames:
        return pd.DataFrame(columns=["source", "dataset", "regime"])
    return pd.concat(frames, ignore_index=True)
