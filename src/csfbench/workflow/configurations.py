"""The configurations a backbone has on a source, shared by the grid of models, the ensembles and the settings'
checks: whether the backbone serves the source, and the Deep Gamblers rewards of a paradigm there."""
from __future__ import annotations


def serves(backbone: dict, source: str) -> bool:
    """Whether the backbone section ``backbone`` (``backbones/<name>``) serves ``source``: its ``sources`` is
    null or names it."""
    return backbone.get("sources") is None or source in backbone["sources"]


def rewards(config: dict, source: str, paradigm: str) -> list[float]:
    """The Deep Gamblers rewards of ``source`` for paradigm ``dg``, [0.0] for the others (the grid's and the
    ensembles' configurations)."""
    return [float(r) for r in config["sources"][source]["dg_rewards"]] if paradigm == "dg" else [0.0]
