"""Aggregation of metric rows: the results table and model-level selection on validation."""
