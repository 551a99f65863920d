"""Geometry of trained feature spaces: neural-collapse metrics (Claros-Olivares & Brockmeier, §3.4, App. D)."""
