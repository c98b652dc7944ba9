"""`stop`: SIGTERM, Kafka's own clean (controlled) shutdown, started again when the
fault ends."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import PROCESSES, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.targets import Role


def inject(mix: Mix, package: FaultPackage) -> Undo:
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    mix.injector.stop(target, detail=detail)
    return lambda: mix.injector.start(target, detail=detail)


PACKAGE = FaultPackage(
    "stop", Fault.STOP, (Role.LEADER, Role.ISR, Role.ELR, Role.ANY), "#a50f15", PROCESSES,
    inject, help="SIGTERM (a clean shutdown) a leader, ISR or ELR member, or any broker; "
                 "start it again")
