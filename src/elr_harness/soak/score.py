"""`harness mutants score`: what a VALID is worth, measured (#54).

Every entry of a plan (the soak's format) runs on every mutant Kafka of the
catalog and on the plain release, the control, each with the same seed. A mutant
is killed when one of its runs is INVALID; one that no run catches survives. The
control must stay valid: an INVALID there is the release's own bug (or the
harness crying wolf), and makes no mutant's kill count.

Everything lands in store/mutants/<time>/: score.json (rewritten whole after each
run, so `--resume` goes on where a dead process stopped, never repeating a run
that finished), junit.xml and index.html (soak.score_pages), and runs/ holding
each run's own directory and log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from elr_harness.core.errors import EXIT_UNKNOWN, EXIT_VALID, BadInput
from elr_harness.core.files import read_json
from elr_harness.core.history import COVERAGE_STATES
from elr_harness.core.validate import printable
from elr_harness.nemesis.registry import GUIDED
from elr_harness.run.store import fresh_dir, write_json
from elr_harness.soak.children import run_child, said
from elr_harness.soak.plan import PlanEntry, flag_value
from elr_harness.soak.score_pages import CONTROL, score_key, tally, write_pages

__all__ = ["CONTROL", "Score", "Target", "score_key"]

console = Console(highlight=False)

SCORE_FILE = "score.json"
SCORE_VERSION = 1
#: A run's flags the score sets itself (besides the soak's own).
SCORE_OWNED = ("--kafka-dist",)


@dataclass(frozen=True)
class Target:
    """What one column of runs tests: the release (CONTROL) or a mutant of it."""

    name: str
    #: the mutant's distribution folder; None for the control
    dist: Path | None


def run_cell(score_dir: Path, state: dict[str, Any], target: Target, entry: PlanEntry,
             seed: int, earlier: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Run `entry` on `target` as a child `harness run`, and read back its verdict. A
    guided entry is handed the KIP-966 states the target's `earlier` cells reached
    (`--reached`), as a soak hands its guided runs the soak's coverage so far: it
    aims at the others first, as it would in the soak whose plan this is."""
    kafka = ["--kafka-dist", str(target.dist)] if target.dist is not None else \
        ["--kafka-version", state["kafka_version"]]
    reached = [s for s in COVERAGE_STATES if any(s in (c.get("states") or ())
                                                 for c in earlier)]
    guided = flag_value(list(entry.args), "--nemesis") == GUIDED
    args = [*entry.args, "--seed", str(seed), *kafka,
            "--store", str(score_dir / "runs" / target.name / "store"),
            "--name", state["cluster_name"],
            *(["--subnet", state["subnet"]] if state.get("subnet") else []),
            *(["--reached", ",".join(reached)] if guided and reached else [])]
    cell = run_child(args, score_dir / "runs" / target.name, _file_name(entry.name))
    return {"target": target.name, "entry": entry.name, "seed": seed,
            **({"reached_before": reached} if guided else {}), **cell}


def _file_name(entry: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in entry)[:80]


class Score:
    """One score: its folder, its state (score.json), its targets and plan."""

    def __init__(self, score_dir: Path, state: dict[str, Any], targets: list[Target]) -> None:
        self.dir, self.state, self.targets = score_dir, state, targets
        self.plan = [PlanEntry(e["name"], tuple(e["args"])) for e in state["plan"]]

    def go(self) -> int:
        cells = self.state["cells"]
        total = len(self.targets) * len(self.plan)
        try:
            for target in self.targets:
                for number, entry in enumerate(self.plan):
                    key = score_key(target.name, entry.name)
                    if key in cells:
                        continue
                    console.print(f"[{len(cells) + 1}/{total}] {escape(key)}: running")
                    earlier = [cells[k] for k in (score_key(target.name, e.name)
                                                  for e in self.plan[:number]) if k in cells]
                    cells[key] = run_cell(self.dir, self.state, target, entry,
                                          self.state["seed"] + number, earlier)
                    self._save()
                    console.print(f"  {escape(key)}: {said(cells[key])}")
        except KeyboardInterrupt:
            console.print("[yellow]interrupted: `harness mutants score --resume "
                          f"{escape(printable(self.dir))}` goes on[/yellow]")
            self._save()
            write_pages(self.dir, self.state)
            return EXIT_UNKNOWN
        self.state["ended_at"] = _now()
        self._save()
        write_pages(self.dir, self.state)
        return self._summary()

    def _save(self) -> None:
        write_json(self.dir / SCORE_FILE, self.state)

    def _summary(self) -> int:
        tallied = tally(self.state)
        console.print(f"mutation score: {tallied['killed']} of {tallied['mutants']} mutants "
                      f"killed; survived: {', '.join(tallied['survived']) or 'none'}")
        if tallied["control_bad"]:
            console.print(f"[red]the control (Kafka {self.state['kafka_version']}) was not "
                          f"valid in: {', '.join(tallied['control_bad'])}: no kill counts "
                          f"there[/red]")
        console.print(f"score: {escape(printable(self.dir))}")
        errors = [k for k, c in self.state["cells"].items() if c["verdict"] in ("error", "unknown")]
        return EXIT_UNKNOWN if errors or tallied["control_bad"] else EXIT_VALID


def new_state(kafka_version: str, mutants: list[str], plan: list[PlanEntry], seed: int,
              cluster_name: str, subnet: str | None, command: str) -> dict[str, Any]:
    return {"score_version": SCORE_VERSION, "command": command, "started_at": _now(),
            "kafka_version": kafka_version, "mutants": mutants, "seed": seed,
            "cluster_name": cluster_name, "subnet": subnet,
            "plan": [{"name": e.name, "args": list(e.args)} for e in plan], "cells": {}}


def start(store: Path, state: dict[str, Any], targets: list[Target]) -> int:
    score_dir = fresh_dir(store / "mutants")
    console.print(f"score directory: {escape(printable(score_dir))}")
    score = Score(score_dir, state, targets)
    score._save()
    return score.go()


def read_state(score_dir: Path) -> dict[str, Any]:
    """score.json of a score folder, checked enough to act on."""
    shown = printable(str(score_dir)[:200])
    path = score_dir / SCORE_FILE
    if not path.is_file():
        raise BadInput(f"--resume {shown}: not a score folder (no {SCORE_FILE})")
    state = read_json(path, f"--resume {shown}: {SCORE_FILE}")
    ok = isinstance(state, dict) and state.get("score_version") == SCORE_VERSION and all(
        isinstance(state.get(k), t) for k, t in (("kafka_version", str), ("mutants", list),
                                                  ("plan", list), ("cells", dict),
                                                  ("seed", int), ("cluster_name", str)))
    if not ok:
        raise BadInput(f"--resume {shown}: {SCORE_FILE} is damaged (not a score of this "
                       f"harness, version {SCORE_VERSION})")
    problem = _state_problem(state)
    if problem is not None:
        raise BadInput(f"--resume {shown}: {SCORE_FILE}: {problem}")
    return state


def _state_problem(state: dict[str, Any]) -> str | None:
    """A field of score.json that is not what a score wrote (the plan's entries are
    validated again as `harness run` flags by the caller), named; None when none."""
    from elr_harness.core.validate import KAFKA_VERSION_RULE, Invalid

    try:
        KAFKA_VERSION_RULE(state["kafka_version"])
    except Invalid as err:
        return f"`kafka_version`: {err}"
    if not state["mutants"] or not all(isinstance(m, str) for m in state["mutants"]):
        return "`mutants` names no mutant"
    if not state["plan"] or not all(
            isinstance(e, dict) and isinstance(e.get("name"), str) and
            isinstance(e.get("args"), list) and all(isinstance(a, str) for a in e["args"])
            for e in state["plan"]):
        return "`plan` is not a list of entries (name, args) with at least one"
    for key, cell in state["cells"].items():
        if not isinstance(cell, dict) or not isinstance(cell.get("verdict"), str) or \
                not isinstance(cell.get("bad", []), list):
            return f"cell {str(key)[:60]!r} is not a run's record"
    return None


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")
