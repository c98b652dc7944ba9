"""`harness mutants score`: what a VALID is worth, measured (#54).

Every entry of a plan (the soak's format) runs on every mutant Kafka of the
catalog and, three times, on the plain release, the control, each with the same
seed. A mutant is killed when one of its runs is INVALID where every control run
of that entry was valid; it survives when none is and its runs played their
faults. A run that tested nothing (no verdict, or a nemesis that skipped or
stopped) is inconclusive, never survived, and is run once more at the end
(score_pages says each outcome). An INVALID of the control is the release's own
bug or the harness crying wolf: it is the plan's false-alarm rate, and makes no
mutant's kill count there.

Everything lands in store/mutants/<time>/: score.json (rewritten whole after each
run, so `--resume` goes on where a dead process stopped, never repeating a run
that finished), junit.xml and index.html (hunt.score_pages), and runs/ holding
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
from elr_harness.hunt.score_pages import (
    CONTROL,
    CONTROL_RUNS,
    control_keys,
    control_target,
    inconclusive_reason,
    score_key,
    score_said,
    tally,
    write_pages,
)
from elr_harness.nemesis.registry import GUIDED
from elr_harness.run.store import fresh_dir, write_json
from elr_harness.soak.children import run_child, said
from elr_harness.soak.plan import PlanEntry, flag_value

__all__ = ["CONTROL", "Score", "Target", "score_key"]

console = Console(highlight=False)

SCORE_FILE = "score.json"
#: 2: the control runs each entry CONTROL_RUNS times, cells say what was unplayed,
#: inconclusive cells are run again once (#62)
SCORE_VERSION = 2
#: A run's flags the score sets itself (besides the soak's own).
SCORE_OWNED = ("--kafka-dist",)


@dataclass(frozen=True)
class Target:
    """What one column of runs tests: the release (CONTROL) or a mutant of it."""

    name: str
    #: the mutant's distribution folder; None for the control
    dist: Path | None


def run_cell(score_dir: Path, state: dict[str, Any], target: Target, entry: PlanEntry,
             seed: int, reached: Sequence[str] = (), folder: str | None = None
             ) -> dict[str, Any]:
    """Run `entry` on `target` as a child `harness run` (its files under runs/`folder`,
    the target's name by default), and read back its verdict. A guided entry is
    handed `reached` (`--reached`): the same for the control and every mutant, so
    each aims at the same states on the same plan."""
    kafka = ["--kafka-dist", str(target.dist)] if target.dist is not None else \
        ["--kafka-version", state["kafka_version"]]
    guided = flag_value(list(entry.args), "--nemesis") == GUIDED
    folder = folder or target.name
    args = [*entry.args, "--seed", str(seed), *kafka,
            "--store", str(score_dir / "runs" / folder / "store"),
            "--name", state["cluster_name"],
            *(["--subnet", state["subnet"]] if state.get("subnet") else []),
            *(["--reached", ",".join(reached)] if guided and reached else [])]
    cell = run_child(args, score_dir / "runs" / folder, _file_name(entry.name))
    return {"target": target.name, "entry": entry.name, "seed": seed,
            **({"reached_before": list(reached)} if guided else {}), **cell}


def control_reached(cells: dict[str, Any], earlier: Sequence[PlanEntry]) -> list[str]:
    """The KIP-966 states the control's runs of the earlier entries reached: what a
    soak of this plan would hand its guided run, the same for every target."""
    seen = {s for e in earlier for k in control_keys(e.name) for s in
            (cells.get(k) or {}).get("states") or ()}
    return [s for s in COVERAGE_STATES if s in seen]


def _file_name(entry: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in entry)[:80]


class Score:
    """One score: its folder, its state (score.json), its targets and plan."""

    def __init__(self, score_dir: Path, state: dict[str, Any], targets: list[Target]) -> None:
        self.dir, self.state, self.targets = score_dir, state, targets
        self.plan = [PlanEntry(e["name"], tuple(e["args"])) for e in state["plan"]]

    def _runs(self) -> list[tuple[str, str, Target, PlanEntry, int]]:
        """Every run of the score, in order: (key, the target's name in it, target,
        entry, seed); the control's runs first, each entry CONTROL_RUNS times on the
        same seed."""
        control = next(t for t in self.targets if t.name == CONTROL)
        planned = []
        for target in self.targets:
            names = [control_target(n) for n in range(1, CONTROL_RUNS + 1)] \
                if target is control else [target.name]
            for number, entry in enumerate(self.plan):
                planned += [(score_key(name, entry.name), name, target, entry,
                             self.state["seed"] + number) for name in names]
        return planned

    def go(self) -> int:
        cells = self.state["cells"]
        runs = self._runs()
        try:
            for key, name, target, entry, seed in runs:
                if key not in cells:
                    console.print(f"[{len(cells) + 1}/{len(runs)}] {escape(key)}: running")
                    cells[key] = self._run(name, target, entry, seed)
                    self._save()
                    console.print(f"  {escape(key)}: {said(cells[key])}")
            # a run that tested nothing is run once more; the first attempt is kept
            for key, name, target, entry, seed in runs:
                reason = inconclusive_reason(cells[key])
                if reason is not None and "first_attempt" not in cells[key]:
                    console.print(f"{escape(key)}: inconclusive ({escape(reason)}): once more")
                    cells[key] = {**self._run(name, target, entry, seed, again=True),
                                  "first_attempt": cells[key]}
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

    def _run(self, name: str, target: Target, entry: PlanEntry, seed: int,
             again: bool = False) -> dict[str, Any]:
        """One cell's run, in runs/<name> ("control #2" in control-2); a second
        attempt (`again`) in a folder of its own, so the first one's log and run stay
        as they were."""
        earlier = self.plan[:self.plan.index(entry)]
        folder = name.replace(" #", "-") + ("-again" if again else "")
        return run_cell(self.dir, self.state, target, entry, seed,
                        control_reached(self.state["cells"], earlier), folder)

    def _save(self) -> None:
        write_json(self.dir / SCORE_FILE, self.state)

    def _summary(self) -> int:
        tallied = tally(self.state)
        console.print(f"mutation score: {score_said(tallied)}; survived: "
                      f"{', '.join(tallied['survived']) or 'none'}")
        for key, reason in tallied["inconclusive_cells"].items():
            console.print(f"[yellow]inconclusive: {escape(key)}: {escape(reason or '')}[/yellow]")
        if tallied["control_bad"]:
            console.print(f"[red]the control (Kafka {self.state['kafka_version']}) cried wolf "
                          f"in: {', '.join(tallied['control_bad'])}: no kill counts "
                          f"there[/red]")
        console.print(f"score: {escape(printable(self.dir))}")
        unsure = tallied["inconclusive_cells"] or tallied["control_bad"]
        return EXIT_UNKNOWN if unsure else EXIT_VALID


def new_state(kafka_version: str, mutants: list[str], plan: list[PlanEntry], seed: int,
              cluster_name: str, subnet: str | None, command: str,
              rules: dict[str, str] | None = None) -> dict[str, Any]:
    """A new score.json; `rules`: each mutant's expected anomaly (the catalog's)."""
    return {"score_version": SCORE_VERSION, "command": command, "started_at": _now(),
            "kafka_version": kafka_version, "mutants": mutants, "seed": seed,
            "rules": dict(rules or {}),
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
    if isinstance(state, dict) and state.get("score_version") == 1:
        raise BadInput(f"--resume {shown}: {SCORE_FILE} is a score of an older harness "
                       f"(version 1: one control run per entry); start a new score")
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
    rules = state.get("rules", {})
    if not isinstance(rules, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in rules.items()):
        return "`rules` is not each mutant's expected anomaly"
    for key, cell in state["cells"].items():
        if not isinstance(cell, dict) or not isinstance(cell.get("verdict"), str) or \
                not isinstance(cell.get("bad", []), list):
            return f"cell {str(key)[:60]!r} is not a run's record"
    return None


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")
