"""Aggregation of metric rows: the results table and model-level selection (spec 000 §1.7 V3)."""
