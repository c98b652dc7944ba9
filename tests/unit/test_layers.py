"""The layers of src/elr_harness import downward only (DESIGN.md's house).

From the top: cli; hunt (replay, shrink, the score: they play the soak's plan and
start runs as its children); soak; run; then nemesis, workloads, checker and report;
then cluster; then core (the history contract, config, errors). A subpackage
may import its own modules and any lower floor. On the floor of nemesis,
workloads, checker and report, none imports another but the report reads the
checker's table layouts (report > checker): the report never imports the
nemesis or the cluster (it reads test.json and the checker's tables), and
nemesis, workloads and checker know nothing of each other. Imports inside
functions count as much as those at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = "elr_harness"
#: Each subpackage's floor (higher imports lower).
RANK = {"core": 0, "cluster": 1, "nemesis": 2, "workloads": 2, "checker": 2, "report": 3,
        "run": 4, "soak": 5, "hunt": 6, "cli": 7}
#: Lower floors a subpackage may still not import.
BARRED = {"report": {"nemesis", "cluster", "workloads"}}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    return parts[1] if parts[1] in RANK else None


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            # `from elr_harness import core` names a module too
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _modules() -> list[Path]:
    return sorted((SRC / PACKAGE).rglob("*.py"))


def _name_of(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts)


def _upward(path: Path) -> list[str]:
    mine = _layer(_name_of(path))
    wrong = []
    for line, name in _imports(path):
        other = _layer(name)
        if other is None or mine is None or other == mine:
            continue
        if RANK[other] >= RANK[mine] or other in BARRED.get(mine, ()):
            wrong.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {name} ({other})")
    return wrong


def test_every_subpackage_of_the_order_is_found():
    found = {path.relative_to(SRC / PACKAGE).parts[0] for path in _modules()
             if len(path.relative_to(SRC / PACKAGE).parts) > 1}
    assert found == set(RANK)
    assert (SRC / PACKAGE / "core" / "history.py").is_file()


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_import_runs_upward(path):
    assert _upward(path) == []


def test_the_core_imports_nothing_else_of_the_project():
    for path in (SRC / PACKAGE / "core").rglob("*.py"):
        for line, name in _imports(path):
            assert _layer(name) in (None, "core"), f"{path.name}:{line} imports {name}"


def test_the_walk_sees_an_upward_import(monkeypatch):
    """The test bites: a checker module importing the report is caught, and so is a
    report module importing the nemesis, a floor below it."""
    probe = SRC / PACKAGE / "checker" / "_layers_probe.py"
    other = SRC / PACKAGE / "report" / "_layers_probe.py"
    texts = {probe: "def f():\n    from elr_harness.report import build\n",
             other: "from elr_harness.nemesis.faults import COLOURS\n"}
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: texts[self] if self in texts
                        else Path.read_bytes(self).decode())
    assert _upward(probe) == [
        "src/elr_harness/checker/_layers_probe.py:2 (checker) imports "
        "elr_harness.report (report)",
        "src/elr_harness/checker/_layers_probe.py:2 (checker) imports "
        "elr_harness.report.build (report)"]
    assert _upward(other) == [
        "src/elr_harness/report/_layers_probe.py:1 (report) imports "
        "elr_harness.nemesis.faults (nemesis)",
        "src/elr_harness/report/_layers_probe.py:1 (report) imports "
        "elr_harness.nemesis.faults.COLOURS (nemesis)"]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_production_code_never_imports_the_tests_generator(path):
    """The synthetic history generator lives in tests/ (#13)."""
    assert not [name for _line, name in _imports(path)
                if name.split(".")[0] in ("synthetic", "tests", "reference_checker")]


# Cycles between modules: the layer order above keeps packages apart, but two
# modules of one package can still import each other (directly or round a longer
# loop), which makes the import order decide what half-initialised module a
# caller sees. The graph is built with ast over every package; imports inside
# functions and under TYPE_CHECKING count like the rest.

def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in _modules()}


def _targets(source: str, path: Path, known: set[str]) -> set[str]:
    """The project's modules that `source` imports: the most specific module each
    import statement names (`from elr_harness.nemesis import grudges` is
    elr_harness.nemesis.grudges; `from elr_harness.nemesis.mix import RandomMix` is
    elr_harness.nemesis.mix)."""
    found = set()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known
                     else node.module for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def _graph(sources: dict[str, tuple[Path, str]]) -> dict[str, set[str]]:
    known = set(sources)
    return {name: _targets(text, path, known) - {name} for name, (path, text) in sources.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative),
    each sorted, the list sorted: a stable thing to compare and to read."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _project_graph() -> dict[str, set[str]]:
    return _graph({name: (path, path.read_text()) for name, path in _all_modules().items()})


def test_no_module_imports_itself_round_a_loop():
    cycles = _cycles(_project_graph())
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_walk_sees_a_loop_inside_a_package_and_inside_a_function():
    """The test bites: a loop of three through a function-level import, a
    TYPE_CHECKING import, and a module with no loop left alone."""
    graph = _graph({
        "nemesis.a": (Path("a.py"), "from nemesis import b\n"),
        "nemesis.b": (Path("b.py"), "def f():\n    from nemesis.c import X\n"),
        "nemesis.c": (Path("c.py"), "from typing import TYPE_CHECKING\n"
                                    "if TYPE_CHECKING:\n    import nemesis.a\n"),
        "nemesis.d": (Path("d.py"), "from nemesis.a import Y\nimport harness.core.config\n"),
        "nemesis": (Path("__init__.py"), ""),
    })
    assert graph["nemesis.a"] == {"nemesis.b"}
    assert graph["nemesis.d"] == {"nemesis.a"}
    assert _cycles(graph) == [["nemesis.a", "nemesis.b", "nemesis.c"]]
    assert _cycles({"x": {"y"}, "y": {"x"}, "z": {"x"}}) == [["x", "y"]]


# Inside the nemesis, its rooms by job (#66) have floors of their own: a room imports
# only rooms of lower floors. A new module or subpackage of nemesis/ must be given
# its floor here, so that where it stands is a decision.
NEMESIS = SRC / PACKAGE / "nemesis"
#: Each room of nemesis/ (a module or a subpackage) and its floor.
NEMESIS_FLOOR = {
    "needs": 0, "targets": 0, "grudges": 0, "pagecache": 0,  # what faults stand on
    "faults": 1,                 # the fault kinds
    "injector": 2, "coordinator": 2,
    "watch": 3,                  # watching a partition, as every schedule does
    "schedule": 4, "mix": 4,     # schedules as data; the random mix
    "scenarios": 5, "guided": 5,  # scripted scenarios (as schedule files); guided search
    "registry": 6,               # what `--nemesis` accepts
}


def _room(name: str) -> str | None:
    """The room of nemesis/ a dotted module name is in (None: outside the nemesis, or
    nemesis/__init__ itself)."""
    parts = name.split(".")
    return parts[2] if parts[:2] == [PACKAGE, "nemesis"] and len(parts) > 2 else None


def _rooms_upward(path: Path) -> list[str]:
    mine = _room(_name_of(path))
    wrong = []
    for line, name in _imports(path):
        other = _room(name)
        if mine is None or other is None or other == mine or other not in NEMESIS_FLOOR:
            continue
        if NEMESIS_FLOOR[other] >= NEMESIS_FLOOR[mine]:
            wrong.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {name} ({other})")
    return wrong


def test_every_room_of_the_nemesis_has_its_floor():
    rooms = {p.stem if p.is_file() else p.name for p in NEMESIS.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__")
             or (p.is_dir() and (p / "__init__.py").is_file())}
    assert rooms == set(NEMESIS_FLOOR)


@pytest.mark.parametrize("path", sorted(NEMESIS.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(NEMESIS)))
def test_no_room_of_the_nemesis_imports_a_room_above_it(path):
    assert _rooms_upward(path) == []


def test_the_rooms_walk_sees_an_upward_import(monkeypatch):
    """The test bites: a fault kind importing the schedule player is caught."""
    probe = NEMESIS / "faults" / "_rooms_probe.py"
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: "from elr_harness.nemesis.schedule import played\n"
                        if self == probe else Path.read_bytes(self).decode())
    assert _rooms_upward(probe) == [
        "src/elr_harness/nemesis/faults/_rooms_probe.py:1 (faults) imports "
        "elr_harness.nemesis.schedule (schedule)",
        "src/elr_harness/nemesis/faults/_rooms_probe.py:1 (faults) imports "
        "elr_harness.nemesis.schedule.played (schedule)"]
