"""Partition reassignments: KIP-455's AlterPartitionReassignments (key 45, v0, a
flexible version) over the harness's own wire client, from the host as the
observer asks.

Not Kafka's reassign-partitions tool: it refuses any target naming a broker
that is not alive (its verifyBrokerIds), so it could never move a partition
onto a replica a fault stopped, the very case KIP-966 constrains (the
controller itself takes any registered broker, fenced or not); and
librdkafka has no AlterPartitionReassignments. A broker forwards the request
to the active controller.

One request per call, sent to the first broker that takes a connection:
nothing sent is a refusal (Refused: recorded `fail`), and so is an error by
which the controller refused the change (REFUSALS); any other error, or a lost
answer, may have happened (an `info`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Protocol

from elr_harness.cluster.kafka_wire import WireConnection
from elr_harness.cluster.wire_codec import (
    Reader,
    WireError,
    compact_string,
    framed,
    header_v1,
    uvarint,
)
from elr_harness.core.config import NodeTimeouts
from elr_harness.core.errors import HarnessError, Refused

ALTER_PARTITION_REASSIGNMENTS_KEY = 45
ALTER_PARTITION_REASSIGNMENTS_VERSION = 0
#: Kafka's error codes this module tells apart.
NONE = 0
NO_REASSIGNMENT_IN_PROGRESS = 85
#: Errors by which the controller refused the change after checking it: nothing
#: was applied (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_ and CLUSTER_AUTHORIZATION_FAILED,
#: UNSUPPORTED_VERSION, INVALID_REPLICA_ASSIGNMENT, INVALID_REQUEST,
#: NO_REASSIGNMENT_IN_PROGRESS). Any other (a timeout, NOT_CONTROLLER while
#: forwarding) may have been applied all the same.
REFUSALS = frozenset({3, 29, 31, 35, 39, 42, NO_REASSIGNMENT_IN_PROGRESS})


class Outcome(StrEnum):
    """How a reassignment ended: cancelled while still under way, or completed."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"


class Connection(Protocol):
    def connect(self) -> None: ...
    def request(self, build: Callable[[int], bytes]) -> bytes: ...
    def close(self) -> None: ...


Connect = Callable[[str, float], Connection]


def encode_request(correlation_id: int, client_id: str, topic: str, partition: int,
                   replicas: Sequence[int] | None, timeout_ms: int) -> bytes:
    """A size-prefixed AlterPartitionReassignments v0 request (request header v2) for
    one partition: to `replicas`, or None to cancel its reassignment."""
    header = header_v1(ALTER_PARTITION_REASSIGNMENTS_KEY, ALTER_PARTITION_REASSIGNMENTS_VERSION,
                        correlation_id, client_id) + b"\x00"  # no tagged fields
    if replicas is None:
        target = uvarint(0)  # null: cancel
    else:
        target = uvarint(len(replicas) + 1) + b"".join(struct.pack(">i", int(r))
                                                        for r in replicas)
    body = (struct.pack(">i", timeout_ms) + uvarint(2) + compact_string(topic)
            + uvarint(2) + struct.pack(">i", partition) + target + b"\x00"  # partition
            + b"\x00"  # topic tagged fields
            + b"\x00")  # request tagged fields
    return framed(header, body)


def decode_response(payload: bytes) -> tuple[int, int, str | None,
                                              dict[tuple[str, int], tuple[int, str | None]]]:
    """(correlation id, top-level error code and message, {(topic, partition):
    (error code, message)}) of a response (after the size prefix)."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()  # response header v1
    r.int32()  # throttle time
    error_code, message = r.int16(), r.compact_nullable_string()
    partitions: dict[tuple[str, int], tuple[int, str | None]] = {}
    for _ in range(max(r.uvarint() - 1, 0)):
        topic = r.compact_nullable_string() or ""
        for _ in range(max(r.uvarint() - 1, 0)):
            index, code = r.int32(), r.int16()
            partitions[(topic, index)] = (code, r.compact_nullable_string())
            r.skip_tagged_fields()
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    return correlation_id, error_code, message, partitions


def alter(addresses: Sequence[str], topic: str, partition: int,
          replicas: Sequence[int] | None, timeouts: NodeTimeouts,
          connect: Connect = WireConnection) -> tuple[int, str | None]:
    """Send one request to the first of `addresses` that takes a connection; the
    error code and message the controller gave the partition."""
    where = f"{topic}-{partition}"
    for address in addresses:
        connection = connect(address, timeouts.reassign_answer_s)
        try:
            try:
                connection.connect()
            except WireError:
                continue
            try:
                payload = connection.request(lambda c: encode_request(
                    c, "elr-harness", topic, partition, replicas,
                    int(timeouts.reassign_request_s * 1000)))
                _, error, message, answers = decode_response(payload)
            except WireError as err:
                raise HarnessError(f"{where}: no answer from {address}: {err}") from err
        finally:
            connection.close()
        if error != NONE:
            return error, message
        if (topic, partition) not in answers:
            raise HarnessError(f"{where}: {address} answered for other partitions")
        return answers[(topic, partition)]
    raise Refused(f"{where}: no broker that hears the controllers took a connection "
                  f"({', '.join(addresses) or 'none to ask'})")


def _error(action: str, where: str, code: int, message: str | None) -> HarnessError:
    text = f"{where}: {action}: Kafka error {code}: {message or 'no message'}"
    return Refused(text) if code in REFUSALS else HarnessError(text)


def execute(addresses: Sequence[str], topic: str, partition: int, replicas: Sequence[int],
            timeouts: NodeTimeouts, connect: Connect = WireConnection) -> None:
    """Ask the controller to move the partition to `replicas`: it starts the
    reassignment, which completes once every target replica is in the ISR."""
    code, message = alter(addresses, topic, partition, replicas, timeouts, connect)
    if code != NONE:
        raise _error(f"reassigning to {list(replicas)}", f"{topic}-{partition}", code, message)


def cancel(addresses: Sequence[str], topic: str, partition: int, timeouts: NodeTimeouts,
           connect: Connect = WireConnection) -> Outcome:
    """Cancel the partition's reassignment if it is still under way (the controller
    drops the replicas it was adding and keeps those it was removing); say whether
    it was cancelled or had completed (none in progress)."""
    code, message = alter(addresses, topic, partition, None, timeouts, connect)
    if code == NONE:
        return Outcome.CANCELLED
    if code == NO_REASSIGNMENT_IN_PROGRESS:
        return Outcome.COMPLETED
    raise _error("cancelling", f"{topic}-{partition}", code, message)
