"""`pause`: SIGSTOP a broker's Kafka for a fault period, then SIGCONT it."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import PROCESSES, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.targets import Role


def inject(mix: Mix, package: FaultPackage) -> Undo:
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    mix.injector.pause(target, kind=package.recorded, detail=detail)
    return lambda: mix.injector.resume(target, detail=detail)


PACKAGE = FaultPackage(
    "pause", Fault.PAUSE, (Role.LEADER, Role.ISR, Role.ANY), "#756bb1", PROCESSES, inject,
    help="SIGSTOP a leader, ISR member or any broker, then SIGCONT it")
