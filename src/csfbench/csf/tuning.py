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

A parameter that counts training rows (KNN's and NNGuide's neighbour count k) has its search range clipped
to a fraction of the training rows before the Bayesian search (:func:`clip_counts`): on a small training
split −AUGRC can favour a k near the bank size, which ranks far-OOD inputs as in-distribution
(docs/methods.md §3.2).
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


def clip_counts(space: dict, counts, n_rows: int, fraction: float, label: str = "") -> tuple[dict, dict]:
    """``space`` ({name: :class:`Param` or (low, high, kind)}) with the range of each parameter named in
    ``counts`` (parameters that count training rows) clipped to at most ``cap`` = max(1, ⌊``fraction`` ·
    ``n_rows``⌋), ``fraction`` in (0, 1] (:class:`~csfbench.csf.fit_settings.TuningSettings` checks it);
    return (the space, the clips).

    A range whose ``high`` exceeds ``cap`` becomes [min(``low``, ``cap``), ``cap``], so it is never empty
    (the floor: a range entirely above the cap becomes the single point ``cap``, at least 1); any other
    range is unchanged.  The clips are {param: {"range": [low, high], "clipped": [low, high],
    "train_rows": ``n_rows``}} for the clipped parameters only (empty when none is), each logged.
    """
    cap = max(1, int(fraction * n_rows))
    out, clips = dict(space), {}
    for name in counts:
        low, high, kind = space[name]
        if high <= cap:
            continue
        out[name] = Param(min(low, cap), cap, kind)
        clips[name] = {"range": [low, high], "clipped": [out[name].low, cap], "train_rows": int(n_rows)}
        log.info("%s: %s range [%s, %s] clipped to [%s, %s] (%s of %d training rows)", label, name, low, high,
                 out[name].low, cap, fraction, n_rows)
    return out, clips


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
