"""The reference checker's reading of contract version 4's transactions
(shared/HISTORY.md, "Transactions (v4)"; docs/CHECKING.md, "Transactions"):
the txn line's fields, the final reads at each isolation level, and the rows
txn-aborted-read, txn-lost-write, txn-torn, txn-precommitted-read and
hanging-txn. Written from those pages, one small function per rule, over
Python lists and dicts; it imports nothing of the harness but the contract's
errors (tests/reference_checker.py calls it).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field

TP = tuple[str, int]
TXN_ANOMALIES = ("txn-aborted-read", "txn-lost-write", "txn-torn", "txn-precommitted-read",
                 "hanging-txn")
#: Always bad; the other three are bad within the fault budget with unclean off.
TXN_ALWAYS_BAD = ("txn-aborted-read", "txn-precommitted-read")
KIP_890, PRE_KIP_890 = "kip-890", "pre-kip-890"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


# -- the fields' types (every known kind's line: docs/CHECKING.md, "Lines") -----------


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and INT64_MIN <= v <= INT64_MAX


def _str(name, v):
    return None if isinstance(v, str) else f"field {name!r} must be a string"


def _int(name, v):
    return None if _is_int(v) else f"field {name!r} must be an int"


def _bool(name, v):
    return None if isinstance(v, bool) else f"field {name!r} must be true or false"


def _tuples(*kinds: str):
    """A list of lists, each of len(kinds) items of those kinds (s: a string, i: an int)."""
    def check(name, v):
        if not isinstance(v, list):
            return f"field {name!r} must be a list"
        for entry in v:
            if not isinstance(entry, list) or len(entry) != len(kinds):
                return f"field {name!r} holds {json.dumps(entry)[:30]}, not a list of {len(kinds)}"
            for kind, item in zip(kinds, entry, strict=True):
                if ((kind == "s" and not isinstance(item, str))
                        or (kind == "i" and not _is_int(item))):
                    return f"field {name!r} holds {json.dumps(entry)[:30]}"
        return None
    return check


def _ints_or_nulls(name, v):
    if not isinstance(v, list) or not all(item is None or _is_int(item) for item in v):
        return f"field {name!r} must be a list of ints or nulls"
    return None


def _int_list(name, v):
    if not isinstance(v, list) or not all(_is_int(item) for item in v):
        return f"field {name!r} must be a list of ints"
    return None


def _text_keyed_ints(name, v):
    if not isinstance(v, dict) or not all(_is_int(item) for item in v.values()):
        return f"field {name!r} must be an object of ints"
    return None


def group_offsets(name, v):
    if not isinstance(v, dict) or not all(_text_keyed_ints(name, g) is None for g in v.values()):
        return f"field {name!r} must be an object of objects of ints"
    return None


def isolation(name, v):
    return None if v in ("read_committed", "read_uncommitted") else \
        f"field {name!r} must be read_committed or read_uncommitted"


def _partition_map(name, v):
    if not isinstance(v, dict):
        return f"field {name!r} must be an object {{partition: int}}"
    for key, item in v.items():
        if not re.fullmatch(r"-?[0-9]+", key) or not _is_int(int(key)):
            return f"field {name!r} has key {key!r}, which is not a partition's decimal text"
        if not _is_int(item):
            return f"field {name!r} must hold ints"
    return None


#: The txn line's own fields.
TXN_FIELDS = {
    "txn_id": _str, "sends": _tuples("s", "i", "i"), "abort": _bool,
    "inputs": _tuples("s", "i", "i", "i"), "group": _str, "commit_offsets": _text_keyed_ints,
    "offsets": _ints_or_nulls, "end_time": _int, "error": _str, "client": _str,
}
#: Version 4's fields whose type is one on every kind (last_stable_offset is an
#: object on polls and an int on observe lines: only there).
V4_ANY_KIND = {
    **{k: v for k, v in TXN_FIELDS.items() if k != "error"},
    "isolation": isolation, "position": _partition_map, "open_txn_offsets": _int_list,
    "group_offsets": group_offsets,
}


def required_txn(op: dict) -> tuple[str, ...]:
    """The fields a txn line requires (HISTORY.md's table without "optional")."""
    return ("txn_id",) + {"invoke": ("sends",), "fail": ("error",),
                          "info": ("error",)}.get(op["type"], ())


def misaligned(op: dict) -> str | None:
    """`inputs` is aligned with `sends` (the same length)."""
    if op.get("inputs") is not None and op.get("sends") is not None \
            and len(op["inputs"]) != len(op["sends"]):
        return "field 'inputs' is not aligned with 'sends'"
    return None


def v4_offsets(op: dict) -> list:
    """Version 4's offsets on a line (each must not be negative)."""
    out: list = []
    out += [o for o in op.get("offsets") or [] if o is not None]
    out += [entry[2] for entry in op.get("inputs") or []]
    out += list((op.get("commit_offsets") or {}).values())
    out += list((op.get("position") or {}).values())
    out += list(op.get("open_txn_offsets") or [])
    for group in (op.get("group_offsets") or {}).values():
        out += list(group.values())
    lso = op.get("last_stable_offset")
    if op["f"] == "poll" and isinstance(lso, dict):
        out += list(lso.values())
    elif op["f"] == "observe" and lso is not None:
        out.append(lso)
    return out


# -- operations -------------------------------------------------------------------------


@dataclass
class Txn:
    process: int
    txn_id: str
    sends: list[tuple[str, int, int]]
    abort: bool
    client: str | None
    invoke_time: int
    invoke_position: int
    status: str = "info"  # an invoke never completed counts as info
    offsets: list[int | None] = field(default_factory=list)
    end_time: int | None = None
    completed: bool = False
    #: its completion's position in history order (None: never completed)
    completion_position: int | None = None

    @property
    def outcome(self) -> str:
        if self.status == "ok":
            return "aborted" if self.abort else "committed"
        return "aborted" if self.status == "fail" else "unknown"

    def offset_of(self, i: int) -> int | None:
        return self.offsets[i] if i < len(self.offsets) else None


def protocol(txn: Txn, test: dict | None) -> str:
    version = ((test or {}).get("transactions") or {}).get("transaction_version")
    return KIP_890 if txn.client == "java" and isinstance(version, int) and version >= 2 \
        else PRE_KIP_890


# -- the rows ---------------------------------------------------------------------------


@dataclass
class TxnFindings:
    counts: dict[str, int]
    by_protocol: dict[str, dict[str, int]]
    #: per txn anomaly that is bad within the budget: the partitions each finding
    #: needs excused (all of them beyond the budget or unclean for it not to count)
    scoped: dict[str, list[set[TP]]]
    transactions: list[dict]
    rc_incomplete: set[TP]
    #: the read_committed final read's records of each partition {(offset, value)}
    rc_log: dict[TP, set]


def _rc_final(polls, judged: set[TP], observes, first_final_position: int | None):
    """The read_committed final read of each partition: (its records {(offset,
    value)}, complete, the final LSO (its position) or None)."""
    finals = [p for p in polls if p.final and p.isolation == "read_committed"]
    records: dict[TP, set[tuple[int, int | None]]] = defaultdict(set)
    position: dict[TP, int] = {}
    covered: set[TP] = set()
    open_cover: set[TP] = set()
    lso: dict[TP, int] = {}
    for poll in finals:
        if poll.completion == "ok":
            cover = poll.covers() | set(poll.position)
            covered |= {(poll.topic, p) for p in cover}
            for p, o, v in poll.records:
                records[(poll.topic, p)].add((o, v))
                key = (poll.topic, p)
                position[key] = max(position.get(key, o + 1), o + 1)
            for p, at in poll.position.items():
                key = (poll.topic, p)
                position[key] = max(position.get(key, at), at)
            for p, at in poll.lso.items():
                key = (poll.topic, p)
                lso[key] = max(lso.get(key, at), at)
        elif poll.completion is None:
            cover = set(poll.seek) | poll.earlier
            if not cover:
                cover = {p for t, p in judged if t == poll.topic}
            open_cover |= {(poll.topic, p) for p in cover}
    if first_final_position is not None:
        for _, obs in observes:  # the final observations: after the first final poll's invoke
            if obs["index"] > first_final_position and obs.get("last_stable_offset") is not None:
                key = (obs["topic"], obs["partition"])
                lso[key] = max(lso.get(key, obs["last_stable_offset"]),
                               obs["last_stable_offset"])
    complete: dict[TP, bool] = {}
    final_lso: dict[TP, int | None] = {}
    for key in judged:
        done = (key in covered and key not in open_cover
                and position.get(key, 0) >= lso.get(key, 0))
        complete[key] = done
        final_lso[key] = position.get(key, 0) if done else None
    return records, complete, final_lso, bool(finals)


def _hanging(observes, test: dict | None, cut: int) -> dict[TP, int]:
    """Per partition: 1 when, after `cut` (a time), its LSO keeps one value below its
    high watermark, or one offset stays in its open_txn_offsets, across observations
    spanning more than T (hanging-txn); the offset that hangs."""
    txn = (test or {}).get("transactions") or {}
    parts = [txn.get(k) for k in ("transaction_timeout_ms", "abort_check_interval_ms",
                                  "hang_margin_ms")]
    if not all(_is_int(p) for p in parts):
        return {}
    span_ns = sum(parts) * 1_000_000
    stuck: dict[TP, int] = {}
    lso_run: dict[TP, tuple[int, int]] = {}          # (value, since time)
    open_since: dict[TP, dict[int, int]] = {}        # offset -> since time
    for _, obs in observes:
        if obs["time"] < cut:
            continue
        key = (obs["topic"], obs["partition"])
        lso, hwm = obs.get("last_stable_offset"), obs.get("high_watermark")
        if lso is not None and hwm is not None:
            if lso < hwm:
                value, since = lso_run.get(key, (lso, obs["time"]))
                if value != lso:
                    value, since = lso, obs["time"]
                lso_run[key] = (value, since)
                if obs["time"] - since > span_ns:
                    stuck.setdefault(key, value)
            else:
                lso_run.pop(key, None)
        offsets = obs.get("open_txn_offsets")
        if offsets is not None:
            before = open_since.get(key, {})
            now = {o: before.get(o, obs["time"]) for o in offsets}
            open_since[key] = now
            for o, since in now.items():
                if obs["time"] - since > span_ns:
                    stuck.setdefault(key, o)
    return stuck


def txn_checks(txns: list[Txn], polls, observes, faults, judged: set[TP], final_log: dict,
               ru_complete: dict[TP, bool], test: dict | None) -> TxnFindings:
    """The v4 rows over the transactions, the polls (isolation, position, lso), the
    observations and the read_uncommitted final log and completeness."""
    counts = dict.fromkeys(TXN_ANOMALIES, 0)
    by_protocol = {name: dict.fromkeys((KIP_890, PRE_KIP_890), 0) for name in TXN_ANOMALIES}
    scoped: dict[str, list[set[TP]]] = {name: [] for name in TXN_ANOMALIES}
    finals = [p for p in polls if p.final]
    first_final = min((p.invoke_position for p in finals if p.invoke_position is not None),
                      default=None)
    rc_records, rc_complete, final_lso, has_rc = _rc_final(polls, judged, observes,
                                                           first_final)
    rc_values: dict[TP, set[int]] = {key: {v for _, v in recs if v is not None}
                                     for key, recs in rc_records.items()}
    ru_offsets: dict[TP, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for key, log in final_log.items():
        for o, v in log:
            if v is not None:
                ru_offsets[key][v].append(o)

    def found(name: str, txn: Txn, partitions: set[TP] | None = None) -> None:
        counts[name] += 1
        by_protocol[name][protocol(txn, test)] += 1
        if partitions is not None:
            scoped[name].append(partitions)

    # the read_committed polls' records: (topic, partition, value) -> completion times
    rc_reads: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for poll in polls:
        if poll.completion == "ok" and poll.isolation == "read_committed":
            for p, _, v in poll.records:
                if v is not None:
                    rc_reads[(poll.topic, p, v)].append(poll.completion_time)

    for txn in txns:
        outcome = txn.outcome
        aborted_read: set[int] = set()
        for t, p, v in txn.sends:
            if outcome == "aborted" and rc_reads.get((t, p, v)):
                found("txn-aborted-read", txn)
                aborted_read.add(v)
        for t, p, v in txn.sends:
            # judged where a completion says whether commit was called (end_time)
            if v in aborted_read or outcome == "aborted" or not txn.completed:
                continue
            times = rc_reads.get((t, p, v), [])
            early = [at for at in times if txn.end_time is None or at < txn.end_time]
            if early:
                found("txn-precommitted-read", txn)
        if outcome == "committed":
            for t, p, v in txn.sends:
                key = (t, p)
                offsets = ru_offsets[key].get(v)
                if not offsets:
                    if ru_complete.get(key):
                        found("txn-lost-write", txn, {key})
                    continue
                lso = final_lso.get(key)
                if lso is not None and min(offsets) < lso and v not in rc_values.get(key, ()):
                    found("txn-lost-write", txn, {key})
        if outcome == "unknown" and has_rc:
            keys = {(t, p) for t, p, _ in txn.sends}
            if not keys or not all(rc_complete.get(key) for key in keys):
                continue
            present, lacking = 0, set()
            for t, p, v in txn.sends:
                key = (t, p)
                if v in rc_values.get(key, ()):
                    present += 1
                    continue
                offsets = ru_offsets[key].get(v)
                if offsets and final_lso[key] is not None and min(offsets) >= final_lso[key]:
                    continue  # at or above the final LSO: hanging-txn's
                lacking.add(key)
            if present and lacking:
                found("txn-torn", txn, lacking)

    cut = max([txn.invoke_time for txn in txns] + [f.time for f in faults if f.time is not None],
              default=0)
    for key, _offset in sorted(_hanging(observes, test, cut).items()):
        counts["hanging-txn"] += 1
        # a partition's hang counts under the protocol of the transactions that wrote it
        writers = [txn for txn in txns if any((t, p) == key for t, p, _ in txn.sends)]
        by_protocol["hanging-txn"][protocol(writers[0], test) if writers else PRE_KIP_890] += 1
        scoped["hanging-txn"].append({key})

    tally: dict[tuple, dict[str, int]] = {}
    version = ((test or {}).get("transactions") or {}).get("transaction_version")
    for txn in txns:
        row = tally.setdefault((txn.client, protocol(txn, test)), dict.fromkeys(
            ("committed", "aborted_on_purpose", "failed", "unknown"), 0))
        row[{"committed": "committed", "unknown": "unknown"}.get(
            txn.outcome, "aborted_on_purpose" if txn.status == "ok" else "failed")] += 1
    transactions = [{"client": client, "transaction_version": version, "protocol": proto,
                     **row} for (client, proto), row in sorted(
                        tally.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or "",
                                                       kv[0][1]))]
    return TxnFindings(counts, by_protocol, scoped, transactions,
                       {key for key, done in rc_complete.items() if has_rc and not done},
                       dict(rc_records))
