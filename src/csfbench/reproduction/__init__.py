"""Reproduction certificates: published values as data (``targets.yaml``, validated by ``targets_schema.yaml``),
the recipes that recompute them (:mod:`csfbench.reproduction.recipes`) and the verdicts
(:mod:`csfbench.reproduction.certificate`); docs/reproducibility.md."""
from csfbench.reproduction.certificate import certify, citation, deviations, load_targets, verdict_counts
from csfbench.reproduction.recipes import RECIPES, NotRun, Obtained, RunResults

__all__ = ["RECIPES", "NotRun", "Obtained", "RunResults", "certify", "citation", "deviations", "load_targets",
           "verdict_counts"]
