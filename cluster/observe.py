"""Reading each partition's state from the live cluster, as Kafka reports it.

Leader, epoch, ISR, ELR and LastKnownELR come from DescribeTopicPartitions
(the only API that exposes the ELR fields); the high watermark comes from
ListOffsets(latest) through librdkafka's admin client. Nothing is derived:
the checker judges Kafka by exactly what Kafka said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from cluster.kafka_wire import WireConnection, WireError


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None
    high_watermark: int | None
    replicas: tuple[int, ...] = ()

    def as_observation(self) -> dict:
        """The fields of a history `observe` line (HISTORY.md)."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "elr": None if self.elr is None else list(self.elr),
            "last_known_elr": None if self.last_known_elr is None else list(self.last_known_elr),
            "high_watermark": self.high_watermark,
        }


class ObservationError(Exception):
    """No broker answered DescribeTopicPartitions."""


class PartitionObserver:
    """Describes partitions through whichever broker answers first."""

    def __init__(self, bootstrap: list[str], timeout_s: float = 2.0,
                 with_high_watermark: bool = True,
                 avoid: Callable[[], set[str]] | None = None,
                 addresses: dict[int, str] | None = None) -> None:
        """`avoid()` names broker addresses (host:port) not to ask right now: a broker
        cut off from the controllers still answers, from a stale metadata cache.
        `addresses` maps broker ids to those addresses."""
        self._avoid = avoid or (lambda: set())
        self._addresses = addresses or {}
        self._connections = [WireConnection(address, timeout_s) for address in bootstrap]
        self._timeout_s = timeout_s
        self._admin = (AdminClient({"bootstrap.servers": ",".join(bootstrap),
                                    "socket.timeout.ms": int(timeout_s * 1000),
                                    "log_level": 0})
                       if with_high_watermark else None)

    def describe(self, topics: Sequence[str]) -> list[PartitionState]:
        avoid = self._avoid()
        described = self._describe_any(topics, avoid)
        partitions = [p for t in described for p in t.partitions]
        # A leader with a stale view may report an old high watermark: not asked.
        hwms = self._high_watermarks([
            (p.topic, p.partition) for p in partitions
            if p.leader >= 0 and self._addresses.get(p.leader) not in avoid])
        return [
            PartitionState(
                topic=p.topic, partition=p.partition, leader=p.leader,
                leader_epoch=p.leader_epoch, isr=tuple(p.isr),
                elr=None if p.elr is None else tuple(p.elr),
                last_known_elr=None if p.last_known_elr is None else tuple(p.last_known_elr),
                high_watermark=hwms.get((p.topic, p.partition)), replicas=tuple(p.replicas),
            )
            for p in sorted(partitions, key=lambda p: (p.topic, p.partition))
        ]

    def _describe_any(self, topics: Sequence[str], avoid: set[str]):
        errors = []
        # Try brokers in turn, starting with the one that answered last time.
        for _ in range(len(self._connections)):
            connection = self._connections[0]
            if f"{connection.host}:{connection.port}" in avoid:
                self._connections.append(self._connections.pop(0))
                errors.append(f"{connection.host}: view may be stale (cut off or down)")
                continue
            try:
                topics_found = connection.describe_topic_partitions(topics)
                if any(t.error_code == 0 for t in topics_found):
                    return [t for t in topics_found if t.error_code == 0]
                errors.append(f"{connection.host}: topic error "
                              f"{[t.error_code for t in topics_found]}")
            except WireError as err:
                errors.append(str(err))
            self._connections.append(self._connections.pop(0))
        raise ObservationError("; ".join(errors) or "no broker to ask")

    def _high_watermarks(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        if self._admin is None or not partitions:
            return {}
        request = {TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions}
        futures = self._admin.list_offsets(request, request_timeout=self._timeout_s)
        result = {}
        for tp, future in futures.items():
            try:
                offset = future.result(timeout=self._timeout_s).offset
            except Exception:  # noqa: BLE001 - a partition without a reachable leader: unknown
                continue
            # librdkafka reports "no offset" as a negative sentinel (-1001): unknown.
            if offset >= 0:
                result[(tp.topic, tp.partition)] = offset
        return result

    def close(self) -> None:
        for connection in self._connections:
            connection.close()
