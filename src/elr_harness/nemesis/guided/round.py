"""What a guided round (nemesis.guided.recipes) is made of: the schedule it reads, the kinds
it draws from by capability (never by name), and its record (Round) for test.json."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from elr_harness.core.config import GuidedConfig
from elr_harness.nemesis.faults import FaultPackage, with_capabilities
from elr_harness.nemesis.faults.base import Capability as C
from elr_harness.nemesis.schedule.drawn import DrawnSteps
from elr_harness.nemesis.targets import Topology
from elr_harness.nemesis.watch import Observer


class Schedule(Protocol):
    """What a recipe reads of the schedule that plays it (nemesis.guided.search.Guided)."""

    injector: Any
    observer: Observer
    rng: random.Random
    config: GuidedConfig
    partitions: list[tuple[str, int]]
    topology: Topology
    replication_factor: int
    min_insync_replicas: int
    #: each kind's settings (RunConfig.faults)
    faults: dict[str, Any]
    stop_event: threading.Event
    #: the steps played so far, as a schedule file has them (schedule.toml)
    drawn: DrawnSteps

    def active_controller(self) -> int | None: ...

    def hold_s(self) -> float: ...

    def may_drop_data(self) -> bool: ...

#: The kinds a round draws from, by what they can do (nemesis.faults.base.Capability),
#: never by name: how a follower is taken out of the ISR (its end brings it back;
#: none that drops data: a round keeps its own budget for that), and which of
#: those keep it fenced (a slowed broker still heartbeats: it stays registered and
#: unfenced) and its process running (a later shutdown reaches it).
AWAY = with_capabilities(C.TAKES_OUT_OF_ISR, without=(C.DROPS_UNFLUSHED_DATA,))
FENCED_AWAY = with_capabilities(C.TAKES_OUT_OF_ISR, C.KEEPS_FENCED,
                                without=(C.DROPS_UNFLUSHED_DATA,))
RUNNING_AWAY = with_capabilities(C.TAKES_OUT_OF_ISR, C.KEEPS_FENCED, C.KEEPS_RUNNING,
                                 without=(C.DROPS_UNFLUSHED_DATA,))
#: Fenced away and back without an unclean shutdown: an ELR member that registers
#: after one is taken out of the ELR, so it could not be elected from it.
CLEANLY_FENCED_AWAY = with_capabilities(C.TAKES_OUT_OF_ISR, C.KEEPS_FENCED,
                                        without=(C.DROPS_UNFLUSHED_DATA, C.UNCLEAN_SHUTDOWN))
#: How the leader stops leading; the unclean ones leave no clean-shutdown marker.
DOWN = with_capabilities(C.STOPS_LEADING)
UNCLEAN_DOWN = with_capabilities(C.STOPS_LEADING, C.UNCLEAN_SHUTDOWN)
#: ...shut down, keeping its unflushed data (the ELR feature is turned off only then),
#: until the round ends: not bounce-leader, whose leaderless spell ends by itself.
DOWN_KEEPING_DATA = with_capabilities(C.STOPS_LEADING, C.SHUTS_DOWN,
                                      without=(C.DROPS_UNFLUSHED_DATA,))
#: What a round falls back to when the budget forbids the drawn kind: an unclean
#: shutdown that keeps the data, then a clean one.
UNCLEAN_KEEPING_DATA = with_capabilities(C.SHUTS_DOWN, C.UNCLEAN_SHUTDOWN,
                                         without=(C.DROPS_UNFLUSHED_DATA,))
CLEAN_SHUTDOWN = with_capabilities(C.SHUTS_DOWN, without=(C.UNCLEAN_SHUTDOWN,))
#: How the active controller is made to give up leadership.
FAILOVER = with_capabilities(C.FAILS_OVER_CONTROLLER)


def one_with(capability: C) -> FaultPackage:
    """The first kind of the registry that can do `capability` (a step that needs
    exactly one thing done, e.g. a min ISR change)."""
    return with_capabilities(capability)[0]


@dataclass
class Round:
    """What one round aimed at and did, for test.json's nemesis_result."""

    aim: str
    #: 1, 2, ... in the run
    number: int
    partition: str = ""
    roles: dict[str, str] = field(default_factory=dict)
    #: the fault kind each role (F1, F2, L, the active controller, ...) met
    ways: dict[str, str] = field(default_factory=dict)
    #: what else the round drew (the min ISR or feature change, the reassignment)
    notes: dict[str, str] = field(default_factory=dict)
    #: the waits of the round, in order: (what, seen in time)
    waits: list[tuple[str, bool]] = field(default_factory=list)
    #: whether the wait for the aimed state itself saw it
    reached: bool = False
    #: for each wait that did not see its state, what the round's partition looked
    #: like when it gave up (the round played on; a buggy Kafka shows itself here)
    saw: dict[str, str] = field(default_factory=dict)
    #: why the round did not play (no full ISR to start from, ...)
    skipped: str | None = None
    #: a fault that failed (the injector recorded it as info), which ended the round
    error: str | None = None
    dropped_data: bool = False

    @property
    def detail(self) -> dict[str, Any]:
        """What every fault line of the round carries: its aim and number."""
        return {"aim": self.aim, "guided": self.number}

    def step(self, what: str) -> str:
        return f"guided-{self.number}:{what}"
