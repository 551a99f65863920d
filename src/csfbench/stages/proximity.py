"""Jobs of ``rules/proximity.smk``: embed a source's sets with the configured encoder, then its
near/mid/far stratification (see :mod:`csfbench.proximity.stratification`)."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from csfbench.atomic import atomic_path
from csfbench.data.sources import shift_set, source_split
from csfbench.proximity.regimes import stratify
from csfbench.proximity.stratification import (TEST_ROW, distance_rows, read_embeddings, resolve_regimes,
                                               write_embeddings)
from csfbench.report.tables import write_table
from csfbench.specs import DatasetSpec
from csfbench.workflow.paths import table_view

log = logging.getLogger(__name__)


def embed_source_sets(source: str, source_dataset: DatasetSpec, val_size: int, ood: dict[str, DatasetSpec], encoder_cfg: dict,
                      batch_size: int, out_h5: str | Path) -> None:
    """Embed the train and test splits of ``source`` and its semantic OOD sets (``ood``: name → dataset spec)."""
    # imported here, not at the top: torch would cost the stratification jobs, which need no network, ~2 s
    # of start-up
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
    extra = {"labels": np.asarray(train.labels, dtype=np.int64)}
    if names is not None:
        extra["text"] = encoder.embed_text(names).astype(np.float32)
    write_embeddings(out_h5, source, encoder.description, embeddings, extra, text_alignment=text_status)
    log.info("%s: embedded %s with %s; text alignment %s", source, list(sets), encoder.description, text_status)


def write_stratification(source: str, embeddings_h5: str | Path, static: dict[str, str | None], precedence: str,
                         seed: int, n_subsets: int, subset_size: int, out_csv: str | Path, out_tex: str | Path,
                         out_regimes: str | Path) -> pd.DataFrame:
    """Distance table (CSV, LaTeX and the report's view) and regimes file of one source; returns the regimes rows."""
    sets, labels, text, attrs = read_embeddings(embeddings_h5)
    if labels is None:
        raise ValueError(f"{embeddings_h5}: not an embeddings file of the proximity stage (lacks ['labels'])")
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
    write_table(out.reset_index(), out_csv, out_tex, table_view(out_csv), f"Distances of the OOD sets of {source} "
                f"to its training split in the embedding space of {attrs['encoder']}; lower = closer.{note}",
                float_format="%.4f")
    with atomic_path(out_regimes) as tmp:
        regimes.to_csv(tmp, index=False)
    log.info("%s: regimes %s (precedence %s; text alignment %s)", source,
             dict(zip(regimes["dataset"], regimes["regime"])), precedence, attrs["text_alignment"])
    return regimes
