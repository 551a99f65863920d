"""The import structure of ``src/csfbench``, read statically with :mod:`ast` (nothing is imported).

Every ``import`` and ``from … import`` statement counts, at module level (``if TYPE_CHECKING:``
blocks included) and inside functions: a function-local import only postpones a cycle, it does not
remove it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from tests.helpers.repo import REPO

SRC = REPO / "src"
ROOT_PACKAGE = "csfbench"

# Packages holding the methods (scores, metrics, statistics, data, models, ...): they take plain
# arguments and must not reach for the workflow configuration or the file layout of a run.
DOMAIN_PACKAGES = (
    "csf", "metrics", "stats", "geometry", "proximity", "shifts", "attacks", "projnorm",
    "data", "features", "models", "training", "aggregate", "report", "network_csf", "analysis",
)  # fmt: skip
WORKFLOW_MODULES = ("workflow", "stages")


@dataclass(frozen=True)
class Import:
    """One import statement of ``importer`` naming the csfbench module ``target``."""

    importer: str
    target: str
    file: Path
    line: int

    def __str__(self) -> str:
        return f"{self.importer} -> {self.target} ({self.file.relative_to(SRC.parent)}:{self.line})"


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package is named by its ``__init__.py``)."""
    modules = {}
    for path in sorted((SRC / ROOT_PACKAGE).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module named by ``from <node.module> import …`` written in ``module``."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, is_package: bool, node: ast.AST, modules: dict[str, Path]) -> list[str]:
    """The csfbench modules (existing or not) named by one import statement.

    ``from a import b`` names ``a.b`` when that is a module, else ``a``.
    """
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        source = _absolute(module, is_package, node)
        names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source for alias in node.names]
    else:
        return []
    return [name for name in dict.fromkeys(names) if name == ROOT_PACKAGE or name.startswith(ROOT_PACKAGE + ".")]


def imports() -> list[Import]:
    """Every import statement between csfbench modules, module-level and function-local."""
    modules = module_files()
    found = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            for target in _targets(module, _is_package(path), node, modules):
                found.append(Import(module, target, path, node.lineno))
    return found


def import_cycles() -> list[list[Import]]:
    """The imports inside each strongly connected component of the module graph (one list per cycle)."""
    modules = module_files()
    edges = [edge for edge in imports() if edge.target in modules and edge.target != edge.importer]
    graph = nx.DiGraph((edge.importer, edge.target) for edge in edges)
    components = [c for c in nx.strongly_connected_components(graph) if len(c) > 1]
    return [
        sorted((e for e in edges if e.importer in c and e.target in c), key=str)
        for c in sorted(components, key=sorted)
    ]


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def workflow_imports_of_domain_packages() -> list[Import]:
    """Imports of the configuration, paths or job modules by modules of the domain packages."""
    domain = [f"{ROOT_PACKAGE}.{name}" for name in DOMAIN_PACKAGES]
    workflow = [f"{ROOT_PACKAGE}.{name}" for name in WORKFLOW_MODULES]
    return sorted(
        (
            edge
            for edge in imports()
            if any(_in_package(edge.importer, p) for p in domain) and any(_in_package(edge.target, w) for w in workflow)
        ),
        key=str,
    )


def test_no_import_cycles():
    cycles = import_cycles()
    report = "\n\n".join(
        f"cycle through {sorted({edge.importer for edge in cycle})}:\n  " + "\n  ".join(map(str, cycle))
        for cycle in cycles
    )
    assert not cycles, f"{len(cycles)} import cycle(s) in src/{ROOT_PACKAGE}:\n\n{report}"


def test_domain_packages_import_neither_config_nor_paths():
    found = workflow_imports_of_domain_packages()
    assert not found, "domain packages import the workflow configuration/paths:\n  " + "\n  ".join(map(str, found))


def test_the_import_reader_resolves_relative_and_submodule_imports(tmp_path):
    """The graph builder itself: relative imports, ``from pkg import submodule`` and local imports."""
    modules = {"csfbench.a": Path("a.py"), "csfbench.a.b": Path("b.py"), "csfbench.c": Path("c.py")}
    source = "from . import b\nfrom .b import thing\ndef f():\n    from csfbench import c\n    import csfbench.a.b\n"
    found = [
        target
        for node in ast.walk(ast.parse(source))
        for target in _targets("csfbench.a", True, node, modules)
    ]
    assert sorted(found) == ["csfbench.a.b", "csfbench.a.b", "csfbench.a.b", "csfbench.c"]


def test_the_listed_packages_exist():
    """The boundary test names real modules: a renamed or removed package would silently pass it."""
    modules = module_files()
    listed = [f"{ROOT_PACKAGE}.{name}" for name in (*DOMAIN_PACKAGES, *WORKFLOW_MODULES)]
    assert [name for name in listed if name not in modules] == []
