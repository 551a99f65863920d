"""Model identifiers: ``{backbone}_{paradigm}_do{0|1}_rew{reward}_run{run}`` for a trained (or loaded) network,
``{backbone}_{paradigm}_do{0|1}_rew{reward}_ens{run}-{run}-...`` for a deep ensemble over runs of one configuration.

``reward`` is the Deep Gamblers reward o, formatted with ``%g`` (``2.2``, ``6``); paradigms without a
reward carry ``rew0``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_MODEL_RE = re.compile(
    r"^(?P<backbone>[a-z0-9]+)_(?P<paradigm>[a-z]+)_do(?P<dropout>[01])_rew(?P<reward>\d+(?:\.\d+)?)_run(?P<run>\d+)$"
)
_ENSEMBLE_RE = re.compile(
    r"^(?P<backbone>[a-z0-9]+)_(?P<paradigm>[a-z]+)_do(?P<dropout>[01])_rew(?P<reward>\d+(?:\.\d+)?)"
    r"_ens(?P<runs>\d+(?:-\d+)*)$"
)


def _wildcard(regex: re.Pattern) -> str:
    """A Snakemake wildcard constraint: the grammar without named groups or anchors."""
    return re.sub(r"\?P<\w+>", "?:", regex.pattern)[1:-1]


#: wildcard constraints for Snakemake: a single model (``model``) and an ensemble (``ensemble``); disjoint
MODEL_PATTERN = _wildcard(_MODEL_RE)
ENSEMBLE_PATTERN = _wildcard(_ENSEMBLE_RE)


@dataclass(frozen=True, order=True)
class ModelId:
    backbone: str
    paradigm: str
    dropout: int
    reward: float
    run: int

    def __str__(self) -> str:
        return f"{self.backbone}_{self.paradigm}_do{self.dropout}_rew{self.reward:g}_run{self.run}"

    @classmethod
    def parse(cls, text: str) -> "ModelId":
        match = _MODEL_RE.match(text)
        if match is None:
            raise ValueError(
                f"model id '{text}' does not match '{{backbone}}_{{paradigm}}_do{{0|1}}_rew{{reward}}_run{{run}}'"
            )
        g = match.groupdict()
        return cls(g["backbone"], g["paradigm"], int(g["dropout"]), float(g["reward"]), int(g["run"]))


@dataclass(frozen=True, order=True)
class EnsembleId:
    """A deep ensemble over the runs ``runs`` (ascending, at least one) of one configuration."""

    backbone: str
    paradigm: str
    dropout: int
    reward: float
    runs: tuple[int, ...]

    def __str__(self) -> str:
        runs = "-".join(str(run) for run in self.runs)
        return f"{self.backbone}_{self.paradigm}_do{self.dropout}_rew{self.reward:g}_ens{runs}"

    @property
    def members(self) -> tuple[ModelId, ...]:
        """The member models, in run order."""
        return tuple(ModelId(self.backbone, self.paradigm, self.dropout, self.reward, run) for run in self.runs)

    @property
    def member_runs(self) -> str:
        """The runs as the results table's ``members`` column writes them (``1-2-3``)."""
        return "-".join(str(run) for run in self.runs)

    @classmethod
    def parse(cls, text: str) -> "EnsembleId":
        match = _ENSEMBLE_RE.match(text)
        if match is None:
            raise ValueError(f"ensemble id '{text}' does not match "
                             "'{backbone}_{paradigm}_do{0|1}_rew{reward}_ens{run}-{run}...'")
        g = match.groupdict()
        return cls(g["backbone"], g["paradigm"], int(g["dropout"]), float(g["reward"]),
                   tuple(int(run) for run in g["runs"].split("-")))


def model_name(backbone: str, paradigm: str, dropout: int, reward: float, run: int, members: str | None) -> str:
    """The id of the model of a results row (its model columns and ``members``, null for a single model)."""
    if members is None or members != members:  # null or NaN: a single model
        return str(ModelId(backbone, paradigm, int(dropout), float(reward), int(run)))
    return str(EnsembleId(backbone, paradigm, int(dropout), float(reward), tuple(int(r) for r in members.split("-"))))
