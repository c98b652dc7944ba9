"""`partition`: cut the network. A leader or ISR member isolated from every other
node, or the nodes split majority/minority, into a ring, or across a bridge
(nemesis.grudges); every cut ends with the network's heal.

A cut is tagged iptables rules on both ends of each severed pair (the injector's
`block`), recorded with its grudge; isolate-from-controllers and
controller-partition are the same action aimed elsewhere, recorded under their
own names (`cut` is theirs too).
"""

from __future__ import annotations

from typing import Any

from elr_harness.core.history import Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults.base import (
    NETWORK,
    NETWORK_HEAL,
    Capability,
    FaultPackage,
    Injector,
    Mix,
    Undo,
    Use,
    detail_of,
    role_of,
    why,
)
from elr_harness.nemesis.targets import Role

SHAPES = ("isolate", "majority-minority", "ring", "bridge")


def cut(injector: Injector, grudge: grudges.Grudge, step: str | None = None,
        detail: dict[str, Any] | None = None, kind: Fault | str = Fault.PARTITION,
        inbound_only: bool = False) -> dict[str, Any]:
    """Drop traffic between each node and the peers it holds a grudge against
    (both ways; `inbound_only`: only what it receives), recorded as `kind`."""
    return injector.record(kind, sorted(grudge), {"grudge": grudge, **detail_of(step, detail)},
                           lambda: injector.block(dict(grudge), inbound_only))


def isolate(injector: Injector, name: str, step: str | None = None,
            detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """`name` cut off from every other node of the cluster."""
    return cut(injector, grudges.isolate(name, sorted(injector.cluster.nodes)), step, detail)


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
    cut(mix.injector, grudge, step=f"mix:{shape}", kind=package.recorded, detail=detail)
    return lambda: mix.injector.heal(step=f"mix:{shape}", detail=detail)


def act(use: Use, target: str | None, grudge: grudges.Grudge | None = None) -> Undo:
    """The target isolated from every other node (or the cut `grudge` says: a
    schedule's `cut`) until the network heals."""
    chosen = grudge if grudge is not None else \
        grudges.isolate(str(target), use.topology.node_names)
    cut(use.injector, chosen, use.step, use.detail)
    return lambda: use.injector.heal(**use.said())


def step_of(line: dict[str, Any], topology: Any, settings: Any) -> dict[str, Any]:
    """The cut a mix drew, exactly (its shape needs no role)."""
    return {"cut": line["detail"]["grudge"]}


PACKAGE = FaultPackage(
    "partition", Fault.PARTITION, (Role.LEADER, Role.ISR), "#e6550d", NETWORK, inject,
    act=act, heals=(NETWORK_HEAL,),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_FENCED,
                            Capability.KEEPS_RUNNING, Capability.ENDS_WITH_EVERY_CUT,
                            Capability.TAKES_A_CUT}),
    step_of=step_of,
    help="cut the network: a leader or ISR member isolated, majority/minority, ring "
         "or bridge")
