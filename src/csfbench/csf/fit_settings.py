"""The typed settings of a CSF fit: the ``csf`` param of ``rules/csf.smk``'s ``fit_csf`` rule, parsed once.

The fit job receives the config's ``csf`` section as the workflow cuts it for one (model, fit group), as
JSON.  :meth:`FitSettings.from_json` parses it once, at the job's edge (``workflow_scripts/fit_csf.py``),
into frozen settings: the quirk mode, the CSFs to fit, the OOD validation set of the grid protocol, and
the :class:`TuningSettings` of the searches, in which every configured value of a tuned parameter
(``fixed``, ``search_space``, ``tuning.grids``) already has the kind the registry declares for it
(:data:`csfbench.csf.registry.SPACES`, :meth:`csfbench.csf.tuning.Param.value`): KNN's ``k`` is an
``int`` from here to the kernel, the projection's variance a ``float``.  The config's defaults are
those of ``csf`` in the configuration schema; nothing here supplies one, except the block budget of a
section without ``block_mib`` (a fit file written before the setting existed): the schema's default,
:data:`csfbench.csf.blocks.DEFAULT_BLOCK_MIB`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from csfbench.csf.blocks import DEFAULT_BLOCK_MIB
from csfbench.csf.registry import PROTOCOLS, SPACES, TEMPERATURES
from csfbench.csf.tuning import tune


def _typed_values(name: str, values: dict, each) -> dict:
    """{param: each(Param, value)} for the declared parameters of tuned quantity ``name``; a name or
    parameter the registry does not declare keeps its value (the config validation refuses them)."""
    space = SPACES.get(name, {})
    return {param: each(space[param], value) if param in space else value for param, value in values.items()}


def _fixed(fixed: dict) -> dict:
    return {name: _typed_values(name, values, lambda p, v: p.value(v)) for name, values in fixed.items()}


def _grids(grids: dict) -> dict:
    return {name: _typed_values(name, values, lambda p, vs: tuple(p.value(v) for v in vs))
            for name, values in grids.items()}


def _ranges(search_space: dict) -> dict:
    # a range stays real (the searches draw reals and cast each probe), so a bound is never truncated
    return {name: {param: (float(low), float(high)) for param, (low, high) in values.items()}
            for name, values in search_space.items()}


@dataclass(frozen=True)
class TuningSettings:
    """Search budgets and fixed values from the config's ``csf`` section.

    ``init_points`` + ``n_iter`` is the budget of every tuned quantity except those in ``budgets``
    ({CSF name or "projection": (init_points, n_iter)}); ``seed`` seeds the Bayesian optimisation.
    ``temperatures`` (of :data:`~csfbench.csf.registry.TEMPERATURES`) are the temperatures every CSF that
    reads one runs at, ``protocols`` (of :data:`~csfbench.csf.registry.PROTOCOLS`) the tuning protocols of
    every CSF with a grid, ``grids`` ({CSF name: {param: values}}) replace published grid values.
    ``fixed`` ({CSF name or "projection": {param: value}}) pins parameters, ``search_space`` ({name:
    {param: (low, high)}}) replaces built-in ranges.  ``max_neighbour_fraction`` (in (0, 1]) caps the
    Bayesian search range of every parameter that counts training rows (a CSF's ``neighbour_counts``,
    KNN's and NNGuide's k) at that fraction of the training rows (:func:`~csfbench.csf.tuning.clip_counts`).
    Construction types every value: a fixed or gridded value of a declared parameter as its kind, a range
    as two reals, a budget as two ints, the fraction as a real.
    """

    init_points: int
    n_iter: int
    seed: int
    fixed: dict = field(default_factory=dict)          # {CSF name or "projection": {param: value}}
    search_space: dict = field(default_factory=dict)   # {CSF name or "projection": {param: (low, high)}}
    budgets: dict = field(default_factory=dict)        # {CSF name or "projection": (init_points, n_iter)}
    temperatures: tuple[str, ...] = ("fitted",)
    protocols: tuple[str, ...] = ("bayes",)
    grids: dict = field(default_factory=dict)          # {CSF name: {param: values}}
    max_neighbour_fraction: float = 0.05               # the schema's default (docs/methods.md §3.2)

    def __post_init__(self):
        for key, values, known in (("temperatures", self.temperatures, TEMPERATURES),
                                   ("protocols", self.protocols, PROTOCOLS)):
            unknown = [v for v in values if v not in known]
            if unknown or not values:
                raise ValueError(f"tuning {key}: expected a non-empty list of {list(known)}, got {list(values)}")
        if not 0 < float(self.max_neighbour_fraction) <= 1:
            raise ValueError(f"tuning max_neighbour_fraction: expected a number in (0, 1], "
                             f"got {self.max_neighbour_fraction}")
        typed = {"init_points": int(self.init_points), "n_iter": int(self.n_iter), "seed": int(self.seed),
                 "fixed": _fixed(self.fixed), "search_space": _ranges(self.search_space),
                 "budgets": {name: (int(a), int(b)) for name, (a, b) in self.budgets.items()},
                 "temperatures": tuple(self.temperatures), "protocols": tuple(self.protocols),
                 "grids": _grids(self.grids), "max_neighbour_fraction": float(self.max_neighbour_fraction)}
        for key, value in typed.items():
            object.__setattr__(self, key, value)

    @classmethod
    def from_config(cls, csf_cfg: dict) -> "TuningSettings":
        """From a validated config's ``csf`` section (or its cut for one fit, the ``fit_csf`` param)."""
        t = csf_cfg["tuning"]
        return cls(t["init_points"], t["n_iter"], t["seed"], csf_cfg["fixed"], csf_cfg["search_space"],
                   resolved_budgets(t), csf_cfg["temperatures"], t["protocols"], t["grids"],
                   t["max_neighbour_fraction"])

    def budget(self, name: str) -> tuple[int, int]:
        """(init_points, n_iter) of the tuned quantity ``name`` (a CSF name or "projection")."""
        return self.budgets.get(name, (self.init_points, self.n_iter))

    def search(self, objective, space: dict, name: str, label: str):
        """:func:`~csfbench.csf.tuning.tune` with the budget of ``name`` and the seed."""
        return tune(objective, space, *self.budget(name), self.seed, label=label)


def resolved_budgets(tuning_cfg: dict) -> dict[str, tuple[int, int]]:
    """{name: (init_points, n_iter)} from a validated config's ``csf.tuning.budgets``."""
    return {name: (int(b["init_points"]), int(b["n_iter"])) for name, b in tuning_cfg["budgets"].items()}


def block_mib(csf_cfg: dict) -> float:
    """The block budget ``csf.block_mib`` (MiB > 0) of a ``csf`` section (a fit file's ``csf_config``); the
    default where the section has none (a fit written before the setting existed)."""
    value = csf_cfg.get("block_mib", DEFAULT_BLOCK_MIB)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"csf block_mib: expected a number of MiB > 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class FitSettings:
    """What one CSF fit reads of the config: the ``fit_csf`` rule's ``csf`` param, typed.

    ``quirks`` (:data:`~csfbench.csf.registry.QUIRKS`), ``methods`` the CSFs to fit (None: every CSF of the
    registry), ``ood_validation`` the OOD validation set of the grid protocol (None without ``grid`` among
    ``tuning.protocols``: the entry is read only then), ``tuning`` the searches, ``config_json`` the param
    as the fit file records it (its ``csf_config`` attribute: the JSON with sorted keys), ``block_mib`` the
    block budget of the fit and of the scoring with it (``csf.block_mib``, MiB:
    :func:`csfbench.csf.blocks.block_budget`).
    """

    quirks: str
    methods: frozenset[str] | None
    ood_validation: str | None
    tuning: TuningSettings
    config_json: str
    block_mib: float = DEFAULT_BLOCK_MIB

    @classmethod
    def from_config(cls, csf_cfg: dict) -> "FitSettings":
        """From the cut ``csf`` section of one fit (:meth:`csfbench.workflow.grid.Grid.csf_fit_config`).
        ValueError when the grid protocol's ``tuning.ood_validation`` is not one dataset name (or null)."""
        tuning = TuningSettings.from_config(csf_cfg)
        ood = csf_cfg["tuning"]["ood_validation"] if "grid" in tuning.protocols else None
        if ood is not None and not isinstance(ood, str):
            raise ValueError(f"csf tuning ood_validation of one fit: expected a dataset name or null, got {ood!r}")
        methods = csf_cfg["methods"]
        return cls(str(csf_cfg["quirks"]), None if methods is None else frozenset(methods), ood, tuning,
                   json.dumps(csf_cfg, sort_keys=True), block_mib(csf_cfg))

    @classmethod
    def from_json(cls, text: str) -> "FitSettings":
        """From the ``fit_csf`` rule's ``csf`` param (JSON)."""
        return cls.from_config(json.loads(text))
