"""The workflow's near/mid/far stratification of a source's semantic OOD sets (Claros-Olivares & Brockmeier, §3.3).

Two jobs per source (in :mod:`csfbench.stages.proximity`):

1. :func:`csfbench.stages.proximity.embed_source_sets` embeds the source's training split (the reference, with its labels), its ID
   test split (the table's ``test`` row, never clustered) and every **semantic** OOD set of the source
   with the configured encoder (:mod:`csfbench.proximity.encoders`) into ``embeddings.h5``: datasets
   ``embeddings/{set}`` (N × E float32), ``labels`` (the training labels) and, when the encoder has a text
   tower and class names are configured, ``text`` (C × E); attributes ``source``, ``encoder``, ``sets``
   (JSON list, table order) and ``text_alignment`` (``"computed"`` or the reason it is skipped).
2. :func:`csfbench.stages.proximity.write_stratification` computes the four distances of each set to the training split
   (:func:`csfbench.proximity.distances.ood_distances`; without text embeddings the ``text_alignment``
   column is empty), clusters the OOD rows (:func:`csfbench.proximity.regimes.stratify`: z-score, k-means
   k = 3 with a fixed seed, clusters named by ascending FD) and resolves each set's regime with the static
   table of the config.

Precedence (``proximity/precedence``): the config's static regimes (``sources/*/ood/*/regime``, e.g. the
paper's Table 1 in paper.yaml) and the computed clusters are combined per OOD set:

* ``static`` (default): a static regime, where the config gives one, **overrides** the computed one; a
  set without a static regime takes the computed one (the static table complements the clustering).
* ``computed``: the computed regime overrides the static one (every semantic set gets a computed regime;
  the static one is kept in the regimes file for comparison).

The regimes file (CSV) has one row per semantic OOD set: ``source, dataset, static_regime,
computed_regime, regime, decided_by`` (``static`` or ``computed``); ``regime`` flows into the results
table.  Covariate and adversarial sets are not stratified; their regime stays their shift type.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from csfbench.atomic import atomic_hdf5
from csfbench.proximity.distances import DISTANCE_COLUMNS, distance_table
from csfbench.proximity.regimes import REGIMES

log = logging.getLogger(__name__)

PRECEDENCES = ("static", "computed")
TEST_ROW = "test"
REGIME_COLUMNS = ["source", "dataset", "static_regime", "computed_regime", "regime", "decided_by"]

def read_embeddings(path: str | Path, skip: tuple[str, ...] = ()
                    ) -> tuple[dict[str, np.ndarray], np.ndarray | None, np.ndarray | None, dict]:
    """(``{set: N × E}`` in table order, training labels or None, text embeddings or None, attributes) of a file
    of :func:`write_embeddings`; the sets in ``skip`` are not read.  The proximity stage's files hold the
    training labels; the covariate sets' of the pair analyses hold none (None)."""
    with h5py.File(path, "r", locking=False) as fh:
        attrs = dict(fh.attrs)
        missing = [k for k in ("sets", "source") if k not in attrs] + [k for k in ("embeddings",) if k not in fh]
        if missing:
            raise ValueError(f"{path}: not an embeddings file (lacks {missing})")
        sets = {name: fh[f"embeddings/{name}"][()] for name in json.loads(attrs["sets"]) if name not in skip}
        labels = fh["labels"][()] if "labels" in fh else None
        text = fh["text"][()] if "text" in fh else None
        return sets, labels, text, attrs


def write_embeddings(out_h5: str | Path, source: str, encoder: str, embeddings: dict[str, np.ndarray],
                     extra: dict[str, np.ndarray] | None = None, **attrs) -> None:
    """Write an embeddings file atomically: ``embeddings/{name}`` (N × E float32, each set's sample order), the
    datasets ``extra`` as given (e.g. ``labels``, ``text``), and the attributes ``source``, ``encoder``, ``sets``
    (JSON list of the embedded sets) and ``attrs``."""
    with atomic_hdf5(out_h5) as fh:
        fh.attrs.update(source=source, encoder=encoder, sets=json.dumps(list(embeddings)), **attrs)
        for name, emb in embeddings.items():
            fh.create_dataset(f"embeddings/{name}", data=emb.astype(np.float32))
        for name, data in (extra or {}).items():
            fh.create_dataset(name, data=data)


def distance_rows(sets: dict[str, np.ndarray], labels: np.ndarray, text: np.ndarray | None, seed: int,
                  n_subsets: int, subset_size: int) -> pd.DataFrame:
    """One row per set but ``train`` (the reference): the four distances (``text_alignment`` NaN without text)."""
    if "train" not in sets:
        raise ValueError("the embeddings hold no 'train' set (the reference of every distance)")
    ood = {name: emb for name, emb in sets.items() if name != "train"}
    table = distance_table(ood, sets["train"], labels, text, seed=seed, n_subsets=n_subsets,
                           subset_size=subset_size).reindex(columns=list(DISTANCE_COLUMNS))
    table.index.name = "dataset"
    return table


def resolve_regimes(source: str, computed: pd.Series, static: dict[str, str | None], precedence: str) -> pd.DataFrame:
    """The regimes file rows of ``source``: computed and static regimes combined by ``precedence``.

    ``computed``: regime per OOD set (index = set names); ``static``: set name → static regime or None for
    every semantic OOD set.  Raises ValueError on an unknown precedence or sets known to only one side.
    """
    if precedence not in PRECEDENCES:
        raise ValueError(f"proximity/precedence must be one of {PRECEDENCES}, got {precedence!r}")
    if set(computed.index) != set(static):
        raise ValueError(f"source {source!r}: computed regimes for {sorted(computed.index)} but the config's "
                         f"semantic OOD sets are {sorted(static)}")
    rows = []
    for name in static:
        fixed, found = static[name], str(computed[name])
        if fixed is not None and fixed not in REGIMES:
            raise ValueError(f"sources/{source}/ood/{name}/regime: a semantic set's regime must be one of "
                             f"{REGIMES}, got {fixed!r}")
        use_static = fixed is not None and precedence == "static"
        rows.append({"source": source, "dataset": name, "static_regime": fixed, "computed_regime": found,
                     "regime": fixed if use_static else found, "decided_by": "static" if use_static else "computed"})
    return pd.DataFrame(rows, columns=REGIME_COLUMNS)

