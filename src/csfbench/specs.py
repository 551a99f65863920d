"""Typed contracts handed to the workflow's jobs: a dataset, a model and an evaluation set.

Each is a frozen dataclass resolved from the validated config (see :mod:`csfbench.grid`) with a JSON
round trip (:meth:`to_json` / :meth:`from_json`): the rules pass the JSON as a Snakemake ``param``, so
a config change reruns exactly the jobs whose spec it changes.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


class _Json:
    """JSON round trip of a frozen spec; nested specs are listed in ``_nested`` (field -> class)."""

    _nested: ClassVar[dict[str, type]] = {}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): equal specs give equal strings."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown field(s) {unknown}")
        values = dict(data)
        for key, nested in cls._nested.items():
            if values.get(key) is not None:
                values[key] = nested.from_dict(values[key])
        return cls(**values)

    @classmethod
    def from_json(cls, text: str):
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True)
class DatasetSpec(_Json):
    """A catalogue dataset on disk: reader ``format``, ``path``, the official ``split`` it is evaluated
    on as a shifted set, and the reader's ``options``."""

    name: str
    format: str
    path: str
    split: str = "test"
    options: dict = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ModelSpec(_Json):
    """Everything one model's jobs need: identity, seed, data, architecture and optimisation.

    ``source`` is the in-distribution training set (a key of the config's ``sources``); ``seed`` is
    derived from the config's seed, the source and the model id; ``mcd_samples`` is 0 for models
    without dropout.
    """

    source: str
    model: str
    backbone: str
    paradigm: str
    dropout: int
    reward: float
    run: int
    seed: int
    n_classes: int
    image_size: int
    normalize: dict = field(hash=False)
    arch: dict = field(hash=False)
    mcd_samples: int
    optim: dict = field(hash=False)
    paradigm_params: dict = field(hash=False)
    dataset: DatasetSpec
    val_size: int
    pretrained: dict | None = field(default=None, hash=False)

    _nested: ClassVar[dict[str, type]] = {"dataset": DatasetSpec}

    @property
    def modes(self) -> tuple[str, ...]:
        """Input modes of the CSF stage: ``det``, plus ``mcd`` with Monte-Carlo dropout passes."""
        return ("det", "mcd") if self.mcd_samples > 0 else ("det",)


@dataclass(frozen=True)
class EvalSet(_Json):
    """An evaluation set of a source: an ID split (``train``, ``val``, ``test``; no ``dataset``) or a
    shifted set with its ``dataset`` on disk; ``shift_type`` ∈ {id, covariate, semantic, adversarial};
    ``regime`` ∈ {train, val, test, near, mid, far, covariate, adversarial}."""

    name: str
    shift_type: str
    regime: str
    dataset: DatasetSpec | None = None

    _nested: ClassVar[dict[str, type]] = {"dataset": DatasetSpec}

    @property
    def split(self) -> str:
        """The split the set's images come from (an ID split's own name, else its dataset's split)."""
        return self.name if self.dataset is None else self.dataset.split
