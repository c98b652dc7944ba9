"""A plain reference checker of shared/HISTORY.md (contract version 4), with the
readings of docs/CHECKING.md: the oracle the tests compare the Spark checker with.
Version 4's transactions are judged in tests/reference_txn.py.

Written straight from those two pages, one small function per rule, over Python
lists and dicts: no Spark, and no import of the checkers package (it
must stay an independent implementation). Histories of a few thousand lines at
most; nothing here is meant to be fast.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from reference_budget import fault_budget
from reference_coverage import reference_coverage, reference_txn_coverage
from reference_registration import reference_unclean_registration
from reference_transitions import reference_transitions
from reference_txn import (
    TXN_ALWAYS_BAD,
    TXN_ANOMALIES,
    TXN_FIELDS,
    V4_ANY_KIND,
    Txn,
    group_offsets,
    misaligned,
    required_txn,
    txn_checks,
    v4_offsets,
)

from elr_harness.core.errors import HistoryError

ACKS = ("all", "1", "0")
TYPES = ("invoke", "ok", "fail", "info")
#: Every anomaly of the contract's table, in its order.
ANOMALIES = ("lost-write", "lost-committed-read", "inconsistent-offset", "duplicate",
             "aborted-read", "realtime-order", "nonmonotonic-poll", "poll-skip",
             "garbage-read", "hwm-regression", "elr-invariant", "elr-outside-replicas",
             "elr-member-dropped", "election-outside-elr", "elr-member-unclean",
             "elr-while-disabled", "fenced-leader", "last-known-elr-invalid",
             "replica-divergence", "unseen", *TXN_ANOMALIES)
#: Bad whenever found (lost-write and duplicate have conditions, unseen never is).
ALWAYS_BAD = ("lost-committed-read", "inconsistent-offset", "aborted-read", "realtime-order",
              "nonmonotonic-poll", "poll-skip", "garbage-read", "hwm-regression",
              "elr-invariant", "elr-outside-replicas", "elr-member-dropped",
              "election-outside-elr", "elr-member-unclean", "elr-while-disabled",
              "fenced-leader",
              "last-known-elr-invalid", "replica-divergence", *TXN_ALWAYS_BAD)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

TP = tuple[str, int]


class MalformedLine(HistoryError):
    """A line that breaks the contract (and is not a cut-short last line)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line} is not a valid history line: {reason}")
        self.line = line
        self.reason = reason


@dataclass
class Reference:
    """What the contract says about one history."""

    valid: bool | str
    counts: dict[str, int]
    by_acks: dict[str, dict[str, int]]
    bad: set[str]
    truncated_lines: int
    incomplete_partitions: set[str]
    checked: dict[str, int]
    #: per judged partition ("topic-partition"): the losses in the window its budget
    #: is judged by, that window's budget, its losses while the ELR feature was off
    page_cache_losses: dict[str, int] = field(default_factory=dict)
    budgets: dict[str, int] = field(default_factory=dict)
    unprotected_losses: dict[str, int] = field(default_factory=dict)
    beyond_budget: set[str] = field(default_factory=set)
    #: per partition below min ISR at some observation ("topic-partition"): its
    #: ISR's (expansions, shrinks, nanoseconds below min ISR)
    isr_churn: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    coverage: dict[str, dict] = field(default_factory=dict)
    #: per rule over consecutive observations: how many pairs it judged
    judged: dict[str, int] = field(default_factory=dict)
    #: per txn anomaly (contract v4): its count by protocol in effect
    by_protocol: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the transactions by client, transaction.version and outcome
    transactions: list[dict] = field(default_factory=list)
    #: the partitions whose read_committed final read is incomplete ("topic-partition")
    rc_incomplete: set[str] = field(default_factory=set)


# -- lines -------------------------------------------------------------------------


class _BigInt:
    """A JSON integer too long to be worth parsing (it is outside 64 bits anyway)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _parse_int(text: str):
    return int(text) if len(text) <= 40 else _BigInt(text)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _int_problem(name: str, v) -> str | None:
    if isinstance(v, _BigInt) or (isinstance(v, int) and not isinstance(v, bool)
                                  and not INT64_MIN <= v <= INT64_MAX):
        return f"field {name!r} holds an int outside the signed 64-bit range"
    if isinstance(v, float):
        extra = ", and outside the signed 64-bit range" if abs(v) >= 2.0 ** 63 else ""
        return f"field {name!r} must be an int, not a number with a fraction or exponent{extra}"
    if not isinstance(v, int) or isinstance(v, bool):
        return f"field {name!r} must be an int, not {json.dumps(v)[:30]}"
    return None


def _int(name, v):
    return _int_problem(name, v)


def _str(name, v):
    return None if isinstance(v, str) else f"field {name!r} must be a string"


def _bool(name, v):
    return None if isinstance(v, bool) else f"field {name!r} must be true or false"


def _acks(name, v):
    return None if v in ACKS else f"field {name!r} must be one of \"0\", \"1\", \"all\""


def _object(name, v):
    return None if isinstance(v, dict) else f"field {name!r} must be an object"


def _int_list(name, v):
    if not isinstance(v, list):
        return f"field {name!r} must be a list of ints"
    for item in v:
        if problem := _int_problem(name, item):
            return problem
    return None


def _str_list(name, v):
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        return f"field {name!r} must be a list of strings"
    return None


def _partition_map(name, v):
    if not isinstance(v, dict):
        return f"field {name!r} must be an object {{partition: int}}"
    for key, item in v.items():
        if not re.fullmatch(r"-?[0-9]+", key) or _int_problem(name, int(key)):
            return f"field {name!r} has key {key!r}, which is not a partition's decimal text"
        if problem := _int_problem(name, item):
            return problem
    return None


def _records(value_slot: int):
    def check(name, v):
        if not isinstance(v, list):
            return f"field {name!r} must be a list"
        for entry in v:
            if not isinstance(entry, list) or len(entry) != 3:
                return f"a record {json.dumps(entry)[:30]} is not a list of three"
            for i, item in enumerate(entry):
                if item is None and i == value_slot:
                    continue
                if problem := _int_problem(name, item):
                    return problem
        return None
    return check


#: The fields of each kind of line, with their type checks (HISTORY.md's tables).
def _isolation(name, v):
    return None if v in ("read_committed", "read_uncommitted") else \
        f"field {name!r} must be read_committed or read_uncommitted"


KIND_FIELDS = {
    "send": {"topic": _str, "partition": _int, "acks": _acks, "value": _int, "offset": _int,
             "error": _str},
    "poll": {"topic": _str, "records": _records(2), "high_watermark": _partition_map,
             "final": _bool, "seek": _partition_map, "error": _str,
             "isolation": _isolation, "group": _str, "position": _partition_map,
             "last_stable_offset": _partition_map},
    "txn": TXN_FIELDS,
    "fault": {"fault": _str, "nodes": _str_list, "detail": _object},
    "observe": {"topic": _str, "partition": _int, "leader": _int, "leader_epoch": _int,
                "isr": _int_list, "elr": _int_list, "last_known_elr": _int_list,
                "high_watermark": _int, "fenced": _int_list, "min_isr": _int,
                "replicas": _int_list, "elr_feature": _int,
                "last_stable_offset": _int, "open_txn_offsets": _int_list,
                "group_offsets": group_offsets},
    "replica": {"topic": _str, "partition": _int, "node": _str, "broker": _int,
                "high_watermark": _int, "log_end_offset": _int, "records": _records(1)},
}


#: docs/CHECKING.md: "a field of the contract present with a value of the wrong
#: type" is malformed on a line of any known kind, also where the field belongs to
#: another kind (a poll's `value`); high_watermark only where it has a meaning.
ANY_KIND_FIELDS = {
    **dict.fromkeys(("partition", "value", "offset", "leader", "leader_epoch", "broker",
                     "log_end_offset", "min_isr", "elr_feature"), _int),
    **dict.fromkeys(("topic", "acks", "error", "fault", "node"), _str),
    **dict.fromkeys(("isr", "elr", "last_known_elr", "fenced", "replicas"), _int_list),
    "nodes": _str_list, "detail": _object, "final": _bool, "seek": _partition_map,
    "records": _records(2),
    # contract version 4's, of one type on every kind (HISTORY.md "Transactions (v4)")
    **V4_ANY_KIND,
}


def _required(op: dict) -> tuple[str, ...]:
    """The fields the contract lists for this line's kind and type without
    "optional" (docs/CHECKING.md: null only where the contract allows it)."""
    f, t = op["f"], op["type"]
    if f == "send":
        need = ("topic", "partition", "acks", "value")
        if t == "ok" and op.get("acks") != "0":
            need += ("offset",)
        return need + (("error",) if t in ("fail", "info") else ())
    if f == "poll":
        return ("topic",) + {"ok": ("records",), "fail": ("error",),
                             "info": ("error",)}.get(t, ())
    if f == "fault":
        return ("fault", "nodes")
    if f == "observe":
        return ("topic", "partition", "leader", "leader_epoch")
    if f == "replica":
        return ("topic", "partition", "node", "broker", "log_end_offset", "records")
    if f == "txn":
        return required_txn(op)
    return ()


def line_problem(op) -> str | None:
    """What makes a parsed line malformed, or None."""
    if not isinstance(op, dict):
        return f"JSON but not an object ({type(op).__name__})"
    for name in ("index", "time", "process"):
        if op.get(name) is None:
            return f"required field {name!r} is missing"
        if problem := _int_problem(name, op[name]):
            return problem
    for name in ("type", "f"):
        if op.get(name) is None:
            return f"required field {name!r} is missing"
        if not isinstance(op[name], str):
            return f"field {name!r} must be a string"
    if op["type"] not in TYPES:
        return f"type {op['type']!r} is none of {', '.join(TYPES)}"
    fields = KIND_FIELDS.get(op["f"])
    if fields is None:
        return None  # a newer recorder's kind of line: ignored
    for name, check in fields.items():
        if op.get(name) is not None and (problem := check(name, op[name])):
            return problem
    for name, check in ANY_KIND_FIELDS.items():
        if name not in fields and op.get(name) is not None and (
                problem := check(name, op[name])):
            return problem
    if op["f"] in ("observe", "replica") and op["type"] != "ok":
        return f"an {op['f']} line's type is always ok"
    for name in _required(op):
        if op.get(name) is None:
            return f"field {name!r} is required on a {op['type']} {op['f']} line"
    return _unreportable(op) or _undocumented_detail(op) or misaligned(op)


def _unreportable(op: dict) -> str | None:
    """HISTORY.md: "A value no cluster can report is malformed too ...: a negative
    offset, high watermark or log end offset; a min_isr below 1; an elr_feature
    below 0; a broker id below -1 (only leader and last_known_elr may hold -1)".
    Offsets are also a record's, a seek's and a poll's high watermarks'."""
    offsets = [op.get("offset"), op.get("log_end_offset")]
    for record in op.get("records") or []:
        offsets.append(record[0] if op["f"] == "replica" else record[1])
    offsets += list((op.get("seek") or {}).values())
    hwm = op.get("high_watermark")
    if op["f"] == "poll" and hwm is not None:
        offsets += list(hwm.values())
    elif op["f"] in ("observe", "replica"):
        offsets.append(hwm)
    offsets += v4_offsets(op)
    if any(o is not None and o < 0 for o in offsets):
        return "a negative offset, high watermark or log end offset"
    if op.get("min_isr") is not None and op["min_isr"] < 1:
        return "min_isr below 1"
    if op.get("elr_feature") is not None and op["elr_feature"] < 0:
        return "elr_feature below 0"
    for name in ("leader", "broker"):
        if op.get(name) is not None and op[name] < (-1 if name == "leader" else 0):
            return f"{name} is no broker id"
    for name in ("isr", "elr", "last_known_elr", "fenced", "replicas"):
        lowest = -1 if name == "last_known_elr" else 0
        if any(b < lowest for b in op.get(name) or []):
            return f"{name} holds no broker id"
    return None


#: HISTORY.md's documented details: kind -> {key: (check, lowest value or None)}.
_DETAILS = {
    "min-isr-change": {"topic": (lambda v: v is None or isinstance(v, str), None),
                       "from": (lambda v: _int_problem("from", v) is None, 1),
                       "to": (lambda v: _int_problem("to", v) is None, 1)},
    "feature-change": {"feature": (lambda v: isinstance(v, str), None),
                       "from": (lambda v: _int_problem("from", v) is None, 0),
                       "to": (lambda v: _int_problem("to", v) is None, 0)},
    "disk-fault": {"dropped": (lambda v: isinstance(v, bool), None)},
    "reassign": {"topic": (lambda v: isinstance(v, str), None),
                 "partition": (lambda v: _int_problem("partition", v) is None, None)},
    "one-way-partition": {"from": (lambda v: isinstance(v, list)
                                   and all(isinstance(n, str) for n in v), None)},
}


def _undocumented_detail(op: dict) -> str | None:
    """HISTORY.md: a fault line of a kind with a documented detail, "with that
    detail missing or of the wrong type is malformed"."""
    if op["f"] != "fault" or op["fault"] not in _DETAILS:
        return None
    detail = op.get("detail")
    if not isinstance(detail, dict):
        return f"{op['fault']} without its detail"
    for key, (fits, lowest) in _DETAILS[op["fault"]].items():
        value = detail.get(key)
        if not fits(value) or (lowest is not None and value < lowest):
            return f"{op['fault']}'s detail {key!r} is {value!r}"
    return None


_BLANK = b" \t\r\n"


def read_lines(path: Path) -> tuple[list[tuple[int, dict]], int]:
    """The valid lines as (1-based line number, object), and how many lines were
    cut short (0 or 1). Raises MalformedLine for the first malformed line."""
    physical = re.split(rb"\r\n|\r|\n", Path(path).read_bytes())
    nonblank = [i for i, raw in enumerate(physical) if raw.strip(_BLANK)]
    last = nonblank[-1] if nonblank else -1
    lines, truncated = [], 0
    for i in nonblank:
        try:
            op = json.loads(physical[i].decode("utf-8"), parse_int=_parse_int,
                            parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError) as err:
            if i == last:
                truncated = 1  # a crash cut the last line short
                continue
            raise MalformedLine(i + 1, f"not JSON ({err})") from None
        if problem := line_problem(op):
            raise MalformedLine(i + 1, problem)
        lines.append((i + 1, op))
    return lines, truncated


# -- operations ----------------------------------------------------------------------


@dataclass
class Send:
    topic: str
    partition: int
    acks: str
    value: int
    invoke_time: int | None
    status: str = "info"  # an invoke never completed counts as info
    offset: int | None = None
    ok_time: int | None = None


@dataclass
class Poll:
    process: int
    topic: str
    final: bool
    seek: dict[int, int]
    completion: str | None = None  # None: never completed
    records: list[tuple[int, int, int | None]] = field(default_factory=list)
    hwm: dict[int, int] = field(default_factory=dict)
    #: for an open final invoke: what the process's earlier final polls of the topic covered
    earlier: set[int] = field(default_factory=set)
    #: contract v4: the invoke's isolation (absent: read_uncommitted), the ok
    #: completion's position and last stable offsets, and its time
    isolation: str = "read_uncommitted"
    position: dict[int, int] = field(default_factory=dict)
    lso: dict[int, int] = field(default_factory=dict)
    completion_time: int | None = None
    #: the invoke's index (None: a completion without one)
    invoke_position: int | None = None

    def covers(self) -> set[int]:
        """The partitions this final poll covers (docs/CHECKING.md); a read_committed
        one's position and last stable offsets too."""
        out = set(self.seek)
        if self.completion == "ok":
            out |= {p for p, _, _ in self.records} | set(self.hwm)
            if self.isolation == "read_committed":
                out |= set(self.position) | set(self.lso)
        return out


@dataclass
class Fault:
    fault: str
    nodes: list[str]
    position: int
    status: str = "info"
    #: its invoke's detail, updated by its completion's
    detail: dict = field(default_factory=dict)
    #: where it began: its invoke's position (a completion without one: its own)
    begin: int = -1
    #: the index and time of the line it sits at (its completion, else its invoke)
    index: int = -1
    time: int | None = None
    #: a completion of it was read (one never completed may still be under way)
    completed: bool = False


def _pmap(obj: dict | None) -> dict[int, int]:
    return {int(k): v for k, v in (obj or {}).items()}


@dataclass
class _Ops:
    sends: list[Send] = field(default_factory=list)
    polls: list[Poll] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    observes: list[tuple[int, dict]] = field(default_factory=list)  # (position, line)
    replicas: list[dict] = field(default_factory=list)
    #: in history order: ("seek", poll) at an invoke, ("records", poll) at an ok
    timeline: list[tuple[str, object]] = field(default_factory=list)
    txns: list[Txn] = field(default_factory=list)


def build_ops(lines: list[tuple[int, dict]]) -> _Ops:
    """Pair each invoke with its completion: a client's with the next completion of the
    same process and f; the nemesis's first in, first out by (fault, nodes)."""
    ops = _Ops()
    open_client: dict[tuple[int, str], object] = {}
    open_faults: dict[tuple, list[Fault]] = defaultdict(list)
    for position, (_number, op) in enumerate(lines):
        f, t = op["f"], op["type"]
        if f == "observe":
            ops.observes.append((position, op))
        elif f == "replica":
            ops.replicas.append(op)
        elif f == "fault":
            key = (op["process"], op["fault"], tuple(op["nodes"]))
            if t == "invoke":
                fault = Fault(op["fault"], list(op["nodes"]), position,
                              detail=dict(op.get("detail") or {}), begin=position,
                              index=op["index"], time=op["time"])
                open_faults[key].append(fault)
                ops.faults.append(fault)
            else:
                if open_faults[key]:
                    fault = open_faults[key].pop(0)
                else:
                    fault = Fault(op["fault"], list(op["nodes"]), position, begin=position)
                    ops.faults.append(fault)
                fault.status, fault.position = t, position
                fault.index, fault.time = op["index"], op["time"]
                fault.completed = True
                fault.detail.update(op.get("detail") or {})
        elif f == "send":
            key = (op["process"], f)
            if t == "invoke":
                send = Send(op["topic"], op["partition"], op["acks"], op["value"], op["time"])
                ops.sends.append(send)
                open_client[key] = send
                continue
            send = open_client.pop(key, None)
            if send is None:  # a completion without its invoke
                send = Send(op["topic"], op["partition"], op["acks"], op["value"], None)
                ops.sends.append(send)
            send.status = t
            if t == "ok":
                send.ok_time = op["time"]
                send.offset = None if send.acks == "0" else op.get("offset")
        elif f == "poll":
            key = (op["process"], f)
            if t == "invoke":
                poll = Poll(op["process"], op["topic"], op.get("final") is True,
                            _pmap(op.get("seek")),
                            isolation=op.get("isolation") or "read_uncommitted",
                            invoke_position=op["index"])
                ops.polls.append(poll)
                open_client[key] = poll
                ops.timeline.append(("seek", poll))
                continue
            poll = open_client.pop(key, None)
            if poll is None:  # a completion without its invoke: its own isolation
                poll = Poll(op["process"], op["topic"], False, {},
                            isolation=op.get("isolation") or "read_uncommitted")
                ops.polls.append(poll)
            poll.completion = t
            poll.completion_time = op["time"]
            poll.final = poll.final or op.get("final") is True
            if t == "ok":
                poll.records = [tuple(r) for r in op["records"]]
                poll.hwm = _pmap(op.get("high_watermark"))
                poll.position = _pmap(op.get("position"))
                poll.lso = _pmap(op.get("last_stable_offset"))
                ops.timeline.append(("records", poll))
        elif f == "txn":
            key = (op["process"], f)
            if t == "invoke":
                txn = Txn(op["process"], op["txn_id"], [tuple(s) for s in op["sends"]],
                          op.get("abort") is True, op.get("client"), op["time"], position)
                ops.txns.append(txn)
                open_client[key] = txn
                continue
            txn = open_client.pop(key, None)
            if txn is None:
                continue  # a completion without its invoke names no value: nothing to judge
            txn.status, txn.completed, txn.completion_position = t, True, position
            txn.offsets = list(op.get("offsets") or [])
            txn.end_time = op.get("end_time")
    return ops


# -- the checker ---------------------------------------------------------------------


def _topic_info(test: dict | None, topic: str) -> tuple[int, int]:
    """(replication factor, min ISR) of a topic; 3 and 2 when test.json does not say."""
    t = ((test or {}).get("topics") or {}).get(topic) or {}
    rf = t.get("replication_factor")
    mi = t.get("min_insync_replicas")
    return (3 if rf is None else int(rf)), (2 if mi is None else int(mi))


def _node_brokers(test: dict | None) -> dict[str, int]:
    nodes = (test or {}).get("nodes") or {}
    return {name: int(n["id"]) for name, n in nodes.items()
            if isinstance(n, dict) and n.get("role") == "broker" and n.get("id") is not None}


def _broker_of(node: str, test: dict | None) -> int | None:
    nodes = (test or {}).get("nodes") or {}
    if node in nodes:
        return _node_brokers(test).get(node)
    match = re.fullmatch(r"broker-(\d+)", node)
    return int(match.group(1)) if match else None


def reference_check(history: Path, test: dict | None) -> Reference:
    """Judge one history by the contract (test is test.json's dict, or None)."""
    lines, truncated = read_lines(history)
    ops = build_ops(lines)
    counts = dict.fromkeys(ANOMALIES, 0)
    by_acks = {name: dict.fromkeys(ACKS, 0) for name in ("lost-write", "unseen")}

    # judged partitions
    judged: set[TP] = set()
    for name, t in ((test or {}).get("topics") or {}).items():
        judged |= {(name, p) for p in range(int(t.get("partitions") or 0))}
    for s in ops.sends:
        judged.add((s.topic, s.partition))
    for txn in ops.txns:
        judged |= {(t, p) for t, p, _ in txn.sends}
    for poll in ops.polls:
        judged |= {(poll.topic, p) for p in poll.seek}
        judged |= {(poll.topic, p) for p, _, _ in poll.records}
        judged |= {(poll.topic, p) for p in poll.hwm}
        if poll.final:  # v4: a final poll's position and last stable offsets name them too
            judged |= {(poll.topic, p) for p in (*poll.position, *poll.lso)}

    # final logs: (offset, value) pairs of the final records
    final_log: dict[TP, set[tuple[int, int | None]]] = defaultdict(set)
    final_offsets: dict[TP, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    final_hwm: dict[TP, int] = {}
    ok_covered: set[TP] = set()
    open_covered: set[TP] = set()
    position: dict[TP, int] = {}
    finals = [poll for poll in ops.polls if poll.final]
    covered_before: dict[tuple[int, str], set[int]] = defaultdict(set)
    for poll in finals:  # in invoke order
        poll.earlier = set(covered_before[(poll.process, poll.topic)])
        covered_before[(poll.process, poll.topic)] |= poll.covers()
    # the read_uncommitted final read is the partition's whole log (v4: the
    # read_committed one is judged in reference_txn)
    for poll in (poll for poll in finals if poll.isolation == "read_uncommitted"):
        for p, at in poll.position.items() if poll.completion == "ok" else ():
            position[(poll.topic, p)] = max(position.get((poll.topic, p), at), at)
        if poll.completion == "ok":
            ok_covered |= {(poll.topic, p) for p in poll.covers()}
            for p, o, v in poll.records:
                final_log[(poll.topic, p)].add((o, v))
                if v is not None:
                    final_offsets[(poll.topic, p)][v].add(o)
            for p, mark in poll.hwm.items():
                key = (poll.topic, p)
                final_hwm[key] = max(final_hwm.get(key, mark), mark)
        elif poll.completion is None:
            cover = set(poll.seek) | poll.earlier
            if not cover:
                cover = {p for t, p in judged if t == poll.topic}
            open_covered |= {(poll.topic, p) for p in cover}
    final_top = {key: max(o for o, _ in log) for key, log in final_log.items() if log}
    complete: dict[TP, bool] = {}
    for key in judged:
        # v4: a trailing marker or aborted record is read past, not returned
        reach = max(final_top[key] + 1 if key in final_top else 0, position.get(key, 0))
        complete[key] = (key in ok_covered and reach >= final_hwm.get(key, 0)
                         and key not in open_covered)

    # lost-write and unseen, per value
    lost_values: set[int] = set()
    for s in ops.sends:
        key = (s.topic, s.partition)
        if s.status != "ok" or final_offsets[key].get(s.value):
            continue
        reached = (s.offset is not None and key in final_top and final_top[key] >= s.offset)
        if complete[key] or reached:
            counts["lost-write"] += 1
            by_acks["lost-write"][s.acks] += 1
            lost_values.add(s.value)
        else:
            counts["unseen"] += 1
            by_acks["unseen"][s.acks] += 1

    polled = [(poll, p, o, v) for poll in ops.polls if poll.completion == "ok"
              for p, o, v in poll.records]

    # lost-committed-read: read by a non-final poll, not at that offset of a complete log
    lcr = {(poll.topic, p, v) for poll, p, o, v in polled
           if not poll.final and v is not None and complete[(poll.topic, p)]
           and (o, v) not in final_log[(poll.topic, p)]}
    counts["lost-committed-read"] = len(lcr)

    # inconsistent-offset: the claims on each (topic, partition, offset)
    claims: dict[tuple[str, int, int], set[int]] = defaultdict(set)
    read_at: set[tuple[str, int, int, int]] = set()
    for poll, p, o, v in polled:
        if v is not None:
            claims[(poll.topic, p, o)].add(v)
            read_at.add((poll.topic, p, o, v))
    for s in ops.sends:
        if s.status != "ok" or s.offset is None:
            continue
        if (s.acks != "all" and s.value in lost_values
                and (s.topic, s.partition, s.offset, s.value) not in read_at):
            continue
        claims[(s.topic, s.partition, s.offset)].add(s.value)
    # v4: a transaction's values "like plain sends" (acks=all: they always claim): the
    # offsets its ok completion's delivery reports gave
    for txn in ops.txns:
        if txn.status != "ok":
            continue
        for i, (t, p, v) in enumerate(txn.sends):
            if (o := txn.offset_of(i)) is not None:
                claims[(t, p, o)].add(v)
    counts["inconsistent-offset"] = sum(1 for vs in claims.values() if len(vs) > 1)

    # duplicate: a value at two or more offsets of its partition's final log
    counts["duplicate"] = sum(1 for by_value in final_offsets.values()
                              for offs in by_value.values() if len(offs) > 1)

    # aborted-read: a failed send's value read from its partition
    read_values = {(poll.topic, p, v) for poll, p, o, v in polled if v is not None}
    counts["aborted-read"] = len({(s.topic, s.partition, s.value) for s in ops.sends
                                  if s.status == "fail"
                                  and (s.topic, s.partition, s.value) in read_values})

    # realtime-order, per value B (A among acks 1/all ok sends: docs/CHECKING.md)
    lowest = {}  # id(send) -> its value's lowest offset in the final log
    for s in ops.sends:
        offs = final_offsets[(s.topic, s.partition)].get(s.value)
        if offs:
            lowest[id(s)] = min(offs)
    # pairs within one partition only (the rule's own condition), looked at as such:
    # every pair of a whole run's sends took minutes of Python on a 3-minute run
    in_log: dict[TP, list] = defaultdict(list)
    for s in ops.sends:
        if id(s) in lowest:
            in_log[(s.topic, s.partition)].append(s)
    inverted = set()
    for sends in in_log.values():
        # B is inverted when some A acked before B was invoked sits higher in the log:
        # the A with the highest offset among those acked before B's invoke decides,
        # or the next highest when that one is B itself (a pair is two sends). With
        # the acked sends in ok-time order, the two highest so far are kept for each
        # prefix (every pair took over a minute on a 4-minute run's 80k lines)
        acked = sorted((a for a in sends if a.status == "ok" and a.acks != "0"),
                       key=lambda a: a.ok_time)
        ok_times = [a.ok_time for a in acked]
        top_two: list[tuple] = []  # per prefix of acked: its two highest sends
        best: tuple = ()
        for a in acked:
            best = tuple(sorted(best + (a,), key=lambda x: lowest[id(x)],
                                reverse=True)[:2])
            top_two.append(best)
        for b in sends:
            if b.invoke_time is None:
                continue
            before = bisect.bisect_left(ok_times, b.invoke_time)
            if before and any(a is not b and lowest[id(b)] < lowest[id(a)]
                              for a in top_two[before - 1]):
                inverted.add((b.topic, b.partition, b.value))
    counts["realtime-order"] = len(inverted)

    txn = txn_checks(ops.txns, ops.polls, ops.observes, ops.faults, judged, final_log,
                     complete, test)
    counts.update(txn.counts)
    _order_checks(ops, final_log, txn.rc_log, counts)
    counts["garbage-read"] = sum(1 for _, _, _, v in polled if v is None)
    _observe_checks(ops, test, counts)
    moved, judged_pairs = reference_transitions(
        ops.faults, ops.observes, test, lambda topic: _topic_info(test, topic)[1],
        lambda node: _broker_of(node, test))
    counts.update(moved)
    counts["elr-member-unclean"], judged_pairs["elr-member-unclean"] = \
        reference_unclean_registration(ops.faults, ops.observes, test,
                                       lambda node: _broker_of(node, test))
    counts["replica-divergence"] = _replica_divergence(ops)

    losses, budgets, unprotected = fault_budget(
        ops.faults, ops.observes, judged, lambda topic: _topic_info(test, topic),
        lambda node: _broker_of(node, test),
        lambda topic: (((test or {}).get("topics") or {}).get(topic) or {}).get(
            "min_insync_replicas") is not None)
    beyond = {key for key, n in losses.items() if n > budgets[key] or unprotected[key]}
    lost_in_budget = sum(1 for s in ops.sends
                         if s.status == "ok" and s.acks == "all" and s.value in lost_values
                         and (s.topic, s.partition) not in beyond)

    bad = {name for name in ALWAYS_BAD if counts[name]}
    if lost_in_budget:
        bad.add("lost-write")
    bad |= {name for name in TXN_ALWAYS_BAD if counts[name]}
    unclean = {name for name, t in ((test or {}).get("topics") or {}).items()
               if t.get("unclean_leader_election") is True}
    for name, findings in txn.scoped.items():
        # bad unless a partition it needs went beyond the budget or has unclean on
        if any(not any(key in beyond or key[0] in unclean for key in needs)
               for needs in findings):
            bad.add(name)
    if counts["duplicate"] and (test or {}).get("idempotent_producers") is True:
        bad.add("duplicate")
    incomplete = {f"{t}-{p}" for (t, p), ok in complete.items() if not ok}
    if bad:
        valid: bool | str = False
    elif truncated or incomplete or not judged or not finals or txn.rc_incomplete:
        # v4: an incomplete read_committed final read leaves transactions unjudged
        valid = "unknown"
    else:
        valid = True

    records_of = [(poll, len(poll.records)) for poll in ops.polls if poll.completion == "ok"]
    checked = {
        "sends": sum(1 for _, op in lines if op["f"] == "send" and op["type"] != "invoke"),
        "polled_records": sum(n for poll, n in records_of if not poll.final),
        "final_records": sum(n for poll, n in records_of if poll.final),
        "observations": len(ops.observes),
        "replica_records": sum(len(r["records"]) for r in ops.replicas),
    }
    return Reference(valid=valid, counts=counts, by_acks=by_acks, bad=bad,
                     truncated_lines=truncated, incomplete_partitions=incomplete,
                     checked=checked,
                     page_cache_losses={f"{t}-{p}": n for (t, p), n in losses.items()},
                     budgets={f"{t}-{p}": n for (t, p), n in budgets.items()},
                     unprotected_losses={f"{t}-{p}": n for (t, p), n in unprotected.items()},
                     beyond_budget={f"{t}-{p}" for t, p in beyond},
                     isr_churn=_isr_churn(ops, test), judged=judged_pairs,
                     by_protocol=txn.by_protocol, transactions=txn.transactions,
                     rc_incomplete={f"{t}-{p}" for t, p in txn.rc_incomplete},
                     coverage={**reference_coverage(
                         ops.faults, ops.observes, lambda topic: _topic_info(test, topic)[1],
                         lambda node: _broker_of(node, test)),
                         **(reference_txn_coverage(ops.txns, ops.observes, test)
                            if ops.txns else {})})


def _isr_churn(ops: _Ops, test: dict | None) -> dict[str, tuple[int, int, int]]:
    """docs/CHECKING.md, ISR churn below min ISR: over each two consecutive
    observations of a partition, both with an ISR, either below its min ISR (the
    observation's own, else test.json's): brokers that joined and left (as
    sets), and the time from one below min ISR to the next."""
    last: dict[TP, dict | None] = {}
    out: dict[str, list[int]] = {}

    def below(obs: dict) -> bool:
        low = obs.get("min_isr")
        if low is None:
            low = _topic_info(test, obs["topic"])[1]
        return len(obs["isr"]) < low

    for _, obs in ops.observes:
        key = (obs["topic"], obs["partition"])
        prev, last[key] = last.get(key), obs
        if prev is None or prev.get("isr") is None or obs.get("isr") is None:
            continue
        if not (below(prev) or below(obs)):
            continue
        row = out.setdefault(f"{key[0]}-{key[1]}", [0, 0, 0])
        row[0] += len(set(obs["isr"]) - set(prev["isr"]))
        row[1] += len(set(prev["isr"]) - set(obs["isr"]))
        if below(prev):
            row[2] += obs["time"] - prev["time"]
    return {key: tuple(row) for key, row in out.items()}


def _order_checks(ops: _Ops, final_log: dict, rc_log: dict, counts: dict[str, int]) -> None:
    """nonmonotonic-poll and poll-skip, per poll: each process's records of each
    partition in history order, a seek positioning the partitions it names. A
    read_committed poll is judged against the read_committed final read (rc_log):
    it skips aborted records and markers by right (HISTORY.md v4)."""
    state: dict[tuple[int, str, int], tuple[str, int]] = {}
    back, skip = set(), set()
    for kind, poll in ops.timeline:
        if kind == "seek":
            for p, o in poll.seek.items():
                state[(poll.process, poll.topic, p)] = ("seek", o)
        elif kind == "records":
            for p, o, _ in poll.records:
                key = (poll.process, poll.topic, p)
                prev = state.get(key)
                if prev is not None:
                    was, at = prev
                    if was == "record" and o <= at:
                        back.add(id(poll))
                    expected = at + 1 if was == "record" else at
                    log = rc_log if poll.isolation == "read_committed" else final_log
                    if o > expected and any(expected <= fo < o
                                            for fo, _ in log.get((poll.topic, p), ())):
                        skip.add(id(poll))
                state[key] = ("record", o)
    counts["nonmonotonic-poll"] = len(back)
    counts["poll-skip"] = len(skip)


def _observe_checks(ops: _Ops, test: dict | None, counts: dict[str, int]) -> None:
    """hwm-regression, elr-invariant, elr-outside-replicas, elr-while-disabled,
    fenced-leader, last-known-elr-invalid."""
    last_hwm: dict[TP, int] = {}
    # elr-while-disabled: per partition, its stretch of observations at ELR
    # feature level 0 so far: the first one's (leader, epoch, sorted ISR), the
    # first sorted replicas, and whether the partition changed since
    stretch: dict[TP, dict] = {}
    brokers = set(_node_brokers(test).values())
    nodes_known = bool((test or {}).get("nodes"))
    for _, obs in ops.observes:
        key = (obs["topic"], obs["partition"])
        hwm = obs.get("high_watermark")
        if hwm is not None:
            if key in last_hwm and hwm < last_hwm[key]:
                counts["hwm-regression"] += 1
            last_hwm[key] = hwm
        isr, elr = obs.get("isr") or [], obs.get("elr")
        min_isr = obs.get("min_isr")  # the observation's own, else test.json's
        if min_isr is None:
            min_isr = _topic_info(test, obs["topic"])[1]
        # "ELR and ISR overlap; ELR or LastKnownELR not empty while the ISR has >= min
        # ISR members"; a null list is the cluster's "cannot say": it breaks nothing
        overlap = bool(set(elr or []) & set(isr))
        kept = bool(elr or obs.get("last_known_elr")) and len(isr) >= min_isr
        if overlap or kept:
            counts["elr-invariant"] += 1
        named = (elr or []) + (obs.get("last_known_elr") or [])
        replicas = obs.get("replicas")
        if replicas is not None and any(b not in replicas for b in named):
            counts["elr-outside-replicas"] += 1
        if obs.get("elr_feature") != 0:
            stretch.pop(key, None)
        else:
            state = (obs["leader"], obs["leader_epoch"], sorted(isr))
            seen = stretch.setdefault(key, {"first": state, "replicas": None,
                                            "changed": False})
            if state != seen["first"]:
                seen["changed"] = True
            if replicas is not None:
                if seen["replicas"] is None:
                    seen["replicas"] = sorted(replicas)
                elif sorted(replicas) != seen["replicas"]:
                    seen["changed"] = True
            if seen["changed"] and named:
                counts["elr-while-disabled"] += 1
        fenced = obs.get("fenced")
        if fenced is not None and obs["leader"] >= 0 and obs["leader"] in fenced:
            counts["fenced-leader"] += 1
        lkelr = obs.get("last_known_elr")
        if (obs["leader"] == -1 and not isr and elr == [] and lkelr is not None
                and any(b == -1 or (nodes_known and b not in brokers) for b in lkelr)):
            counts["last-known-elr-invalid"] += 1


def _replica_divergence(ops: _Ops) -> int:
    """Pairs of replicas (last line per broker) that both report a high watermark,
    compared below the lower one; counted per (topic, partition, offset)."""
    last: dict[TP, dict[int, dict]] = defaultdict(dict)
    for line in ops.replicas:
        last[(line["topic"], line["partition"])][line["broker"]] = line
    diverged = set()
    for key, by_broker in last.items():
        marked = [line for line in by_broker.values() if line.get("high_watermark") is not None]
        for i, a in enumerate(marked):
            for b in marked[i + 1:]:
                below = min(a["high_watermark"], b["high_watermark"])
                held_a = {o: v for o, v, _ in a["records"]}
                held_b = {o: v for o, v, _ in b["records"]}
                for o in set(held_a) | set(held_b):
                    if o < below and (o not in held_a or o not in held_b
                                      or held_a[o] != held_b[o]):
                        diverged.add((*key, o))
    return len(diverged)
