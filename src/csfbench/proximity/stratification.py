"""The workflow's near/mid/far stratification of a source's semantic OOD sets (spec 000 §6).

Two jobs per source:

1. :func:`embed_source_sets` embeds the source's training split (the reference, with its labels), its ID
   test split (the table's ``test`` row, never clustered) and every **semantic** OOD set of the source
   with the configured encoder (:mod:`csfbench.proximity.encoders`) into ``embeddings.h5``: datasets
   ``embeddings/{set}`` (N × E float32), ``labels`` (the training labels) and, when the encoder has a text
   tower and class names are configured, ``text`` (C × E); attributes ``source``, ``encoder``, ``sets``
   (JSON list, table order) and ``text_alignment`` (``"computed"`` or the reason it is skipped).
2. :func:`write_stratification` computes the four distances of each set to the training split
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

from csfbench.atomic import atomic_path
from csfbench.proximity.distances import DISTANCE_COLUMNS, distance_table
from csfbench.proximity.regimes import REGIMES, stratify
from csfbench.report.tables import write_table

log = logging.getLogger(__name__)

PRECEDENCES = ("static", "computed")
TEST_ROW = "test"
REGIME_COLUMNS = ["source", "dataset", "static_regime", "computed_regime", "regime", "decided_by"]


def embed_source_sets(source: str, source_dataset: dict, val_size: int, ood: dict[str, dict], encoder_cfg: dict,
                      batch_size: int, out_h5: str | Path) -> None:
    """Embed the train and test splits of ``source`` and its semantic OOD sets (``ood``: name → dataset spec)."""
    from csfbench.data.sources import shift_set, source_split
    from csfbench.proximity.encoders import build_encoder, class_names, embed_timed
    from csfbench.training.loop import resolve_device

    encoder = build_encoder(encoder_cfg, resolve_device())
    train = source_split(source_dataset, val_size, "train")
    sets = {"train": train, TEST_ROW: source_split(source_dataset, val_size, "test")}
    sets.update({name: shift_set(spec, "semantic") for name, spec in ood.items()})
    embeddings = {name: embed_timed(encoder, images, batch_size, f"{source}/{name}") for name, images in sets.items()}
    names = class_names(encoder_cfg, source) if encoder.has_text else None
    if not encoder.has_text:
        text_status = "skipped: the encoder has no text tower"
    elif names is None:
        text_status = f"skipped: no class names configured (proximity/encoder/class_names/{source})"
    else:
        text_status = "computed"
    with atomic_path(out_h5) as tmp, h5py.File(tmp, "w") as fh:
        fh.attrs.update(source=source, encoder=encoder.description, sets=json.dumps(list(sets)),
                        text_alignment=text_status)
        for name, emb in embeddings.items():
            fh.create_dataset(f"embeddings/{name}", data=emb.astype(np.float32))
        fh.create_dataset("labels", data=np.asarray(train.labels, dtype=np.int64))
        if names is not None:
            fh.create_dataset("text", data=encoder.embed_text(names).astype(np.float32))
    log.info("%s: embedded %s with %s; text alignment %s", source, list(sets), encoder.description, text_status)


def read_embeddings(path: str | Path) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None, dict]:
    """(``{set: N × E}`` in table order, training labels, text embeddings or None, attributes)."""
    with h5py.File(path, "r", locking=False) as fh:
        attrs = dict(fh.attrs)
        missing = [k for k in ("sets", "source") if k not in attrs] + [k for k in ("embeddings", "labels") if k not in fh]
        if missing:
            raise ValueError(f"{path}: not an embeddings file (lacks {missing})")
        sets = {name: fh[f"embeddings/{name}"][()] for name in json.loads(attrs["sets"])}
        text = fh["text"][()] if "text" in fh else None
        return sets, fh["labels"][()], text, attrs


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


def write_stratification(source: str, embeddings_h5: str | Path, static: dict[str, str | None], precedence: str,
                         seed: int, n_subsets: int, subset_size: int, out_csv: str | Path, out_tex: str | Path,
                         out_regimes: str | Path) -> pd.DataFrame:
    """Distance table (CSV + LaTeX) and regimes file of one source; returns the regimes rows."""
    sets, labels, text, attrs = read_embeddings(embeddings_h5)
    if attrs["source"] != source:
        raise ValueError(f"{embeddings_h5}: embeddings of source {attrs['source']!r}, expected {source!r}")
    table = distance_rows(sets, labels, text, seed, n_subsets, subset_size)
    ood = table.drop(index=TEST_ROW, errors="ignore")
    computed = stratify(ood, random_state=seed)
    regimes = resolve_regimes(source, computed, static, precedence)
    out = table.copy()
    for column in ("computed_regime", "static_regime", "regime"):
        out[column] = regimes.set_index("dataset")[column].reindex(out.index)
    out.loc[out.index == TEST_ROW, "regime"] = TEST_ROW
    note = "" if text is not None else f" Label-text alignment not computed ({attrs['text_alignment']})."
    write_table(out.reset_index(), out_csv, out_tex, f"Distances of the OOD sets of {source} to its training split "
                f"in the embedding space of {attrs['encoder']}; lower = closer.{note}", float_format="%.4f")
    with atomic_path(out_regimes) as tmp:
        regimes.to_csv(tmp, index=False)
    log.info("%s: regimes %s (precedence %s; text alignment %s)", source,
             dict(zip(regimes["dataset"], regimes["regime"])), precedence, attrs["text_alignment"])
    return regimes
