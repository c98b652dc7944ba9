"""`harness shrink RUN_DIR` (#55): from an INVALID run played from a schedule to the
fewest steps that still reproduce its bad anomaly, for a Kafka ticket.

Delta debugging (Zeller's ddmin) first over the schedule's self-contained groups
of steps (a group ends every fault it starts: a guided run's rounds), then over
the steps left, then shorter holds, then fewer targets (a network cut of a mix's
partition shape without each of its nodes in turn): a guided schedule of a
hundred steps is cut to its round first, a few candidates instead of hundreds. A
candidate is a subset of the steps (in order), written as a schedule file, without
the ends of the faults it leaves out (a fault goes with its ends); one that is no
valid schedule (a step that names a node an earlier step left out bound) fails
without a run. A candidate is kept when at least k of n replays (hunt.replay's
child runs: the run's flags, its release pinned) are INVALID with the anomaly
type shrunk for; the replays of a candidate stop as soon as k is reached or can
no longer be. Each candidate's outcome is kept in shrink.json, rewritten after
every replay, so a killed shrink goes on where it stopped (`--resume`) and never
repeats a replay that finished.

Everything lands in store/shrink/<time>/: shrink.json, candidates/ (each tried
schedule, with its replays' runs), schedule.toml (the smallest candidate) and
BUG.md (hunt.bug_report). The smallest is then replayed `confirm` times whole; it
is a reproducer only when those replays reproduce at the rate a candidate was kept
at (k of n). Below it the shrink ends "not confirmed", exit 1, and writes no BUG.md:
ddmin's replays can hit by luck where the confirming ones miss.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from elr_harness.core.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput
from elr_harness.core.files import read_json, read_text
from elr_harness.core.validate import printable
from elr_harness.hunt.replay import (
    PINNED_CONFIG,
    SCHEDULE_FILE,
    pinned_config,
    read_run,
    release_flags,
    run_flags,
)
from elr_harness.nemesis.schedule.file import parse_schedule
from elr_harness.nemesis.schedule.step import Step
from elr_harness.nemesis.schedule.writer import schedule_toml
from elr_harness.run.store import fresh_dir, write_json
from elr_harness.soak.children import run_child, said

console = Console(highlight=False)

SHRINK_FILE = "shrink.json"
SHRINK_VERSION = 1
#: When a run has several bad anomaly types, the one shrunk for (the first of
#: these it has; else the first by name): data loss before the KIP-966 rules.
PRIORITY = ("lost-write", "lost-committed-read", "election-outside-elr", "fenced-leader",
            "elr-member-dropped", "elr-invariant", "elr-while-disabled", "replica-divergence",
            "inconsistent-offset", "hwm-regression")


def anomaly_of(bad: Sequence[str]) -> str:
    for name in PRIORITY:
        if name in bad:
            return name
    return sorted(bad)[0]


def groups(steps: Sequence[Step]) -> list[list[str]]:
    """The steps' names in self-contained groups: a group starts at a fault made while
    no earlier fault is in force, and holds what follows until the next such fault
    (its waits, holds and ends: every fault it starts ends in it, unless the run's
    end heals it). Steps before the first fault are a group of their own."""
    found: list[list[str]] = []
    open_faults: set[str] = set()
    for step in steps:
        if step.fault is not None and not open_faults or not found:
            found.append([])
        found[-1].append(step.name)
        if step.fault is not None:
            open_faults.add(step.name)
        elif step.end is not None:
            open_faults.discard(step.end)
    return found


def ddmin(items: list[str], reproduces: Callable[[list[str]], bool]) -> list[str]:
    """The smallest subset of `items` (in order) that still reproduces, as Zeller's
    ddmin finds it: 1-minimal (leaving out any one item more loses it). `items`
    itself is taken to reproduce."""
    granularity = 2
    while len(items) >= 2:
        size = len(items) // granularity
        chunks = [items[i:i + size] for i in range(0, len(items), size)] if size else \
            [[i] for i in items]
        reduced = False
        for chunk in chunks:  # a chunk alone
            if len(chunk) < len(items) and reproduces(chunk):
                items, granularity, reduced = chunk, 2, True
                break
        if not reduced:
            for chunk in chunks:  # everything but a chunk
                rest = [i for i in items if i not in chunk]
                if rest and reproduces(rest):
                    items, granularity, reduced = rest, max(granularity - 1, 2), True
                    break
        if not reduced:
            if granularity >= len(items):
                break
            granularity = min(granularity * 2, len(items))
    return items


class Shrink:
    """One shrink: its folder, its state (shrink.json) and the run it started from."""

    def __init__(self, out: Path, state: dict[str, Any]) -> None:
        self.out, self.state = out, state
        parsed = parse_schedule(state["schedule"], "run")
        self.steps, self.needs = {s.name: s for s in parsed.steps}, parsed.needs
        self.placement = parsed.placement

    # -- a candidate ---------------------------------------------------------------

    def text(self, names: Sequence[str], holds: dict[str, float],
             cuts: dict[str, list[str]] | None = None) -> str:
        chosen = [replace(self.steps[n], hold_s=holds.get(n, self.steps[n].hold_s),
                          cut=_cut_to(self.steps[n].cut, (cuts or {}).get(n)))
                  for n in names]
        return schedule_toml(self.state["help"], chosen,
                             [f"# a candidate of `harness shrink {self.state['run_dir']}`"],
                             needs=self.needs, placement=self.placement)

    def reproduces(self, names: Sequence[str], holds: dict[str, float] | None = None,
                   cuts: dict[str, list[str]] | None = None) -> bool:
        """Whether k of n replays of the candidate are INVALID with the anomaly."""
        holds, cuts = holds or {}, cuts or {}
        key = " ".join(names) + "".join(f" {n}:hold={h:g}" for n, h in sorted(holds.items())) \
            + "".join(f" {n}:cut={','.join(kept)}" for n, kept in sorted(cuts.items()))
        candidates = self.state["candidates"]
        tried = candidates.get(key)
        if tried is not None and tried.get("done"):
            return bool(tried["kept"])
        text = self.text(names, holds, cuts)
        try:
            parse_schedule(text, "candidate")
        except BadInput as err:  # a step ends or names one left out
            candidates[key] = {"steps": list(names), "done": True, "kept": False,
                               "ill_formed": str(err)}
            self._save()
            return False
        tried = tried or {"steps": list(names), "holds": holds, "cuts": cuts,
                          "number": len(candidates) + 1, "runs": [], "done": False,
                          "kept": False}
        candidates[key] = tried
        folder = self.out / "candidates" / f"{tried['number']:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        schedule = folder / SCHEDULE_FILE
        schedule.write_text(text)
        k, n = self.state["k"], self.state["n"]
        console.print(f"candidate {tried['number']}: {len(names)} steps ({', '.join(names)})"
                      f"{' holds ' + str(holds) if holds else ''}"
                      f"{' cuts ' + str(cuts) if cuts else ''}")
        while not tried["done"]:
            hits = sum(1 for r in tried["runs"] if r["hit"])
            left = n - len(tried["runs"])
            if hits >= k or hits + left < k:
                tried["done"], tried["kept"] = True, hits >= k
                break
            cell = self._replay(schedule, folder, len(tried["runs"]) + 1)
            tried["runs"].append(cell)
            self._save()
            console.print(f"  replay {len(tried['runs'])}: {said(cell)}")
        self._save()
        console.print(f"  {'kept' if tried['kept'] else 'dropped'}")
        return bool(tried["kept"])

    def closed(self, names: Sequence[str]) -> list[str]:
        """`names` without the ends of faults left out: a fault goes with its ends (an
        end is optional: the run's final heal ends what is still in force)."""
        kept = set(names)
        return [n for n in names if self.steps[n].end is None or self.steps[n].end in kept]

    # -- the shrink ----------------------------------------------------------------

    def go(self) -> int:
        from elr_harness.hunt.bug_report import write_bug_report

        started = time.monotonic()
        names = [s for s in self.steps]
        if not self.reproduces(names):
            console.print(f"[yellow]the run's schedule does not reproduce "
                          f"{self.state['anomaly']} in {self.state['k']} of "
                          f"{self.state['n']} replays: nothing to shrink[/yellow]")
            self.state["ended"] = "does not reproduce"
            self._save()
            return EXIT_UNKNOWN
        # the groups first: each kept whole or dropped whole
        by_first = {group[0]: group for group in groups(list(self.steps.values()))}

        def whole(firsts: list[str]) -> list[str]:
            return [name for first in firsts for name in by_first[first]]

        if len(by_first) > 1:
            names = whole(ddmin(list(by_first), lambda firsts: self.reproduces(whole(firsts))))
        smallest = self.closed(ddmin(names, lambda c: self.reproduces(self.closed(c))))
        holds: dict[str, float] = {}
        for name in smallest:  # then shorter holds: none, else half
            hold = self.steps[name].hold_s
            for shorter in (0.0, round(hold / 2, 1)) if hold else ():
                if self.reproduces(smallest, {**holds, name: shorter}):
                    holds[name] = shorter
                    break
        cuts: dict[str, list[str]] = {}
        for name in smallest:  # then fewer targets: a cut without each of its nodes
            kept = _nodes_of(self.steps[name].cut)
            for node in list(kept):
                fewer = [n for n in kept if n != node]
                if len(fewer) >= 2 and self.reproduces(smallest, holds, {**cuts, name: fewer}):
                    kept = cuts[name] = fewer
        self.state["smallest"] = {"steps": smallest, "holds": holds, "cuts": cuts}
        (self.out / SCHEDULE_FILE).write_text(self.text(smallest, holds, cuts))
        self._confirm()
        self.state["seconds"] = round(self.state.get("seconds", 0) + time.monotonic()
                                      - started, 1)
        confirmed = self.state["confirmed"]
        console.print(f"{len(names)} steps -> {len(smallest)}: {', '.join(smallest)}")
        if not confirmed["confirmed"]:
            # ddmin's replays hit, the confirming ones did not: a schedule that does not
            # reproduce at the rate it was kept at is no reproducer, and BUG.md would
            # say it is one
            self.state["ended"] = "not confirmed"
            self._save()
            (self.out / "BUG.md").unlink(missing_ok=True)
            console.print(f"[yellow]not confirmed: the smallest schedule reproduced "
                          f"{self.state['anomaly']} in {confirmed['hits']} of "
                          f"{len(confirmed['runs'])} confirming replays, below the "
                          f"{self.state['k']} of {self.state['n']} it was kept at; no "
                          f"BUG.md[/yellow]")
            console.print(f"shrink: {escape(printable(self.out))} (schedule.toml, the "
                          "smallest candidate, unconfirmed)")
            return EXIT_INVALID
        self.state["ended"] = "shrunk"
        self._save()
        write_bug_report(self.out, self.state)
        console.print(f"shrink: {escape(printable(self.out))} (schedule.toml, BUG.md)")
        return EXIT_VALID

    def _confirm(self) -> None:
        """The smallest schedule replayed `confirm` times whole: its reproduction rate."""
        done = self.state.setdefault("confirmed", {"runs": []})
        folder = self.out / "confirm"
        while len(done["runs"]) < self.state["confirm"]:
            number = len(done["runs"]) + 1
            cell = self._replay(self.out / SCHEDULE_FILE, folder, number)
            done["runs"].append(cell)
            self._save()
            console.print(f"confirming {number}/{self.state['confirm']}: {said(cell)}")
        done["hits"] = sum(1 for r in done["runs"] if r["hit"])
        done["confirmed"] = confirmed(done["hits"], len(done["runs"]), self.state["k"],
                                      self.state["n"])

    def _replay(self, schedule: Path, folder: Path, number: int) -> dict[str, Any]:
        """One replay of `schedule` (the run's flags, its release): its cell, with
        whether it was INVALID with the anomaly shrunk for (`hit`)."""
        cell = run_child([*self.state["args"], "--schedule", str(schedule),
                          "--store", str(folder / "store")], folder, f"replay-{number}")
        cell["hit"] = cell["verdict"] == "invalid" and self.state["anomaly"] in cell["bad"]
        return cell

    def _save(self) -> None:
        write_json(self.out / SHRINK_FILE, self.state)


def confirmed(hits: int, replays: int, k: int, n: int) -> bool:
    """Whether the confirming replays reproduced at the rate a candidate was kept
    at: at least k of every n (3 of 5 for k 2 of n 3 is 0.6 < 2/3: not confirmed)."""
    return replays > 0 and hits * n >= k * replays


def _nodes_of(cut: dict[str, list[str]] | None) -> list[str]:
    """Every node a cut names (none: the step has no cut)."""
    return sorted({n for node, peers in (cut or {}).items() for n in [node, *peers]})


def _cut_to(cut: dict[str, list[str]] | None, kept: list[str] | None
            ) -> dict[str, list[str]] | None:
    """`cut` with only the rules between `kept` nodes (None: all of it)."""
    if cut is None or kept is None:
        return cut
    fewer = {node: [p for p in peers if p in kept] for node, peers in cut.items()
             if node in kept}
    return {node: peers for node, peers in fewer.items() if peers} or None


def start(run_dir: Path, store: Path, k: int, n: int, anomaly: str | None,
          confirm: int = 5) -> int:
    schedule, test, results = read_run(run_dir, "shrink")
    bad = sorted(results.get("bad_anomaly_types") or [])
    if results.get("valid") is not False or not bad:
        raise BadInput(f"shrink: {printable(str(run_dir)[:200])} is not INVALID: nothing "
                       "to shrink")
    if anomaly is not None and anomaly not in bad:
        raise BadInput(f"shrink: --anomaly {anomaly[:60]!r} is not one of the run's bad "
                       f"anomaly types: {', '.join(bad)}")
    text = read_text(schedule, f"shrink: {SCHEDULE_FILE}")
    parsed = parse_schedule(text, str(schedule))
    out = fresh_dir(store / "shrink")
    typed = [str(a) for a in test["cli_args"]]
    state = {"shrink_version": SHRINK_VERSION, "run_dir": str(run_dir), "bad": bad,
             "anomaly": anomaly or anomaly_of(bad), "k": k, "n": n, "confirm": confirm,
             "help": parsed.help,
             "schedule": text,
             "args": [*run_flags(typed), *release_flags(test),
                      *pinned_config(typed, test, out / PINNED_CONFIG)],
             "test": {key: test.get(key) for key in ("kafka_version", "kafka_dist",
                                                     "elr_enabled", "topics", "seed",
                                                     "cli_args")},
             "candidates": {}}
    console.print(f"shrink directory: {escape(printable(out))}")
    console.print(f"shrinking {len(parsed.steps)} steps for {state['anomaly']} "
                  f"(kept at {k} of {n} replays)")
    shrink = Shrink(out, state)
    shrink._save()
    return shrink.go()


def resume(out: Path) -> int:
    path = out / SHRINK_FILE
    shown = printable(str(out)[:200])
    if not path.is_file():
        raise BadInput(f"--resume {shown}: not a shrink folder (no {SHRINK_FILE})")
    state = read_json(path, f"--resume {shown}: {SHRINK_FILE}")
    if not isinstance(state, dict) or state.get("shrink_version") != SHRINK_VERSION:
        raise BadInput(f"--resume {shown}: {SHRINK_FILE} is not a shrink's")
    problem = _state_problem(state)
    if problem is not None:
        raise BadInput(f"--resume {shown}: {SHRINK_FILE}: {problem}")
    try:
        parse_schedule(state["schedule"], "shrink.json's schedule")
    except BadInput as err:
        raise BadInput(f"--resume {shown}: {SHRINK_FILE}: `schedule` is not a schedule: "
                       f"{err.message}") from None
    return Shrink(out, state).go()


def _state_problem(state: dict[str, Any]) -> str | None:
    """The field of a shrink.json that is not what start() wrote (a KeyError, a
    TypeError or a run of a flag nobody typed otherwise), or None."""
    def words(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 20

    for key, ok, what in (("run_dir", lambda v: isinstance(v, str), "text"),
                          ("bad", lambda v: words(v) and v, "a list of anomaly names"),
                          ("anomaly", lambda v: isinstance(v, str), "an anomaly name"),
                          ("k", count, "a count from 1 to 20"),
                          ("n", count, "a count from 1 to 20"),
                          ("confirm", count, "a count from 1 to 20"),
                          ("help", lambda v: isinstance(v, str), "text"),
                          ("schedule", lambda v: isinstance(v, str), "a schedule's text"),
                          ("args", words, "the runs' flags, a list of words"),
                          ("test", lambda v: isinstance(v, dict), "an object"),
                          ("candidates", lambda v: isinstance(v, dict), "an object")):
        if key not in state:
            return f"`{key}` is missing"
        if not ok(state[key]):
            return f"`{key}` is not {what}"
    if state["k"] > state["n"]:
        return "`k` is more than `n`"
    if state["anomaly"] not in state["bad"]:
        return "`anomaly` is not one of `bad`"
    for key, tried in state["candidates"].items():
        if not isinstance(tried, dict) or not words(tried.get("steps")) or \
                not isinstance(tried.get("runs", []), list) or \
                not all(isinstance(r, dict) and isinstance(r.get("hit"), bool)
                        for r in tried.get("runs", [])):
            return f"candidate {str(key)[:60]!r} is not a candidate's record"
    confirmed = state.get("confirmed", {"runs": []})
    if not isinstance(confirmed, dict) or not isinstance(confirmed.get("runs"), list) or \
            not all(isinstance(r, dict) and isinstance(r.get("hit"), bool)
                    for r in confirmed["runs"]):
        return "`confirmed` is not the confirming replays' record"
    return None
