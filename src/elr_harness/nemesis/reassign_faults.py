"""The reassign fault and its end, reassign-end (a part of
nemesis.injector.FaultInjector): a partition's replicas changed through
AlterPartitionReassignments, sent from the host to a broker that hears the
controllers (cluster.reassignments), and cancelled, left completed or put back
at its end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elr_harness.cluster import reassignments
from elr_harness.core.errors import HarnessError, Refused
from elr_harness.core.history import Fault
from elr_harness.nemesis.injector_parts import InjectorPart, detail_of


@dataclass(frozen=True)
class Reassignment:
    """A partition reassignment in force: asked for, not yet ended."""

    topic: str
    partition: int
    #: the replicas observed before (`from`) and the ones asked for (`to`)
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    #: the brokers of both, as the fault's `nodes`
    nodes: list[str]
    #: whether its end puts `replicas` back should it have completed
    restore: bool
    #: the caller's why (mix, role, ...), carried by its end too
    why: dict[str, Any]


class ReassignFaults(InjectorPart):
    """Replica assignments; FaultInjector provides the recording and the brokers."""

    #: How a reassignment reaches a broker (the harness's wire client).
    connect: reassignments.Connect
    #: Reassignments asked for and not yet ended, by (topic, partition).
    reassignments: dict[tuple[str, int], Reassignment]

    def reassign(self, topic: str, partition: int, replicas: Sequence[int],
                 target: Sequence[int], restore: bool = False, step: str | None = None,
                 detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Ask Kafka to move a partition from `replicas` (as observed) to `target`
        (AlterPartitionReassignments, through a broker that hears the controllers);
        it is in force until end_reassign. `restore`: should it complete, its end puts `replicas`
        back (a removal that left fewer replicas than the topic's replication
        factor). One that may have half-happened (`info`) is ended like any other."""
        key = (topic, partition)
        if key in self.reassignments:
            raise HarnessError(f"{topic}-{partition}: a reassignment is already in force")
        nodes = self._broker_names([*replicas, *target])
        why = detail_of(step, detail)
        record = {"topic": topic, "partition": partition, "from": list(replicas),
                  "to": list(target), "restore": restore, **why}
        tracked = Reassignment(topic, partition, tuple(replicas), tuple(target), nodes,
                               restore, why)

        def apply() -> None:
            try:
                reassignments.execute(self._admin_addresses(), topic, partition, target,
                                      self.cluster.config.timeouts, self.connect)
            except Exception as err:
                if not isinstance(err, Refused):
                    self.reassignments[key] = tracked  # it may have started
                raise
            self.reassignments[key] = tracked

        return self._fault(Fault.REASSIGN, nodes, record, apply)

    def end_reassign(self, topic: str, partition: int, step: str | None = None,
                     detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """End a reassignment `reassign` began: cancelled if it is still under way
        (Kafka drops the replicas it was adding), else left completed, or undone by
        a reassignment back to its `from` when it was asked to restore. The line's
        `outcome` says which; it carries the start's why unless given another."""
        tracked = self.reassignments.get((topic, partition))
        if tracked is None:
            raise HarnessError(f"{topic}-{partition}: no reassignment in force to end")
        record = {"topic": topic, "partition": partition, "from": list(tracked.replicas),
                  "to": list(tracked.target),
                  **detail_of(step, tracked.why if detail is None else detail)}

        def apply() -> dict[str, Any]:
            addresses, timeouts = self._admin_addresses(), self.cluster.config.timeouts
            outcome = reassignments.cancel(addresses, topic, partition, timeouts, self.connect)
            restored = outcome is reassignments.Outcome.COMPLETED and tracked.restore
            if restored:
                try:
                    reassignments.execute(addresses, topic, partition, tracked.replicas,
                                          timeouts, self.connect)
                except Refused as err:  # the end did something: not a fail
                    raise HarnessError(f"putting {list(tracked.replicas)} back: {err}") from err
            del self.reassignments[(topic, partition)]
            return {"outcome": str(outcome), "restored": restored}

        return self._fault(Fault.REASSIGN_END, tracked.nodes, record, apply)

    def _broker_names(self, ids: Sequence[int]) -> list[str]:
        try:
            return sorted({self.cluster.broker_by_id(int(i)).spec.name for i in ids})
        except KeyError as err:
            raise HarnessError(f"reassignment names {err.args[0]}") from None

    def _admin_addresses(self) -> list[str]:
        """Brokers to send a reassignment to, which forward it to the controller:
        none that is down, paused or cut off from the controllers."""
        stale = self.stale_brokers()
        return [address for address in self.cluster.bootstrap if address not in stale]
