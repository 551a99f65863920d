"""Unit tests of csfbench.stages and the shared helpers the stages call, one file per module."""
