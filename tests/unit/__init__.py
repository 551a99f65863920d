"""Unit tests of the csfbench package, one file per module or concern."""
