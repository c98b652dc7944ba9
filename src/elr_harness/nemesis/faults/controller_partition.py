"""`controller-partition`: the active controller cut off from every other node
(iptables, ended by a heal)."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults.base import NETWORK, FaultPackage, Mix, Undo, why
from elr_harness.nemesis.targets import Role


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """The active controller cut off from every other node."""
    target = mix.target(Role.ACTIVE_CONTROLLER)
    detail = why(package, Role.ACTIVE_CONTROLLER)
    mix.injector.partition(grudges.isolate(target, mix.topology.node_names),
                           step=f"mix:{package.name}", kind=package.recorded, detail=detail)
    return lambda: mix.injector.heal(step=f"mix:{package.name}", detail=detail)


PACKAGE = FaultPackage(
    "controller-partition", Fault.CONTROLLER_PARTITION, (Role.ACTIVE_CONTROLLER,),
    "#fd8d3c", NETWORK, inject, help="cut the active controller off from every other node")
