"""`kill`: SIGKILL a broker's Kafka (no clean shutdown; its page cache survives, so
nothing is lost, but the controller cannot tell and takes it out of ISR and ELR
when it registers again); it ends when the broker is started again."""

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


def kill(injector: Injector, name: str, step: str | None = None,
         detail: dict[str, Any] | None = None, kind: Fault | str = Fault.KILL) -> dict[str, Any]:
    """SIGKILL `name`'s Kafka and wait until it is gone, recorded as `kind`."""
    injector.thaw(name, step, detail)
    return injector.record(kind, [name], detail_of(step, detail),
                           lambda: {"pid": injector.take_down(name, "KILL")})


#: A mix's kill of the target of one of its roles, a round's of its target; each
#: ended by starting it again.
inject, act = on_one_node(kill, Fault.KILL, lambda injector: injector.start)


PACKAGE = FaultPackage(
    "kill", Fault.KILL, (Role.LEADER, Role.ISR, Role.ELR, Role.ANY), "#de2d26", PROCESSES,
    inject, act=act, heals=(RESTART,),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_FENCED,
                            Capability.SHUTS_DOWN, Capability.STOPS_LEADING,
                            Capability.UNCLEAN_SHUTDOWN}),
    help="SIGKILL a leader, ISR or ELR member, or any broker; start it again")
