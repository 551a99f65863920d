"""Recursive merge of nested settings mappings (a source's ``training`` overrides onto the section)."""
from __future__ import annotations

import copy


def deep_merge(base: dict, override: dict) -> dict:
    """A copy of ``base`` with ``override`` merged in recursively (override wins)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
