"""Model identifiers: ``{backbone}_{paradigm}_do{0|1}_rew{reward}_run{run}``.

``reward`` is the Deep Gamblers reward o, formatted with ``%g`` (``2.2``, ``6``); paradigms without a
reward carry ``rew0``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_MODEL_RE = re.compile(
    r"^(?P<backbone>[a-z0-9]+)_(?P<paradigm>[a-z]+)_do(?P<dropout>[01])_rew(?P<reward>\d+(?:\.\d+)?)_run(?P<run>\d+)$"
)
#: wildcard constraint for Snakemake: the same grammar without named groups or anchors
MODEL_PATTERN = re.sub(r"\?P<\w+>", "?:", _MODEL_RE.pattern)[1:-1]


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
