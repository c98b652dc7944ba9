"""`partition`: a network partition of one of four shapes (iptables, ended by a heal)."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults.base import NETWORK, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.targets import Role

SHAPES = ("isolate", "majority-minority", "ring", "bridge")


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """A network partition of one of four shapes; only `isolate` has a target."""
    nodes = mix.topology.node_names
    shape = mix.rng.choice(SHAPES)
    role = None
    if shape == "isolate":
        role = role_of(mix, package)
        grudge = grudges.isolate(mix.target(role), nodes)
    elif shape == "majority-minority":
        grudge = grudges.majority_minority(nodes, mix.rng)
    elif shape == "ring":
        grudge = grudges.ring(nodes, mix.rng)
    else:
        grudge = grudges.bridge(nodes, mix.rng)
    detail = why(package, role)
    mix.injector.partition(grudge, step=f"mix:{shape}", kind=package.recorded, detail=detail)
    return lambda: mix.injector.heal(step=f"mix:{shape}", detail=detail)


PACKAGE = FaultPackage(
    "partition", Fault.PARTITION, (Role.LEADER, Role.ISR), "#e6550d", NETWORK, inject,
    help="cut the network: a leader or ISR member isolated, majority/minority, ring "
         "or bridge")
