"""The reproduction certificate: every target of ``targets.yaml`` recomputed and judged (:func:`certify`).

Verdicts (column ``verdict``):

- ``reproduced``: |obtained − published| ≤ the target's tolerance (a number), or the same names (a set);
- ``deviates``: farther than that, or other names; ``explanation`` points to the documented reason where one is
  known;
- ``not run: <what it needs>``: a data target whose needs the run does not meet (or no run was given), naming
  what is missing and the config that produces it.

Where the obtained value carries a bootstrap interval (a single run's result rows), ``in_interval`` says whether
the published value lies inside it (empty otherwise).  A number's ``difference`` is |obtained − published| in
the published units; a set's is the number of names in one of the two sets and not the other.
"""
from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import pandas as pd
import yaml

from csfbench.reproduction.recipes import RECIPES, NotRun, RunResults, obtain

#: the certificate's columns, in order
COLUMNS = ["target", "paper", "artefact", "quantity", "published", "obtained", "difference", "tolerance",
           "verdict", "in_interval", "ci_low", "ci_high", "tolerance_reason", "needs", "explanation"]
REPRODUCED, DEVIATES = "reproduced", "deviates"


@cache
def _text(name: str) -> str:
    return resources.files("csfbench.reproduction").joinpath(name).read_text(encoding="utf-8")


def load_targets(text: str | None = None) -> dict[str, Any]:
    """The targets file (the package's ``targets.yaml``, or ``text``), validated against ``targets_schema.yaml``
    and checked for unknown papers and recipes and duplicate ids (ValueError naming the target)."""
    data = yaml.safe_load(_text("targets.yaml") if text is None else text)
    try:
        jsonschema.Draft202012Validator(yaml.safe_load(_text("targets_schema.yaml"))).validate(data)
    except jsonschema.ValidationError as err:
        where = "/".join(map(str, err.absolute_path)) or "(top level)"
        raise ValueError(f"targets file: invalid at {where}: {err.message}") from None
    seen: set[str] = set()
    for target in data["targets"]:
        if target["id"] in seen:
            raise ValueError(f"targets file: target id {target['id']!r} appears twice")
        seen.add(target["id"])
        if target["paper"] not in data["papers"]:
            raise ValueError(f"targets file: target {target['id']!r} cites unknown paper {target['paper']!r}")
        if target["recipe"] not in RECIPES:
            raise ValueError(f"targets file: target {target['id']!r} has unknown recipe {target['recipe']!r}; "
                             f"known: {sorted(RECIPES)}")
    return data


def citation(paper: dict[str, Any]) -> str:
    """``authors, "title", year, arXiv id`` (the parts the paper has)."""
    parts = [paper["authors"], f'"{paper["title"]}"']
    parts += [str(paper["year"])] if paper["year"] else []
    parts += [f"arXiv {paper['arxiv']}"] if paper["arxiv"] else []
    return ", ".join(parts)


def _needs(target: dict[str, Any]) -> str:
    needs = target["needs"]
    if needs is None:
        return "nothing (the paper's published inputs)"
    return (f"sources {', '.join(needs['sources'])}; backbones {', '.join(needs['backbones'])}; sets "
            f"{', '.join(needs['datasets'])}")


def _judge(target: dict[str, Any], results: RunResults | None) -> dict[str, Any]:
    published = target["published"]
    row: dict[str, Any] = {"published": published if not isinstance(published, list) else ", ".join(published),
                           "tolerance": target.get("tolerance")}
    needs = target["needs"]
    if needs is not None and results is None:
        return {**row, "verdict": f"not run: needs a run of {needs['config']} ({_needs(target)})"}
    try:
        found = obtain(target["recipe"], target["inputs"], results if needs is not None else None)
    except NotRun as err:
        return {**row, "verdict": f"not run: {err}"}
    if isinstance(published, list):
        names = set(found.value)
        difference = len(names ^ set(published))
        verdict = REPRODUCED if difference == 0 else DEVIATES
        return {**row, "obtained": ", ".join(found.value), "difference": difference, "verdict": verdict}
    difference = abs(float(found.value) - published)
    row.update(obtained=float(found.value), difference=difference,
               verdict=REPRODUCED if difference <= target["tolerance"] else DEVIATES)
    if found.interval is not None:
        low, high = found.interval
        row.update(ci_low=low, ci_high=high, in_interval=bool(low <= published <= high))
    return row


def certify(results: RunResults | None = None, targets: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per target (:data:`COLUMNS`): published, obtained, |difference|, tolerance, verdict and, where the
    obtained value has a bootstrap interval, whether the published value lies in it.  ``results``: the run's
    (None = data-free targets only; the data targets are ``not run``); ``targets``: :func:`load_targets`'."""
    targets = load_targets() if targets is None else targets
    rows = []
    for target in targets["targets"]:
        judged = _judge(target, results)
        rows.append({"target": target["id"], "paper": citation(targets["papers"][target["paper"]]),
                     "artefact": target["artefact"], "quantity": target["quantity"],
                     "tolerance_reason": target.get("tolerance_reason"), "needs": _needs(target),
                     "explanation": target.get("explanation") if judged["verdict"] == DEVIATES else None,
                     **judged})
    return pd.DataFrame(rows, columns=COLUMNS)


def verdict_counts(certificate: pd.DataFrame) -> pd.Series:
    """The number of targets per verdict kind (``reproduced``, ``deviates``, ``not run``)."""
    return certificate["verdict"].str.split(":").str[0].value_counts()


def deviations(certificate: pd.DataFrame) -> pd.DataFrame:
    """The rows of a certificate that deviate."""
    return certificate[certificate["verdict"] == DEVIATES]
