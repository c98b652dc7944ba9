"""One streaming pass over history.jsonl that gathers everything the report draws.

Histories can hold ten million lines, so the file is read line by line exactly
once and only compact columns are kept: latencies in typed arrays, per-second
counts, the observed partition state only where it changed, and the few whole
operations that anomaly examples name by index. It decides no anomaly: what was
lost comes from the checker (reports/lost_writes.py).
"""

from __future__ import annotations

import json
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports.faults import FaultEvent

#: Malformed line numbers kept for the warning (the count is always exact).
MAX_MALFORMED_LISTED = 20

PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class ObservedState:
    """A partition's state as the observer saw it, from time_s until the next change."""

    time_s: float
    index: int
    leader: int | None
    leader_epoch: int | None
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None
    #: brokers the observation listed fenced (None: it could not say)
    fenced: tuple[int, ...] | None = None


@dataclass
class Series:
    """x/y columns of one plotted series, appended in time order."""

    x: array = field(default_factory=lambda: array("d"))
    y: array = field(default_factory=lambda: array("d"))

    def add(self, x: float, y: float) -> None:
        self.x.append(x)
        self.y.append(y)


@dataclass(frozen=True)
class Interest:
    """What an anomaly example wants to see of one op: its matching poll records."""

    values: frozenset[int] = frozenset()
    positions: frozenset[tuple[int, int]] = frozenset()  # (partition, offset)


@dataclass
class HistoryScan:
    """The compact result of the pass; every field is bounded except the ok-send columns."""

    lines: int = 0
    malformed_count: int = 0
    malformed_lines: list[int] = field(default_factory=list)
    truncated_last_line: bool = False
    end_time_s: float = 0.0
    op_counts: Counter = field(default_factory=Counter)  # (f, type, acks or "") -> n
    unfinished: Counter = field(default_factory=Counter)  # (f, acks or "") -> invokes never ended
    latency: dict[tuple[str, str], Series] = field(default_factory=dict)  # (series, type)
    throughput: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    fault_events: list[FaultEvent] = field(default_factory=list)
    states: dict[PartitionKey, list[ObservedState]] = field(default_factory=dict)
    hwm: dict[PartitionKey, Series] = field(default_factory=dict)
    final_polls: int = 0
    ops: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def has_final_reads(self) -> bool:
        return self.final_polls > 0


def _ints(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return tuple(sorted(int(v) for v in value if isinstance(v, int)))
    return None


def example_interest(example: dict[str, Any]) -> Interest:
    """The values and (partition, offset) positions an anomaly example is about."""
    values: set[int] = set()
    for key in ("value", "values"):
        found = example.get(key)
        values.update(v for v in (found if isinstance(found, list) else [found])
                      if isinstance(v, int))
    positions: set[tuple[int, int]] = set()
    partition = example.get("partition")
    if isinstance(partition, int):
        for key in ("offset", "offsets"):
            found = example.get(key)
            positions.update((partition, o) for o in (found if isinstance(found, list)
                                                      else [found]) if isinstance(o, int))
    return Interest(frozenset(values), frozenset(positions))


def matching_records(records: Any, interest: Interest) -> list[list[Any]]:
    """Poll records holding a value of interest or sitting at a position of interest."""
    if not isinstance(records, list):
        return []
    return [
        r for r in records
        if isinstance(r, list) and len(r) == 3
        and (r[2] in interest.values or (r[0], r[1]) in interest.positions)
    ]


def _summarize_poll(op: dict[str, Any], interest: Interest, cap: int) -> dict[str, Any]:
    """A poll op with only the records some example is about (a final poll can be huge)."""
    records = op.get("records")
    if not isinstance(records, list):
        return op
    summary = {k: v for k, v in op.items() if k != "records"}
    summary["records_total"] = len(records)
    summary["records_relevant"] = matching_records(records, interest)[:cap]
    summary["records_first"] = records[:min(cap, 3)]
    return summary


def _series_name(f: str, acks: str | None, final: bool) -> str:
    if f == "send":
        return f"send acks={acks}"
    if f == "poll" and final:
        return "final poll"
    return f


def scan_history(
    path: Path | None,
    wanted: dict[int, Interest] | None = None,
    max_relevant_records: int = 1000,
) -> HistoryScan:
    """Read the history once; `wanted` names the op indices the examples need in full.

    Polls among them keep only the records some example is about (at most
    max_relevant_records), so a final read of millions of records stays small.
    """
    scan = HistoryScan()
    if path is None:
        return scan
    wanted = wanted or {}
    pending: dict[int, tuple[int, str, str | None, bool]] = {}  # process -> invoke
    last_bad_line = -1
    last_state: dict[PartitionKey, tuple] = {}
    last_hwm: dict[PartitionKey, int] = {}
    loads = json.loads
    line_no = 0
    with path.open("r", encoding="utf-8", errors="replace") as lines:
        for line_no, line in enumerate(lines, start=1):
            try:
                op = loads(line)
                if not isinstance(op, dict):
                    raise ValueError("not an object")
                time_ns = op["time"]
                t = time_ns / 1e9
                f = op["f"]
                typ = op["type"]
                process = op["process"]
            except (ValueError, KeyError, TypeError):
                if line.strip():
                    scan.malformed_count += 1
                    last_bad_line = line_no
                    if len(scan.malformed_lines) < MAX_MALFORMED_LISTED:
                        scan.malformed_lines.append(line_no)
                continue
            if t > scan.end_time_s:
                scan.end_time_s = t
            index = op.get("index")
            if index in wanted:
                if f == "poll":
                    scan.ops[index] = _summarize_poll(op, wanted[index], max_relevant_records)
                else:
                    scan.ops[index] = op

            if f == "observe":
                _observe(scan, op, t, last_state, last_hwm)
                continue
            if f == "fault":
                if typ != "invoke":
                    detail = op.get("detail")
                    nodes = op.get("nodes")
                    scan.fault_events.append(FaultEvent(
                        index=index if isinstance(index, int) else line_no - 1,
                        time_s=t,
                        kind=str(op.get("fault")),
                        nodes=tuple(str(n) for n in nodes) if isinstance(nodes, list) else (),
                        type=typ,
                        detail=detail if isinstance(detail, dict) else {},
                    ))
                    scan.op_counts[("fault", typ, "")] += 1
                continue

            acks = op.get("acks") if f == "send" else None
            if typ == "invoke":
                pending[process] = (time_ns, f, acks, bool(op.get("final")))
                continue
            scan.op_counts[(f, typ, acks or "")] += 1
            started = pending.pop(process, None)
            final = bool(op.get("final")) or (started is not None and started[3])
            if started is not None:
                key = (_series_name(f, acks, final), typ)
                series = scan.latency.get(key)
                if series is None:
                    series = scan.latency[key] = Series()
                series.add(t, (time_ns - started[0]) / 1e6)
            if process >= 0:
                scan.throughput[typ][int(t)] += 1
            if f == "poll" and typ == "ok" and final:
                scan.final_polls += 1
    if last_bad_line == line_no and last_bad_line > 0:
        # The contract: a last line cut short by a crash is ignored, not an error.
        scan.truncated_last_line = True
        scan.malformed_count -= 1
        if scan.malformed_lines and scan.malformed_lines[-1] == last_bad_line:
            scan.malformed_lines.pop()
    scan.lines = line_no
    for _process, (_t, f, acks, _final) in pending.items():
        if f in ("send", "poll"):
            scan.unfinished[(f, acks or "")] += 1
    return scan


def _observe(scan: HistoryScan, op: dict[str, Any], t: float,
             last_state: dict[PartitionKey, tuple], last_hwm: dict[PartitionKey, int]) -> None:
    try:
        key = (str(op["topic"]), int(op["partition"]))
    except (KeyError, TypeError, ValueError):
        return
    leader = op.get("leader")
    epoch = op.get("leader_epoch")
    state = (
        leader if isinstance(leader, int) else None,
        epoch if isinstance(epoch, int) else None,
        _ints(op.get("isr")) or (),
        _ints(op.get("elr")),
        _ints(op.get("last_known_elr")),
        _ints(op.get("fenced")),
    )
    if last_state.get(key) != state:
        last_state[key] = state
        scan.states.setdefault(key, []).append(ObservedState(t, op.get("index", -1), *state))
    hwm = op.get("high_watermark")
    if isinstance(hwm, int) and last_hwm.get(key) != hwm:
        last_hwm[key] = hwm
        series = scan.hwm.get(key)
        if series is None:
            series = scan.hwm[key] = Series()
        series.add(t, float(hwm))
