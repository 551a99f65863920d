"""Deterministic seeds and short content hashes derived from identifying parts."""
from __future__ import annotations

import hashlib
import json


def derive_seed(base_seed: int, *parts: object) -> int:
    """A 31-bit seed derived deterministically from ``base_seed`` and identifying parts."""
    digest = hashlib.sha256(json.dumps([base_seed, *map(str, parts)]).encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def spec_hash(spec: dict) -> str:
    """Short sha256 of a canonical JSON rendering (the ``config_hash`` provenance attribute)."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
