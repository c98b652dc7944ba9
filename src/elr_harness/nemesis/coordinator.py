"""The transaction coordinator a schedule step names: the role `coordinator`, the
name C (the coordinator when the schedule starts) and `partition = "coordinator"`
(its `__transaction_state` partition), for the run's first transactional
producer's transactional.id (the run passes it; none without `--workload txn`).

Kafka keeps a transactional.id's state in the `__transaction_state` partition
abs(hashCode) % partitions, and its leader is the coordinator
(nemesis.targets.transaction_partition): read from the observer's latest sample,
which holds the internal topics in a run with transactions, or, where no sample
names a leader, asked of the cluster (FindCoordinator).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from elr_harness.cluster.kraft import INTERNAL_TOPIC_PARTITIONS, TRANSACTION_STATE_TOPIC
from elr_harness.cluster.observe import PartitionState
from elr_harness.nemesis.faults.base import NotNow
from elr_harness.nemesis.targets import coordinator_of


class Coordinator:
    """Finds the coordinator of `transactional_id` (None: the run has no transactions;
    each question is then NotNow, so a step that needs it is skipped)."""

    def __init__(self, transactional_id: str | None,
                 ask: Callable[[str], int | None] | None = None) -> None:
        self.transactional_id = transactional_id
        #: FindCoordinator through the cluster (cluster.Cluster.transaction_coordinator)
        self.ask = ask
        self._number: int | None = None

    def _id(self) -> str:
        if self.transactional_id is None:
            raise NotNow("the run has no transactional producer (--workload txn): no "
                         "transaction coordinator")
        return self.transactional_id

    def partition(self, states: Sequence[PartitionState]) -> tuple[str, int]:
        """Its `__transaction_state` partition (topic, number)."""
        txn_id = self._id()
        if self._number is None:
            self._number, _ = coordinator_of(states, txn_id, TRANSACTION_STATE_TOPIC,
                                             INTERNAL_TOPIC_PARTITIONS)
        return TRANSACTION_STATE_TOPIC, self._number

    def broker(self, states: Sequence[PartitionState]) -> int:
        """The broker id of the coordinator now: the observed leader of its partition,
        else the cluster's FindCoordinator answer (NotNow: neither names one)."""
        txn_id = self._id()
        number, leader = coordinator_of(states, txn_id, TRANSACTION_STATE_TOPIC,
                                        INTERNAL_TOPIC_PARTITIONS)
        self._number = number if self._number is None else self._number
        if leader is None and self.ask is not None:
            try:
                leader = self.ask(txn_id)
            except Exception:  # noqa: BLE001 - no broker answers now: not now
                leader = None
        if leader is None:
            raise NotNow(f"no broker leads {TRANSACTION_STATE_TOPIC}-{number}, the "
                         f"coordinator partition of {txn_id}, nor names a coordinator")
        return leader
