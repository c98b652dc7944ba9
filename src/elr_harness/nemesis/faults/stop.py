"""`stop`: SIGTERM, Kafka's own clean (controlled) shutdown: it writes its
clean-shutdown marker, so the controller keeps it in the ELR. Ends when the
broker is started again."""

from __future__ import annotations

from typing import Any

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import (
    PROCESSES,
    RESTART,
    Capability,
    FaultPackage,
    Injector,
    detail_of,
    on_one_node,
)
from elr_harness.nemesis.targets import Role


def stop(injector: Injector, name: str, step: str | None = None,
         detail: dict[str, Any] | None = None, kind: Fault | str = Fault.STOP
         ) -> dict[str, Any]:
    """SIGTERM `name`'s Kafka and wait until it is gone."""
    injector.thaw(name, step, detail)
    return injector.record(kind, [name], detail_of(step, detail),
                           lambda: {"pid": injector.take_down(name, "TERM")})


inject, act = on_one_node(stop, Fault.STOP, lambda injector: injector.start)


PACKAGE = FaultPackage(
    "stop", Fault.STOP, (Role.LEADER, Role.ISR, Role.ELR, Role.ANY), "#a50f15", PROCESSES,
    inject, act=act, heals=(RESTART,),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_FENCED,
                            Capability.SHUTS_DOWN, Capability.STOPS_LEADING}),
    help="SIGTERM (a clean shutdown) a leader, ISR or ELR member, or any broker; "
         "start it again")
