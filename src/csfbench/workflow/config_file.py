"""Where a config file's YAML text goes wrong, as one line: the line, the column and the problem.

PyYAML reports a syntax error with a mark (line and column); a character no YAML text may hold (a NUL byte,
another control character: a binary file that happens to decode as UTF-8) comes as a ``ReaderError`` with a
character offset instead, and a message of two lines.  :func:`describe_yaml_error` turns either into the
(where, problem) pair of :class:`csfbench.errors.ConfigFileError`.
"""
from __future__ import annotations

from pathlib import Path

import yaml


def _line_column(path: Path, position: int) -> str:
    """``line L, column C`` of the character at ``position`` of the UTF-8 text in ``path``."""
    text = path.read_text(encoding="utf-8")[:position]
    return f"line {text.count(chr(10)) + 1}, column {position - (text.rfind(chr(10)) + 1) + 1}"


def describe_yaml_error(err: yaml.YAMLError, path: str | Path) -> tuple[str, str]:
    """(where, problem) of a YAML error raised while reading the UTF-8 text of ``path``: ``where`` is
    ``line L, column C`` (empty when PyYAML gives no position) and ``problem`` is one line."""
    if isinstance(err, yaml.reader.ReaderError):
        return (_line_column(Path(path), err.position),
                f"binary content: character #x{err.character:04x} ({err.reason}; not YAML text)")
    mark = getattr(err, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = ", ".join(str(part) for part in (getattr(err, "context", None), getattr(err, "problem", None))
                        if part) or " ".join(str(err).split())
    return where, problem
