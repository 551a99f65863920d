"""Figures and tables of the paper regenerated from the results (Claros-Olivares & Brockmeier):
:mod:`.figures`, :mod:`.tables`."""
