"""The wire client's transactions part (contract v4): what a partition's leader
says of its transactions, and where a transactional.id's coordinator is.

Kafka's own message schemas (clients/src/main/resources/common/message/*.json),
the same in every release 4.0 to 4.4:

- ListOffsets v4 at READ_COMMITTED (cluster.kafka_wire encodes it): the latest
  offset is then the partition's last stable offset (LSO). A leader whose high
  watermark has not yet reached the start of its epoch answers
  OFFSET_NOT_AVAILABLE (the observe line leaves the LSO out then).
- DescribeProducers v0 (key 61, the only version; flexible): each active
  producer of a partition and its CurrentTxnStartOffset, the first offset of
  the transaction it holds open (-1: none). confluent-kafka's admin client has
  no DescribeProducers. Any replica answers it from its own producer state, so
  an answer counts only from a broker that the same round trip shows leading the
  partition at the described epoch (ListOffsets carries the epoch; it does not).
- FindCoordinator v4 (key 10; flexible; the first with a list of keys, KIP-699,
  which every 4.x broker takes and later versions only add error codes and
  share groups to): the broker that coordinates a transactional.id (key type 1)
  or a group (0). Asked for a key whose internal topic does not exist yet, a
  broker creates the topic and answers COORDINATOR_NOT_AVAILABLE meanwhile.

The observer asks a leader for all three of its partitions' offsets in one round
trip (leader_view): the requests are written together and answered in order.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from elr_harness.cluster.kafka_wire import (
    READ_COMMITTED,
    WireConnection,
    decode_list_offsets_response,
    encode_list_offsets_request,
)
from elr_harness.cluster.wire_codec import (
    Reader,
    WireError,
    compact_string,
    framed,
    header_v1,
    uvarint,
)

DESCRIBE_PRODUCERS_KEY = 61
DESCRIBE_PRODUCERS_VERSION = 0
FIND_COORDINATOR_KEY = 10
FIND_COORDINATOR_VERSION = 4
#: FindCoordinator's key types.
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
#: Kafka's error codes the observer tells apart: a leader at the asked epoch whose
#: high watermark lags the start of its epoch answers ListOffsets with this one.
OFFSET_NOT_AVAILABLE = 78
#: FindCoordinator while the internal topic is being created or loaded.
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15

Key = tuple[str, int]


@dataclass(frozen=True)
class ProducerState:
    """One active producer of a partition, as DescribeProducers v0 lists it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    #: The first offset of its open transaction; -1 when it has none open.
    current_txn_start_offset: int


@dataclass(frozen=True)
class Coordinator:
    """One key's coordinator, as FindCoordinator v4 answers it."""

    key: str
    node_id: int
    host: str
    port: int
    error_code: int
    error_message: str | None


def open_txn_offsets(producers: Iterable[ProducerState]) -> tuple[int, ...]:
    """The first offset of each open transaction (the observe line's
    open_txn_offsets), in offset order."""
    return tuple(sorted(p.current_txn_start_offset for p in producers
                        if p.current_txn_start_offset >= 0))


# -- encoding -----------------------------------------------------------------


def encode_describe_producers_request(correlation_id: int, client_id: str,
                                      partitions: Iterable[Key]) -> bytes:
    """A size-prefixed DescribeProducers v0 request (request header v2)."""
    header = header_v1(DESCRIBE_PRODUCERS_KEY, DESCRIBE_PRODUCERS_VERSION, correlation_id,
                       client_id) + b"\x00"  # no tagged fields
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    body = uvarint(len(by_topic) + 1)
    for topic, numbers in by_topic.items():
        body += compact_string(topic) + uvarint(len(numbers) + 1)
        body += b"".join(struct.pack(">i", n) for n in numbers) + b"\x00"
    return framed(header, body + b"\x00")  # request tagged fields


def encode_find_coordinator_request(correlation_id: int, client_id: str,
                                    keys: Sequence[str], key_type: int) -> bytes:
    """A size-prefixed FindCoordinator v4 request (request header v2)."""
    header = header_v1(FIND_COORDINATOR_KEY, FIND_COORDINATOR_VERSION, correlation_id,
                       client_id) + b"\x00"  # no tagged fields
    body = struct.pack(">b", key_type) + uvarint(len(keys) + 1)
    body += b"".join(compact_string(k) for k in keys)
    return framed(header, body + b"\x00")


# -- decoding -----------------------------------------------------------------


def decode_describe_producers_response(
        payload: bytes) -> tuple[int, dict[Key, tuple[int, tuple[ProducerState, ...]]]]:
    """(correlation id, {(topic, partition): (error code, active producers)})."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()  # response header v1
    r.int32()  # throttle time
    result: dict[Key, tuple[int, tuple[ProducerState, ...]]] = {}
    for _ in range(max(r.uvarint() - 1, 0)):
        topic = r.compact_nullable_string() or ""
        for _ in range(max(r.uvarint() - 1, 0)):
            partition, error_code = r.int32(), r.int16()
            r.compact_nullable_string()  # error message
            producers = []
            for _ in range(max(r.uvarint() - 1, 0)):
                producers.append(ProducerState(r.int64(), r.int32(), r.int32(), r.int64(),
                                               r.int32(), r.int64()))
                r.skip_tagged_fields()
            r.skip_tagged_fields()
            result[(topic, partition)] = (error_code, tuple(producers))
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    return correlation_id, result


def decode_find_coordinator_response(payload: bytes) -> tuple[int, list[Coordinator]]:
    """(correlation id, each key's coordinator) of a FindCoordinator v4 response."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()  # response header v1
    r.int32()  # throttle time
    coordinators = []
    for _ in range(max(r.uvarint() - 1, 0)):
        key = r.compact_nullable_string() or ""
        node_id = r.int32()
        host = r.compact_nullable_string() or ""
        port, error_code = r.int32(), r.int16()
        coordinators.append(Coordinator(key, node_id, host, port, error_code,
                                        r.compact_nullable_string()))
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    return correlation_id, coordinators


# -- asking -------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderView:
    """What one broker said of the partitions it was asked about as their leader,
    in one round trip; each field None where its response was unreadable."""

    #: (error code, high watermark) per partition.
    high_watermarks: dict[Key, tuple[int, int]] | None
    #: (error code, last stable offset) per data partition.
    stable_offsets: dict[Key, tuple[int, int]] | None
    #: (error code, active producers) per data partition.
    producers: dict[Key, tuple[int, tuple[ProducerState, ...]]] | None

    def leads(self, key: Key) -> bool:
        """Did ListOffsets, which names the described leader epoch, show this
        broker leading `key` at that epoch (an answer, or OFFSET_NOT_AVAILABLE: the
        leader whose high watermark lags its epoch's start)? A deposed or stale
        leader answers a fencing error instead."""
        return any(key in answers and answers[key][0] in (0, OFFSET_NOT_AVAILABLE)
                   for answers in (self.high_watermarks, self.stable_offsets)
                   if answers is not None)


def leader_view(connection: WireConnection, epochs: Mapping[Key, int],
                data: Mapping[Key, int]) -> LeaderView:
    """Ask a leader, in one round trip: the active producers and the LSO of the
    `data` partitions, then the high watermark of every partition in `epochs` (each
    (topic, partition) -> the leader epoch described). The LSO is read before the
    high watermark, so the two can never show an LSO above the high watermark.
    WireError when the broker was not reached or the exchange broke."""
    builds = [lambda c: encode_list_offsets_request(c, connection.client_id, dict(epochs))]
    if data:
        builds = [lambda c: encode_describe_producers_request(c, connection.client_id, data),
                  lambda c: encode_list_offsets_request(c, connection.client_id, dict(data),
                                                        READ_COMMITTED), *builds]
    payloads = connection.exchange_all(builds)
    hwms = _read(decode_list_offsets_response, payloads[-1])
    if not data:
        return LeaderView(hwms, None, None)
    return LeaderView(hwms, _read(decode_list_offsets_response, payloads[1]),
                      _read(decode_describe_producers_response, payloads[0]))


def _read(decode, payload: bytes):
    """One response's answer; None when it is unreadable (the others still count)."""
    try:
        return decode(payload)[1]
    except (WireError, UnicodeDecodeError):
        return None


def find_coordinator(connection: WireConnection, key: str,
                     key_type: int = TRANSACTION_KEY_TYPE) -> Coordinator:
    """The coordinator one broker names for `key` (a transactional.id by default);
    its error code says whether it named one."""
    _, found = decode_find_coordinator_response(connection.request(
        lambda c: encode_find_coordinator_request(c, connection.client_id, [key], key_type)))
    for coordinator in found:
        if coordinator.key == key:
            return coordinator
    raise WireError(f"FindCoordinator answered no coordinator for {key!r}")


def transaction_coordinator(addresses: Sequence[str], transactional_id: str,
                            timeout_s: float) -> int | None:
    """The broker id of `transactional_id`'s transaction coordinator, as the first
    broker at `addresses` that names one answers; None when none does (no broker
    reached, or the coordinator is not available yet: ask again)."""
    for address in addresses:
        connection = WireConnection(address, timeout_s)
        try:
            found = find_coordinator(connection, transactional_id, TRANSACTION_KEY_TYPE)
        except (WireError, UnicodeDecodeError):
            continue
        finally:
            connection.close()
        if found.error_code == 0 and found.node_id >= 0:
            return found.node_id
    return None

