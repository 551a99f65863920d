"""The demo config (config/config.yaml) with its ``demo.spec`` replaced, for the generator's tests."""
from __future__ import annotations

import copy

from csfbench.settings import load_yaml, validate_config
from tests.helpers.repo import REPO

CONFIG = REPO / "config" / "config.yaml"


def demo_config(spec: dict | None) -> dict:
    """config/config.yaml with its ``demo.spec`` replaced by ``spec`` (removed if None), unvalidated."""
    config = load_yaml(CONFIG)
    if spec is None:
        del config["demo"]["spec"]
    else:
        config["demo"]["spec"] = copy.deepcopy(spec)
    return config


def full_spec(spec: dict | None = None) -> dict:
    """The complete demo spec the workflow passes to the generator: ``spec`` validated and completed
    with the schema's defaults (the default spec if None)."""
    return validate_config(demo_config(spec))["demo"]["spec"]
