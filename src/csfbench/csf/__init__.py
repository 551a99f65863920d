"""Confidence scoring functions (spec 000 §2): pure-numpy kernels, higher = more in-distribution."""
