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
    Mix,
    Undo,
    Use,
    detail_of,
    role_of,
    why,
)
from elr_harness.nemesis.targets import Role


def kill(injector: Injector, name: str, step: str | None = None,
         detail: dict[str, Any] | None = None, kind: Fault | str = Fault.KILL) -> dict[str, Any]:
    """SIGKILL `name`'s Kafka and wait until it is gone, recorded as `kind`."""
    return injector.record(kind, [name], detail_of(step, detail),
                           lambda: {"pid": injector.take_down(name, "KILL")})


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """Kill the target of one of the package's roles; its undo starts it again.
    Recorded as the package's kind (controller-kill reuses this)."""
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    kill(mix.injector, target, detail=detail, kind=package.recorded)
    return lambda: mix.injector.start(target, detail=detail)


def act(use: Use, target: str) -> Undo:
    kill(use.injector, target, use.step, use.detail)
    return lambda: use.injector.start(target, **use.said())


PACKAGE = FaultPackage(
    "kill", Fault.KILL, (Role.LEADER, Role.ISR, Role.ELR, Role.ANY), "#de2d26", PROCESSES,
    inject, act=act, heals=(RESTART,),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_FENCED,
                            Capability.SHUTS_DOWN, Capability.STOPS_LEADING,
                            Capability.UNCLEAN_SHUTDOWN}),
    help="SIGKILL a leader, ISR or ELR member, or any broker; start it again")
