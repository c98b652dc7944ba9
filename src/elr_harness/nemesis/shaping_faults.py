"""The slow-network fault and its end, unthrottle (a part of
nemesis.injector.FaultInjector): htb classes on both ends of a target's links to
its peers and iptables random loss on the target (cluster.shaping), marked as
ours so that ending it leaves a partition's rules and a host's own qdiscs alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from elr_harness.cluster.node import Node
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
from elr_harness.nemesis.injector_parts import InjectorPart, detail_of


class ShapingFaults(InjectorPart):
    """Slow links; FaultInjector provides the recording and the nodes."""

    #: The node whose links are slow (a slow network's target) -> its peers.
    throttled: dict[str, list[str]]

    def slow_network(self, name: str, peers: Sequence[str], rate_kbit: int, loss: float,
                     step: str | None = None,
                     detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Make the links between `name` and each of `peers` slow and lossy, both
        ways: on each end an htb class of `rate_kbit` for the traffic to the
        other, and on `name` iptables dropping each packet to or from a peer with
        probability `loss` (cluster.shaping; other traffic is untouched). One slow
        network at a time: a second would meet the first's qdiscs."""
        if self.throttled:
            raise HarnessError(f"a slow network is in force on {', '.join(self.throttled)}; "
                               "end it first")
        peers = sorted(peers)
        node, peer_nodes = self._node(name), [self._node(p) for p in peers]
        detail = {**detail_of(step, detail), "target": name, "peers": peers,
                  "rate_kbit": rate_kbit, "loss": loss}

        def apply() -> dict[str, Any]:
            # known before anything is applied: heal_all ends a half-applied one too
            self.throttled[name] = peers
            routes = self._routes(node, [p.spec.address for p in peer_nodes])
            by_interface: dict[str, list[str]] = {}
            for route in routes:
                by_interface.setdefault(route.interface, []).append(route.ip)
            interfaces = {name: ",".join(sorted(by_interface))}
            self._shaping(node, shape_command(by_interface, rate_kbit))
            self._shaping(node, loss_command([r.ip for r in routes], loss))
            for peer in peer_nodes:
                (back,) = self._routes(peer, [node.spec.address])
                self._shaping(peer, shape_command({back.interface: [back.ip]}, rate_kbit))
                interfaces[peer.spec.name] = back.interface
            return {"interface": interfaces[name], "interfaces": interfaces}

        return self._fault(Fault.SLOW_NETWORK, [name], detail, apply)

    def unthrottle(self, name: str, step: str | None = None,
                   detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """End the slow network of `name`: every qdisc and loss rule of ours is
        removed on every node (also what a half-applied one left), nothing else."""
        names = sorted(self.cluster.nodes)

        def apply() -> None:
            for each in names:
                self._shaping(self._node(each), remove_slow_command())
            self.throttled.pop(name, None)

        return self._fault(Fault.UNTHROTTLE, [name], {**detail_of(step, detail), "target": name},
                           apply)

    def _routes(self, node: Node, addresses: list[str]) -> list[Route]:
        """How `node` reaches each address (its IPv4 address and interface), asked
        again when the answer came back short (a look-up changes nothing)."""
        timeouts = self.cluster.config.timeouts
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

    def _shaping(self, node: Node, command: str) -> None:
        result = node.exec(command, timeout_s=self.cluster.config.timeouts.shaping_s)
        if not result.ok:
            raise HarnessError(f"slow network on {node.spec.name} failed: "
                               f"{result.output[-300:]}")
