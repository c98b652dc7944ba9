"""`controller-kill`: SIGKILL the active controller (the quorum's leader), started
again when the fault ends; recorded under its own name, so a report tells it from
a broker's kill."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults import kill
from elr_harness.nemesis.faults.base import PROCESSES, FaultPackage
from elr_harness.nemesis.targets import Role

PACKAGE = FaultPackage(
    "controller-kill", Fault.CONTROLLER_KILL, (Role.ACTIVE_CONTROLLER,), "#fb6a4a",
    PROCESSES, kill.inject, help="SIGKILL the active controller; start it again")
