"""Hyper-parameter values at which a CSF equals another CSF of the benchmark (:data:`EQUIVALENCES`).

A CSF tuned to such a value adds no method of its own: its ranks duplicate the other CSF's, and a ranking that
counts both counts one score twice.  Only identities that follow from the definitions are listed (docs/methods.md
§5.12 and §5.14); ``exact`` is False where the equality is reached at the value itself and approached near it.
The always-equal pairs that need no tuning (``MSR@T1`` = MSP, ``Energy@T1`` = EBO, CTM = MaxCosine) are
:data:`csfbench.csf.registry.ALIASES`, not listed here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalence:
    """``csf`` (a registry name, or ``ODIN-IP``) with every parameter of ``at`` at its value equals ``equals``."""

    csf: str
    at: dict
    equals: str
    exact: bool
    reason: str

    def holds(self, params: dict, space: dict, tolerance: float) -> bool:
        """Whether ``params`` are at :attr:`at`: each within ``tolerance`` × |value|, or, for a value of 0, within
        ``tolerance`` × the width of the parameter's search range in ``space`` ({param: (low, high)}; exactly 0
        when the range is not known)."""
        for param, target in self.at.items():
            if param not in params:
                return False
            low, high = space.get(param, (0.0, 0.0))
            scale = abs(target) if target else (high - low)
            if abs(float(params[param]) - target) > tolerance * scale:
                return False
        return True


#: the equivalences, the most specific first (a fit is reported under the first that holds)
EQUIVALENCES: tuple[Equivalence, ...] = (
    Equivalence("ODIN-IP", {"temperature": 1.0, "noise": 0.0}, "MSP", True,
                "with epsilon = 0 the input is not perturbed and at T = 1 the tempered softmax is the softmax, so "
                "ODIN-IP is the maximum softmax probability"),
    Equivalence("ODIN-IP", {"noise": 0.0}, "ODIN", True,
                "with epsilon = 0 the input is not perturbed, so ODIN-IP is ODIN from the stored logits at the same "
                "T, at the cost of a network pass"),
    Equivalence("ODIN", {"temperature": 1.0}, "MSP", True,
                "ODIN from the stored logits is max softmax(z / T) without input perturbation; at T = 1 it is the "
                "maximum softmax probability"),
    Equivalence("ReAct", {"percentile": 100.0}, "EBO", False,
                "ReAct clips the features at the p-th percentile of the training activations before the energy at "
                "T = 1; at p = 100 nothing is clipped and it is EBO, and near it only the few largest activations are"),
    Equivalence("ASH-P", {"percentile": 0.0}, "EBO", True,
                "ASH-P sets the p % smallest units of each feature vector to 0 before the energy at T = 1; at p = 0 "
                "it keeps every unit and is EBO"),
)
