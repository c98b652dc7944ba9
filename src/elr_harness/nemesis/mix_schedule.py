"""The schedule a random mix played (#55), read back from the lines its faults
recorded, as schedule.toml's [[step]] tables: `harness replay` and `harness
shrink` play a mix's run again without its draws.

Each fault a mix made (an `ok` line of its kind, with `detail.mix`) is a step
its kind writes (FaultPackage.step_of: the node it resolved to, the exact cut
of a partition's shape, the rate a slow network drew, the min ISR a change
chose); the next end of the same mix entry while that fault is in force is its
end (a start, a resume, a heal, a restore). An end with nothing of its entry in
force is part of the next fault's act (the resume a kill of a paused broker makes
first) and no step; a fault whose end failed stays unended in the file (the
run's final heal ended it). Each step holds until the next one
began, so the replay keeps the mix's pace; overlapping mixes' steps interleave
in the order they happened. A fault that did not end `ok` made no step: its
`info` line says it may have happened, and no replay can make "may have" again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from elr_harness.core.history import ENDED_BY, OpType, restores
from elr_harness.nemesis.drawn import MIN_WAIT_S
from elr_harness.nemesis.faults import PACKAGES
from elr_harness.nemesis.faults.base import settings_of
from elr_harness.nemesis.targets import Topology

#: How long the first step waits for every ISR to be full (the mix began on a
#: whole cluster) before its quiet interval.
START_WAIT_S = 60.0


def mix_schedule(lines: Iterable[Mapping[str, Any]], topology: Topology,
                 faults: Mapping[str, Any], kinds: Sequence[str], seed: int,
                 interval_s: float) -> dict[str, Any]:
    """The record recorded_toml writes (help, needs, steps) of the mix whose
    injector recorded `lines`."""
    steps: list[dict[str, Any]] = [{"name": "quiet", "until": "isr full",
                                    "within_s": START_WAIT_S, "hold_s": interval_s,
                                    "played": {}}]
    starts: list[int | None] = [None]   # when each step's act began (ns)
    oks: list[int | None] = [None]      # when it was done (its ok line)
    in_force: dict[str, str] = {}       # mix entry -> its open step's name
    began: dict[str, int] = {}          # mix entry -> its first line since its last step
    for line in lines:
        entry = (line.get("detail") or {}).get("mix")
        package = PACKAGES.get(entry) if isinstance(entry, str) else None
        if package is None:
            continue
        began.setdefault(entry, line["time"])
        if line["type"] != OpType.OK:
            if line["type"] != OpType.INVOKE:  # failed or unknown: no step, no end
                began.pop(entry, None)
            continue
        name = f"m{len(steps)}-{entry}"
        ends = restores(line["fault"], line["detail"]) or (
            line["fault"] in ENDED_BY and line["fault"] not in ENDED_BY[line["fault"]])
        if ends and entry in in_force:
            table: dict[str, Any] = {"name": f"{name}-ends", "end": in_force.pop(entry)}
        elif not ends and line["fault"] == package.recorded:
            table = {"name": name, "fault": entry,
                     **package.step_of(line, topology, settings_of(faults, package))}
            in_force[entry] = name
        else:
            continue
        table["played"] = {"line": line["index"]}
        steps.append(table)
        starts.append(began.pop(entry))
        oks.append(line["time"])
    for i, table in enumerate(steps[1:-1], start=1):
        gap_ns = (starts[i + 1] or 0) - (oks[i] or 0)
        if gap_ns / 1e9 >= MIN_WAIT_S:
            table["hold_s"] = round(gap_ns / 1e9, 1)
        table["played"] = table.pop("played")  # `played` stays the table's last field
    return {"help": f"the faults of a random mix of {', '.join(kinds)} (seed {seed})",
            # played again on as many brokers, with Kafka's own timeouts, as a mix has them
            "needs": {"brokers": len(topology.brokers), "short_kafka_timeouts": False},
            "steps": steps}
