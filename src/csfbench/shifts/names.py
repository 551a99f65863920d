"""Names of generated evaluation sets: ``corrupt-{family}-{severity}`` and ``{attack}-eps{ε}`` (ε in 1/255)."""
from __future__ import annotations

import re

_CORRUPT = re.compile(r"^corrupt-(?P<family>[a-z_]+)-(?P<severity>[1-5])$")
_ADVERSARIAL = re.compile(r"^(?P<attack>pgd|fgsm)-eps(?P<eps>\d+(\.\d+)?)$")


def corruption_set(family: str, severity: int) -> str:
    return f"corrupt-{family}-{int(severity)}"


def adversarial_set(attack: str, eps: float) -> str:
    return f"{attack}-eps{float(eps):g}"


def parse_corruption_set(name: str) -> tuple[str, int] | None:
    """(family, severity) of a corruption-set name, None for any other name."""
    m = _CORRUPT.match(name)
    return (m["family"], int(m["severity"])) if m else None


def parse_adversarial_set(name: str) -> tuple[str, float] | None:
    """(attack, ε in 1/255 units) of an adversarial-set name, None for any other name."""
    m = _ADVERSARIAL.match(name)
    return (m["attack"], float(m["eps"])) if m else None
