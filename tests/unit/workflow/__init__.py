"""Unit tests of csfbench.workflow, one file per module."""
