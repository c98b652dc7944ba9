"""`slow-network`: a node's links made slow and lossy for a while (tc htb
bandwidth on both ends, iptables random loss; the kernel has no netem), ended
by `unthrottle` (KAFKA-19996: a slow follower below min ISR leaves the ISR and
rejoins it over and over).

A broker's links to the other brokers are throttled (its replication), not
those to the controllers: a slow follower stays registered and unfenced, as in
KAFKA-19996, instead of being fenced as a partitioned one is. The active
controller's links to every other node are throttled (heartbeats and the
quorum). Rate, loss and how long it lasts are drawn from the mix's seeded RNG
within [run.slow_network] (harness.core.config.SlowNetworkConfig).

It acts on the network, as a partition does, so an overlapping mix of
partitions is refused (nemesis.schedules.check_overlap), but its marks are its
own (cluster.shaping): a partition's heal neither removes nor ends it, and its
end leaves a partition in force.
"""

from __future__ import annotations

import time

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import NETWORK, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.targets import Role, Topology


def peers_of(target: str, topology: Topology) -> list[str]:
    """The other ends of the links a slow network throttles: a broker's fellow
    brokers; every other node for a controller."""
    if target in topology.brokers:
        return sorted(b for b in topology.brokers if b != target)
    return [n for n in topology.node_names if n != target]


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """Throttle the target's links at a drawn rate and loss; its undo waits for
    the drawn hold (at least), then ends it. A half-applied one is ended at once."""
    role = role_of(mix, package)
    target = mix.target(role)
    config = mix.slow_network
    rate_kbit = mix.rng.choice(config.rates_kbit)
    loss = mix.rng.choice(config.loss_probabilities)
    hold_s = round(mix.rng.uniform(config.min_hold_s, config.max_hold_s), 1)
    detail = why(package, role)
    started = time.monotonic()
    try:
        mix.injector.slow_network(target, peers_of(target, mix.topology), rate_kbit, loss,
                                  detail={**detail, "hold_s": hold_s})
    except Exception:
        mix.injector.unthrottle(target, detail=detail)
        raise

    def undo() -> None:
        mix.stop_event.wait(max(0.0, started + hold_s - time.monotonic()))
        mix.injector.unthrottle(target, detail=detail)

    return undo


PACKAGE = FaultPackage(
    "slow-network", Fault.SLOW_NETWORK, (Role.FOLLOWER, Role.LEADER, Role.ACTIVE_CONTROLLER),
    "#31a354", NETWORK, inject,
    help="throttle a follower's, a leader's or the active controller's links (htb "
         "bandwidth, random loss) for a while; a broker stays unfenced (KAFKA-19996)")
