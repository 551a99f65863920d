"""Geometry of trained feature spaces: neural-collapse metrics (spec 000 §7)."""
