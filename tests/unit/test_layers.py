"""The layers import downward only (harness/core/__init__.py; #13).

harness.core < cluster < nemesis, workloads < checkers < reports < harness (the
CLI and the run). A package may import its own modules and any lower layer;
nemesis and workloads, on one level, do not import each other. Imports inside
functions count as much as those at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RANK = {"harness.core": 0, "cluster": 1, "nemesis": 2, "workloads": 2, "checkers": 3,
        "reports": 4, "harness": 5}


def _layer(module: str) -> str | None:
    if module == "harness.core" or module.startswith("harness.core."):
        return "harness.core"
    top = module.split(".")[0]
    return top if top in RANK else None


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            # `from harness import core` names a module too
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _modules() -> list[Path]:
    return sorted(p for package in RANK for p in (ROOT / package.replace(".", "/")).rglob("*.py")
                  if package != "harness.core")


def _upward(path: Path) -> list[str]:
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    mine = _layer(module)
    wrong = []
    for line, name in _imports(path):
        other = _layer(name)
        if other is None or other == mine:
            continue
        if RANK[other] >= RANK[mine]:
            wrong.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {name} ({other})")
    return wrong


def test_every_package_of_the_order_is_found():
    assert {p.relative_to(ROOT).parts[0] for p in _modules()} == {
        "harness", "cluster", "nemesis", "workloads", "checkers", "reports"}
    assert (ROOT / "harness" / "core" / "history.py").is_file()


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_runs_upward(path):
    assert _upward(path) == []


def test_the_core_imports_nothing_else_of_the_project():
    for path in (ROOT / "harness" / "core").rglob("*.py"):
        for line, name in _imports(path):
            assert _layer(name) in (None, "harness.core"), f"{path.name}:{line} imports {name}"


def test_the_walk_sees_an_upward_import(tmp_path, monkeypatch):
    """The test bites: a checker module importing reports is caught."""
    fake = ROOT / "checkers" / "_layers_probe.py"
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: "def f():\n    from reports import build\n"
                        if self == fake else Path.read_bytes(self).decode())
    assert _upward(fake) == [
        "checkers/_layers_probe.py:2 (checkers) imports reports (reports)",
        "checkers/_layers_probe.py:2 (checkers) imports reports.build (reports)"]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_production_code_never_imports_the_tests_generator(path):
    """The synthetic history generator lives in tests/ (#13)."""
    assert not [name for _line, name in _imports(path)
                if name.split(".")[0] in ("synthetic", "tests", "reference_checker")]
