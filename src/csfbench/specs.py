"""Typed contracts handed to the workflow's jobs: a dataset, a model and an evaluation set.

Each is a frozen dataclass resolved from the validated config (see :mod:`csfbench.workflow.grid`) with a JSON
round trip (:meth:`to_json` / :meth:`from_json`): the rules pass the JSON as a Snakemake ``param``, so
a config change reruns exactly the jobs whose spec it changes.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from csfbench.shifts.names import parse_corruption_set

#: the ID splits of a source: training (fits), validation (tuning, temperatures), test (evaluation)
SPLITS = ("train", "val", "test")

#: the group keys of an evaluation set (:attr:`EvalSet.groups`), columns of its metric rows
GROUP_KEYS = ("corruption", "severity", "rendition")
#: the training paradigms whose network has a confidence output of its own (the ``Confidence`` CSF): ConfidNet's and
#: DeVries' confidence heads, Deep Gamblers' abstention output; the others (ce, logitnorm, oe, and the classifiers
#: evaluated without training) have only their logits
CONFIDENCE_PARADIGMS = ("confidnet", "devries", "dg")


class _Json:
    """JSON round trip of a frozen spec; nested specs are listed in ``_nested`` (field -> class)."""

    _nested: ClassVar[dict[str, type]] = {}  # a list or tuple of them becomes a tuple of specs

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
            if isinstance(values.get(key), (list, tuple)):
                values[key] = tuple(nested.from_dict(item) for item in values[key])
            elif values.get(key) is not None:
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
class _Configuration(_Json):
    """The identity of a model or an ensemble: its ``source`` (the in-distribution training set, a key of the
    config's ``sources``), its id ``model`` and its configuration (backbone, paradigm, dropout, reward)."""

    source: str
    model: str
    backbone: str
    paradigm: str
    dropout: int
    reward: float


@dataclass(frozen=True)
class ModelSpec(_Configuration):
    """Everything one model's jobs need: identity, seed, data, architecture and optimisation.

    ``seed`` is derived from the config's seed, the source and the model id; ``mcd_samples`` is 0 for models
    without dropout.  ``outliers`` is the auxiliary outlier set of paradigm ``oe`` (Outlier Exposure), None for
    the other paradigms.
    """

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
    library: str | None = None
    weights: dict | None = field(default=None, hash=False)
    geometry: dict | None = field(default=None, hash=False)
    outliers: DatasetSpec | None = None

    _nested: ClassVar[dict[str, type]] = {"dataset": DatasetSpec, "outliers": DatasetSpec}
    #: fields left out of the JSON while None (a spec of the built-in backbones with the default stretch geometry
    #: keeps the JSON it had before these fields existed, so existing results are not rerun)
    _omitted_if_none: ClassVar[tuple[str, ...]] = ("library", "weights", "geometry", "outliers")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: v for k, v in data.items() if not (v is None and k in self._omitted_if_none)}

    #: the results table's ``members`` column of a single model's rows (an ensemble's member runs otherwise)
    member_runs: ClassVar[None] = None

    @property
    def modes(self) -> tuple[str, ...]:
        """Input modes of the CSF stage: ``det``, plus ``mcd`` with Monte-Carlo dropout passes."""
        return ("det", "mcd") if self.mcd_samples > 0 else ("det",)

    @property
    def csf_backbone(self) -> str:
        """The backbone the CSF registry sees (:func:`csfbench.csf.registry.variants_for`): the backbone for a
        paradigm with a confidence output (:data:`CONFIDENCE_PARADIGMS`), else ``vit`` — no paradigm confidence
        head, so no ``Confidence`` CSF: the ViT, a VGG-13 trained with plain cross-entropy, LogitNorm or Outlier
        Exposure (paradigms ``ce``, ``logitnorm``, ``oe``) and every timm/torchvision classifier evaluated without
        training (paradigms ``pretrained``/``random``)."""
        return self.backbone if self.paradigm in CONFIDENCE_PARADIGMS else "vit"

    @property
    def loader_geometry(self) -> dict[str, Any]:
        """The keyword arguments of :func:`csfbench.data.loader.make_loader` that turn an image into the model's
        S×S input (``geometry``, ``crop_pct``, ``interpolation``); ``{}`` = the default bilinear stretch."""
        if self.geometry is None:
            return {}
        return {"geometry": self.geometry["mode"], "crop_pct": self.geometry["crop_pct"],
                "interpolation": self.geometry["interpolation"]}


@dataclass(frozen=True)
class EnsembleSpec(_Configuration):
    """A deep ensemble over runs of one configuration of ``source``: its id ``model``
    (:class:`csfbench.workflow.ids.EnsembleId`), the configuration's keys and its ``members``' specs (run order).

    It writes metric rows like a model (:func:`csfbench.evaluation.metric_rows`): ``run`` 0 and ``member_runs``
    (``1-2-3``, the results table's ``members`` column)."""

    members: tuple[ModelSpec, ...]

    run: ClassVar[int] = 0
    _nested: ClassVar[dict[str, type]] = {"members": ModelSpec}

    def __post_init__(self):
        if not self.members:
            raise ValueError(f"ensemble {self.model}: no members")

    def to_dict(self) -> dict[str, Any]:
        """The ensemble's fields, its members as :meth:`ModelSpec.to_dict` writes them."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "members"}
        return {**data, "members": [m.to_dict() for m in self.members]}

    @property
    def member_runs(self) -> str:
        return "-".join(str(m.run) for m in self.members)

    @property
    def modes(self) -> tuple[str, ...]:
        """The input modes every member has (``det``, and ``mcd`` when they run MC dropout)."""
        return self.members[0].modes


@dataclass(frozen=True)
class EvalSet(_Json):
    """An evaluation set of a source: an ID split (``train``, ``val``, ``test``; no ``dataset``) or a
    shifted set with its ``dataset`` on disk; ``shift_type`` ∈ {id, covariate, semantic, adversarial};
    ``regime`` ∈ {train, val, test, near, mid, far, covariate, adversarial}."""

    name: str
    shift_type: str
    regime: str
    dataset: DatasetSpec | None = None
    #: the source's classes the set's labels can take (None = all); with ``logit_mask`` ``restrict`` the
    #: prediction is the argmax over them only (e.g. ImageNet-R's 200 classes), with ``none`` over every class
    label_space: tuple[int, ...] | None = None
    logit_mask: str = "none"

    _nested: ClassVar[dict[str, type]] = {"dataset": DatasetSpec}

    def to_dict(self) -> dict[str, Any]:
        """As :meth:`_Json.to_dict`, without the label-space fields while they have their defaults (the JSON of
        a set without them is the one it had before they existed, so existing results are not rerun)."""
        data = asdict(self)
        if data["label_space"] is None:
            del data["label_space"]
        if data["logit_mask"] == "none":
            del data["logit_mask"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        spec = super().from_dict(data)
        if spec.label_space is not None and not isinstance(spec.label_space, tuple):
            object.__setattr__(spec, "label_space", tuple(spec.label_space))
        return spec

    @property
    def split(self) -> str:
        """The split the set's images come from (an ID split's own name, else its dataset's split)."""
        return self.name if self.dataset is None else self.dataset.split

    @property
    def groups(self) -> dict[str, Any]:
        """The set's group keys (:data:`GROUP_KEYS`), written to its metric rows: the ``corruption`` (str) and
        ``severity`` (int, 1..5) of a corrupted set — from its dataset's options (formats ``cifar_c``,
        ``imagenet_c``) or from the name of a generated corruption set (``corrupt-{family}-{severity}``) — and
        the ``rendition`` (str) of a set of one rendition (format ``wnid_folders``' option); None where a set
        has none."""
        options = self.dataset.options if self.dataset is not None else {}
        parsed = parse_corruption_set(self.name)
        corruption = options.get("corruption", parsed[0] if parsed else None)
        severity = options.get("severity", parsed[1] if parsed else None)
        rendition = options.get("rendition")
        return {"corruption": None if corruption is None else str(corruption),
                "severity": None if severity is None else int(severity),
                "rendition": None if rendition is None else str(rendition)}
