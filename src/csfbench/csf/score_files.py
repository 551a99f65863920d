"""A model's scores file (:func:`csfbench.csf.store.write_scores`) and its metric rows
(:func:`csfbench.evaluation.metric_rows`, parquet), written together from any scorer of its evaluation sets:
the CSF stage's fit (:func:`csfbench.stages.csf.score_csf`) and the network-pass CSFs
(:func:`csfbench.stages.network_csf.network_csf`) write them alike."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import pandas as pd

from csfbench.atomic import atomic_path
from csfbench.csf.store import write_scores
from csfbench.evaluation import Bootstrap, metric_rows
from csfbench.specs import EvalSet, ModelSpec

log = logging.getLogger(__name__)


def write_set_scores(spec: ModelSpec, eval_sets: list[EvalSet], score_set: Callable, out_scores: str | Path,
                     out_metrics: str | Path, attrs: dict, metrics: tuple[str, ...],
                     bootstrap: Bootstrap = Bootstrap()) -> None:
    """Score every evaluation set with ``score_set`` and write one scores file and one metrics file.

    ``score_set(eval_set)`` returns (splits {mode: SplitData}, scores {mode: {(csf, variant): confidence}},
    protocols {mode: {(csf, variant): tuning protocol}}).  The ID test set is scored first: the shifted
    sets' OOD schemes are evaluated against its scores.  ``attrs``: the scores file's attributes (with the
    fit ``group``); ``metrics``: the metric names of the rows (:func:`csfbench.metrics.metric_names`);
    ``bootstrap``: their intervals (:class:`csfbench.evaluation.Bootstrap`; default: none).
    """
    written, rows, reference = {}, [], None
    for eval_set in sorted(eval_sets, key=lambda e: e.name != "test"):
        splits, scores, protocols = score_set(eval_set)
        groups = {key: value for key, value in eval_set.groups.items() if value is not None}  # HDF5 has no null
        written[eval_set.name] = (scores, splits, {"dataset": eval_set.name, "shift_type": eval_set.shift_type,
                                                   "regime": eval_set.regime, **groups})
        own = {mode: {"correct": splits[mode].correct, "labels": splits[mode].labels, "scores": scores[mode],
                      "protocols": protocols[mode]} for mode in scores}
        if eval_set.name == "test":
            reference = own
        rows.append(metric_rows(spec, eval_set, own, reference if eval_set.shift_type != "id" else None, metrics,
                                bootstrap))
        log.info("%s/%s/%s: %d metric rows", spec.model, attrs["group"], eval_set.name, len(rows[-1]))
    write_scores(out_scores, {name: written[name] for name in sorted(written)}, attrs)
    table = pd.concat(rows, ignore_index=True)
    with atomic_path(out_metrics) as tmp:
        table.to_parquet(tmp, index=False)
