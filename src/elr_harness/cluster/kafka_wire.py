"""Just enough of Kafka's wire protocol for the observer and the nemesis:
DescribeTopicPartitions (key 75), ListOffsets (key 2), Metadata (key 3) and
DescribeCluster (key 60) here; DescribeConfigs (key 32) and ApiVersions (key 18)
in cluster.kafka_wire_config; cluster/reassignments.py encodes its own
AlterPartitionReassignments; the shared encoding in cluster.wire_codec.

The ELR fields (EligibleLeaderReplicas, LastKnownElr) are only exposed by
DescribeTopicPartitions (KIP-966); librdkafka does not surface them, and
starting a JVM tool every 250 ms is too slow. The schema is Kafka's own
clients/src/main/resources/common/message/DescribeTopicPartitions*.json, v0,
a "flexible" version: compact arrays/strings and tagged fields.

High watermarks come from ListOffsets v4 (LATEST, READ_UNCOMMITTED), a plain
non-flexible version (last stable offsets from the same at READ_COMMITTED,
cluster.kafka_wire_txn), asked of each partition's leader with the leader epoch
the observer just saw: a broker with another epoch (a stale leader) answers
FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH instead of its own high watermark. librdkafka's admin
client did this before, but under faults it once aborted the whole harness
process (an assertion in rd_kafka_admin_response_parse); a socket error here
is only an unknown high watermark. For the same reason the registered,
unfenced brokers come from a Metadata v8 request with no topics (a KRaft
broker lists only unfenced brokers), not from librdkafka's DescribeCluster,
which hit the same assertion while brokers were being fenced.
DescribeProducers and FindCoordinator (transactions) are in
cluster.kafka_wire_txn.

Which brokers are fenced comes from DescribeCluster v2 (KIP-1073, Kafka 4.0+)
with IncludeFencedBrokers: the `fenced` field of observe lines, which the
checker's fenced-leader anomaly (KAFKA-19522) reads.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from elr_harness.cluster.kafka_wire_config import (
    Features,
    TopicConfigs,
    decode_api_versions_features,
    decode_describe_configs_response,
    encode_api_versions_request,
    encode_describe_configs_request,
)
from elr_harness.cluster.wire_codec import (
    Reader,
    WireError,
    compact_string,
    framed,
    header_v1,
    string,
    uvarint,
)

DESCRIBE_TOPIC_PARTITIONS_KEY = 75
DESCRIBE_TOPIC_PARTITIONS_VERSION = 0
LIST_OFFSETS_KEY = 2
LIST_OFFSETS_VERSION = 4
#: ListOffsets' timestamp for "the latest offset" (the high watermark).
LATEST_TIMESTAMP = -1
#: ListOffsets' isolation levels: the latest offset is the high watermark at
#: READ_UNCOMMITTED, the last stable offset (LSO) at READ_COMMITTED.
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
METADATA_KEY = 3
METADATA_VERSION = 8
#: DescribeCluster v2 (KIP-1073, Kafka 4.0+) lists fenced brokers when asked to.
DESCRIBE_CLUSTER_KEY = 60
DESCRIBE_CLUSTER_VERSION = 2
#: DescribeCluster's EndpointType for broker listeners.
ENDPOINT_TYPE_BROKERS = 1


@dataclass(frozen=True)
class DescribedPartition:
    topic: str
    partition: int
    error_code: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None
    offline: tuple[int, ...]


@dataclass(frozen=True)
class DescribedTopic:
    name: str
    error_code: int
    partitions: tuple[DescribedPartition, ...]


# -- encoding -----------------------------------------------------------------


def encode_describe_request(correlation_id: int, client_id: str, topics: Sequence[str],
                            partition_limit: int = 2000,
                            cursor: tuple[str, int] | None = None) -> bytes:
    """A size-prefixed DescribeTopicPartitions v0 request (request header v2)."""
    header = header_v1(DESCRIBE_TOPIC_PARTITIONS_KEY, DESCRIBE_TOPIC_PARTITIONS_VERSION,
                        correlation_id, client_id) + b"\x00"  # no tagged fields
    body = uvarint(len(topics) + 1)
    for name in topics:
        body += compact_string(name) + b"\x00"
    body += struct.pack(">i", partition_limit)
    if cursor is None:
        body += struct.pack(">b", -1)
    else:
        body += struct.pack(">b", 1) + compact_string(cursor[0]) + struct.pack(">i", cursor[1])
        body += b"\x00"
    body += b"\x00"  # request tagged fields
    return framed(header, body)


def encode_list_offsets_request(correlation_id: int, client_id: str,
                                partitions: dict[tuple[str, int], int],
                                isolation_level: int = READ_UNCOMMITTED) -> bytes:
    """A size-prefixed ListOffsets v4 request (request header v1) for the latest
    offset of each (topic, partition) -> current leader epoch: the high watermark
    at READ_UNCOMMITTED, the last stable offset at READ_COMMITTED."""
    header = header_v1(LIST_OFFSETS_KEY, LIST_OFFSETS_VERSION, correlation_id, client_id)
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), epoch in partitions.items():
        by_topic.setdefault(topic, []).append((partition, epoch))
    # replica id, isolation level, topics
    body = struct.pack(">ibi", -1, isolation_level, len(by_topic))
    for topic, numbers in by_topic.items():
        body += string(topic) + struct.pack(">i", len(numbers))
        for number, epoch in numbers:
            body += struct.pack(">iiq", number, epoch, LATEST_TIMESTAMP)
    return framed(header, body)


def encode_metadata_request(correlation_id: int, client_id: str) -> bytes:
    """A size-prefixed Metadata v8 request for no topics: only the brokers."""
    header = header_v1(METADATA_KEY, METADATA_VERSION, correlation_id, client_id)
    # no topics (an empty array, not null = all), no auto-creation, no ACL details
    return framed(header, struct.pack(">i???", 0, False, False, False))


def encode_describe_cluster_request(correlation_id: int, client_id: str) -> bytes:
    """A size-prefixed DescribeCluster v2 request (request header v2): broker
    endpoints, fenced brokers included, no authorized operations."""
    header = header_v1(DESCRIBE_CLUSTER_KEY, DESCRIBE_CLUSTER_VERSION, correlation_id,
                        client_id) + b"\x00"  # no tagged fields
    body = struct.pack(">?b?", False, ENDPOINT_TYPE_BROKERS, True) + b"\x00"
    return framed(header, body)


# -- decoding -----------------------------------------------------------------


def decode_describe_response(payload: bytes) -> tuple[int, list[DescribedTopic],
                                                       tuple[str, int] | None]:
    """Parse a response (after the size prefix): correlation id, topics, next cursor."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()  # response header v1
    r.int32()  # throttle time
    topics: list[DescribedTopic] = []
    for _ in range(max(r.uvarint() - 1, 0)):
        topic_error = r.int16()
        name = r.compact_nullable_string() or ""
        r.take(16)  # topic id
        r.int8()  # is internal
        partitions = []
        for _ in range(max(r.uvarint() - 1, 0)):
            error = r.int16()
            index = r.int32()
            leader = r.int32()
            epoch = r.int32()
            replicas = r.compact_int32_array() or ()
            isr = r.compact_int32_array() or ()
            elr = r.compact_int32_array()
            last_known = r.compact_int32_array()
            offline = r.compact_int32_array() or ()
            r.skip_tagged_fields()
            partitions.append(DescribedPartition(name, index, error, leader, epoch, replicas,
                                                 isr, elr, last_known, offline))
        r.int32()  # authorized operations
        r.skip_tagged_fields()
        topics.append(DescribedTopic(name, topic_error, tuple(partitions)))
    cursor = None
    if r.int8() >= 0:
        cursor_topic = r.compact_nullable_string() or ""
        cursor = (cursor_topic, r.int32())
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    return correlation_id, topics, cursor


def decode_list_offsets_response(payload: bytes) -> tuple[int, dict[tuple[str, int],
                                                                    tuple[int, int]]]:
    """(correlation id, {(topic, partition): (error code, offset)}) of a v4 response."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.int32()  # throttle time
    result: dict[tuple[str, int], tuple[int, int]] = {}
    for _ in range(r.int32()):
        topic = r.text(r.int16())
        for _ in range(r.int32()):
            partition, error_code = r.int32(), r.int16()
            r.take(8)  # timestamp
            offset = struct.unpack(">q", r.take(8))[0]
            r.int32()  # the leader epoch of that offset
            result[(topic, partition)] = (error_code, offset)
    return correlation_id, result


def decode_describe_cluster_response(payload: bytes) -> tuple[int, dict[int, bool]]:
    """(correlation id, {broker id: is fenced}) of a DescribeCluster v2 response; a
    response with an error code is a WireError (no view, not an empty one)."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()  # response header v1
    r.int32()  # throttle time
    error_code = r.int16()
    message = r.compact_nullable_string()
    if error_code != 0:
        raise WireError(f"DescribeCluster error {error_code}: {message}")
    r.int8()  # endpoint type
    r.compact_nullable_string()  # cluster id
    r.int32()  # controller id
    brokers: dict[int, bool] = {}
    for _ in range(max(r.uvarint() - 1, 0)):
        broker_id = r.int32()
        r.compact_nullable_string()  # host
        r.int32()  # port
        r.compact_nullable_string()  # rack
        brokers[broker_id] = r.int8() != 0
        r.skip_tagged_fields()
    r.int32()  # cluster authorized operations
    r.skip_tagged_fields()
    return correlation_id, brokers


def decode_metadata_brokers(payload: bytes) -> tuple[int, list[int]]:
    """(correlation id, broker ids) of a Metadata v8 response; topics are not read."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.int32()  # throttle time
    brokers = []
    for _ in range(r.int32()):
        brokers.append(r.int32())
        r.take(r.int16())  # host
        r.int32()  # port
        rack = r.int16()
        if rack > 0:
            r.take(rack)
    return correlation_id, brokers


class WireConnection:
    """One blocking connection to a broker, reopened after any error."""

    def __init__(self, address: str, timeout_s: float, client_id: str = "elr-harness") -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port = host, int(port)
        self.timeout_s = timeout_s
        self.client_id = client_id
        self._sock: socket.socket | None = None
        self._correlation = 0

    def describe_topic_partitions(self, topics: Sequence[str]) -> list[DescribedTopic]:
        """Every partition of `topics`, following the cursor across pages."""
        result: list[DescribedTopic] = []
        cursor: tuple[str, int] | None = None
        while True:
            _, page, cursor = decode_describe_response(self._exchange(
                lambda c, at=cursor: encode_describe_request(c, self.client_id, topics,
                                                             cursor=at)))
            result.extend(page)
            if cursor is None:
                return _merge_topics(result)

    def latest_offsets(self, partitions: dict[tuple[str, int], int],
                       isolation_level: int = READ_UNCOMMITTED
                       ) -> dict[tuple[str, int], tuple[int, int]]:
        """(error code, latest offset) of each (topic, partition) -> leader epoch asked:
        high watermarks, or last stable offsets at READ_COMMITTED."""
        _, result = decode_list_offsets_response(self._exchange(
            lambda c: encode_list_offsets_request(c, self.client_id, partitions,
                                                  isolation_level)))
        return result

    def broker_ids(self) -> list[int]:
        """The brokers this broker's metadata lists: registered and unfenced."""
        _, brokers = decode_metadata_brokers(self._exchange(
            lambda c: encode_metadata_request(c, self.client_id)))
        return brokers

    def brokers_fenced(self) -> dict[int, bool]:
        """Every broker this broker's metadata knows, and whether it is fenced."""
        _, brokers = decode_describe_cluster_response(self._exchange(
            lambda c: encode_describe_cluster_request(c, self.client_id)))
        return brokers

    def topic_configs(self, topics: Sequence[str], keys: Sequence[str]
                      ) -> dict[str, TopicConfigs]:
        """The values in effect of `keys` for each topic (one DescribeConfigs request)."""
        _, result = decode_describe_configs_response(self._exchange(
            lambda c: encode_describe_configs_request(c, self.client_id, topics, keys)))
        return result

    def features(self) -> Features:
        """This broker's supported and finalized features (ApiVersions)."""
        _, result = decode_api_versions_features(self._exchange(
            lambda c: encode_api_versions_request(c, self.client_id)))
        return result

    def connect(self) -> None:
        """Open the connection now (WireError if the broker takes none): a caller
        that must know whether a request was sent at all asks this first."""
        try:
            if self._sock is None:
                self._sock = socket.create_connection((self.host, self.port), self.timeout_s)
                self._sock.settimeout(self.timeout_s)
        except OSError as err:
            self.close()
            raise WireError(f"{self.host}:{self.port}: {err}") from err

    def request(self, build: Callable[[int], bytes]) -> bytes:
        """One request a caller encodes itself (cluster.reassignments); its answer."""
        return self._exchange(build)

    def exchange_all(self, builds: Sequence[Callable[[int], bytes]]) -> list[bytes]:
        """Several requests written at once and their responses read in order: one
        round trip where one after another would take one each (a broker answers a
        connection's requests in the order sent). Each response must carry its own
        request's correlation id; anything else closes the socket."""
        ids = [self._correlation + n for n in range(1, len(builds) + 1)]
        self._correlation += len(builds)
        requests = b"".join(build(i) for build, i in zip(builds, ids, strict=True))
        payloads = self._roundtrip(requests, len(ids))
        if any(p[:4] != struct.pack(">i", i) for p, i in zip(payloads, ids, strict=True)):
            self.close()
            raise WireError("response out of order")
        return payloads

    def _exchange(self, build: Callable[[int], bytes]) -> bytes:
        """Send build(correlation id) and return the response for exactly that id."""
        return self.exchange_all([build])[0]

    def _roundtrip(self, requests: bytes, responses: int) -> list[bytes]:
        self.connect()
        assert self._sock is not None
        try:
            self._sock.sendall(requests)
            payloads = []
            for _ in range(responses):
                size = struct.unpack(">i", self._recv_exactly(4))[0]
                payloads.append(self._recv_exactly(size))
            return payloads
        except (OSError, struct.error) as err:
            self.close()
            raise WireError(f"{self.host}:{self.port}: {err}") from err

    def _recv_exactly(self, n: int) -> bytes:
        assert self._sock is not None
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self._sock.recv(n - len(chunks))
            if not chunk:
                raise OSError("connection closed by broker")
            chunks += chunk
        return bytes(chunks)

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None


def _merge_topics(pages: list[DescribedTopic]) -> list[DescribedTopic]:
    """A topic split over several pages comes back as one."""
    merged: dict[str, DescribedTopic] = {}
    for topic in pages:
        if topic.name in merged:
            prior = merged[topic.name]
            merged[topic.name] = DescribedTopic(topic.name, prior.error_code,
                                                prior.partitions + topic.partitions)
        else:
            merged[topic.name] = topic
    return list(merged.values())
