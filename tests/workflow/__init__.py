"""Workflow tests: Snakemake runs of tests/config/micro.yaml (marker `workflow`)."""
