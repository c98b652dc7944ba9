"""Reading each partition's state from the live cluster, as Kafka reports it.

Leader, epoch, replicas, ISR, ELR and LastKnownELR come from
DescribeTopicPartitions (the only API that exposes the ELR fields); the high
watermark comes from ListOffsets(latest) answered by the partition's leader.
Asked of the broker that described the partitions, just before and just after
it did: the fenced brokers (DescribeCluster v2, fenced brokers included,
KIP-1073), each topic's effective min.insync.replicas (DescribeConfigs, one
request for every topic) and the finalized level of
eligible.leader.replicas.version (ApiVersions); each is recorded only where
both answers agree (a change in between is not attributed to either side). All
go over the harness's own small wire client (cluster.kafka_wire). Nothing is
derived: the checker judges Kafka by exactly what Kafka said.

With transactions (contract v4) the observer also watches the internal topics
`__transaction_state` and `__consumer_offsets` once they exist, and asks each
data partition's leader, in the same round trip as its high watermark, for its
last stable offset and the first offset of each transaction it holds open
(cluster.kafka_wire_txn). Without them, nothing of this is asked or recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from elr_harness.cluster.kafka_wire import WireConnection, WireError
from elr_harness.cluster.kafka_wire_txn import leader_view, open_txn_offsets
from elr_harness.cluster.kraft import INTERNAL_TOPICS
from elr_harness.core.config import NodeTimeouts
from elr_harness.core.history import ELR_FEATURE, OBSERVER_PROCESS

#: How the observer reads (test.json's `observer`, contract v4): the fenced list
#: first, from the broker that then describes the partitions (and again after,
#: recorded only when the same), so elr-member-unclean can be judged.
OBSERVER_READS = {"fenced_first": True, "same_broker": True}

#: The topic config the observe line's `min_isr` reports.
MIN_ISR_CONFIG = "min.insync.replicas"


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
    #: The replica assignment in the same description (None: not described).
    replicas: tuple[int, ...] | None = None
    #: Brokers the answering broker's metadata held fenced just before it described
    #: the partitions, the same just after (None: the two differ, or no answer).
    fenced: tuple[int, ...] | None = None
    #: The topic's effective min.insync.replicas, the same just before and just
    #: after the description (None: it changed in between, or no answer).
    min_isr: int | None = None
    #: The finalized level of eligible.leader.replicas.version, by the same rule.
    elr_feature: int | None = None
    #: The partition's LSO as its leader reports it (None: not asked, or no answer,
    #: OFFSET_NOT_AVAILABLE included).
    last_stable_offset: int | None = None
    #: The first offset of each transaction the leader holds open (None: not asked,
    #: or no answer; empty: none open).
    open_txn_offsets: tuple[int, ...] | None = None

    def as_observation(self) -> dict:
        """A history `observe` line's fields (HISTORY.md) without index and time: the
        one form the observer and the scenario's controller view both record."""
        fields: dict = {
            "process": OBSERVER_PROCESS, "type": "ok", "f": "observe",
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "elr": None if self.elr is None else list(self.elr),
            "last_known_elr": None if self.last_known_elr is None else list(self.last_known_elr),
        }
        # A negative value is a client's "unknown" sentinel (librdkafka's -1001),
        # never a watermark: recording it would read as a regression.
        if self.high_watermark is not None and self.high_watermark >= 0:
            fields["high_watermark"] = self.high_watermark
        # each absent where the cluster could not say
        if self.fenced is not None:
            fields["fenced"] = list(self.fenced)
        if self.min_isr is not None:
            fields["min_isr"] = self.min_isr
        if self.replicas is not None:
            fields["replicas"] = list(self.replicas)
        if self.elr_feature is not None:
            fields["elr_feature"] = self.elr_feature
        if self.last_stable_offset is not None and self.last_stable_offset >= 0:
            fields["last_stable_offset"] = self.last_stable_offset
        if self.open_txn_offsets is not None:
            fields["open_txn_offsets"] = list(self.open_txn_offsets)
        return fields


def recovered(states: Sequence[PartitionState],
              expected: Mapping[tuple[str, int], int]) -> bool:
    """Every expected (topic, partition) led, with at least its replication factor
    (the value) in its ISR: the cluster is whole again."""
    seen = {(s.topic, s.partition): s for s in states}
    return all(key in seen and seen[key].leader >= 0 and len(seen[key].isr) >= replicas
               for key, replicas in expected.items())


def _int_value(text: str | None) -> int | None:
    """A config value's int (None for a null or a value that is not one)."""
    if text is None or not re.fullmatch(r"-?[0-9]{1,10}", text):
        return None
    return int(text)


@dataclass(frozen=True)
class _Settings:
    """What one broker said of the cluster around a description (None: no answer)."""

    fenced: frozenset[int] | None
    min_isr: dict[str, int] | None
    elr_feature: int | None


@dataclass(frozen=True)
class _Around:
    """What held both just before and just after a description."""

    fenced: tuple[int, ...] | None
    min_isr: dict[str, int]
    elr_feature: int | None


def _both(before: _Settings, after: _Settings) -> _Around:
    """The fenced brokers, a topic's min ISR and the ELR feature level: each only
    when the answers just before and just after the description agree (the same
    broker, whose metadata image only moves forward). So the fenced list is both
    the one read first and what held when the partitions were described: a leader
    unfenced in between is never reported fenced (fenced-leader), and a broker
    listed unfenced was unfenced before its partitions were read, its registration
    and the ELR removal written with it already in that broker's image
    (elr-member-unclean; test.json's `observer`, OBSERVER_READS)."""
    fenced = None
    if before.fenced is not None and before.fenced == after.fenced:
        fenced = tuple(sorted(before.fenced))
    min_isr = {topic: value for topic, value in (before.min_isr or {}).items()
               if (after.min_isr or {}).get(topic) == value}
    feature = before.elr_feature if before.elr_feature == after.elr_feature else None
    return _Around(fenced, min_isr, feature)


class ObservationError(Exception):
    """No broker answered DescribeTopicPartitions."""


@dataclass(frozen=True)
class _Offsets:
    """What the leaders said of their partitions' offsets, by (topic, partition)."""

    high_watermarks: dict[tuple[str, int], int]
    stable: dict[tuple[str, int], int]
    open_txns: dict[tuple[str, int], tuple[int, ...]]


def is_data_topic(topic: str) -> bool:
    """A topic the workload writes, not one of Kafka's internal ones (all "__")."""
    return not topic.startswith("__")


class PartitionObserver:
    """Describes partitions through whichever broker answers first."""

    def __init__(self, bootstrap: list[str], timeout_s: float = NodeTimeouts.describe_s,
                 with_high_watermark: bool = True,
                 avoid: Callable[[], set[str]] | None = None,
                 addresses: dict[int, str] | None = None,
                 transactions: bool = False) -> None:
        """`avoid()` names broker addresses (host:port) not to ask right now: a broker
        cut off from the controllers still answers, from a stale metadata cache.
        `addresses` maps broker ids to those addresses. `transactions`: a run with
        transactions (contract v4): the internal topics are described too, and each
        data partition's LSO and open transactions are asked with its high watermark."""
        self._avoid = avoid or (lambda: set())
        self._addresses = addresses or {}
        self._connections = [WireConnection(address, timeout_s) for address in bootstrap]
        self._with_high_watermark = with_high_watermark
        self._transactions = transactions
        #: The highest leader epoch seen per partition.
        self._epochs: dict[tuple[str, int], int] = {}
        #: The topics the last description found (asked for every topic, their
        #: settings are read before the next one).
        self._known_topics: list[str] = []

    def describe(self, topics: Sequence[str]) -> list[PartitionState]:
        """Every partition of `topics` (every topic when none is named), and with
        transactions the internal topics that exist."""
        avoid = self._avoid()
        if self._transactions and topics:
            topics = [*topics, *(t for t in INTERNAL_TOPICS if t not in topics)]
        described, around = self._describe_any(topics, avoid)
        partitions = [p for t in described for p in t.partitions]
        # A leader with a stale view may report an old high watermark: not asked.
        leaders = {(p.topic, p.partition): (p.leader, p.leader_epoch) for p in partitions
                   if p.leader >= 0 and self._addresses.get(p.leader) not in avoid}
        if self._transactions:
            offsets = self._leader_views(leaders, avoid)
        else:
            offsets = _Offsets(self._high_watermarks(leaders, avoid), {}, {})
        hwms = offsets.high_watermarks
        return [
            PartitionState(
                topic=p.topic, partition=p.partition, leader=p.leader,
                leader_epoch=p.leader_epoch, isr=tuple(p.isr),
                elr=None if p.elr is None else tuple(p.elr),
                last_known_elr=None if p.last_known_elr is None else tuple(p.last_known_elr),
                high_watermark=hwms.get((p.topic, p.partition)), replicas=tuple(p.replicas),
                fenced=around.fenced, min_isr=around.min_isr.get(p.topic),
                elr_feature=around.elr_feature,
                last_stable_offset=offsets.stable.get((p.topic, p.partition)),
                open_txn_offsets=offsets.open_txns.get((p.topic, p.partition)),
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
                before = self._settings(connection, list(topics) or self._known_topics)
                topics_found = connection.describe_topic_partitions(topics)
                found = [t for t in topics_found if t.error_code == 0]
                if not topics and not topics_found:
                    # asked for every topic: the cluster has none yet
                    return [], _Around(None, {}, None)
                if found and self._went_back(found):
                    # a broker that missed metadata updates (cut off until a moment
                    # ago) describes an older leader epoch: not the cluster's state
                    errors.append(f"{connection.host}: stale view (leader epoch went back)")
                elif found:
                    for topic in found:
                        for p in topic.partitions:
                            key = (p.topic, p.partition)
                            self._epochs[key] = max(self._epochs.get(key, -1), p.leader_epoch)
                    self._known_topics = [t.name for t in found]
                    return found, _both(before, self._settings(connection, self._known_topics))
                else:
                    errors.append(f"{connection.host}: topic error "
                                  f"{[t.error_code for t in topics_found]}")
            except WireError as err:
                errors.append(str(err))
            self._connections.append(self._connections.pop(0))
        raise ObservationError("; ".join(errors) or "no broker to ask")

    @staticmethod
    def _settings(connection: WireConnection, topics: Sequence[str]) -> _Settings:
        """What this broker's metadata says now: the brokers it holds fenced, each
        topic's effective min ISR, the ELR feature's finalized level; each None
        where it gave no readable answer (one request each)."""
        fenced = min_isr = feature = None
        try:
            fenced = frozenset(b for b, is_fenced in connection.brokers_fenced().items()
                               if is_fenced)
        except (WireError, UnicodeDecodeError):
            pass
        if topics:
            try:
                configs = connection.topic_configs(topics, [MIN_ISR_CONFIG])
                min_isr = {topic: value for topic, c in configs.items()
                           if c.error_code == 0
                           and (value := _int_value(c.values.get(MIN_ISR_CONFIG)))
                           is not None}
            except (WireError, UnicodeDecodeError):
                pass
        try:
            feature = connection.features().level(ELR_FEATURE)
        except (WireError, UnicodeDecodeError):
            pass
        return _Settings(fenced, min_isr, feature)

    def _went_back(self, topics) -> bool:
        """Leader epochs never go down: a lower one than seen is a stale view."""
        return any(p.leader_epoch < self._epochs.get((p.topic, p.partition), -1)
                   for t in topics for p in t.partitions)

    def _asks(self, leaders: dict[tuple[str, int], tuple[int, int]], avoid: set[str]
              ) -> dict[str, dict[tuple[str, int], int]]:
        """Whom to ask for which partitions' offsets (each at its described leader
        epoch): where broker addresses are known only the described leader; otherwise
        every broker that may answer (only the leader answers without an error)."""
        if not self._with_high_watermark or not leaders:
            return {}
        connections = [f"{c.host}:{c.port}" for c in self._connections]
        asks: dict[str, dict[tuple[str, int], int]] = {}
        for key, (leader, epoch) in sorted(leaders.items()):
            address = self._addresses.get(leader)
            for target in [address] if address is not None else connections:
                if target in connections and target not in avoid:
                    asks.setdefault(target, {})[key] = epoch
        return asks

    def _connection(self, address: str) -> WireConnection:
        return next(c for c in self._connections if f"{c.host}:{c.port}" == address)

    def _high_watermarks(self, leaders: dict[tuple[str, int], tuple[int, int]],
                         avoid: set[str]) -> dict[tuple[str, int], int]:
        """Each partition's latest offset as its leader reports it; unknown (left
        out) where it did not answer; the first answer counts."""
        result: dict[tuple[str, int], int] = {}
        for address, epochs in self._asks(leaders, avoid).items():
            try:
                offsets = self._connection(address).latest_offsets(epochs)
            except (WireError, UnicodeDecodeError):
                continue
            for key, (error_code, offset) in offsets.items():
                if error_code == 0 and offset >= 0 and key in epochs:
                    result.setdefault(key, offset)
        return result

    def _leader_views(self, leaders: dict[tuple[str, int], tuple[int, int]],
                      avoid: set[str]) -> _Offsets:
        """With transactions: each partition's high watermark and, of each data
        partition, the LSO and the open transactions' first offsets, one round trip
        per leader (kafka_wire_txn.leader_view). The open transactions count only
        from a broker that the same round trip showed leading at the described epoch
        (any replica answers DescribeProducers)."""
        result = _Offsets({}, {}, {})
        for address, epochs in self._asks(leaders, avoid).items():
            data = {key: epoch for key, epoch in epochs.items() if is_data_topic(key[0])}
            try:
                view = leader_view(self._connection(address), epochs, data)
            except (WireError, UnicodeDecodeError):
                continue
            for answers, into in ((view.high_watermarks, result.high_watermarks),
                                  (view.stable_offsets, result.stable)):
                for key, (error_code, offset) in (answers or {}).items():
                    if error_code == 0 and offset >= 0 and key in epochs:
                        into.setdefault(key, offset)
            for key, (error_code, producers) in (view.producers or {}).items():
                if error_code == 0 and key in data and view.leads(key):
                    result.open_txns.setdefault(key, open_txn_offsets(producers))
        return result

    def close(self) -> None:
        for connection in self._connections:
            connection.close()


def topic_ready_everywhere(addresses: Sequence[str], topic: str, partitions: int,
                           replication_factor: int, timeout_s: float) -> bool:
    """One look: does every broker at `addresses` describe each partition of `topic`
    with a leader and a full ISR, and does each partition's leader answer
    ListOffsets for it as its leader?

    One broker's view is not enough before a workload starts on a topic just made.
    A broker that has not yet replayed the metadata up to the topic may still hold
    a just-unfenced broker fenced and leave it out of its Metadata answers;
    librdkafka then drops that broker's handle with produce requests on the wire
    and re-sends them. And a leader publishes its metadata cache before its replica
    manager hosts the partition, answering a produce with NOT_LEADER_OR_FOLLOWER in
    between, which librdkafka re-sends too. Either way the first sends of a run
    without any fault would be recorded as CLIENT_RESENT. The metadata log is one
    ordered log, so a broker that describes the topic has every record before it.
    """
    connections = [WireConnection(address, timeout_s) for address in addresses]
    try:
        epochs: dict[tuple[str, int], int] = {}
        for connection in connections:
            full = [p for t in connection.describe_topic_partitions([topic])
                    if t.name == topic and t.error_code == 0 for p in t.partitions
                    if p.error_code == 0 and p.leader >= 0
                    and len(p.isr) == replication_factor]
            if len(full) != partitions:
                return False
            for p in full:
                key = (p.topic, p.partition)
                epochs[key] = max(epochs.get(key, -1), p.leader_epoch)
        # only a partition's leader, at that epoch, answers without an error
        answered = {key for connection in connections
                    for key, (error_code, offset) in connection.latest_offsets(epochs).items()
                    if error_code == 0 and offset >= 0}
        return bool(connections) and answered >= set(epochs)
    except (WireError, UnicodeDecodeError):
        return False
    finally:
        for connection in connections:
            connection.close()
