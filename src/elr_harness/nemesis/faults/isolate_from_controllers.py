"""`isolate-from-controllers`: one broker that still hears the other brokers but no
controller (iptables, ended by a heal)."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults.base import NETWORK, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.targets import Role


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """A broker that still hears the other brokers but no controller."""
    role = role_of(mix, package)
    broker = mix.target(role)
    detail = why(package, role)
    mix.injector.partition(grudges.from_controllers([broker], sorted(mix.topology.controllers)),
                           step=f"mix:{package.name}", kind=package.recorded, detail=detail)
    return lambda: mix.injector.heal(step=f"mix:{package.name}", detail=detail)


PACKAGE = FaultPackage(
    "isolate-from-controllers", Fault.ISOLATE_FROM_CONTROLLERS,
    (Role.LEADER, Role.ISR, Role.ANY), "#fdae6b", NETWORK, inject,
    help="cut a leader, ISR member or any broker off from the controllers only")
