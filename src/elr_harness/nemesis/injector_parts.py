"""What the parts of nemesis.injector.FaultInjector share: the recording of a
fault, the nodes by name, and what is in force that each part reads.

FaultInjector is one object (one lock, one record of what is in force, one
heal_all) made of parts by what they act on: the processes and the network's
partitions (nemesis.injector), config and features (nemesis.admin_faults),
slow links (nemesis.shaping_faults) and replica assignments
(nemesis.reassign_faults). Each part declares here what it uses of the whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.node import Node
from elr_harness.core.errors import HarnessError
from elr_harness.core.history import Fault


class FaultRefused(HarnessError):
    """The injector would not inject this fault now (why is in the message);
    nothing was recorded."""


def detail_of(step: str | None, extra: dict[str, Any] | None) -> dict[str, Any]:
    """A fault's detail before it runs: the caller's why (step, mix, role)."""
    return {**({"step": step} if step else {}), **(extra or {})}


class InjectorPart:
    """The FaultInjector a part belongs to, as the part sees it."""

    cluster: Cluster
    #: The grudge in force (node -> peers it cannot hear), empty when healed.
    grudge: dict[str, list[str]]
    down: set[str]
    paused: set[str]

    def _fault(self, kind: Fault, nodes: list[str], detail: dict[str, Any],
               action: Callable[[], dict[str, Any] | None],
               refuse: Callable[[], str | None] | None = None) -> dict[str, Any]:
        """Record and run one fault (FaultInjector's)."""
        raise NotImplementedError

    def _node(self, name: str) -> Node:
        """The cluster's node of that name (FaultInjector's)."""
        raise NotImplementedError

    def stale_brokers(self) -> set[str]:
        """Brokers that are down, paused or cut off from the controllers (FaultInjector's)."""
        raise NotImplementedError
