"""Jobs of ``rules/ensembles.smk``: a deep ensemble's scores and metric rows in one scorer slot, from its members'
stored files and without a forward pass — the ensemble's own CSFs (slot
:data:`csfbench.ensembles.scores.ENSEMBLE_SCORER`) or the member mean of the CSFs of one of the members' slots."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from csfbench.csf.inputs import SplitData
from csfbench.csf.score_files import write_set_scores
from csfbench.csf.store import read_scores
from csfbench.ensembles.members import check_same_samples, read_member, stacked
from csfbench.ensembles.scores import ENSEMBLE_SCORER, ensemble_confidences, ensemble_prediction, member_average
from csfbench.evaluation import Bootstrap, tuning_protocols
from csfbench.features.store import feature_expect
from csfbench.seeds import spec_hash
from csfbench.specs import EnsembleSpec, EvalSet

log = logging.getLogger(__name__)


def _member_scores(path: str | Path, member, dataset: str, modes: tuple[str, ...], n_rows: int) -> dict:
    """{mode: {(CSF, variant): (N,)}} of one member's scores file, checked to be that member's (model and
    ``config_hash`` attributes) and of the member's number of samples."""
    scores, attrs = read_scores(path, dataset, modes)
    expected = {"model": member.model, "config_hash": spec_hash(member.to_dict())}
    for key, value in expected.items():
        if str(attrs.get(key)) != value:
            raise ValueError(f"{path}: scores of {key} {attrs.get(key)!r}, expected {value!r} (member {member.model})")
    for mode, data in scores.items():
        if len(data["correct"]) != n_rows:
            raise ValueError(f"{path}: {len(data['correct'])} scores of evaluation set {dataset!r} ({mode}), but the "
                             f"member's feature file has {n_rows} samples")
    return {mode: data["scores"] for mode, data in scores.items()}


def score_ensemble(spec: EnsembleSpec, eval_sets: list[EvalSet], scorer: str,
                   features: dict[str, dict[str, str | Path]], member_scores: dict[str, str | Path],
                   member_metrics: list[str | Path], out_scores: str | Path, out_metrics: str | Path,
                   metrics: tuple[str, ...], bootstrap: Bootstrap = Bootstrap()) -> None:
    """Score every evaluation set of an ensemble in one scorer slot and write its scores and metrics files.

    ``features``: {member model: {evaluation set: its feature file}}; ``member_scores``: {member model: its scores
    file of slot ``scorer``} (empty for the ensemble's own CSFs); ``member_metrics``: the members' metric files of
    that slot (their rows' tuning protocols).  The ensemble predicts the argmax of the members' mean softmax, and
    its rows are judged by that prediction.  Every member file must hold the same samples in the same order
    (:func:`csfbench.ensembles.members.check_same_samples`)."""
    modes = spec.modes
    protocols = tuning_protocols(member_metrics)

    def score_set(eval_set: EvalSet):
        members = [read_member(features[m.model][eval_set.name], {**feature_expect(m), "dataset": eval_set.name},
                               modes)
                   for m in spec.members]
        check_same_samples(members, eval_set.name)
        labels, n = members[0].labels, len(members[0].labels)
        if n == 0:
            raise ValueError(f"{members[0].path}: empty evaluation set {eval_set.name!r}")
        splits, scores = {}, {}
        for mode in modes:
            probs, logits = stacked(members, mode)
            mean_logits = logits.mean(0)
            splits[mode] = SplitData(eval_set.name, mode, np.empty((n, 0), np.float32), mean_logits, mean_logits,
                                     labels, ensemble_prediction(probs), None)
            if scorer == ENSEMBLE_SCORER:
                scores[mode] = {(name, "none"): conf for name, conf in ensemble_confidences(probs, logits).items()}
        if scorer != ENSEMBLE_SCORER:
            per_member = {m.model: _member_scores(member_scores[m.model], m, eval_set.name, modes, n)
                          for m in spec.members}
            for mode in modes:
                scores[mode], left_out = member_average({model: s[mode] for model, s in per_member.items()})
                for (name, variant), lacking in left_out.items():
                    log.warning("%s/%s/%s (%s): %s [%s] left out, the members %s lack it", spec.model, scorer,
                                eval_set.name, mode, name, variant, lacking)
        own = {mode: {key: protocols.get((mode == "mcd", *key), "none") for key in scores[mode]} for mode in modes}
        return splits, scores, own

    attrs = {"source": spec.source, "model": spec.model, "group": scorer,
             "config_hash": spec_hash(spec.to_dict()), "members": json.dumps([m.model for m in spec.members])}
    write_set_scores(spec, eval_sets, score_set, out_scores, out_metrics, attrs, metrics, bootstrap)
    log.info("%s/%s: %d members, %d evaluation sets", spec.model, scorer, len(spec.members), len(eval_sets))
