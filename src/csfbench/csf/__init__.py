"""Confidence scoring functions (Claros-Olivares & Brockmeier, §3.1, App. A.3; docs/methods.md): pure-numpy
kernels, higher = more in-distribution."""

from csfbench.csf.detector import detector

__all__ = ["detector"]
