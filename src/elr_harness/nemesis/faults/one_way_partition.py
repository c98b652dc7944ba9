"""`one-way-partition`: a node stops hearing a set of peers while they still hear
it (iptables on one side only, INPUT). KIP-595's pull-based quorum and the
followers' fetches make this a path of its own: a follower whose fetch
responses are lost still reaches its leader, a voter still reaches the others.
Its lines carry `from`, the peers the node no longer hears (HISTORY.md); it
drops no data and ends with the network's heal.
"""

from __future__ import annotations

from typing import Any

from elr_harness.core.history import Fault
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
from elr_harness.nemesis.targets import Role, Topology


def deafen(injector: Injector, name: str, peers: list[str], step: str | None = None,
           detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """`name` no longer receives the packets of `peers` (it still sends to them)."""
    said = {"from": sorted(peers), **detail_of(step, detail)}
    return injector.record(PACKAGE.recorded, [name], said,
                           lambda: injector.block({name: sorted(peers)}, inbound_only=True))


def _peers(mix: Mix, target: str, topology: Topology) -> list[str]:
    """Whom the target stops hearing: the controllers, its fellow brokers, or
    every other node (one drawn)."""
    others = [n for n in topology.node_names if n != target]
    choices = [sorted(topology.controllers), sorted(b for b in topology.brokers if b != target),
               others]
    return [n for n in mix.rng.choice(choices) if n != target] or others


def inject(mix: Mix, package: FaultPackage) -> Undo:
    role = role_of(mix, package)
    target = mix.target(role)
    detail = why(package, role)
    deafen(mix.injector, target, _peers(mix, target, mix.topology),
           step=f"mix:{package.name}", detail=detail)
    return lambda: mix.injector.heal(step=f"mix:{package.name}", detail=detail)


def act(use: Use, target: str | None, grudge: dict[str, list[str]] | None = None) -> Undo:
    """The target stops hearing every other node (or each node of `grudge`, a
    schedule's `cut`, stops hearing its peers there) until the network heals."""
    deaf = grudge if grudge is not None else \
        {str(target): [n for n in use.topology.node_names if n != target]}
    for name, peers in sorted(deaf.items()):
        deafen(use.injector, name, peers, use.step, use.detail)
    return lambda: use.injector.heal(**use.said())


def step_of(line: dict[str, Any], topology: Topology, settings: Any) -> dict[str, Any]:
    """Whom the mix's target stopped hearing, exactly."""
    return {"cut": {line["nodes"][0]: line["detail"]["from"]}}


PACKAGE = FaultPackage(
    "one-way-partition", Fault.ONE_WAY_PARTITION, (Role.LEADER, Role.FOLLOWER, Role.ANY),
    "#fdd0a2", NETWORK, inject, act=act, heals=(NETWORK_HEAL,),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_RUNNING,
                            Capability.ENDS_WITH_EVERY_CUT, Capability.TAKES_A_CUT}),
    step_of=step_of,
    help="a leader, follower or any broker stops hearing the controllers, its fellow "
         "brokers or every other node, while they still hear it (one side's iptables)")
