"""What the report draws, read with pandas from the tables the checker wrote.

The checker converts history.jsonl into its Parquet cache (checker/parquet_cache.py:
events/ holds every send line and polled record, side/ the observe, fault, replica
and final-poll lines) and, at check time, the report table
(checker/report_tables.py: report/, the poll and fault lines and the lines with
an error). The report reads only those, never history.jsonl, and of each only
the columns a plot or an example needs; it decides no anomaly (what was lost
comes from results.json, report/lost_writes.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from elr_harness.checker.events import (
    ACKS_CODES,
    FINAL_RECORD,
    READ_RECORD,
    SEEK,
    SEND_KINDS,
    TopicKeys,
)
from elr_harness.checker.parquet_cache import (
    EVENTS,
    LAYOUT,
    SIDE,
    is_cached,
    parquet_location,
    source_marker,
)
from elr_harness.checker.report_tables import DONE, REPORT
from elr_harness.checker.staging import Staging, is_plain
from elr_harness.core.errors import BadInput
from elr_harness.core.files import read_json
from elr_harness.report.faults import FaultEvent

PartitionKey = tuple[str, int]
TYPES = {code: name for name, code in SEND_KINDS.items()}
ACKS = {code: name for name, code in ACKS_CODES.items()}
NS = 1e9

_INTS = pa.list_(pa.int64())
#: The columns the report reads, typed as the tables hold them (an empty folder
#: still reads as a table of these columns).
EVENTS_SCHEMA = pa.schema([("tp", pa.int64()), ("kind", pa.int32()), ("process", pa.int64()),
                           ("index", pa.int64()), ("pos", pa.int32()), ("time", pa.int64()),
                           ("acks", pa.int32()), ("value", pa.int64()),
                           ("offset", pa.int64())])
SIDE_SCHEMA = pa.schema([
    ("index", pa.int64()), ("time", pa.int64()), ("process", pa.int64()), ("type", pa.string()),
    ("f", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("error", pa.string()), ("final", pa.bool_()),
    ("seek", pa.map_(pa.string(), pa.int64())), ("fault", pa.string()),
    ("nodes", pa.list_(pa.string())), ("leader", pa.int64()), ("leader_epoch", pa.int64()),
    ("isr", _INTS), ("elr", _INTS), ("last_known_elr", _INTS), ("fenced", _INTS),
    ("node", pa.string()), ("broker", pa.int64()), ("log_end_offset", pa.int64()),
    ("hwm", pa.int64()), ("hwm_map", pa.map_(pa.string(), pa.int64())),
    ("min_isr", pa.int64()), ("replicas", _INTS), ("elr_feature", pa.int64())])
REPORT_SCHEMA = pa.schema([
    ("index", pa.int64()), ("time", pa.int64()), ("process", pa.int64()), ("type", pa.string()),
    ("f", pa.string()), ("topic", pa.string()), ("final", pa.bool_()), ("error", pa.string()),
    ("fault", pa.string()), ("nodes", pa.list_(pa.string())), ("detail", pa.string()),
    ("high_watermark", pa.string())])


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
    #: the topic's min.insync.replicas in effect and the ELR feature's level, as
    #: the observer read them (None: not recorded, or they changed during the read)
    min_isr: int | None = None
    elr_feature: int | None = None


@dataclass
class Series:
    """x/y columns of one plotted series, in time order."""

    x: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class Interest:
    """What an anomaly example wants to see of one op: its matching poll records."""

    values: frozenset[int] = frozenset()
    positions: frozenset[tuple[int, int]] = frozenset()  # (partition, offset)


@dataclass
class CheckedTables:
    """What the report draws, all bounded but the plotted columns (downsampled later)."""

    #: why there is nothing to draw ("" when the tables were read)
    problem: str = ""
    end_time_s: float = 0.0
    #: (series, type) -> completion time (s) and latency (ms)
    latency: dict[tuple[str, str], Series] = field(default_factory=dict)
    #: type -> client completions per second of the run
    throughput: dict[str, np.ndarray] = field(default_factory=dict)
    fault_events: list[FaultEvent] = field(default_factory=list)
    states: dict[PartitionKey, list[ObservedState]] = field(default_factory=dict)
    hwm: dict[PartitionKey, Series] = field(default_factory=dict)
    #: the ops anomaly examples name, as the history wrote them (polls cut down)
    ops: dict[int, dict[str, Any]] = field(default_factory=dict)


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


# --------------------------------------------------------------------------
# Reading the tables
# --------------------------------------------------------------------------


def cache_problem(history: Path) -> str:
    """Why the checker's tables of this history cannot be read, or ''."""
    parquet = parquet_location(history)
    if not is_cached(parquet, source_marker(history)):
        return (f"the checker's Parquet cache of history.jsonl ({parquet}) is missing or "
                "older than the history: `harness check` the run again to draw it")
    if not (parquet / REPORT / DONE).is_file():
        return (f"the checker's Parquet cache ({parquet}) has no report table (checked by "
                "an older harness): `harness check` the run again to draw it")
    return ""


def _read(folder: Path, schema: pa.Schema, columns: list[str], filters=None,
          **options: Any) -> pd.DataFrame:
    """Only these columns (and rows) of one of the checker's tables."""
    named = [*columns, *(f[0] for f in filters or () if f[0] not in columns)]
    return pd.read_parquet(folder, engine="pyarrow", columns=columns, filters=filters,
                           schema=pa.schema([schema.field(c) for c in named]), **options)


def read_checked_tables(history: Path, wanted: dict[int, Interest],
                        max_relevant_records: int = 1000,
                        marked: frozenset[int] = frozenset()) -> CheckedTables:
    """The tables of a checked history; `wanted` names the ops the examples need.

    Polls among them keep only the records some example is about (at most
    max_relevant_records), so a final read of millions of records stays small.
    The observations `marked` names (the coverage examples) keep a row of their
    own in the partition's states, changed or not, so a report can point at them.
    """
    problem = cache_problem(history)
    if problem:
        return CheckedTables(problem=problem)
    parquet = parquet_location(history)
    try:
        layout = read_json(parquet / LAYOUT, f"{parquet / LAYOUT}", max_bytes=1 << 24)
        keys = TopicKeys(tuple(str(t) for t in layout["topics"]))
    except (BadInput, KeyError, TypeError) as err:
        return CheckedTables(problem=f"the checker's Parquet cache cannot be read: {err}")
    if is_plain(parquet):
        return _read_tables(parquet, keys, wanted, max_relevant_records, marked)
    # pyarrow takes a path for a URI (a ':' names a file system) and encodes it as
    # UTF-8 (a run directory's name that is not fails): it reads a plain link to it
    with Staging() as stage:
        return _read_tables(stage.link(parquet, "parquet"), keys, wanted,
                            max_relevant_records, marked)


def _read_tables(parquet: Path, keys: TopicKeys, wanted: dict[int, Interest],
                 max_relevant_records: int, marked: frozenset[int]) -> CheckedTables:
    """read_checked_tables' reading, from the cache at a plain path."""
    events, side, report = parquet / EVENTS, parquet / SIDE, parquet / REPORT
    out = CheckedTables()
    sends = _read(events, EVENTS_SCHEMA, ["kind", "process", "index", "time", "acks"],
                  [("kind", "<=", SEND_KINDS["info"])])
    polls = _read(report, REPORT_SCHEMA, ["index", "time", "process", "type", "final"],
                  [("f", "==", "poll")])
    observed = _read(side, SIDE_SCHEMA, ["index", "time", "topic", "partition", "leader",
                                         "leader_epoch", "isr", "elr", "last_known_elr",
                                         "fenced", "hwm", "min_isr", "elr_feature"],
                     [("f", "==", "observe")],
                     dtype_backend="pyarrow")
    side_times = _read(side, SIDE_SCHEMA, ["time"])["time"]
    out.end_time_s = max([float(s.max()) / NS for s in (sends["time"], polls["time"],
                                                         side_times) if len(s)], default=0.0)
    _latency_and_throughput(out, sends, polls)
    del sends, polls
    faults = _read(report, REPORT_SCHEMA, ["index", "time", "type", "fault", "nodes", "detail"],
                   [("f", "==", "fault"), ("type", "!=", "invoke")])
    out.fault_events = [_fault_event(r) for r in faults.itertuples(index=False)]
    _observed(out, observed.sort_values("index", kind="stable"), marked)
    del observed
    if wanted:
        out.ops = _ops(parquet, keys, wanted, max_relevant_records)
    return out


def _paired(df: pd.DataFrame, is_invoke: pd.Series) -> pd.DataFrame:
    """The completions of df that follow an invoke of the same process, with latency_ns
    and the invoke's row number `invoke_row` in df (a process has one op in flight:
    its completion is its next line)."""
    order = np.lexsort((df["index"].to_numpy(), df["process"].to_numpy()))
    invoke = is_invoke.to_numpy()[order]
    process = df["process"].to_numpy()[order]
    time = df["time"].to_numpy()[order]
    after_invoke = np.zeros(len(order), dtype=bool)
    after_invoke[1:] = invoke[:-1] & (process[1:] == process[:-1]) & ~invoke[1:]
    rows = order[after_invoke]
    done = df.iloc[rows].copy()
    previous = np.flatnonzero(after_invoke) - 1
    done["latency_ns"] = time[after_invoke] - time[previous]
    done["invoke_row"] = order[previous]
    return done


def _add_series(out: CheckedTables, name: str, typ: str, rows: pd.DataFrame) -> None:
    rows = rows.sort_values(["time", "index"], kind="stable")
    out.latency[(name, typ)] = Series(rows["time"].to_numpy() / NS,
                                      rows["latency_ns"].to_numpy() / 1e6)


def _latency_and_throughput(out: CheckedTables, sends: pd.DataFrame,
                            polls: pd.DataFrame) -> None:
    """Latency of each completed client op by f/acks and outcome, and completions per
    second by outcome."""
    done_sends = _paired(sends, sends["kind"] == SEND_KINDS["invoke"])
    for (acks, kind), rows in done_sends.groupby(["acks", "kind"]):
        _add_series(out, f"send acks={ACKS.get(int(acks), acks)}", TYPES[int(kind)], rows)
    polls = polls.assign(final=polls["final"].fillna(False).astype(bool))
    done_polls = _paired(polls, polls["type"] == "invoke")
    # a poll is final when its invoke or its completion says so
    done_polls["final"] = done_polls["final"].to_numpy() | \
        polls["final"].to_numpy()[done_polls["invoke_row"].to_numpy()]
    for (final, typ), rows in done_polls.groupby(["final", "type"]):
        _add_series(out, "final poll" if final else "poll", str(typ), rows)

    completions = [
        (sends.loc[(sends["kind"] != SEND_KINDS["invoke"]) & (sends["process"] >= 0),
                   ["kind", "time"]].assign(type=lambda d: d["kind"].map(TYPES))),
        polls.loc[(polls["type"] != "invoke") & (polls["process"] >= 0), ["type", "time"]],
    ]
    both = pd.concat([c[["type", "time"]] for c in completions], ignore_index=True)
    if both.empty:
        return
    seconds = (both["time"].to_numpy() // int(NS)).clip(min=0)
    length = int(seconds.max()) + 1
    for typ in ("ok", "fail", "info"):
        picked = seconds[(both["type"] == typ).to_numpy()]
        if len(picked):
            out.throughput[typ] = np.bincount(picked, minlength=length)


def _fault_event(r) -> FaultEvent:
    nodes = r.nodes
    return FaultEvent(index=int(r.index), time_s=r.time / NS, kind=str(r.fault),
                      nodes=tuple(str(n) for n in nodes) if nodes is not None else (),
                      type=str(r.type), detail=_json_object(r.detail) or {})


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def _ints(value: Any) -> tuple[int, ...] | None:
    if _missing(value):
        return None
    return tuple(sorted(int(v) for v in value if v is not None))


def _int_or_none(value: Any) -> int | None:
    return None if _missing(value) else int(value)


#: The columns of an observed state, in ObservedState's order after time and index.
STATE_COLUMNS = ("leader", "leader_epoch", "isr", "elr", "last_known_elr", "fenced",
                 "min_isr", "elr_feature")


def _state_text(obs: pd.DataFrame) -> np.ndarray:
    """Each row's state as one text, in Arrow's kernels (a history holds up to
    millions of observations): equal states have equal texts, up to list order."""
    parts = []
    for name in STATE_COLUMNS:
        column = pa.array(obs[name].array)
        if pa.types.is_list(column.type):
            column = pc.binary_join(pc.cast(column, pa.list_(pa.string())), ",")
        else:
            column = pc.cast(column, pa.string())
        parts.append(pc.fill_null(column, "~"))
    return np.asarray(pc.binary_join_element_wise(*parts, "|"), dtype=object)


def _observed(out: CheckedTables, obs: pd.DataFrame, marked: frozenset[int]) -> None:
    """Each partition's observed states where they changed (and at the marked
    observations), and its high watermark where it changed."""
    if obs.empty:
        return
    # a cheap text key of each state finds the rows that may differ from the row
    # before them (the exact, order-blind comparison runs on those few only)
    text = _state_text(obs)
    first_of = obs.groupby(["topic", "partition"], sort=False).cumcount().to_numpy() == 0
    prev_text = obs.assign(_t=text).groupby(["topic", "partition"], sort=False)["_t"].shift()
    own_row = np.isin(obs["index"].to_numpy(dtype=np.int64), np.fromiter(marked, np.int64))
    maybe = first_of | (text != prev_text.to_numpy()) | own_row
    last: dict[PartitionKey, tuple] = {}
    for r in obs[maybe].itertuples(index=False):
        key = (str(r.topic), int(r.partition))
        state = (_int_or_none(r.leader), _int_or_none(r.leader_epoch), _ints(r.isr) or (),
                 _ints(r.elr), _ints(r.last_known_elr), _ints(r.fenced),
                 _int_or_none(r.min_isr), _int_or_none(r.elr_feature))
        if last.get(key) != state or int(r.index) in marked:
            last[key] = state
            out.states.setdefault(key, []).append(ObservedState(r.time / NS, int(r.index),
                                                                *state))
    hwm = obs[obs["hwm"].notna()]
    before = hwm.groupby(["topic", "partition"], sort=False)["hwm"].shift()
    # a partition's first high watermark has none before it (NA): a change too
    changed = (hwm["hwm"] != before).fillna(True).astype(bool)
    for (t, p), rows in hwm[changed].groupby(["topic", "partition"], sort=False):
        out.hwm[(str(t), int(p))] = Series(rows["time"].to_numpy() / NS,
                                           rows["hwm"].to_numpy(dtype=float))


# --------------------------------------------------------------------------
# The ops anomaly examples name
# --------------------------------------------------------------------------


def _ops(parquet: Path, keys: TopicKeys, wanted: dict[int, Interest],
         cap: int) -> dict[int, dict[str, Any]]:
    """Each wanted op as the history wrote it, from the tables that hold its fields."""
    indices = sorted(wanted)
    where = [("index", "in", indices)]
    events = _read(parquet / EVENTS, EVENTS_SCHEMA, list(EVENTS_SCHEMA.names), where)
    side = _read(parquet / SIDE, SIDE_SCHEMA, list(SIDE_SCHEMA.names), where)
    report = _read(parquet / REPORT, REPORT_SCHEMA, list(REPORT_SCHEMA.names), where)
    ops: dict[int, dict[str, Any]] = {}
    for r in report.to_dict("records"):
        ops[int(r["index"])] = _line(r)
    for r in side.to_dict("records"):
        op = ops.setdefault(int(r["index"]), {})
        op.update(_side_line(r, op))
    sends = events[events["kind"] <= SEND_KINDS["info"]]
    for r in sends.to_dict("records"):
        op = ops.setdefault(int(r["index"]), {})
        topic, partition = keys.decode(int(r["tp"]))
        op.update(index=int(r["index"]), time=int(r["time"]), process=int(r["process"]),
                  type=TYPES[int(r["kind"])], f="send", topic=topic, partition=partition,
                  acks=ACKS.get(_int_or_none(r["acks"])), value=_int_or_none(r["value"]))
        if op["type"] == "ok":
            op["offset"] = _int_or_none(r["offset"])
    records = events[events["kind"].isin([FINAL_RECORD, READ_RECORD])].sort_values(
        ["index", "pos"], kind="stable")
    for index, rows in records.groupby("index", sort=False):
        op = ops.get(int(index))
        if op is None:
            continue
        tps = [keys.decode(int(tp))[1] for tp in rows["tp"].to_numpy()]
        found = [[p, _int_or_none(o), _int_or_none(v)] for p, o, v in
                 zip(tps, rows["offset"].to_numpy(), rows["value"].to_numpy(), strict=True)]
        interest = wanted[int(index)]
        op["records_total"] = len(found)
        op["records_relevant"] = matching_records(found, interest)[:cap]
        op["records_first"] = found[:min(cap, 3)]
    for r in events[events["kind"] == SEEK].to_dict("records"):
        op = ops.get(int(r["index"]))
        if op is not None:
            op.setdefault("seek", {})[str(keys.decode(int(r["tp"]))[1])] = \
                _int_or_none(r["offset"])
    for op in ops.values():
        if op.get("f") == "poll" and op.get("type") == "ok":
            op.setdefault("records_total", 0)
    return ops


def _clean(value: Any) -> Any:
    """A table's cell as the history's JSON had it (arrays as lists, NaN as absent)."""
    if isinstance(value, np.ndarray):
        return [_clean(v) for v in value.tolist()]
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and np.isnan(value):
        return None
    if isinstance(value, np.integer):
        return int(value)
    return value


def _json_object(text: Any) -> dict | None:
    """An object the report table keeps as its JSON text (None for anything else)."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _line(r: dict[str, Any]) -> dict[str, Any]:
    """A line of the report table: poll, fault, or a line with an error."""
    op: dict[str, Any] = {k: _clean(r[k]) for k in ("index", "time", "process", "type", "f",
                                                     "topic")}
    if op["f"] == "poll":
        if r["final"]:
            op["final"] = True
        hwm = _json_object(r["high_watermark"])
        if hwm is not None:
            op["high_watermark"] = hwm
    if _clean(r["error"]) is not None:
        op["error"] = r["error"]
    if op["f"] == "fault":
        op["fault"] = r["fault"]
        op["nodes"] = _clean(r["nodes"]) or []
        detail = _json_object(r["detail"])
        if detail:
            op["detail"] = detail
    return op


def _side_line(r: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """The fields of a side-table line (observe, fault, replica, final poll)."""
    f = r["f"]
    op: dict[str, Any] = {k: _clean(r[k]) for k in ("index", "time", "process", "type", "f",
                                                     "topic")}
    if f == "observe":
        op.update(partition=_int_or_none(r["partition"]), leader=_int_or_none(r["leader"]),
                  leader_epoch=_int_or_none(r["leader_epoch"]), isr=_clean(r["isr"]),
                  elr=_clean(r["elr"]), last_known_elr=_clean(r["last_known_elr"]))
        if _int_or_none(r["hwm"]) is not None:
            op["high_watermark"] = _int_or_none(r["hwm"])
        # optional: shown where the line had them
        optional = {"fenced": _clean(r["fenced"]), "min_isr": _int_or_none(r["min_isr"]),
                    "replicas": _clean(r["replicas"]),
                    "elr_feature": _int_or_none(r["elr_feature"])}
        op.update({k: v for k, v in optional.items() if v is not None})
    elif f == "replica":
        op.update(partition=_int_or_none(r["partition"]), node=r["node"],
                  broker=_int_or_none(r["broker"]),
                  log_end_offset=_int_or_none(r["log_end_offset"]))
        if _int_or_none(r["hwm"]) is not None:
            op["high_watermark"] = _int_or_none(r["hwm"])
    elif f == "poll":
        op["final"] = bool(r["final"])
        if r["hwm_map"] is not None:
            op["high_watermark"] = {str(k): _int_or_none(v) for k, v in r["hwm_map"]}
    elif f == "fault":
        op.update(fault=r["fault"], nodes=_clean(r["nodes"]) or [])
    if _clean(r["error"]) is not None:
        op["error"] = r["error"]
    return {k: v for k, v in op.items() if k not in known or v is not None}
