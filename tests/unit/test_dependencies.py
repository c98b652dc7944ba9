"""Every third-party package the project imports is declared in pyproject.toml.

A package installed by hand on one machine does not exist on a user's: mfusepy
and numpy were imported but undeclared, and the README's first command failed
on a fresh machine while CI, on a machine where someone had pip-installed them,
stayed green. The production packages may import only the runtime
dependencies; tests and benchmarks may also import the test extra.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: The project's one import package (found by setuptools' discovery under src/).
OWN = {"elr_harness"}
SOURCES = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["where"]


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]).lower()


RUNTIME = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
TEST_EXTRA = {_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["test"]}


def _imports(path: Path) -> set[str]:
    """Top-level module names a file imports (absolute imports only)."""
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def _undeclared(folders: list[str], allowed: set[str]) -> dict[str, list[str]]:
    """{module: [files]} of third-party imports whose distribution is not in allowed."""
    local = {p.stem for folder in folders for p in (REPO / folder).rglob("*.py")}
    dists = packages_distributions()
    missing: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            for module in _imports(path):
                if module in sys.stdlib_module_names or module in OWN or module in local:
                    continue
                names = {_name(d) for d in dists.get(module, [module])}
                if not names & allowed:
                    missing.setdefault(module, []).append(str(path.relative_to(REPO)))
    return missing


def test_production_packages_import_only_runtime_dependencies():
    assert SOURCES == ["src"] and (REPO / "src" / "elr_harness" / "__init__.py").is_file()
    assert _undeclared(SOURCES, RUNTIME) == {}


def test_tests_and_benchmarks_import_only_declared_packages():
    assert _undeclared(["tests", "benchmarks"], RUNTIME | TEST_EXTRA) == {}


def test_the_check_sees_an_undeclared_import(tmp_path, monkeypatch):
    """The walk itself: a module importing a package nobody declared is caught."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("import json\nimport requests\nfrom . import x\nimport pkg.m\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "OWN", {"pkg"})
    assert _undeclared(["pkg"], RUNTIME) == {"requests": ["pkg/m.py"]}
