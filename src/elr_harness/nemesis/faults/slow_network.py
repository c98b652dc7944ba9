"""`slow-network`: the links between a node and its peers made slow and lossy, both
ways, for a while; it ends with `unthrottle`. htb classes on both ends of each
link and iptables random loss on the target (cluster.shaping), marked as ours so
that ending it leaves a partition's rules and a host's own qdiscs alone.

A throttled broker still heartbeats: it stays registered and unfenced while its
replication falls behind (KAFKA-19996's slow follower), so it may leave and
rejoin the ISR over and over. One slow network at a time.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elr_harness.cluster.shaping import (
    Route,
    loss_command,
    parse_routes,
    remove_slow_command,
    routes_command,
    shape_command,
)
from elr_harness.core.errors import HarnessError
from elr_harness.core.history import Fault
from elr_harness.core.validate import each, integer, number
from elr_harness.nemesis.faults.base import (
    NETWORK,
    Capability,
    FaultPackage,
    HealPhase,
    HealStep,
    Injector,
    Mix,
    Undo,
    Use,
    detail_of,
    role_of,
    why,
)
from elr_harness.nemesis.targets import Role, Topology


@dataclass(frozen=True)
class SlowNetworkSettings:
    """What a slow network draws from ([run.faults.slow-network] in --config): its
    bandwidth, its random loss and how long it lasts, each from the seeded RNG.
    The defaults are KAFKA-19996's slow follower: below what the default
    workload's replication needs (~70 kbit/s to one follower, estimated from ~170
    one-record batches a second over 3 partitions; a run of slow-network,partition
    that drew 256 kbit/s and no loss twice left every ISR whole) with loss on top,
    held longer than the cluster's replica.lag.time.max.ms (5 s) so that the
    follower can leave the ISR and come back within one fault."""

    #: Rates (kbit/s, both ways) of the throttled links, one drawn per fault.
    rates_kbit: tuple[int, ...] = (16, 64, 256)
    #: Probabilities that one packet on a throttled link is dropped, one drawn.
    loss_probabilities: tuple[float, ...] = (0.0, 0.05, 0.2)
    #: The fault lasts at least a time drawn between these (the mix's interval
    #: if that is longer).
    min_hold_s: float = 6.0
    max_hold_s: float = 15.0
    #: A schedule slowing a follower out of the ISR (a guided round): its links.
    away_rate_kbit: int = 32
    away_loss: float = 0.05


def _throttled(injector: Injector) -> dict[str, list[str]]:
    """The node whose links are slow -> its peers."""
    return injector.kept(PACKAGE.name, dict)


def peers_of(target: str, topology: Topology) -> list[str]:
    """The other ends of the links a slow network throttles: a broker's fellow
    brokers; every other node for a controller."""
    if target in topology.brokers:
        return sorted(b for b in topology.brokers if b != target)
    return [n for n in topology.node_names if n != target]


def throttle(injector: Injector, name: str, peers: Sequence[str], rate_kbit: int,
             loss: float, step: str | None = None,
             detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Make the links between `name` and each of `peers` slow and lossy, both
    ways: on each end an htb class of `rate_kbit` for the traffic to the
    other, and on `name` iptables dropping each packet to or from a peer with
    probability `loss` (cluster.shaping; other traffic is untouched). One slow
    network at a time: a second would meet the first's qdiscs."""
    throttled = _throttled(injector)
    if throttled:
        raise HarnessError(f"a slow network is in force on {', '.join(throttled)}; "
                           "end it first")
    peers = sorted(peers)
    node, peer_nodes = injector.node(name), [injector.node(p) for p in peers]
    said = {**detail_of(step, detail), "target": name, "peers": peers,
            "rate_kbit": rate_kbit, "loss": loss}

    def apply() -> dict[str, Any]:
        # known before anything is applied: heal_all ends a half-applied one too
        throttled[name] = peers
        routes = _routes(injector, node, [p.spec.address for p in peer_nodes])
        by_interface: dict[str, list[str]] = {}
        for route in routes:
            by_interface.setdefault(route.interface, []).append(route.ip)
        interfaces = {name: ",".join(sorted(by_interface))}
        _shaping(injector, node, shape_command(by_interface, rate_kbit))
        _shaping(injector, node, loss_command([r.ip for r in routes], loss))
        for peer in peer_nodes:
            (back,) = _routes(injector, peer, [node.spec.address])
            _shaping(injector, peer, shape_command({back.interface: [back.ip]}, rate_kbit))
            interfaces[peer.spec.name] = back.interface
        return {"interface": interfaces[name], "interfaces": interfaces}

    return injector.record(PACKAGE.recorded, [name], said, apply)


def unthrottle(injector: Injector, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """End the slow network of `name`: every qdisc and loss rule of ours is
    removed on every node (also what a half-applied one left), nothing else."""
    names = sorted(injector.cluster.nodes)

    def apply() -> None:
        for each_name in names:
            _shaping(injector, injector.node(each_name), remove_slow_command())
        _throttled(injector).pop(name, None)

    return injector.record(Fault.UNTHROTTLE, [name],
                           {**detail_of(step, detail), "target": name}, apply)


def _unthrottle_all(injector: Injector, said: dict[str, Any]) -> None:
    for name in sorted(_throttled(injector)):
        unthrottle(injector, name, **said)


def _routes(injector: Injector, node: Any, addresses: list[str]) -> list[Route]:
    """How `node` reaches each address (its IPv4 address and interface), asked
    again when the answer came back short (a look-up changes nothing)."""
    timeouts = injector.cluster.config.timeouts
    for attempt in range(timeouts.route_lookup_attempts):
        if attempt:
            time.sleep(timeouts.route_lookup_retry_s)
        result = node.exec(routes_command(addresses), timeout_s=timeouts.shaping_s)
        routes = parse_routes(result.output)
        if result.ok and [r.address for r in routes] == addresses:
            return routes
    raise HarnessError(f"{node.spec.name} has no route to every one of "
                       f"{', '.join(addresses)} (exit {result.exit_code}): "
                       f"{result.output[-300:]}")


def _shaping(injector: Injector, node: Any, command: str) -> None:
    result = node.exec(command, timeout_s=injector.cluster.config.timeouts.shaping_s)
    if not result.ok:
        raise HarnessError(f"slow network on {node.spec.name} failed: "
                           f"{result.output[-300:]}")


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """Throttle the target's links at a drawn rate and loss; its undo waits for
    the drawn hold (at least), then ends it. A half-applied one is ended at once."""
    role = role_of(mix, package)
    target = mix.target(role)
    settings: SlowNetworkSettings = mix.settings(package)
    rate_kbit = mix.rng.choice(settings.rates_kbit)
    loss = mix.rng.choice(settings.loss_probabilities)
    hold_s = round(mix.rng.uniform(settings.min_hold_s, settings.max_hold_s), 1)
    detail = why(package, role)
    in_force = _throttled(mix.injector)
    if in_force:  # refused before anything is recorded: nothing of it to end
        raise HarnessError(f"a slow network is in force on {', '.join(in_force)}; "
                           "end it first")
    started = time.monotonic()
    try:
        throttle(mix.injector, target, peers_of(target, mix.topology), rate_kbit, loss,
                 detail={**detail, "hold_s": hold_s})
    except Exception:
        unthrottle(mix.injector, target, detail=detail)  # what a half-applied one left
        raise

    def undo() -> None:
        mix.stop_event.wait(max(0.0, started + hold_s - time.monotonic()))
        unthrottle(mix.injector, target, detail=detail)

    return undo


def act(use: Use, target: str) -> Undo:
    """The target's links slowed (the settings' away rate and loss) until its end."""
    settings: SlowNetworkSettings = use.settings
    throttle(use.injector, target, peers_of(target, use.topology), settings.away_rate_kbit,
             settings.away_loss, use.step, use.detail)
    return lambda: unthrottle(use.injector, target, **use.said())


def step_of(line: dict[str, Any], topology: Topology, settings: Any) -> dict[str, Any]:
    """The target, slowed at the rate and loss the mix drew (a step's `away_`
    settings; its hold is the step's)."""
    detail = line["detail"]
    return {"target": detail["target"],
            "settings": {**dataclasses.asdict(settings), "away_rate_kbit": detail["rate_kbit"],
                         "away_loss": detail["loss"]}}


PACKAGE = FaultPackage(
    "slow-network", Fault.SLOW_NETWORK, (Role.FOLLOWER, Role.LEADER, Role.ACTIVE_CONTROLLER),
    "#31a354", NETWORK, inject, act=act, step_of=step_of,
    heals=(HealStep(HealPhase.SHAPING, _unthrottle_all),),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_RUNNING,
                            Capability.ONE_IN_FORCE}),
    settings=SlowNetworkSettings,
    rules={"rates_kbit": each(integer(1, 100_000_000), 1),
           "loss_probabilities": each(number(0, 1), 1),
           "away_rate_kbit": integer(1, 100_000_000), "away_loss": number(0, 1)},
    help="throttle a follower's, a leader's or the active controller's links (htb "
         "bandwidth, random loss) for a while; a broker stays unfenced (KAFKA-19996)")
