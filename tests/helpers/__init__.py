"""Shared test helpers: fixtures written in real on-disk formats, synthetic data, workflow runs."""
