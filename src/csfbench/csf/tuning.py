"""Hyper-parameter search on validation data: the two protocols of :data:`csfbench.csf.registry.PROTOCOLS`.

* :func:`tune` (``bayes``, Claros-Olivares & Brockmeier, App. E): Bayesian optimisation with
  ``bayes_opt`` (as the authors: ``random_state`` = the seed, ``init_points`` random probes then
  ``n_iter`` guided ones; the paper uses 20 + 80, the budget comes from the config).  The caller's
  objective is −AUGRC of the CSF on the ID validation split (misclassification).
* :func:`grid_search` (``grid``, ICONIC-444, Krumpl, Avenhaus & Possegger, arXiv 2601.10802, §4,
  App. B.2, Table 7): every point of a grid; the caller's objective is the AUROC of the CSF on the ID
  validation split against an OOD validation set.

A tuned parameter is declared as a :class:`Param` (its built-in range and kind, in the registry); every
value of it, probed, gridded, fixed in the config or read back from a fit file, becomes its kind by
:meth:`Param.value` (``int()`` truncation for integers).  The objective is supplied by the caller, so
nothing here reads data; both searches are deterministic (a fixed seed; the grid in its given order).
"""
from __future__ import annotations

import itertools
import logging
from typing import Callable, NamedTuple

import numpy as np

log = logging.getLogger(__name__)
WORST = -1.0  # −AUGRC is ≥ −0.5 and AUROC ≥ 0: a failed evaluation is scored below every valid one


class Param(NamedTuple):
    """A tuned hyper-parameter: its search range [``low``, ``high``] (``high`` ``"n_classes"`` = C, resolved by
    :func:`csfbench.csf.registry.bounds`) and its ``kind``, ``"int"`` or ``"float"``."""

    low: float
    high: float | str
    kind: str

    def value(self, value) -> int | float:
        """``value`` as this parameter's kind: ``int()`` (truncation) for an integer, ``float()`` otherwise."""
        return int(value) if self.kind == "int" else float(value)


def cast(params: dict, space: dict) -> dict:
    """``params`` as the kinds of ``space`` ({name: :class:`Param` or (low, high, kind)}): :meth:`Param.value`."""
    return {k: Param(*space[k]).value(v) for k, v in params.items()}


def tune(objective: Callable[[dict], float], space: dict, init_points: int, n_iter: int, seed: int,
         label: str = "") -> tuple[dict, np.ndarray, np.ndarray]:
    """Maximise ``objective(params)`` over ``space``; return (best params, probed params, objectives).

    Parameters whose low equals high are held fixed.  A probe whose objective raises ``ValueError``
    (e.g. a degenerate fit) is logged and scored :data:`WORST`.
    """
    fixed = {k: low for k, (low, high, _) in space.items() if low == high}
    free = {k: (float(low), float(high)) for k, (low, high, _) in space.items() if low != high}

    def safe(**params) -> float:
        full = cast({**fixed, **params}, space)
        try:
            value = float(objective(full))
        except ValueError as err:
            log.warning("%s: probe %s failed (%s); scored %s", label, full, err, WORST)
            return WORST
        return value if np.isfinite(value) else WORST

    if not free:
        value = safe()
        return cast(fixed, space), np.zeros((1, 0)), np.array([value])
    from bayes_opt import BayesianOptimization  # imported here: scoring jobs never tune (a slow import)

    opt = BayesianOptimization(f=safe, pbounds=free, random_state=seed, verbose=0, allow_duplicate_points=True)
    opt.maximize(init_points=init_points, n_iter=n_iter)
    names = sorted(free)
    probed = np.array([[r["params"][k] for k in names] for r in opt.res])
    targets = np.array([r["target"] for r in opt.res])
    best = cast({**fixed, **opt.max["params"]}, space)
    log.info("%s: best %s (objective %.6g over %d probes)", label, best, opt.max["target"], len(targets))
    return best, probed, targets


def grid_search(objective: Callable[[dict], float], grid: dict[str, tuple], space: dict, held: dict | None = None,
                label: str = "") -> tuple[dict, np.ndarray, np.ndarray]:
    """Maximise ``objective(params)`` over every point of ``grid`` ({param: values}); return (best params,
    probed params, objectives) as :func:`tune` does.

    ``held`` ({param: value}) are parameters of ``space`` held fixed at every point.  Points are visited
    in the order of :func:`itertools.product` over the parameters sorted by name; the first best point wins
    a tie.  A point whose objective raises ``ValueError`` (e.g. KNN's k above the bank size) is logged and
    scored :data:`WORST`.  ValueError when the grid has no point.
    """
    names = sorted(grid)
    if not names or any(not len(grid[k]) for k in names):
        raise ValueError(f"{label}: empty hyper-parameter grid {grid}")
    held = dict(held or {})
    probed, targets, best, best_value = [], [], None, -np.inf
    for values in itertools.product(*(grid[k] for k in names)):
        params = cast({**held, **dict(zip(names, values))}, space)
        try:
            value = float(objective(params))
        except ValueError as err:
            log.warning("%s: grid point %s failed (%s); scored %s", label, params, err, WORST)
            value = WORST
        value = value if np.isfinite(value) else WORST
        probed.append([params[k] for k in names])
        targets.append(value)
        if value > best_value:
            best, best_value = params, value
    log.info("%s: best %s (objective %.6g over %d grid points)", label, best, best_value, len(targets))
    return best, np.array(probed, dtype=np.float64), np.array(targets)
