"""What the checks read (:class:`AuditInputs`): plain records of the run's files, built by
:mod:`csfbench.audit.readers` (or by hand in a test)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class FitRecord:
    """One fitted, tuned quantity of a model: a (CSF flavour, variant) of a CSF fit file in one input mode, a
    fit group's projection, or a network-pass CSF.

    ``name`` is the result name (the flavour: ``KNN@grid``), ``csf`` the registry name (``KNN``; ``projection``
    for the projection's variance), ``protocol`` what chose the hyper-parameters (bayes, grid, id_grid, fixed,
    none), ``params`` the chosen values, ``space`` {param: (low, high)} the range each tuned parameter was
    searched over (the Bayesian range after the neighbour-count clip, or the grid's smallest and largest
    point; pinned parameters are absent), ``clips`` the fit's ``range_clips`` ({param: {range, clipped,
    train_rows}}), ``bank_rows`` the rows of the bank a neighbour search runs over (None without one),
    ``undefined`` why the CSF could not be fitted ("" when it was)."""

    source: str
    model: str
    fit_group: str
    mode: str
    name: str
    variant: str
    csf: str
    protocol: str
    params: dict = field(default_factory=dict)
    space: dict = field(default_factory=dict)
    clips: dict = field(default_factory=dict)
    bank_rows: int | None = None
    undefined: str = ""

    @property
    def subject(self) -> str:
        """``source/model · name [variant] · mode, fit group``."""
        return f"{self.source}/{self.model} · {self.name} [{self.variant}] · {self.mode}, fit group {self.fit_group}"


@dataclass(frozen=True)
class CellRecord:
    """One ranked analysis cell (a ranking JSON of status ``ok``): its ``name`` (``rc/vgg13_det_s1_near``), the
    ``block_columns`` it ranks over, ``n_blocks`` (the complete blocks the test used), ``independent_blocks``
    (those left once blocks that differ only in ``metric`` count once) and the JSON's ``friedman``,
    ``iman_davenport`` and ``omnibus`` entries."""

    name: str
    block_columns: tuple[str, ...]
    n_blocks: int
    independent_blocks: int
    friedman: dict = field(default_factory=dict)
    iman_davenport: dict = field(default_factory=dict)
    omnibus: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AccuracyRecord:
    """A model's top-1 accuracy on one labelled evaluation set (a fraction of its ``n_labelled`` samples)."""

    source: str
    model: str
    paradigm: str
    dataset: str
    shift_type: str
    n_labelled: int
    accuracy: float

    @property
    def subject(self) -> str:
        return f"{self.source}/{self.model} · {self.dataset}"


@dataclass
class AuditInputs:
    """Everything the checks read.

    ``results``: rows of the results table (its columns, with ``model``, the model id, and the interval columns
    ``ci_low``, ``ci_high``, ``n_boot``, ``ci_level``, NaN where none was computed); ``fits``, ``cells``,
    ``accuracies``: the records above; ``prediction_sets``: the rows of the models' prediction-set tables
    (``source``, ``model``, ``score``, ``method``, ``alpha``, ``size``, ``n_cal``, ...); ``n_classes``: {source:
    number of classes}; ``mcd_passes``: {backbone: MC-dropout passes} of the backbones whose models run MC
    dropout."""

    results: pd.DataFrame = field(default_factory=pd.DataFrame)
    fits: list[FitRecord] = field(default_factory=list)
    cells: list[CellRecord] = field(default_factory=list)
    accuracies: list[AccuracyRecord] = field(default_factory=list)
    prediction_sets: pd.DataFrame = field(default_factory=pd.DataFrame)
    n_classes: dict[str, int] = field(default_factory=dict)
    mcd_passes: dict[str, int] = field(default_factory=dict)
