"""Figures and tables of the paper regenerated from the results (spec 000 §8): :mod:`.figures`, :mod:`.tables`."""
