"""Correct/incorrect decomposition of new-class and failure AUROC (Yang, Zhang & Russakovsky,
"ImageNet-OOD: Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024, App. E, Eq. 2
and Table 4).

For one cell (model, CSF, pair of an ID-role set D_in and a shifted set D_out) with ID accuracy
``a = n_correct / n_in`` the three conditional AUROCs are (ID-role side positive, ties ½, fractions
in [0, 1]):

* ``A_co`` — correct D_in vs D_out (scheme ``correct_vs_ood``);
* ``A_io`` — incorrect D_in vs D_out (scheme ``incorrect_vs_ood``);
* ``A_ci`` — correct D_in vs incorrect D_in (scheme ``misclf``, misclassification detection).

They determine the cell's new-class AUROC ``NC`` (scheme ``newclass``), its weighted failure AUROC
``FD`` (scheme ``failure``: weights 1/n_in on D_in and 1/n_out on D_out) and its unweighted pooled
failure AUROC (scheme ``failure_pooled``) exactly:

* ``NC = a·A_co + (1 − a)·A_io`` (the law of total probability, Yang et al.'s Eq. 2);
* ``FD = ((1 − a)·A_ci + A_co) / (2 − a)`` (the failure negatives weigh (1 − a) for the incorrect
  ID samples and 1 for D_out);
* ``FD_pooled = (n_inc·A_ci + n_out·A_co) / (n_inc + n_out)``.

A term whose coefficient is 0 drops out (all ID samples correct: A_io and A_ci are undefined and
NC = FD = FD_pooled = A_co); a quantity with no positives or no negatives is NaN.  The direct AUROCs
are computed on the schemes' evaluation sets by :func:`csfbench.metrics.auroc`; the identities then
hold to rounding (~1e-15), and :func:`check_identities` / :func:`check_identity_table` raise
:class:`IdentityError` naming the cell where one is off by more than ``tol`` (default 1e-9).

Table 4 of the paper (ResNet-50, ImageNet-1K vs ImageNet-OOD, MSP): (A_co, A_io, A_ci) =
(0.869, 0.547, 0.864) with a = 0.7613 gives NC = 0.7921 and FD = 0.8680, its Table 3 values.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from csfbench.errors import CsfbenchError
from csfbench.metrics import auroc, build_scheme
from csfbench.metrics._inputs import MetricInputError, finite_1d

#: default tolerance of the identity checks (absolute, on AUROC fractions)
IDENTITY_TOLERANCE = 1e-9
#: the three identities: (direct column, from-parts column)
IDENTITIES = {
    "newclass": ("newclass", "newclass_from_parts"),
    "failure": ("failure", "failure_from_parts"),
    "failure_pooled": ("failure_pooled", "failure_pooled_from_parts"),
}


class IdentityError(CsfbenchError, ValueError):
    """A decomposition identity is off by more than the tolerance in some cell (named in the message)."""


def _combine(terms: Sequence[tuple[float, float]], denominator: float) -> float:
    """``Σ coef·value / denominator``, skipping terms whose coefficient is 0 (their value may be NaN)."""
    used = [(c, v) for c, v in terms if c != 0]
    if not used or denominator == 0:
        return math.nan
    return float(sum(c * v for c, v in used) / denominator)


def newclass_from_parts(a_co: float, a_io: float, accuracy: float) -> float:
    """New-class AUROC ``a·A_co + (1 − a)·A_io`` (fractions; a = ID accuracy in [0, 1])."""
    return _combine([(accuracy, a_co), (1.0 - accuracy, a_io)], 1.0)


def failure_weighted_from_parts(a_co: float, a_ci: float, accuracy: float) -> float:
    """Weighted failure AUROC (weights 1/n_in, 1/n_out) ``((1 − a)·A_ci + A_co) / (2 − a)``; NaN when a = 0."""
    if accuracy == 0:
        return math.nan  # no positives
    return _combine([(1.0 - accuracy, a_ci), (1.0, a_co)], 2.0 - accuracy)


def failure_pooled_from_parts(a_co: float, a_ci: float, n_incorrect: int, n_ood: int) -> float:
    """Unweighted pooled failure AUROC ``(n_inc·A_ci + n_out·A_co) / (n_inc + n_out)``."""
    return _combine([(float(n_incorrect), a_ci), (float(n_ood), a_co)], float(n_incorrect + n_ood))


@dataclass(frozen=True)
class Decomposition:
    """One cell's conditional AUROCs, its direct new-class and failure AUROCs and its counts.

    AUROCs are fractions in [0, 1] (ID-role side positive, higher = better separation), NaN where
    undefined (no samples on one side); ``accuracy`` is the ID-role set's accuracy in [0, 1].
    """

    a_co: float
    a_io: float
    a_ci: float
    accuracy: float
    n_correct: int
    n_incorrect: int
    n_ood: int
    newclass: float
    failure: float
    failure_pooled: float

    @property
    def newclass_from_parts(self) -> float:
        return newclass_from_parts(self.a_co, self.a_io, self.accuracy)

    @property
    def failure_from_parts(self) -> float:
        return failure_weighted_from_parts(self.a_co, self.a_ci, self.accuracy)

    @property
    def failure_pooled_from_parts(self) -> float:
        return failure_pooled_from_parts(self.a_co, self.a_ci, self.n_incorrect, self.n_ood)

    def as_dict(self) -> dict[str, float | int]:
        """The fields and the three from-parts values."""
        return {**asdict(self), "newclass_from_parts": self.newclass_from_parts,
                "failure_from_parts": self.failure_from_parts,
                "failure_pooled_from_parts": self.failure_pooled_from_parts}


#: the columns of :func:`decomposition_table` after the keys
_COLUMNS = [*Decomposition.__dataclass_fields__, "newclass_from_parts", "failure_from_parts",
            "failure_pooled_from_parts"]


def _auroc_or_nan(scheme: str, id_confidence, id_correct, shift_confidence=None) -> float:
    data = build_scheme(scheme, id_confidence, id_correct, shift_confidence)
    if data.n_pos == 0 or data.n_neg == 0:
        return math.nan
    return auroc(data.confidence, data.residual, sample_weight=data.weight)


def decompose(id_confidence, id_correct, ood_confidence) -> Decomposition:
    """Conditional and direct AUROCs of one cell.

    ``id_confidence`` / ``id_correct``: the ID-role set's confidences (higher = more ID) and
    correctness (bool or 0/1); ``ood_confidence``: the shifted set's confidences (every sample a
    negative).  Both sets must be non-empty.
    """
    id_conf = finite_1d(id_confidence, "id_confidence")
    ood_conf = finite_1d(ood_confidence, "ood_confidence")
    if id_conf.size == 0 or ood_conf.size == 0:
        raise MetricInputError(f"decompose needs non-empty sets, got {id_conf.size} ID-role and "
                               f"{ood_conf.size} shifted samples")
    correct = build_scheme("misclf", id_conf, id_correct).residual == 0  # validates id_correct
    n_correct = int(correct.sum())
    return Decomposition(
        a_co=_auroc_or_nan("correct_vs_ood", id_conf, correct, ood_conf),
        a_io=_auroc_or_nan("incorrect_vs_ood", id_conf, correct, ood_conf),
        a_ci=_auroc_or_nan("misclf", id_conf, correct),
        accuracy=n_correct / id_conf.size,
        n_correct=n_correct,
        n_incorrect=int(id_conf.size - n_correct),
        n_ood=int(ood_conf.size),
        newclass=_auroc_or_nan("newclass", id_conf, correct, ood_conf),
        failure=_auroc_or_nan("failure", id_conf, correct, ood_conf),
        failure_pooled=_auroc_or_nan("failure_pooled", id_conf, correct, ood_conf),
    )


def _mismatch(direct: float, parts: float, tol: float) -> bool:
    if math.isnan(direct) or math.isnan(parts):
        return math.isnan(direct) != math.isnan(parts)
    return abs(direct - parts) > tol


def _describe(cell) -> str:
    if isinstance(cell, Mapping):
        return ", ".join(f"{k}={v!r}" for k, v in cell.items())
    return repr(cell)


def check_identities(decomposition: Decomposition, cell: Hashable = None, tol: float = IDENTITY_TOLERANCE) -> None:
    """Raise :class:`IdentityError` naming ``cell`` if a direct AUROC and its from-parts value differ by
    more than ``tol`` (or only one of them is undefined)."""
    values = decomposition.as_dict()
    bad = [(name, values[d], values[p]) for name, (d, p) in IDENTITIES.items() if _mismatch(values[d], values[p], tol)]
    if bad:
        details = "; ".join(f"{name}: direct {d!r} vs from parts {p!r}" for name, d, p in bad)
        raise IdentityError(f"decomposition identity off by more than {tol:g} in cell {_describe(cell)}: {details}")


def check_identity_table(table: pd.DataFrame, key_columns: Sequence[str], tol: float = IDENTITY_TOLERANCE) -> None:
    """Check the three identities on every row of ``table`` and raise :class:`IdentityError` naming
    each cell (its ``key_columns`` values) where one is off by more than ``tol``.

    ``table`` needs the columns ``a_co, a_io, a_ci, accuracy, n_incorrect, n_ood, newclass, failure,
    failure_pooled`` (as written by :func:`decomposition_table`); the from-parts values are
    recomputed here from the stored parts, so a table edited or merged afterwards is checked too.
    """
    needed = ["a_co", "a_io", "a_ci", "accuracy", "n_incorrect", "n_ood", "newclass", "failure", "failure_pooled"]
    missing = [c for c in [*key_columns, *needed] if c not in table.columns]
    if missing:
        raise ValueError(f"check_identity_table: missing column(s) {missing}")
    problems = []
    for row in table.itertuples(index=False):
        r = row._asdict()
        parts = {
            "newclass": newclass_from_parts(r["a_co"], r["a_io"], r["accuracy"]),
            "failure": failure_weighted_from_parts(r["a_co"], r["a_ci"], r["accuracy"]),
            "failure_pooled": failure_pooled_from_parts(r["a_co"], r["a_ci"], r["n_incorrect"], r["n_ood"]),
        }
        bad = [f"{name}: direct {r[name]!r} vs from parts {value!r}" for name, value in parts.items()
               if _mismatch(float(r[name]), value, tol)]
        if bad:
            problems.append(f"cell {_describe({k: r[k] for k in key_columns})}: " + "; ".join(bad))
    if problems:
        raise IdentityError(f"decomposition identity off by more than {tol:g} in {len(problems)} cell(s):\n  "
                            + "\n  ".join(problems))


def decomposition_table(cells: Mapping[Hashable, tuple], key_names: Sequence[str] = ("cell",),
                        tol: float | None = IDENTITY_TOLERANCE) -> pd.DataFrame:
    """One row per cell: the key columns, every :class:`Decomposition` field and the from-parts values.

    ``cells`` maps a key (a tuple with one entry per ``key_names``, or a scalar for one key name)
    to ``(id_confidence, id_correct, ood_confidence)``.  The identities are checked on every cell
    (raising :class:`IdentityError` naming the first failing cell) unless ``tol`` is None.
    """
    rows = []
    for key, (id_conf, id_correct, ood_conf) in cells.items():
        values = key if isinstance(key, tuple) else (key,)
        if len(values) != len(key_names):
            raise ValueError(f"cell key {key!r} has {len(values)} part(s), key_names {tuple(key_names)} has "
                             f"{len(key_names)}")
        named = dict(zip(key_names, values))
        result = decompose(id_conf, id_correct, ood_conf)
        if tol is not None:
            check_identities(result, named, tol)
        rows.append({**named, **result.as_dict()})
    return pd.DataFrame(rows, columns=[*key_names, *_COLUMNS])



def conditional_auroc_table(id_scores: Mapping[str, np.ndarray], id_correct, ood_scores: Mapping[str, np.ndarray],
                            reference: str | None = None, tol: float | None = IDENTITY_TOLERANCE) -> pd.DataFrame:
    """Yang et al.'s Table 4 for one model and one pair: a row per CSF (index ``csf``) with A_co, A_io,
    A_ci, the direct NC / FD / pooled FD and the counts (fractions, not ×100); identities checked.

    ``id_scores[csf]`` / ``ood_scores[csf]``: the CSF's confidences on the ID-role and the shifted set
    (the same CSFs in both); ``id_correct``: the ID-role set's correctness (one model, so shared).
    With ``reference`` (a CSF name, e.g. MSP) three more columns split each CSF's new-class change
    against it by ID outcome: ``delta_newclass = NC − NC_ref = delta_from_correct +
    delta_from_incorrect`` with ``delta_from_correct = a·(A_co − A_co,ref)`` and
    ``delta_from_incorrect = (1 − a)·(A_io − A_io,ref)`` (exact, a being shared; App. E's argument
    that Max-Logit and Energy gain through the incorrect ID samples).
    """
    if set(id_scores) != set(ood_scores):
        raise ValueError(f"id_scores and ood_scores must name the same CSFs, got {sorted(id_scores)} and "
                         f"{sorted(ood_scores)}")
    if reference is not None and reference not in id_scores:
        raise ValueError(f"reference CSF {reference!r} is not among {sorted(id_scores)}")
    table = decomposition_table({csf: (id_scores[csf], id_correct, ood_scores[csf]) for csf in id_scores},
                                ("csf",), tol).set_index("csf")
    if reference is not None:
        ref = table.loc[reference]
        a = table["accuracy"]
        table["delta_newclass"] = table["newclass"] - ref["newclass"]
        table["delta_from_correct"] = a * (table["a_co"] - ref["a_co"])
        table["delta_from_incorrect"] = (1.0 - a) * (table["a_io"] - ref["a_io"])
    return table
