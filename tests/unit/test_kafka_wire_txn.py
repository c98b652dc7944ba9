"""The wire client's transactions part (cluster.kafka_wire_txn), byte for byte
against Kafka's message schemas (clients/src/main/resources/common/message/*.json,
identical in kafka-clients 4.0.2, 4.1.1 and 4.4.0):

    ListOffsets       (key 2)  v4  at READ_COMMITTED   not flexible
    DescribeProducers (key 61) v0                      flexible: request header v2,
                                                       response header v1
    FindCoordinator   (key 10) v4                      flexible: request header v2,
                                                       response header v1

The golden vectors are hex written field by field from the schema JSON, not from
the module's encoder; each was also checked, once, against kafka-clients 4.0.2's
and 4.4.0's own generated *Data classes (MessageUtil.toByteBuffer for the
requests' bodies, the Data classes' readers for the responses' bodies)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import pytest

from elr_harness.cluster.kafka_wire import (
    READ_COMMITTED,
    WireConnection,
    WireError,
    decode_list_offsets_response,
    encode_list_offsets_request,
)
from elr_harness.cluster.kafka_wire_txn import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    Coordinator,
    LeaderView,
    ProducerState,
    decode_describe_producers_response,
    decode_find_coordinator_response,
    encode_describe_producers_request,
    encode_find_coordinator_request,
    find_coordinator,
    leader_view,
    open_txn_offsets,
    transaction_coordinator,
)


def _golden(*fields: str) -> bytes:
    """One field per literal, so each carries its own comment; spaces are ignored."""
    return bytes.fromhex("".join(fields))


# ListOffsetsRequest.json v4 at READ_COMMITTED, request header v1: the LSO of t-0
# (leader epoch 3). Version 2 added IsolationLevel; 4 added CurrentLeaderEpoch.
LIST_OFFSETS_COMMITTED_REQUEST = _golden(
    "0000002c",  # int32 size prefix: 44 bytes follow
    "0002 0004",  # RequestApiKey 2 (ListOffsets), RequestApiVersion 4
    "00000005",  # CorrelationId 5
    "0002 6162",  # ClientId "ab"
    "ffffffff",  # ReplicaId -1 (a client)
    "01",  # IsolationLevel int8 = 1 (READ_COMMITTED: the latest offset is the LSO)
    "00000001",  # Topics: 1
    "0001 74",  # Topics[0].Name "t"
    "00000001",  # Topics[0].Partitions: 1
    "00000000",  # .PartitionIndex 0
    "00000003",  # .CurrentLeaderEpoch 3
    "ffffffffffffffff",  # .Timestamp -1 (LATEST)
)

# ListOffsetsResponse.json v4: an LSO, and a leader whose high watermark lags the
# start of its epoch (OFFSET_NOT_AVAILABLE: the observe line leaves the LSO out).
LIST_OFFSETS_COMMITTED_RESPONSE = _golden(
    "00000005",  # ResponseHeader v0 CorrelationId 5
    "00000000",  # ThrottleTimeMs 0
    "00000001",  # Topics: 1
    "0001 74",  # Topics[0].Name "t"
    "00000002",  # Topics[0].Partitions: 2
    "00000000 0000",  # .PartitionIndex 0, .ErrorCode 0
    "ffffffffffffffff",  # .Timestamp -1
    "0000000000000029",  # .Offset 41 (the LSO)
    "00000003",  # .LeaderEpoch 3
    "00000001 004e",  # .PartitionIndex 1, .ErrorCode 78 (OFFSET_NOT_AVAILABLE)
    "ffffffffffffffff",  # .Timestamp -1
    "ffffffffffffffff",  # .Offset -1
    "ffffffff",  # .LeaderEpoch -1
)

# DescribeProducersRequest.json v0 ("validVersions": "0", "flexibleVersions": "0+"),
# request header v2: partitions 0 and 2 of "t", partition 1 of "u".
DESCRIBE_PRODUCERS_REQUEST = _golden(
    "00000023",  # int32 size prefix: 35 bytes follow
    "003d",  # RequestHeader v2 RequestApiKey 61 (DescribeProducers)
    "0000",  # RequestApiVersion 0
    "00000007",  # CorrelationId 7
    "0002 6162",  # ClientId "ab" (int16 length even in header v2)
    "00",  # header tagged fields: count 0
    "03",  # Topics: compact array of 2
    "02 74",  # Topics[0].Name: compact string "t"
    "03 00000000 00000002",  # Topics[0].PartitionIndexes: compact int32 array [0, 2]
    "00",  # Topics[0] tagged fields
    "02 75",  # Topics[1].Name "u"
    "02 00000001",  # Topics[1].PartitionIndexes [1]
    "00",  # Topics[1] tagged fields
    "00",  # request tagged fields
)

# DescribeProducersResponse.json v0, response header v1: t-0 with two producers (one
# holding a transaction open from offset 41, one with none), t-2 refused with a
# message, u-1 with one producer whose transaction starts above 2**32 and an unknown
# tagged field (skipped by size).
DESCRIBE_PRODUCERS_RESPONSE = _golden(
    "00000007",  # ResponseHeader v1 CorrelationId 7
    "00",  # header tagged fields
    "00000000",  # ThrottleTimeMs 0
    "03",  # Topics: compact array of 2
    "02 74",  # Topics[0].Name "t"
    "03",  # Topics[0].Partitions: 2
    "00000000",  # .PartitionIndex 0
    "0000",  # .ErrorCode 0
    "00",  # .ErrorMessage: compact nullable string, null
    "03",  # .ActiveProducers: 2
    "00000000000003e8",  # ..ProducerId int64 1000
    "00000002",  # ..ProducerEpoch int32 2
    "00000004",  # ..LastSequence int32 4
    "0000019a2b3c4d5e",  # ..LastTimestamp int64
    "00000007",  # ..CoordinatorEpoch int32 7
    "0000000000000029",  # ..CurrentTxnStartOffset int64 41 (a transaction open)
    "00",  # ..tagged fields
    "00000000000003e9",  # ..ProducerId 1001
    "00000000",  # ..ProducerEpoch 0
    "ffffffff",  # ..LastSequence -1
    "ffffffffffffffff",  # ..LastTimestamp -1
    "ffffffff",  # ..CoordinatorEpoch -1
    "ffffffffffffffff",  # ..CurrentTxnStartOffset -1 (none open)
    "00",  # ..tagged fields
    "00",  # partition tagged fields
    "00000002",  # .PartitionIndex 2
    "0006",  # .ErrorCode 6 (NOT_LEADER_OR_FOLLOWER)
    "0b 6e6f74206c6561646572",  # .ErrorMessage "not leader"
    "01",  # .ActiveProducers: 0
    "00",  # partition tagged fields
    "00",  # topic tagged fields
    "02 75",  # Topics[1].Name "u"
    "02",  # Topics[1].Partitions: 1
    "00000001 0000 00",  # .PartitionIndex 1, .ErrorCode 0, .ErrorMessage null
    "02",  # .ActiveProducers: 1
    "00000000000007d0",  # ..ProducerId 2000
    "00000001",  # ..ProducerEpoch 1
    "0000000a",  # ..LastSequence 10
    "0000019a2b3c4d5e",  # ..LastTimestamp
    "00000003",  # ..CoordinatorEpoch 3
    "0000000100000000",  # ..CurrentTxnStartOffset 4294967296 (int64, not int32)
    "01 05 02 abcd",  # ..tagged fields: 1 field, tag 5, 2 bytes (unknown: skipped)
    "00",  # partition tagged fields
    "00",  # topic tagged fields
    "00",  # response tagged fields
)

# FindCoordinatorRequest.json v4 ("validVersions": "0-6", "flexibleVersions": "3+"):
# KeyType 1 (transaction) and the batched CoordinatorKeys of KIP-699.
FIND_COORDINATOR_REQUEST = _golden(
    "00000016",  # int32 size prefix: 22 bytes follow
    "000a",  # RequestHeader v2 RequestApiKey 10 (FindCoordinator)
    "0004",  # RequestApiVersion 4
    "00000003",  # CorrelationId 3
    "0002 6162",  # ClientId "ab"
    "00",  # header tagged fields
    "01",  # KeyType int8 = 1 (transaction)
    "02",  # CoordinatorKeys: compact array of 1
    "06 74786e2d31",  # CoordinatorKeys[0]: compact string "txn-1"
    "00",  # request tagged fields
)

# FindCoordinatorResponse.json v4, response header v1: txn-1 at broker 2; txn-2 not
# available yet (the topic being created or loaded: Node.noNode, id -1, "" and -1).
FIND_COORDINATOR_RESPONSE = _golden(
    "00000003",  # ResponseHeader v1 CorrelationId 3
    "00",  # header tagged fields
    "00000000",  # ThrottleTimeMs 0
    "03",  # Coordinators: compact array of 2
    "06 74786e2d31",  # .Key "txn-1"
    "00000002",  # .NodeId 2
    "0a 31302e302e302e3135",  # .Host "10.0.0.15"
    "00002384",  # .Port 9092
    "0000",  # .ErrorCode 0
    "00",  # .ErrorMessage null
    "00",  # tagged fields
    "06 74786e2d32",  # .Key "txn-2"
    "ffffffff",  # .NodeId -1
    "01",  # .Host ""
    "ffffffff",  # .Port -1
    "000f",  # .ErrorCode 15 (COORDINATOR_NOT_AVAILABLE)
    "08 6c6f6164696e67",  # .ErrorMessage "loading"
    "00",  # tagged fields
    "00",  # response tagged fields
)


def test_list_offsets_at_read_committed_matches_the_schema_bytes() -> None:
    assert encode_list_offsets_request(5, "ab", {("t", 0): 3}, READ_COMMITTED) \
        == LIST_OFFSETS_COMMITTED_REQUEST


def test_list_offsets_at_read_committed_decodes_an_lso_and_offset_not_available() -> None:
    assert decode_list_offsets_response(LIST_OFFSETS_COMMITTED_RESPONSE) == (
        5, {("t", 0): (0, 41), ("t", 1): (78, -1)})


def test_describe_producers_request_matches_the_schema_bytes() -> None:
    assert encode_describe_producers_request(7, "ab", [("t", 0), ("t", 2), ("u", 1)]) \
        == DESCRIBE_PRODUCERS_REQUEST


def test_describe_producers_response_decodes_each_producer_and_errors() -> None:
    correlation_id, partitions = decode_describe_producers_response(
        DESCRIBE_PRODUCERS_RESPONSE)
    assert correlation_id == 7
    assert partitions == {
        ("t", 0): (0, (ProducerState(1000, 2, 4, 0x19a2b3c4d5e, 7, 41),
                       ProducerState(1001, 0, -1, -1, -1, -1))),
        ("t", 2): (6, ()),
        ("u", 1): (0, (ProducerState(2000, 1, 10, 0x19a2b3c4d5e, 3, 2**32),)),
    }
    assert open_txn_offsets(partitions[("t", 0)][1]) == (41,), "-1 is no transaction"
    assert open_txn_offsets(partitions[("u", 1)][1]) == (2**32,)
    assert open_txn_offsets(()) == ()


def test_open_txn_offsets_are_in_offset_order() -> None:
    producers = [ProducerState(p, 0, 0, 0, 0, start) for p, start in
                 ((1, 90), (2, -1), (3, 12), (4, 0))]
    assert open_txn_offsets(producers) == (0, 12, 90)


def test_find_coordinator_request_matches_the_schema_bytes() -> None:
    assert encode_find_coordinator_request(3, "ab", ["txn-1"], TRANSACTION_KEY_TYPE) \
        == FIND_COORDINATOR_REQUEST
    group = encode_find_coordinator_request(3, "ab", ["txn-1"], GROUP_KEY_TYPE)
    assert group == FIND_COORDINATOR_REQUEST.replace(bytes.fromhex("000102"),
                                                     bytes.fromhex("000002"), 1)


def test_find_coordinator_response_decodes_a_coordinator_and_one_not_available() -> None:
    assert decode_find_coordinator_response(FIND_COORDINATOR_RESPONSE) == (3, [
        Coordinator("txn-1", 2, "10.0.0.15", 9092, 0, None),
        Coordinator("txn-2", -1, "", -1, 15, "loading"),
    ])


@pytest.mark.parametrize(("decode", "golden"), [
    (decode_list_offsets_response, LIST_OFFSETS_COMMITTED_RESPONSE),
    (decode_describe_producers_response, DESCRIBE_PRODUCERS_RESPONSE),
    (decode_find_coordinator_response, FIND_COORDINATOR_RESPONSE),
], ids=["list-offsets-committed", "describe-producers", "find-coordinator"])
def test_every_truncation_is_a_wire_error(decode: Callable[[bytes], object],
                                          golden: bytes) -> None:
    for cut in range(len(golden)):
        with pytest.raises(WireError):
            decode(golden[:cut])


# -- one round trip ----------------------------------------------------------------

def _listen(answer: Callable[[list[bytes]], list[bytes]], requests: int):
    """A fake broker on a local socket: reads `requests` requests, then writes what
    `answer` makes of them. Returns (address, what it received, its thread)."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def broker() -> None:
        conn, _ = server.accept()
        with conn:
            for _ in range(requests):
                size = struct.unpack(">i", _recv(conn, 4))[0]
                received.append(_recv(conn, size))
            conn.sendall(b"".join(struct.pack(">i", len(p)) + p for p in answer(received)))
        server.close()

    thread = threading.Thread(target=broker, daemon=True)
    thread.start()
    return f"127.0.0.1:{server.getsockname()[1]}", received, thread


def _recv(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        assert chunk, "client closed early"
        data += chunk
    return data


def _with_id(correlation: int, payload: bytes) -> bytes:
    """A golden response under another correlation id (its first four bytes)."""
    return struct.pack(">i", correlation) + payload[4:]


def _ids(requests: list[bytes]) -> list[int]:
    return [struct.unpack(">i", r[4:8])[0] for r in requests]


LIST_OFFSETS_HWM_RESPONSE = _golden(
    "00000000 00000000 00000001 0001 74 00000002",  # id (replaced), throttle, "t", 2
    "00000000 0000 ffffffffffffffff 0000000000000032 00000003",  # t-0: hwm 50
    "00000001 004e ffffffffffffffff ffffffffffffffff ffffffff",  # t-1: not available
)


def test_a_leader_is_asked_for_producers_lso_and_hwm_in_one_round_trip() -> None:
    """The three requests go out before any answer is read (the fake broker answers
    only once it holds all three), in the order DescribeProducers, ListOffsets at
    READ_COMMITTED, ListOffsets at READ_UNCOMMITTED; each answer is its own."""
    def answer(requests: list[bytes]) -> list[bytes]:
        first, second, third = _ids(requests)
        return [_with_id(first, DESCRIBE_PRODUCERS_RESPONSE),
                _with_id(second, LIST_OFFSETS_COMMITTED_RESPONSE),
                _with_id(third, LIST_OFFSETS_HWM_RESPONSE)]

    address, received, thread = _listen(answer, 3)
    connection = WireConnection(address, 5.0, client_id="ab")
    try:
        view = leader_view(connection, {("t", 0): 3, ("t", 1): 3, ("__x", 0): 1},
                           {("t", 0): 3, ("t", 1): 3})
    finally:
        connection.close()
        thread.join(5.0)
    assert [struct.unpack(">hh", r[:4]) for r in received] == [(61, 0), (2, 4), (2, 4)]
    assert [r[12 + 4] for r in received[1:]] == [1, 0], "READ_COMMITTED, then UNCOMMITTED"
    assert _ids(received) == [1, 2, 3]
    assert view.high_watermarks == {("t", 0): (0, 50), ("t", 1): (78, -1)}
    assert view.stable_offsets == {("t", 0): (0, 41), ("t", 1): (78, -1)}
    assert view.producers is not None and view.producers[("t", 0)][0] == 0
    assert view.leads(("t", 0)) and view.leads(("t", 1)), \
        "OFFSET_NOT_AVAILABLE comes from the leader at that epoch"
    assert not view.leads(("u", 1)), "not asked: no leader known"


def test_an_unreadable_answer_loses_only_its_own_fields() -> None:
    def answer(requests: list[bytes]) -> list[bytes]:
        first, second, third = _ids(requests)
        return [_with_id(first, DESCRIBE_PRODUCERS_RESPONSE[:20]),  # cut short
                _with_id(second, LIST_OFFSETS_COMMITTED_RESPONSE),
                _with_id(third, LIST_OFFSETS_HWM_RESPONSE)]

    address, _, thread = _listen(answer, 3)
    connection = WireConnection(address, 5.0, client_id="ab")
    try:
        view = leader_view(connection, {("t", 0): 3}, {("t", 0): 3})
    finally:
        connection.close()
        thread.join(5.0)
    assert view.producers is None
    assert view.stable_offsets is not None and view.high_watermarks is not None


def test_answers_out_of_order_are_a_wire_error() -> None:
    def answer(requests: list[bytes]) -> list[bytes]:
        first, second, third = _ids(requests)
        return [_with_id(second, LIST_OFFSETS_COMMITTED_RESPONSE),
                _with_id(first, DESCRIBE_PRODUCERS_RESPONSE),
                _with_id(third, LIST_OFFSETS_HWM_RESPONSE)]

    address, _, thread = _listen(answer, 3)
    connection = WireConnection(address, 5.0, client_id="ab")
    try:
        with pytest.raises(WireError, match="out of order"):
            leader_view(connection, {("t", 0): 3}, {("t", 0): 3})
    finally:
        connection.close()
        thread.join(5.0)


def test_without_data_partitions_only_the_high_watermarks_are_asked() -> None:
    address, received, thread = _listen(
        lambda requests: [_with_id(_ids(requests)[0], LIST_OFFSETS_HWM_RESPONSE)], 1)
    connection = WireConnection(address, 5.0, client_id="ab")
    try:
        view = leader_view(connection, {("__consumer_offsets", 0): 2}, {})
    finally:
        connection.close()
        thread.join(5.0)
    assert len(received) == 1 and received[0][12 + 4] == 0
    assert view == LeaderView({("t", 0): (0, 50), ("t", 1): (78, -1)}, None, None)


def test_find_coordinator_asks_for_one_key_and_reads_its_answer() -> None:
    address, received, thread = _listen(
        lambda requests: [_with_id(_ids(requests)[0], FIND_COORDINATOR_RESPONSE)], 1)
    connection = WireConnection(address, 5.0, client_id="ab")
    try:
        found = find_coordinator(connection, "txn-2")
    finally:
        connection.close()
        thread.join(5.0)
    assert received == [FIND_COORDINATOR_REQUEST[4:].replace(
        bytes.fromhex("00000003"), bytes.fromhex("00000001"), 1).replace(
        b"txn-1", b"txn-2")]
    assert found == Coordinator("txn-2", -1, "", -1, 15, "loading")


def test_the_transaction_coordinator_is_the_first_broker_named() -> None:
    """A broker that refuses connections is skipped; one that names no coordinator
    yet is no answer; the next names broker 2."""
    refused = socket.create_server(("127.0.0.1", 0))
    gone = f"127.0.0.1:{refused.getsockname()[1]}"
    refused.close()
    loading = _golden("00000000 00 00000000 02",  # id (replaced), no tags, throttle, 1
                      "06 74786e2d31 ffffffff 01 ffffffff 000f 00 00 00")  # txn-1: 15
    waiting, _, t1 = _listen(lambda r: [_with_id(_ids(r)[0], loading)], 1)
    naming, _, t2 = _listen(lambda r: [_with_id(_ids(r)[0], FIND_COORDINATOR_RESPONSE)], 1)
    assert transaction_coordinator([gone, waiting, naming], "txn-1", 5.0) == 2
    t1.join(5.0)
    t2.join(5.0)
    waiting, _, t3 = _listen(lambda r: [_with_id(_ids(r)[0], loading)], 1)
    assert transaction_coordinator([gone, waiting], "txn-1", 5.0) is None
    t3.join(5.0)
