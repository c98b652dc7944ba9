"""Final-read completeness, from the contract's fields only (HISTORY.md, "Final
reads", and docs/CHECKING.md).

Pure Python over the final polls (few lines, without their records: the side
table) and, per partition, the highest offset among its final records (one
small Spark aggregate), so every rule is unit-tested without Spark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

TP = tuple[str, int]


@dataclass
class PartitionReads:
    """How the final reads of one partition went."""

    #: (a), (b) and (c) of HISTORY.md all hold
    complete: bool
    #: the highest offset among its final records (None: no final record)
    final_top: int | None = None
    #: the highest high watermark a final ok poll reported for it
    final_hwm: int | None = None
    #: index of the last final ok poll that covered it, for examples
    last_final_poll: int | None = None
    #: why it is incomplete, in words ("" when complete)
    why: str = ""


@dataclass
class _Op:
    invoke: dict | None = None
    completion: dict | None = None
    #: partitions the process's earlier final polls of this topic covered
    earlier: set[int] = field(default_factory=set)


def _partitions(mapping: dict | None) -> set[int]:
    return {int(k) for k in (mapping or {})}


def final_read_status(polls: Iterable[dict], judged: set[TP],
                      final_top: dict[TP, int]) -> dict[TP, PartitionReads]:
    """Each judged partition's final-read facts.

    polls: the final poll lines in index order, each a dict with index, process,
    type, topic, seek ({partition text: offset}), hwm_map (idem) and
    record_partitions. final_top: per partition, its highest final record offset.
    """
    ops: list[_Op] = []
    pending: dict[int, _Op] = {}
    covered_by: dict[tuple[int, str], set[int]] = {}
    for line in polls:
        process = line["process"]
        if line["type"] == "invoke":
            op = _Op(invoke=line,
                     earlier=set(covered_by.get((process, line["topic"]), ())))
            ops.append(op)
            pending[process] = op
            covered_by.setdefault((process, line["topic"]), set()).update(
                _partitions(line.get("seek")))
            continue
        op = pending.pop(process, None)
        if op is None:  # a completion without its invoke: it still says what it read
            op = _Op()
            ops.append(op)
        op.completion = line
        if line["type"] == "ok":
            covered_by.setdefault((process, line["topic"]), set()).update(
                set(line.get("record_partitions") or ()) | _partitions(line.get("hwm_map")))

    ok_covered: dict[TP, int] = {}
    hwm: dict[TP, int] = {}
    open_cover: set[TP] = set()
    for op in ops:
        invoke, done = op.invoke, op.completion
        topic = (invoke or done)["topic"]
        seek = _partitions(invoke.get("seek")) if invoke else set()
        if done is None:
            cover = seek | op.earlier
            if not cover:
                cover = {p for t, p in judged if t == topic}
            open_cover.update((topic, p) for p in cover)
            continue
        if done["type"] != "ok":
            continue
        marks = {int(k): v for k, v in (done.get("hwm_map") or {}).items()}
        cover = seek | set(done.get("record_partitions") or ()) | set(marks)
        for p in cover:
            key = (topic, p)
            ok_covered[key] = max(ok_covered.get(key, -1), done["index"])
        for p, mark in marks.items():
            hwm[(topic, p)] = max(hwm.get((topic, p), mark), mark)

    out: dict[TP, PartitionReads] = {}
    for key in sorted(judged):
        top = final_top.get(key)
        reach = top + 1 if top is not None else 0
        why = []
        if key not in ok_covered:
            why.append("no final poll that ended ok covered it")
        if key in hwm and reach < hwm[key]:
            why.append(f"its final records reach offset {reach}, short of the high "
                       f"watermark {hwm[key]} a final poll reported")
        if key in open_cover:
            why.append("a final poll covering it never completed")
        out[key] = PartitionReads(complete=not why, final_top=top, final_hwm=hwm.get(key),
                                  last_final_poll=ok_covered.get(key), why="; ".join(why))
    return out
