"""`controller-kill`: SIGKILL the active controller, so the quorum elects another;
it ends when the controller is started again."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import (
    PROCESSES,
    RESTART,
    Capability,
    FaultPackage,
    on_one_node,
)
from elr_harness.nemesis.faults.kill import kill
from elr_harness.nemesis.targets import Role

inject, act = on_one_node(kill, Fault.CONTROLLER_KILL, lambda injector: injector.start)


PACKAGE = FaultPackage(
    "controller-kill", Fault.CONTROLLER_KILL, (Role.ACTIVE_CONTROLLER,), "#fb6a4a",
    PROCESSES, inject, act=act, heals=(RESTART,),
    capabilities=frozenset({Capability.FAILS_OVER_CONTROLLER}),
    acts_on="controllers",
    help="SIGKILL the active controller; start it again")
