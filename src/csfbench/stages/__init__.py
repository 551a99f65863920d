"""The workflow's jobs: one module per rule file of ``rules/``, one function per rule.

Each function takes plain values (typed specs, settings, paths) and can be called without Snakemake;
``workflow_scripts/`` only forward the Snakemake object's fields to it.
"""
