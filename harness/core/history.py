"""The history contract (shared/HISTORY.md, version 3) in code.

The one place the contract's names, process ids and levels are spelled: the
recorder, the nemesis, the checker and the report import them from here. The
field tables the checker validates lines against are in checkers/lines.py,
which builds its SQL from them.
"""

from __future__ import annotations

from enum import StrEnum

#: The history's file name in a run directory.
HISTORY_NAME = "history.jsonl"

#: Process ids of the lines no client writes.
NEMESIS_PROCESS = -1
OBSERVER_PROCESS = -2
COLLECTOR_PROCESS = -3

#: acks levels as the history spells them, strongest first (the order reports use).
ACKS_LEVELS = ("all", "1", "0")


class Kind(StrEnum):
    """A line's `f`."""

    SEND = "send"
    POLL = "poll"
    FAULT = "fault"
    OBSERVE = "observe"
    REPLICA = "replica"


class OpType(StrEnum):
    """A line's `type`."""

    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


class Fault(StrEnum):
    """A fault line's `fault`: what the nemesis did. Controller faults carry their
    own names, so a report tells a controller kill from a broker kill; a leader
    bounce is a pause (SIGSTOP past the session timeout) under its own name. A
    reassignment of a partition's replicas lasts until its `reassign-end`, whose
    detail says whether it was cancelled or had completed."""

    PARTITION = "partition"
    CONTROLLER_PARTITION = "controller-partition"
    ISOLATE_FROM_CONTROLLERS = "isolate-from-controllers"
    HEAL = "heal"
    KILL = "kill"
    CONTROLLER_KILL = "controller-kill"
    STOP = "stop"
    START = "start"
    PAUSE = "pause"
    RESUME = "resume"
    BOUNCE_LEADER = "bounce-leader"
    PAGE_CACHE_LOSS = "page-cache-loss"
    REASSIGN = "reassign"
    REASSIGN_END = "reassign-end"


#: Which fault ends which: a fault is in force from its `ok` (or `info`) until one
#: of these acts on the same nodes.
ENDED_BY: dict[Fault, tuple[Fault, ...]] = {
    Fault.HEAL: (Fault.PARTITION, Fault.CONTROLLER_PARTITION, Fault.ISOLATE_FROM_CONTROLLERS),
    Fault.START: (Fault.KILL, Fault.STOP, Fault.PAGE_CACHE_LOSS, Fault.CONTROLLER_KILL),
    Fault.RESUME: (Fault.PAUSE, Fault.BOUNCE_LEADER),
    Fault.REASSIGN_END: (Fault.REASSIGN,),
}

#: Faults that count against KIP-966's fault budget (HISTORY.md, "Fault budget"):
#: an unclean shutdown that drops a replica's unflushed data.
BUDGET_FAULTS = (Fault.PAGE_CACHE_LOSS,)
