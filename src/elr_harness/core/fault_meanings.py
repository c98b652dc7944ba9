"""What each fault kind means to the contract (HISTORY.md), in one table.

The checker reads a fault line by these properties alone and names no kind: which
kinds shut a broker down uncleanly, which end its process at the harness's hand,
which bring a node back, change what the rules rest on, fail a controller over,
fail a disk, or may drop unflushed data, and what ends each. A new kind is a row
here (and its module in nemesis/faults/); no checker file learns its name.

Where two rules see one kind differently, a property says why. A `disk-fault`
is an unclean shutdown (the broker does not write its clean-shutdown marker, so
KIP-966 drops it from every ELR when it registers: `elr-member-dropped`), but not
a crash: its process is not ended by the harness (Kafka takes the log dir, or the
broker, down itself), so coverage's "unclean shutdown of an ELR member" (kill and
power loss, HISTORY.md's coverage list) leaves it to its own state, "a disk fault
of an ISR or ELR member".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from elr_harness.core.history import DROPPED, Fault

#: Values of Meaning.shutdown.
UNCLEAN, CLEAN = "unclean", "clean"
#: Values of Meaning.admin_change: what the change changes.
MIN_ISR, FEATURE, REPLICAS = "min-isr", "feature", "replicas"
#: Meaning.drops_unflushed: always (else the detail key that must be true).
ALWAYS = "always"


@dataclass(frozen=True)
class Meaning:
    """A fault kind's properties as the contract defines them."""

    #: the broker goes down: UNCLEAN (no clean-shutdown marker), CLEAN (Kafka's own
    #: controlled shutdown), or None
    shutdown: str | None = None
    #: its process ends at the harness's hand, with no shutdown of its own (kill -9,
    #: a power cut)
    crash: bool = False
    #: it brings a node back (its process started again)
    brings_back: bool = False
    #: it changes what the rules rest on: MIN_ISR, FEATURE or REPLICAS (None: no)
    admin_change: str | None = None
    #: it acts on the active controller, so the quorum elects another
    controller_failover: bool = False
    #: it fails a broker's log directory
    disk_failure: bool = False
    #: it may drop a replica's unflushed data: ALWAYS, or the detail key whose value
    #: true says it did (None: never); such a fault counts against the fault budget
    drops_unflushed: str | None = None
    #: the kinds whose line ends it (a change: a later line of its own kind with
    #: RESTORE in its detail); empty: nothing ends it
    ended_by: tuple[str, ...] = ()
    #: its line only ends others (a heal, a start, a resume, an unthrottle, a
    #: reassignment's end): it begins nothing
    only_ends: bool = False


#: Every kind of the contract, by its properties.
MEANINGS: dict[str, Meaning] = {
    Fault.PARTITION: Meaning(ended_by=(Fault.HEAL,)),
    Fault.CONTROLLER_PARTITION: Meaning(controller_failover=True, ended_by=(Fault.HEAL,)),
    Fault.ISOLATE_FROM_CONTROLLERS: Meaning(ended_by=(Fault.HEAL,)),
    Fault.ONE_WAY_PARTITION: Meaning(ended_by=(Fault.HEAL,)),
    Fault.HEAL: Meaning(only_ends=True),
    Fault.KILL: Meaning(shutdown=UNCLEAN, crash=True, ended_by=(Fault.START,)),
    Fault.CONTROLLER_KILL: Meaning(controller_failover=True, ended_by=(Fault.START,)),
    Fault.STOP: Meaning(shutdown=CLEAN, ended_by=(Fault.START,)),
    Fault.START: Meaning(brings_back=True, only_ends=True),
    Fault.PAUSE: Meaning(ended_by=(Fault.RESUME,)),
    Fault.BOUNCE_LEADER: Meaning(ended_by=(Fault.RESUME,)),
    Fault.RESUME: Meaning(only_ends=True),
    Fault.PAGE_CACHE_LOSS: Meaning(shutdown=UNCLEAN, crash=True, drops_unflushed=ALWAYS,
                                   ended_by=(Fault.START,)),
    # a disk fault ends when the broker is started again on a healthy disk
    Fault.DISK_FAULT: Meaning(shutdown=UNCLEAN, disk_failure=True, drops_unflushed=DROPPED,
                              ended_by=(Fault.START,)),
    Fault.MIN_ISR_CHANGE: Meaning(admin_change=MIN_ISR, ended_by=(Fault.MIN_ISR_CHANGE,)),
    Fault.FEATURE_CHANGE: Meaning(admin_change=FEATURE, ended_by=(Fault.FEATURE_CHANGE,)),
    Fault.SLOW_NETWORK: Meaning(ended_by=(Fault.UNTHROTTLE,)),
    # its own kind: a partition's heal neither removes a slow network's shaping nor
    # ends it, so the two can be in force at once and drawn apart
    Fault.UNTHROTTLE: Meaning(only_ends=True),
    Fault.REASSIGN: Meaning(admin_change=REPLICAS, ended_by=(Fault.REASSIGN_END,)),
    # a reassignment's end is part of it: the replicas change until it is done
    Fault.REASSIGN_END: Meaning(admin_change=REPLICAS, only_ends=True),
}

#: A kind the table does not hold means nothing to the checker.
NOTHING = Meaning()


def meaning_of(kind: str) -> Meaning:
    """The properties of a fault line's kind (NOTHING for a kind not in MEANINGS)."""
    return MEANINGS.get(kind, NOTHING)


def kinds_where(holds: Callable[[Meaning], bool]) -> tuple[str, ...]:
    """The kinds whose properties satisfy `holds`, in the table's order."""
    return tuple(kind for kind, meaning in MEANINGS.items() if holds(meaning))


def drops_unflushed(kind: str, detail: dict) -> bool:
    """Whether a fault line of `kind` with `detail` dropped, or may have dropped, a
    replica's unflushed data (it counts against the fault budget)."""
    how = meaning_of(kind).drops_unflushed
    return how == ALWAYS or (how is not None and detail.get(how) is True)


def _ended_by() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for kind, meaning in MEANINGS.items():
        for end in meaning.ended_by:
            out[end] = (*out.get(end, ()), kind)
    return out


#: Which fault ends which: a fault is in force from its `ok` (or `info`) until one
#: of these acts on the same nodes (a config or feature change: until the line of
#: its own kind that restores it, history.RESTORED_BY_SELF). The table's
#: `ended_by`, by the ending kind.
ENDED_BY: dict[str, tuple[str, ...]] = _ended_by()

#: Faults that count against KIP-966's fault budget (HISTORY.md, "Fault budget"):
#: an unclean shutdown that drops a replica's unflushed data, and a disk fault
#: whose detail says it may have dropped unflushed data (DROPPED); a disk fault
#: without it counts as nothing. A min ISR change and an ELR feature change count
#: no loss: they change the budget (docs/CHECKING.md, fault budget).
BUDGET_FAULTS: tuple[str, ...] = kinds_where(lambda m: m.drops_unflushed is not None)
