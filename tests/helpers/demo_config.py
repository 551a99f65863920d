"""The demo config (config/config.yaml) edited: its ``demo.spec`` replaced (the generator's tests) or one
key changed or removed (the validation tests)."""
from __future__ import annotations

import copy

from csfbench.workflow.settings import load_yaml, validate_config
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
    with the schema's defaults (the default spec if None).  Only the spec is returned, so the demo stage is
    switched off first: validation then fills in the spec's defaults without checking the sources' split sizes
    against a spec far smaller than the demo's."""
    config = demo_config(spec)
    config["demo"]["enabled"] = False
    return validate_config(config)["demo"]["spec"]


def edited(config: dict, path: tuple, value: object) -> dict:
    """A copy of ``config`` with the key at ``path`` set to ``value`` (removed if ``value`` is KeyError)."""
    config = copy.deepcopy(config)
    node = config
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return config
