"""No two CSF variants of one model give the same confidences unless the registry declares them aliases.

A variant that silently returns another's array (e.g. a class-wise statistic that is fitted but never
read) makes the benchmark count one score twice under two names; this test scores every variant of
every fit group for each kind of synthetic model the CSF tests use (deterministic and MC-dropout,
CNN and ViT, Deep Gamblers with its abstention row, strict and authors'-code quirks) and compares all
pairs on the ID test and OOD sets together.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from csfbench.csf.engine import fit_mode, score_mode
from csfbench.csf.projection import GROUPS
from csfbench.csf.registry import ALIASES, BY_NAME, EXPECTED, flavour_names, variants_for

from tests.helpers.csf_synthetic import FIXED_TUNING, make_splits, with_abstention_row


# kind -> (make_splits arguments, Deep Gamblers abstention row, quirks)
KINDS = {
    "cnn-det": ({}, False, "strict"),
    "cnn-mcd": ({"passes": 3}, False, "strict"),
    "cnn-3-classes": ({"dim": 12, "n_classes": 3}, False, "strict"),
    "dg-det": ({"paradigm": "dg"}, True, "strict"),
    "dg-det-compat": ({"paradigm": "dg"}, True, "compat_authors"),
    "dg-mcd-compat": ({"paradigm": "dg", "passes": 3}, True, "compat_authors"),
    "vit": ({"backbone": "vit", "dim": 128}, False, "strict"),
    "vit-compat": ({"backbone": "vit", "dim": 128}, False, "compat_authors"),
}


def _all_scores(kind: str) -> dict[tuple[str, str], np.ndarray]:
    kwargs, abstention, quirks = KINDS[kind]
    splits, ctx = make_splits(**kwargs)
    if abstention:
        with_abstention_row(splits, ctx)
    ctx = dataclasses.replace(ctx, quirks=quirks)
    scores: dict[tuple[str, str], list] = {}
    for group in GROUPS:
        fitted = fit_mode(group, splits["train"], splits["val"], ctx, FIXED_TUNING)
        for name in ("test", "ood"):
            for key, conf in score_mode(splits[name], fitted, ctx).items():
                scores.setdefault(key, []).append(conf)
    return {key: np.concatenate(parts) for key, parts in scores.items()}


def _declared(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return (a, b) in ALIASES or (b, a) in ALIASES


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_no_two_variants_of_a_model_give_identical_scores_unless_declared_aliases(kind):
    scores = _all_scores(kind)
    backbone = KINDS[kind][0].get("backbone", "vgg13")
    assert {(c.name, v) for c, v in variants_for(backbone)} <= set(scores)  # every variant was scored
    identical = [(a, b) for a, b in itertools.combinations(sorted(scores), 2)
                 if np.allclose(scores[a], scores[b], rtol=1e-9, atol=1e-12) and not _declared(a, b)]
    assert not identical, f"{kind}: identical scores not declared as registry aliases: {identical}"


def test_declared_aliases_name_registry_variants_with_a_reason():
    mcd_only = {(f"E{name}", "none") for c in EXPECTED for name in flavour_names(BY_NAME[c])} | \
        {("MI", "none"), ("MI@T1", "none")}
    known = {(name, v) for c, v in variants_for("vgg13") for name in flavour_names(c)} | mcd_only
    for (a, b), reason in ALIASES.items():
        assert a in known and b in known and a != b, (a, b)
        assert isinstance(reason, str) and reason.strip(), (a, b)
