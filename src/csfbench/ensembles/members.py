"""The members' stored outputs of one evaluation set, read from their feature files, and the check that every
member holds the same samples in the same order (an ensemble averages row by row).

Only ``logits``, ``labels`` and ``sample_id`` (and ``mcd/logits`` in MC-dropout mode) are read: an ensemble needs no
feature vector.  Deep Gamblers' abstention output is dropped (:func:`csfbench.heads.class_outputs`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from csfbench.csf.logit_scores import softmax
from csfbench.errors import FeatureFileError
from csfbench.features.store import read_features, validate_feature_file
from csfbench.heads import class_outputs


@dataclass(frozen=True)
class MemberOutputs:
    """One member's outputs on one evaluation set: ``probs`` and ``logits`` {mode: N×C float64} (``mcd``: the
    means over the dropout passes), ``labels`` (N,; −1 = unlabelled) and ``sample_ids`` (N,)."""

    model: str
    path: str
    sample_ids: np.ndarray
    labels: np.ndarray
    probs: dict[str, np.ndarray]
    logits: dict[str, np.ndarray]


def read_member(path: str | Path, expect: dict, modes: tuple[str, ...]) -> MemberOutputs:
    """A member's outputs in ``modes`` from its feature file, validated against ``expect`` (its
    :func:`csfbench.features.store.run_attrs` and the set's ``dataset``)."""
    logits = ("logits",) + (("mcd/logits",) if "mcd" in modes else ())
    attrs = validate_feature_file(path, expect, finite=logits)  # the features are neither read nor checked
    keys = logits + ("labels", "sample_id")
    arrays, _ = read_features(path, keys=keys)
    n_classes = int(attrs["n_classes"])
    probs, logits = {}, {}
    for mode in modes:
        if mode == "det":
            logits[mode] = class_outputs(arrays["logits"].astype(np.float64), n_classes)
            probs[mode] = softmax(logits[mode])
        elif "mcd/logits" not in arrays:
            raise FeatureFileError(f"{path}: MC-dropout outputs requested but the file has no 'mcd/logits'")
        else:
            passes = class_outputs(arrays["mcd/logits"].astype(np.float64), n_classes)
            logits[mode], probs[mode] = passes.mean(1), softmax(passes).mean(1)
    return MemberOutputs(str(attrs["model"]), str(path), arrays["sample_id"].astype(str),
                         arrays["labels"].astype(np.int64), probs, logits)


def check_same_samples(members: list[MemberOutputs], dataset: str) -> None:
    """Every member's file holds the first member's samples in the same order, with the same labels; otherwise a
    ValueError naming the file that differs, the evaluation set and the first differing row."""
    reference = members[0]
    for member in members[1:]:
        if len(member.sample_ids) != len(reference.sample_ids):
            raise ValueError(f"{member.path}: {len(member.sample_ids)} samples of evaluation set {dataset!r}, but "
                             f"{reference.path} has {len(reference.sample_ids)}: the members of an ensemble must be "
                             "scored on the same samples")
        for name in ("sample_ids", "labels"):
            differ = np.flatnonzero(getattr(member, name) != getattr(reference, name))
            if differ.size:
                row = int(differ[0])
                raise ValueError(f"{member.path}: evaluation set {dataset!r} is not in the order of {reference.path}: "
                                 f"row {row} has {name[:-1] if name == 'sample_ids' else 'label'} "
                                 f"{getattr(member, name)[row]!r}, not {getattr(reference, name)[row]!r} "
                                 f"({differ.size} rows differ); the members of an ensemble must hold the same samples "
                                 "in the same order")


def stacked(members: list[MemberOutputs], mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(probs, logits), each members × samples × classes, of ``mode``."""
    return np.stack([m.probs[mode] for m in members]), np.stack([m.logits[mode] for m in members])
