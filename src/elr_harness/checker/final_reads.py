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
    #: contract v4: its read_committed final read is complete (None: the run made
    #: none), and the final LSO, the position that complete read reached
    rc_complete: bool | None = None
    final_lso: int | None = None


@dataclass
class _Op:
    invoke: dict | None = None
    completion: dict | None = None
    #: partitions the process's earlier final polls of this topic covered
    earlier: set[int] = field(default_factory=set)


def _partitions(mapping: dict | None) -> set[int]:
    return {int(k) for k in (mapping or {})}


def _unfinished_cover(op, topic: str, seek: set[int], judged: set[TP]) -> set[TP]:
    """What a final invoke without a completion covers (docs/CHECKING.md): its seek's
    partitions and those its process's earlier final polls of the topic covered;
    with neither, every judged partition of its topic."""
    cover = seek | op.earlier or {p for t, p in judged if t == topic}
    return {(topic, p) for p in cover}


def is_read_committed(line: dict) -> bool:
    return line.get("isolation") == "read_committed"


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
    position: dict[TP, int] = {}
    open_cover: set[TP] = set()
    for op in ops:
        invoke, done = op.invoke, op.completion
        # the read_uncommitted final read is the whole log; the read_committed one is
        # rc_final_status's
        if is_read_committed(invoke or done):
            continue
        topic = (invoke or done)["topic"]
        seek = _partitions(invoke.get("seek")) if invoke else set()
        if done is None:
            open_cover.update(_unfinished_cover(op, topic, seek, judged))
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
        for p, at in (done.get("position") or {}).items():
            key = (topic, int(p))
            position[key] = max(position.get(key, at), at)

    out: dict[TP, PartitionReads] = {}
    for key in sorted(judged):
        top = final_top.get(key)
        # v4: a trailing marker or aborted record is read past, not returned
        reach = max(top + 1 if top is not None else 0, position.get(key, 0))
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


def rc_final_status(polls: Iterable[dict], judged: set[TP], rc_top: dict[TP, int],
                    final_observed_lso: dict[TP, int],
                    reads: dict[TP, PartitionReads]) -> None:
    """Each judged partition's read_committed final read (contract v4), into
    reads[key].rc_complete and .final_lso: complete when a read_committed final poll
    that ended ok covered it (returned records of it, sought it, or reported its
    high watermark, position or last stable offset), none covering it is still open,
    and its position (the largest reported, or its largest record's offset + 1)
    reaches the highest LSO a read_committed final poll or a final observation
    (final_observed_lso) reported; the final LSO is that position. A run without a
    read_committed final poll has none (None).

    polls: every final poll line in index order (as final_read_status takes them);
    rc_top: per partition, its highest read_committed final record offset.
    """
    polls = list(polls)
    if not any(is_read_committed(line) for line in polls):
        return
    pending: dict[int, _Op] = {}
    ops: list[_Op] = []
    covered_by: dict[tuple[int, str], set[int]] = {}
    for line in polls:
        process = line["process"]
        if line["type"] == "invoke":
            op = _Op(invoke=line, earlier=set(covered_by.get((process, line["topic"]), ())))
            ops.append(op)
            pending[process] = op
            covered_by.setdefault((process, line["topic"]), set()).update(
                _partitions(line.get("seek")))
            continue
        op = pending.pop(process, None)
        if op is None:
            op = _Op()
            ops.append(op)
        op.completion = line
        if line["type"] == "ok":
            covered_by.setdefault((process, line["topic"]), set()).update(
                _rc_cover(line) if is_read_committed(op.invoke or line)
                else set(line.get("record_partitions") or ()) | _partitions(line.get("hwm_map")))
    covered: set[TP] = set()
    open_cover: set[TP] = set()
    position = {key: top + 1 for key, top in rc_top.items()}
    lso = dict(final_observed_lso)
    for op in ops:
        invoke, done = op.invoke, op.completion
        if not is_read_committed(invoke or done):
            continue
        topic = (invoke or done)["topic"]
        seek = _partitions(invoke.get("seek")) if invoke else set()
        if done is None:
            open_cover.update(_unfinished_cover(op, topic, seek, judged))
            continue
        if done["type"] != "ok":
            continue
        covered.update((topic, p) for p in seek | _rc_cover(done))
        for p, at in (done.get("position") or {}).items():
            key = (topic, int(p))
            position[key] = max(position.get(key, at), at)
        for p, at in (done.get("lso_map") or {}).items():
            key = (topic, int(p))
            lso[key] = max(lso.get(key, at), at)
    for key in judged:
        reached = position.get(key, 0)
        complete = key in covered and key not in open_cover and reached >= lso.get(key, 0)
        facts = reads.get(key)
        if facts is not None:
            facts.rc_complete = complete
            facts.final_lso = reached if complete else None


def _rc_cover(line: dict) -> set[int]:
    """The partitions a read_committed final ok poll covers beside its seek."""
    return (set(line.get("record_partitions") or ()) | _partitions(line.get("hwm_map"))
            | _partitions(line.get("position")) | _partitions(line.get("lso_map")))
