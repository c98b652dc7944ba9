"""`pause`: SIGSTOP a broker's Kafka (it freezes, its sockets stay open, its
heartbeats stop: fenced after the session timeout), then SIGCONT it (`resume`)."""

from __future__ import annotations

from typing import Any

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import (
    PROCESSES,
    RESUME,
    Capability,
    FaultPackage,
    Injector,
    detail_of,
    on_one_node,
)
from elr_harness.nemesis.targets import Role


def pause(injector: Injector, name: str, step: str | None = None,
          detail: dict[str, Any] | None = None, kind: Fault | str = Fault.PAUSE
          ) -> dict[str, Any]:
    """SIGSTOP `name`'s Kafka, recorded as `kind` (bounce-leader reuses this)."""
    injector.node(name)
    return injector.record(kind, [name], detail_of(step, detail),
                           lambda: injector.freeze(name))


inject, act = on_one_node(pause, Fault.PAUSE, lambda injector: injector.resume)


#: How a report draws a freeze (bounce-leader's too).
COLOUR = "#756bb1"

PACKAGE = FaultPackage(
    "pause", Fault.PAUSE, (Role.LEADER, Role.ISR, Role.ANY), COLOUR, PROCESSES, inject,
    act=act, heals=(RESUME,),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_FENCED,
                            Capability.KEEPS_RUNNING}),
    help="SIGSTOP a leader, ISR member or any broker, then SIGCONT it")
