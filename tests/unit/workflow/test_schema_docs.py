"""csfbench.workflow.schema_docs: config/README.md's option tables are the schema's, and the renderer on a
tiny hand-written schema gives the hand-written Markdown."""
from __future__ import annotations

import pytest

from csfbench.workflow import schema_docs
from csfbench.workflow.schema_docs import TOP, flow, main, regenerate, render, render_section, sections
from csfbench.workflow.settings import schema
from tests.helpers.repo import REPO

README = REPO / "config" / "README.md"
REGENERATE = "python -m csfbench.workflow.schema_docs config/README.md"

# a $ref (twice: the second use names the first), nested objects, an additionalProperties map, an enum, a
# default that is a list, a required key, a bounded number and a `|` that must be escaped in a table cell
TINY = {
    "$defs": {
        "count": {"type": "integer", "minimum": 1},
        "entry": {"type": "object", "additionalProperties": False, "required": ["size"],
                  "properties": {"size": {"$ref": "#/$defs/count", "description": "images per set"}}},
    },
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"description": "the run's name", "type": "string", "minLength": 1},
        "stage": {
            "description": "one stage",
            "type": "object",
            "default": {},
            "properties": {
                "mode": {"description": "fast | slow", "enum": ["fast", "slow"], "default": "fast"},
                "levels": {"type": "array", "minItems": 1, "uniqueItems": True,
                           "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "default": [0.05, 0.1]},
                "first": {"$ref": "#/$defs/entry"},
                "second": {"$ref": "#/$defs/entry", "description": "the other set", "default": {"size": 2}},
                "sets": {"description": "set name -> entry", "type": "object",
                         "additionalProperties": {"$ref": "#/$defs/entry"}},
                "inner": {"type": "object", "properties": {"depth": {"type": "number", "minimum": 0, "default": 0.5}}},
            },
        },
    },
}

TINY_TOP = """\
| key | type | default | description |
|---|---|---|---|
| `name` | non-empty string | **required** | the run's name |
| `stage` | mapping | `{}` | one stage |
"""

TINY_STAGE = """\
| key | type | default | description |
|---|---|---|---|
| `stage/mode` | one of `fast`, `slow` | `fast` | fast \\| slow |
| `stage/levels` | non-empty list of distinct numbers in (0, 1] | `[0.05, 0.1]` |  |
| `stage/first` | mapping | — |  |
| `stage/first/size` | integer ≥ 1 | **required** | images per set |
| `stage/second` | mapping, keys as `stage/first` | `{size: 2}` | the other set |
| `stage/sets` | mapping of name → mapping | — | set name -> entry |
| `stage/sets/<name>` | mapping, keys as `stage/first` | — |  |
| `stage/inner` | mapping | — |  |
| `stage/inner/depth` | number ≥ 0 | `0.5` |  |
"""


def test_readme_tables_are_the_schemas():
    text = README.read_text(encoding="utf-8")
    assert regenerate(text, schema(), README) == text, (
        f"config/README.md's generated option tables differ from config/schema.yaml; regenerate them with "
        f"`{REGENERATE}` (and edit the schema's description:/default:, not the tables)")


def test_readme_keeps_its_prose():
    text = README.read_text(encoding="utf-8")
    assert "the issue" not in text
    for section in sections(schema()):
        assert schema_docs.begin_marker(section) in text


def test_tiny_schema_tables():
    assert render_section(TINY, TOP) == TINY_TOP
    assert render_section(TINY, "stage") == TINY_STAGE
    assert sections(TINY) == [TOP, "stage"]  # `name` has no keys: no table of its own
    assert render(TINY) == f"## {TOP}\n\n{TINY_TOP}\n## stage\n\n{TINY_STAGE}"


def test_forms_of_a_oneof_are_marked():
    root = {"type": "object", "properties": {"encoder": {"type": "object", "properties": {"source": {"oneOf": [
        {"type": "object", "required": ["kind", "file"],
         "properties": {"kind": {"const": "local"}, "file": {"type": "string"}}},
        {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "none"}}},
    ]}}}}}
    assert render_section(root, "encoder").splitlines()[2:] == [
        "| `encoder/source` | mapping | — |  |",
        "| `encoder/source/kind` | `local` | **required** | (with `kind: local`) |",
        "| `encoder/source/file` | string | **required** | (with `kind: local`) |",
        "| `encoder/source/kind` | `none` | **required** | (with `kind: none`) |",
    ]


@pytest.mark.parametrize("value, text", [
    (None, "null"), (True, "true"), (1.0e-6, "1.0e-6"), (0.875, "0.875"), (3, "3"), ("KPCA RecError", "KPCA RecError"),
    ("null", '"null"'), ("a: b", '"a: b"'), ("{}", '"{}"'),
    ({"rc": ["augrc", "aurc"], "n": {}}, "{rc: [augrc, aurc], n: {}}"),
])
def test_flow(value, text):
    assert flow(value) == text


def _file(tmp_path, body: str):
    path = tmp_path / "options.md"
    path.write_text(body, encoding="utf-8")
    return path


def _regions(*sections_: str, inside: str = "") -> str:
    return "".join(f"# {s}\n\nprose of {s}\n\n{schema_docs.begin_marker(s)}\n{inside}{schema_docs.end_marker(s)}\n"
                   for s in sections_)


def test_main_rewrites_only_the_regions_and_check_names_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(schema_docs, "schema", lambda: TINY)
    path = _file(tmp_path, _regions(TOP, "stage", inside="| stale | table |\n"))
    assert main(["--check", str(path)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and f"python -m csfbench.workflow.schema_docs {path}" in err
    assert main([str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert "stale" not in text and "prose of stage" in text and TINY_STAGE in text and TINY_TOP in text
    assert text.startswith(f"# {TOP}\n\nprose of {TOP}\n\n{schema_docs.begin_marker(TOP)}\n<!-- Generated from ")
    assert main(["--check", str(path)]) == 0
    main([str(path)])
    assert path.read_text(encoding="utf-8") == text  # idempotent


@pytest.mark.parametrize("body, message", [
    (_regions(TOP), "no generated region for the section(s) stage"),
    (_regions(TOP, "stage", "nosuch"), "no section 'nosuch'"),
    (_regions(TOP, "stage", TOP), "a second region of section 'top-level'"),
    (_regions(TOP, "stage") + schema_docs.begin_marker("stage") + "\n", "second region"),
    (_regions(TOP) + schema_docs.begin_marker("stage") + "\n", "not closed"),
    (_regions(TOP, "stage") + schema_docs.end_marker("stage") + "\n", "closes no region"),
])
def test_broken_regions_are_errors(tmp_path, monkeypatch, capsys, body, message):
    monkeypatch.setattr(schema_docs, "schema", lambda: TINY)
    path = _file(tmp_path, body)
    assert main(["--check", str(path)]) == 1
    assert message in capsys.readouterr().err
    assert main([str(path)]) == 1 and path.read_text(encoding="utf-8") == body
