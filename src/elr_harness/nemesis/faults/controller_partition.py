"""`controller-partition`: the active controller cut off from every other node, so
the quorum elects another (a failover). Ends with the network's heal."""

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
    why,
)
from elr_harness.nemesis.faults.partition import cut
from elr_harness.nemesis.targets import Role, Topology


def inject(mix: Mix, package: FaultPackage) -> Undo:
    target = mix.target(Role.ACTIVE_CONTROLLER)
    detail = why(package, Role.ACTIVE_CONTROLLER)
    cut(mix.injector, grudges.isolate(target, mix.topology.node_names),
        step=f"mix:{package.name}", kind=package.recorded, detail=detail)
    return lambda: mix.injector.heal(step=f"mix:{package.name}", detail=detail)


def act(use: Use, target: str) -> Undo:
    """`target`, the active controller, cut off from every other node."""
    cut(use.injector, grudges.isolate(target, use.topology.node_names), use.step,
        use.detail, kind=PACKAGE.recorded)
    return lambda: use.injector.heal(**use.said())


def step_of(line: dict[str, Any], topology: Topology, settings: Any) -> dict[str, Any]:
    """The controller cut off: the node of the cut with every other as its peers."""
    grudge = line["detail"]["grudge"]
    return {"target": max(sorted(grudge), key=lambda node: len(grudge[node]))}


PACKAGE = FaultPackage(
    "controller-partition", Fault.CONTROLLER_PARTITION, (Role.ACTIVE_CONTROLLER,),
    "#fd8d3c", NETWORK, inject, act=act, heals=(NETWORK_HEAL,), step_of=step_of,
    capabilities=frozenset({Capability.FAILS_OVER_CONTROLLER,
                            Capability.ENDS_WITH_EVERY_CUT}),
    acts_on="controllers",
    help="cut the active controller off from every other node")
