"""`kill`: SIGKILL a broker's Kafka (no clean shutdown, the page cache survives),
started again when the fault ends."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import PROCESSES, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.targets import Role


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """Kill the target of one of the package's roles; its undo starts it again.
    Recorded as the package's kind (controller-kill reuses this)."""
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    mix.injector.kill(target, kind=package.recorded, detail=detail)
    return lambda: mix.injector.start(target, detail=detail)


PACKAGE = FaultPackage(
    "kill", Fault.KILL, (Role.LEADER, Role.ISR, Role.ELR, Role.ANY), "#de2d26", PROCESSES,
    inject, help="SIGKILL a leader, ISR or ELR member, or any broker; start it again")
