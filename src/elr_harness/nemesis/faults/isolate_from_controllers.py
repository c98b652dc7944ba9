"""`isolate-from-controllers`: a broker that still hears the other brokers but no
controller (its heartbeats go unanswered: it is fenced while it keeps serving
from a stale view). Ends with the network's heal."""

from __future__ import annotations

from typing import Any

from elr_harness.core.history import Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults.base import (
    NETWORK,
    NETWORK_HEAL,
    Capability,
    FaultPackage,
    Mix,
    Undo,
    Use,
    role_of,
    why,
)
from elr_harness.nemesis.faults.partition import cut
from elr_harness.nemesis.targets import Role, Topology


def inject(mix: Mix, package: FaultPackage) -> Undo:
    role = role_of(mix, package)
    broker = mix.target(role)
    detail = why(package, role)
    cut(mix.injector, grudges.from_controllers([broker], sorted(mix.topology.controllers)),
        step=f"mix:{package.name}", kind=package.recorded, detail=detail)
    return lambda: mix.injector.heal(step=f"mix:{package.name}", detail=detail)


def act(use: Use, target: str) -> Undo:
    cut(use.injector, grudges.from_controllers([target], sorted(use.topology.controllers)),
        use.step, use.detail, kind=PACKAGE.recorded)
    return lambda: use.injector.heal(**use.said())


def step_of(line: dict[str, Any], topology: Topology, settings: Any) -> dict[str, Any]:
    """The broker the cut took from the controllers (its line names them too)."""
    return {"target": next(n for n in line["nodes"] if n not in topology.controllers)}


PACKAGE = FaultPackage(
    "isolate-from-controllers", Fault.ISOLATE_FROM_CONTROLLERS,
    (Role.LEADER, Role.ISR, Role.ANY), "#fdae6b", NETWORK, inject, act=act,
    heals=(NETWORK_HEAL,), step_of=step_of,
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_FENCED,
                            Capability.KEEPS_RUNNING, Capability.ENDS_WITH_EVERY_CUT}),
    acts_on="brokers",
    help="cut a leader, ISR member or any broker off from the controllers only")
