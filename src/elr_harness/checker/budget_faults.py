"""The nemesis's faults as the fault budget reads them (docs/CHECKING.md, fault
budget), in plain Python over the few fault lines.

- losses: each node a `page-cache-loss`, or a `disk-fault` whose detail says
  `"dropped": true`, hit or may have hit (ended ok or info, or never completed);
- min ISR: for each topic, the lowest min.insync.replicas that may be in effect
  after each `min-isr-change` (ok: its `to`; info or never completed: it may or
  may not have happened, so both its `from` and `to` stay possible);
- protection off: from an `eligible.leader.replicas.version` `feature-change` to
  0 (ok, info or never completed) until one back to a level >= 1 that ended ok;
  the losses in that time put their brokers' partitions beyond the budget.

A fault sits at its completion's index, or at its invoke's when it never
completed; its detail is its invoke's, updated by its completion's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from elr_harness.core.fault_meanings import FEATURE, MIN_ISR, drops_unflushed, meaning_of
from elr_harness.core.history import (
    CHANGED_FEATURE,
    CHANGED_FROM,
    CHANGED_TO,
    CHANGED_TOPIC,
    ELR_FEATURE,
)

#: A history's end, as an index no line reaches.
HISTORY_END = (1 << 63) - 1

#: The range a min ISR of a change's detail must be in to count (Kafka's
#: min.insync.replicas is an int32 of at least 1); others change nothing.
MIN_ISR_RANGE = (1, (1 << 31) - 1)


@dataclass(frozen=True)
class FaultOp:
    """One nemesis fault that happened or may have (ok or info)."""

    index: int
    fault: str
    status: str
    nodes: tuple[str, ...]
    detail: dict = field(default_factory=dict)
    #: the time of the line it sits at (index)
    time: int | None = None
    #: where it began: its invoke's index (a completion without one: its own)
    place: int = -1
    #: invoked and never completed (it may still be under way at the history's end)
    open: bool = False

    def in_force(self) -> tuple[int, int]:
        """From its invoke to its completion; one never completed to the history's end."""
        return self.place, HISTORY_END if self.open else self.index


def _detail(line: dict) -> dict:
    """A line's detail object (the side table holds it as JSON text)."""
    value = line.get("detail")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def paired_faults(lines: Iterable[dict]) -> list[FaultOp]:
    """The faults that ended ok or info, and the invokes never completed (as info),
    in the order they sit in.

    The nemesis's completions are paired with its invokes first in, first out by
    (process, kind, nodes): its faults may overlap, so "the next completion" alone
    could pair the wrong ones. lines: its fault lines in index order.
    """
    pending: dict[tuple, list[dict]] = {}
    done: list[FaultOp] = []
    for line in lines:
        key = (line["process"], line["fault"], tuple(line["nodes"] or ()))
        if line["type"] == "invoke":
            pending.setdefault(key, []).append(line)
            continue
        waiting = pending.get(key)
        invoke = waiting.pop(0) if waiting else {}
        if line["type"] in ("ok", "info"):
            began = invoke or line
            done.append(FaultOp(line["index"], line["fault"], line["type"], key[2],
                                {**_detail(invoke), **_detail(line)}, line.get("time"),
                                began["index"]))
    for waiting in pending.values():
        done += [FaultOp(line["index"], line["fault"], "info", tuple(line["nodes"] or ()),
                         _detail(line), line.get("time"), line["index"], open=True)
                 for line in waiting]
    return sorted(done, key=lambda op: op.index)


def _is_loss(op: FaultOp) -> bool:
    return drops_unflushed(op.fault, op.detail)


def loss_hits(faults: list[FaultOp]) -> list[tuple[int, str]]:
    """(index, node) of each node a loss hit or may have hit."""
    return sorted((op.index, node) for op in faults if _is_loss(op) for node in op.nodes)


def page_cache_loss_nodes(lines: Iterable[dict]) -> list[tuple[int, str]]:
    """loss_hits of the fault lines (index order)."""
    return loss_hits(paired_faults(lines))


def _level(value: object) -> int | None:
    """An int of a detail (a bool is none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def unprotected_hits(faults: list[FaultOp]) -> list[tuple[int, str]]:
    """The loss hits while the ELR feature was (or may have been) off."""
    off = False
    hits = []
    for op in faults:
        if meaning_of(op.fault).admin_change == FEATURE \
                and op.detail.get(CHANGED_FEATURE) == ELR_FEATURE:
            to = _level(op.detail.get(CHANGED_TO))
            if to == 0:
                off = True
            elif to is not None and to >= 1 and op.status == "ok":
                off = False
        elif off and _is_loss(op):
            hits += [(op.index, node) for node in op.nodes]
    return sorted(hits)


def _min_isr(value: object) -> int | None:
    level = _level(value)
    return level if level is not None and MIN_ISR_RANGE[0] <= level <= MIN_ISR_RANGE[1] \
        else None


def min_isr_steps(faults: list[FaultOp], topic: str, base: int,
                  own_min_isr: bool = False) -> list[tuple[int, int]]:
    """(index, lowest min ISR possibly in effect from there on) after each change that
    applies to `topic` (its own; the cluster default's, a topic of null, only when
    the topic has no min ISR of its own: Kafka resolves a topic's setting before the
    cluster default), from `base` (test.json's). A change ok sets its `to`; one that
    ended info adds its `from` and `to` to what may be in effect; a value that is
    no int from 1 to 2^31 - 1 is left out."""
    steps: list[tuple[int, int]] = []
    lowest = base
    for op in faults:
        if meaning_of(op.fault).admin_change != MIN_ISR:
            continue
        named = op.detail.get(CHANGED_TOPIC)
        if isinstance(named, str) and named != topic:
            continue
        if not isinstance(named, str) and own_min_isr:
            continue  # the cluster default's: not in effect for a topic with its own
        to = _min_isr(op.detail.get(CHANGED_TO))
        if op.status == "ok":
            if to is None:
                continue
            lowest = to
        else:
            values = [v for v in (to, _min_isr(op.detail.get(CHANGED_FROM))) if v is not None]
            if not values:
                continue
            lowest = min([lowest, *values])
        steps.append((op.index, lowest))
    return steps


def per_partition(hits: list[tuple[int, str]], replicas: dict[tuple[str, int], list[int]],
                  partitions: Iterable[tuple[str, int]],
                  broker_id: Callable[[str], int | None]) -> dict[tuple[str, int], int]:
    """How many of the hits fell on each partition's replicas (observed_replicas;
    every broker of a partition never observed): the budget's own count, in Python
    for the few hits while the ELR feature was off."""
    brokers = [b for _, node in hits if (b := broker_id(node)) is not None]
    counts = {}
    for key in partitions:
        mine = replicas.get(key)
        counts[key] = sum(1 for b in brokers if mine is None or b in mine)
    return counts
