"""The schedule a run played, read back from the lines its faults recorded (#55):
schedule.toml's [[step]] tables of a random mix's run or of a scripted scenario's
(whose waits were code), so `harness replay` and `harness shrink` play it again
without its draws.

Each fault made (an `ok` line that begins one) is the step its kind writes
(FaultPackage.step_of: the node its line names, the exact cut of a partition's
shape, the rate a slow network drew, the min ISR a change chose). An `ok` line
that ends faults (a start, a resume, a heal, a restore) is an end step of each
fault in force it ends: of a mix, the fault its entry has in force (`detail.mix`);
otherwise as the history's contract pairs them (core.fault_meanings.ENDED_BY: a heal
ends every cut, a start or resume those of its nodes, a restore the change of its
topic or feature), each on the same nodes. An end with nothing in force to end is part of the next
fault's act (the resume a kill of a paused broker makes first) and no step.

Each step holds until the next one began, so a replay keeps the run's pace (a
scenario's waits become the time they took); the first step waits for every ISR
to be full and holds as long as the run waited before its first fault. A fault
that did not end `ok` made no step: its `info` line says it may have happened,
and no replay can make "may have" again; a fault whose end failed stays unended
in the file (the run's final heal ended it). The final heal is no step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import RESTORED_BY_SELF, OpType, restores
from elr_harness.nemesis.faults import PACKAGES
from elr_harness.nemesis.faults.base import settings_of
from elr_harness.nemesis.schedule.drawn import MIN_WAIT_S
from elr_harness.nemesis.targets import Topology

#: How long the first step waits for every ISR to be full (the run began on a whole
#: cluster) before it holds.
START_WAIT_S = 60.0
#: The step of the heal every run ends with (injector.heal_all): no step of a schedule.
FINAL_HEAL = "final-heal"


@dataclass
class _InForce:
    """A fault a step made and nothing ended yet."""

    step: str
    line: Mapping[str, Any]

    @property
    def entry(self) -> str | None:
        return (self.line.get("detail") or {}).get("mix")


def _ends(line: Mapping[str, Any], in_force: list[_InForce]) -> list[_InForce]:
    """The faults in force that `line` ends (it ends some: a restore or an end kind)."""
    kind, detail = line["fault"], line.get("detail") or {}
    entry = detail.get("mix")
    if entry is not None:
        return [f for f in in_force if f.entry == entry][:1]
    ended = [f for f in in_force if f.line["fault"] in ENDED_BY.get(kind, ())]
    if restores(kind, detail):
        key = RESTORED_BY_SELF[kind]
        return [f for f in ended if (f.line.get("detail") or {}).get(key) == detail.get(key)]
    # on the same nodes (a heal names every node: it ends every cut)
    return [f for f in ended if set(f.line["nodes"]) & set(line["nodes"])]


def recorded_schedule(lines: Iterable[Mapping[str, Any]], topology: Topology,
                      faults: Mapping[str, Any], help_text: str,
                      began_ns: int | None = None,
                      min_insync_replicas: int | None = None) -> dict[str, Any]:
    """The record recorded_toml writes (help, needs, steps) of the run whose
    injector recorded `lines` (`began_ns`: when its schedule began, on the lines'
    clock; None: the first line's time; `min_insync_replicas`: its first topic's,
    which the file then needs)."""
    steps: list[dict[str, Any]] = []
    starts: list[int] = []   # when each step's act began (ns)
    oks: list[int] = []      # when it was done (its ok line)
    in_force: list[_InForce] = []
    began: int | None = None  # the first line since the last step
    for line in lines:
        detail = line.get("detail") or {}
        if detail.get("step") == FINAL_HEAL:
            continue
        began = line["time"] if began is None else began
        if line["type"] != OpType.OK:
            if line["type"] != OpType.INVOKE:  # failed or unknown: no step, no end
                began = None
            continue
        kind = str(line["fault"])
        ends = restores(kind, detail) or (kind in ENDED_BY and kind not in ENDED_BY[kind])
        made: list[dict[str, Any]] = []
        if ends:
            for fault in _ends(line, in_force):
                in_force.remove(fault)
                made.append({"name": f"s{len(steps) + len(made) + 1}-{kind}",
                             "end": fault.step})
        elif kind in PACKAGES:
            package = PACKAGES[kind]
            made.append({"name": f"s{len(steps) + 1}-{kind}", "fault": kind,
                         **package.step_of(line, topology, settings_of(faults, package))})
            in_force.append(_InForce(made[0]["name"], line))
        for table in made:
            table["played"] = {"line": line["index"]}
            steps.append(table)
            starts.append(began if began is not None else line["time"])
            oks.append(line["time"])
        if made:
            began = None
    for i, table in enumerate(steps[:-1]):
        gap_s = (starts[i + 1] - oks[i]) / 1e9
        if gap_s >= MIN_WAIT_S:
            table["hold_s"] = round(gap_s, 1)
        table["played"] = table.pop("played")  # `played` stays the table's last field
    first = starts[0] if starts else 0
    quiet_s = round(max(0.0, (first - (began_ns if began_ns is not None else first)) / 1e9), 1)
    quiet = {"name": "quiet", "until": "isr full", "within_s": START_WAIT_S,
             **({"hold_s": quiet_s} if quiet_s >= MIN_WAIT_S else {}), "played": {}}
    return {"help": help_text,
            # played again on as many brokers, with Kafka's timeouts as the run had them
            # (a replay pins the run's config: hunt.replay)
            "needs": {"brokers": len(topology.brokers), "short_kafka_timeouts": False,
                      **({"min_insync_replicas": min_insync_replicas}
                         if min_insync_replicas is not None else {})},
            "steps": [quiet, *steps]}
