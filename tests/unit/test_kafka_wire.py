"""The harness's own wire codec (cluster.kafka_wire), byte for byte against Kafka
4.1.1's message schemas: every request it encodes and every response it decodes.

    DescribeTopicPartitions (key 75) v0   flexible      request header v2, response header v1
    ListOffsets             (key 2)  v4   not flexible  request header v1, response header v0
    Metadata                (key 3)  v8   not flexible  request header v1, response header v0
    DescribeCluster         (key 60) v2   flexible      request header v2, response header v1
                                          (4.0.0's DescribeCluster*.json; v2 is KIP-1073's)

The module speaks no other API (no ApiVersions). The golden vectors
further down are hex written from the schema JSON, not from the module's encoder."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import pytest

from elr_harness.cluster.kafka_wire import (
    DescribedPartition,
    DescribedTopic,
    WireConnection,
    WireError,
    decode_describe_cluster_response,
    decode_describe_response,
    decode_list_offsets_response,
    decode_metadata_brokers,
    encode_describe_cluster_request,
    encode_describe_request,
    encode_list_offsets_request,
    encode_metadata_request,
)


def test_list_offsets_request_layout() -> None:
    raw = encode_list_offsets_request(7, "ab", {("t", 0): 3, ("t", 2): 5, ("u", 1): 0})
    size, = struct.unpack(">i", raw[:4])
    assert size == len(raw) - 4
    body = raw[4:]
    # header v1: api key 2, version 4, correlation id, client id as int16 string
    assert struct.unpack(">hhih", body[:10]) == (2, 4, 7, 2) and body[10:12] == b"ab"
    rest = body[12:]
    # replica id -1, READ_UNCOMMITTED, 2 topics
    assert struct.unpack(">ibi", rest[:9]) == (-1, 0, 2)
    rest = rest[9:]
    assert struct.unpack(">h", rest[:2]) == (1,) and rest[2:3] == b"t"
    # partition, current leader epoch, timestamp LATEST
    assert struct.unpack(">iiiqiiq", rest[3:3 + 36]) == (2, 0, 3, -1, 2, 5, -1)
    rest = rest[39:]
    assert rest[:3] == b"\x00\x01u" and struct.unpack(">iiiq", rest[3:]) == (1, 1, 0, -1)


def _response(correlation: int, topics: dict[str, list[tuple[int, int, int]]]) -> bytes:
    out = struct.pack(">iii", correlation, 0, len(topics))
    for name, partitions in topics.items():
        out += struct.pack(">h", len(name)) + name.encode() + struct.pack(">i", len(partitions))
        for partition, error, offset in partitions:
            out += struct.pack(">ihqqi", partition, error, -1, offset, 4)
    return out


def test_list_offsets_response_decodes_errors_and_offsets() -> None:
    payload = _response(9, {"t": [(0, 0, 1234), (1, 6, -1)], "u": [(2, 0, 0)]})
    assert decode_list_offsets_response(payload) == (
        9, {("t", 0): (0, 1234), ("t", 1): (6, -1), ("u", 2): (0, 0)})


def test_a_cut_short_response_is_a_wire_error() -> None:
    payload = _response(9, {"t": [(0, 0, 1234)]})
    with pytest.raises(WireError):
        decode_list_offsets_response(payload[:-3])


def test_metadata_request_asks_for_no_topics() -> None:
    raw = encode_metadata_request(5, "ab")
    body = raw[4:]
    assert struct.unpack(">i", raw[:4])[0] == len(body)
    assert struct.unpack(">hhih", body[:10]) == (3, 8, 5, 2) and body[10:12] == b"ab"
    # an empty topic array (null would mean every topic), then three false flags
    assert body[12:] == struct.pack(">i???", 0, False, False, False)


def test_metadata_response_lists_broker_ids() -> None:
    def broker(node: int, host: str, rack: str | None) -> bytes:
        out = struct.pack(">ih", node, len(host)) + host.encode() + struct.pack(">i", 9092)
        return out + (struct.pack(">h", -1) if rack is None
                      else struct.pack(">h", len(rack)) + rack.encode())

    payload = struct.pack(">iii", 4, 0, 2) + broker(1, "10.0.0.14", None) \
        + broker(3, "10.0.0.16", "r1") + struct.pack(">h", -1) + struct.pack(">ii", 1001, 0)
    assert decode_metadata_brokers(payload) == (4, [1, 3])


# -- golden bytes ---------------------------------------------------------------
#
# Every vector below is written field by field from Kafka 4.1.1's message schemas
# (the release the harness ran by default when they were written), the files
# clients/src/main/resources/common/message/<Name>.json of apache/kafka, as shipped
# in kafka-clients-4.1.1.jar (commitId be816b82d25370ce):
#
#   RequestHeader.json   v1 (non-flexible requests): int16 RequestApiKey, int16
#                        RequestApiVersion, int32 CorrelationId, ClientId as an int16-length
#                        string; v2 (flexible requests) adds the tagged-field count. ClientId
#                        is "flexibleVersions": "none", so it keeps its int16 length in v2.
#   ResponseHeader.json  v0 (non-flexible responses): int32 CorrelationId; v1 (flexible)
#                        adds the tagged-field count.
#
# Encodings (Kafka protocol guide; types.ProtocolType): a compact string/array length is
# an unsigned varint of length + 1 (0 = null); a nullable struct is an int8, -1 for null
# and 1 before the fields; tagged fields are a uvarint count, then per field a uvarint tag,
# a uvarint size and that many bytes. Each vector was also checked, once, against
# kafka-clients-4.1.1's own generated *Data classes serialising the same values.


def _golden(*fields: str) -> bytes:
    """One field per literal, so each carries its own comment; spaces are ignored."""
    return bytes.fromhex("".join(fields))


# DescribeTopicPartitionsRequest.json v0 ("validVersions": "0", "flexibleVersions": "0+"),
# request header v2: topics ["t", "u"], the default limit, no cursor.
DESCRIBE_REQUEST = _golden(
    "0000001a",  # int32 size prefix: 26 bytes follow
    "004b",  # RequestHeader v2 RequestApiKey int16 = 75 (DescribeTopicPartitions)
    "0000",  # RequestApiVersion int16 = 0
    "00000007",  # CorrelationId int32 = 7
    "0002 6162",  # ClientId: int16 length 2, "ab" (not compact even in header v2)
    "00",  # header tagged fields: count 0
    "03",  # Topics: compact array, uvarint 2 + 1
    "02 74",  # Topics[0].Name: compact string, uvarint 1 + 1, "t"
    "00",  # Topics[0] tagged fields: count 0
    "02 75",  # Topics[1].Name: "u"
    "00",  # Topics[1] tagged fields: count 0
    "000007d0",  # ResponsePartitionLimit int32 = 2000 (the schema's default)
    "ff",  # Cursor: nullable struct, int8 -1 = null
    "00",  # request tagged fields: count 0
)

# The same request with a Cursor (topic "u", partition 3) and a limit of 10.
DESCRIBE_REQUEST_WITH_CURSOR = _golden(
    "00000021",  # int32 size prefix: 33 bytes follow
    "004b 0000",  # RequestApiKey 75, RequestApiVersion 0
    "00000008",  # CorrelationId int32 = 8
    "0002 6162",  # ClientId "ab"
    "00",  # header tagged fields: count 0
    "03 0274 00 0275 00",  # Topics: 2 entries, "t" and "u", each with 0 tagged fields
    "0000000a",  # ResponsePartitionLimit int32 = 10
    "01",  # Cursor: nullable struct, int8 1 = present
    "02 75",  # Cursor.TopicName: compact string "u"
    "00000003",  # Cursor.PartitionIndex int32 = 3
    "00",  # Cursor tagged fields: count 0
    "00",  # request tagged fields: count 0
)

# No topic names: an empty compact array (uvarint 1), not null (uvarint 0).
DESCRIBE_REQUEST_NO_TOPICS = _golden(
    "00000014",  # int32 size prefix: 20 bytes follow
    "004b 0000 00000001 0002 6162 00",  # header v2: key 75, v0, correlation 1, "ab", no tags
    "01",  # Topics: compact array of 0 entries (uvarint 0 + 1)
    "000007d0",  # ResponsePartitionLimit int32 = 2000
    "ff",  # Cursor null
    "00",  # request tagged fields: count 0
)

# A 200-byte topic name: its compact length 201 takes a two-byte uvarint.
DESCRIBE_REQUEST_LONG_NAME = _golden(
    "000000df",  # int32 size prefix: 223 bytes follow
    "004b 0000 00000002 0002 6162 00",  # header v2: key 75, v0, correlation 2, "ab", no tags
    "02",  # Topics: compact array of 1 entry
    "c901",  # Topics[0].Name length: uvarint 201 = 0xc9 0x01 (low 7 bits first, MSB = more)
    "78" * 200,  # "x" * 200
    "00",  # Topics[0] tagged fields: count 0
    "000007d0",  # ResponsePartitionLimit int32 = 2000
    "ff",  # Cursor null
    "00",  # request tagged fields: count 0
)

TOPIC_ID = "0123456789abcdef0123456789abcdef"

# DescribeTopicPartitionsResponse.json v0, response header v1 (after the size prefix):
# topic "t" with two partitions (ELR [3] and LastKnownElr null; then leaderless with an
# empty ELR, LastKnownElr [2] and an offline replica), topic "u" with an error and no
# partitions, no next cursor.
DESCRIBE_RESPONSE = _golden(
    "00000009",  # ResponseHeader v1 CorrelationId int32 = 9
    "00",  # header tagged fields: count 0
    "00000000",  # ThrottleTimeMs int32 = 0
    "03",  # Topics: compact array of 2
    "0000",  # Topics[0].ErrorCode int16 = 0
    "02 74",  # Topics[0].Name: compact nullable string "t"
    TOPIC_ID,  # Topics[0].TopicId: uuid, 16 bytes
    "00",  # Topics[0].IsInternal bool = false
    "03",  # Topics[0].Partitions: compact array of 2
    "0000",  # .ErrorCode int16 = 0
    "00000000",  # .PartitionIndex int32 = 0
    "00000001",  # .LeaderId int32 = 1
    "00000005",  # .LeaderEpoch int32 = 5
    "04 00000001 00000002 00000003",  # .ReplicaNodes: compact int32 array [1, 2, 3]
    "03 00000001 00000002",  # .IsrNodes [1, 2]
    "02 00000003",  # .EligibleLeaderReplicas [3]
    "00",  # .LastKnownElr: uvarint 0 = null
    "01",  # .OfflineReplicas: [] (uvarint 1 = empty)
    "00",  # partition tagged fields: count 0
    "0000",  # .ErrorCode int16 = 0
    "00000001",  # .PartitionIndex int32 = 1
    "ffffffff",  # .LeaderId int32 = -1 (no leader)
    "00000007",  # .LeaderEpoch int32 = 7
    "04 00000001 00000002 00000003",  # .ReplicaNodes [1, 2, 3]
    "01",  # .IsrNodes []
    "01",  # .EligibleLeaderReplicas [] (empty, not null)
    "02 00000002",  # .LastKnownElr [2]
    "02 00000001",  # .OfflineReplicas [1]
    "00",  # partition tagged fields: count 0
    "80000000",  # Topics[0].TopicAuthorizedOperations int32 = -2147483648 (not asked)
    "00",  # topic tagged fields: count 0
    "0003",  # Topics[1].ErrorCode int16 = 3 (UNKNOWN_TOPIC_OR_PARTITION)
    "02 75",  # Topics[1].Name "u"
    "00" * 16,  # Topics[1].TopicId: the zero uuid
    "00",  # Topics[1].IsInternal false
    "01",  # Topics[1].Partitions: compact array of 0
    "80000000",  # Topics[1].TopicAuthorizedOperations
    "00",  # topic tagged fields: count 0
    "ff",  # NextCursor: nullable struct, int8 -1 = null
    "00",  # response tagged fields: count 0
)

# The same response schema, one page of several: a partition error code, a NextCursor
# present, and unknown tagged fields (which a decoder must skip) at every level.
DESCRIBE_RESPONSE_TAGGED = _golden(
    "0000000a",  # ResponseHeader v1 CorrelationId int32 = 10
    "01 03 02 abcd",  # header tagged fields: 1 field, tag 3, size 2, 2 bytes
    "00000064",  # ThrottleTimeMs int32 = 100
    "02",  # Topics: compact array of 1
    "0000",  # Topics[0].ErrorCode int16 = 0
    "02 74",  # Topics[0].Name "t"
    TOPIC_ID,  # Topics[0].TopicId
    "00",  # Topics[0].IsInternal false
    "02",  # Topics[0].Partitions: compact array of 1
    "0006",  # .ErrorCode int16 = 6 (NOT_LEADER_OR_FOLLOWER)
    "00000001",  # .PartitionIndex int32 = 1
    "00000002",  # .LeaderId int32 = 2
    "00000008",  # .LeaderEpoch int32 = 8
    "03 00000002 00000003",  # .ReplicaNodes [2, 3]
    "02 00000002",  # .IsrNodes [2]
    "02 00000003",  # .EligibleLeaderReplicas [3]
    "02 00000001",  # .LastKnownElr [1]
    "01",  # .OfflineReplicas []
    "01 05 8201",  # partition tagged fields: 1 field, tag 5, size uvarint 130 = 0x82 0x01,
    "00" * 130,  # ... and its 130 bytes
    "80000000",  # Topics[0].TopicAuthorizedOperations
    "02",  # topic tagged fields: 2 fields,
    "00 01 ff",  # ... tag 0, size 1, one byte,
    "c801 00",  # ... tag 200 (uvarint 0xc8 0x01), size 0
    "01",  # NextCursor: int8 1 = present
    "02 74",  # NextCursor.TopicName "t"
    "00000002",  # NextCursor.PartitionIndex int32 = 2
    "01 01 04 deadbeef",  # NextCursor tagged fields: 1 field, tag 1, size 4, 4 bytes
    "01 09 01 00",  # response tagged fields: 1 field, tag 9, size 1, one byte
)

# No topics at all: the answer to "every topic" on a cluster that has none yet.
DESCRIBE_RESPONSE_EMPTY = _golden(
    "00000001",  # ResponseHeader v1 CorrelationId int32 = 1
    "00",  # header tagged fields: count 0
    "00000000",  # ThrottleTimeMs int32 = 0
    "01",  # Topics: compact array of 0
    "ff",  # NextCursor null
    "00",  # response tagged fields: count 0
)

# ListOffsetsRequest.json v4 ("validVersions": "1-10", "flexibleVersions": "6+": v4 is
# not flexible), request header v1: the latest offset of t-0 (epoch 3), t-2 (epoch 5) and
# u-1 (epoch 0). Version 4 is the first with CurrentLeaderEpoch.
LIST_OFFSETS_REQUEST = _golden(
    "00000053",  # int32 size prefix: 83 bytes follow
    "0002",  # RequestHeader v1 RequestApiKey int16 = 2 (ListOffsets)
    "0004",  # RequestApiVersion int16 = 4
    "00000007",  # CorrelationId int32 = 7
    "0002 6162",  # ClientId "ab" (int16 length)
    "ffffffff",  # ReplicaId int32 = -1 (a client, not a broker)
    "00",  # IsolationLevel int8 = 0 (READ_UNCOMMITTED)
    "00000002",  # Topics: int32 array length 2
    "0001 74",  # Topics[0].Name: int16 length 1, "t"
    "00000002",  # Topics[0].Partitions: int32 array length 2
    "00000000",  # .PartitionIndex int32 = 0
    "00000003",  # .CurrentLeaderEpoch int32 = 3
    "ffffffffffffffff",  # .Timestamp int64 = -1 (LATEST)
    "00000002",  # .PartitionIndex int32 = 2
    "00000005",  # .CurrentLeaderEpoch int32 = 5
    "ffffffffffffffff",  # .Timestamp int64 = -1
    "0001 75",  # Topics[1].Name "u"
    "00000001",  # Topics[1].Partitions: int32 array length 1
    "00000001",  # .PartitionIndex int32 = 1
    "00000000",  # .CurrentLeaderEpoch int32 = 0
    "ffffffffffffffff",  # .Timestamp int64 = -1
)

# ListOffsetsResponse.json v4, response header v0 (after the size prefix): an offset, a
# FENCED_LEADER_EPOCH, and an offset above 2**32 (int64, not int32).
LIST_OFFSETS_RESPONSE = _golden(
    "00000009",  # ResponseHeader v0 CorrelationId int32 = 9 (no tagged fields in v0)
    "00000000",  # ThrottleTimeMs int32 = 0 (versions 2+)
    "00000002",  # Topics: int32 array length 2
    "0001 74",  # Topics[0].Name "t"
    "00000002",  # Topics[0].Partitions: 2
    "00000000",  # .PartitionIndex int32 = 0
    "0000",  # .ErrorCode int16 = 0
    "ffffffffffffffff",  # .Timestamp int64 = -1
    "00000000000004d2",  # .Offset int64 = 1234
    "00000004",  # .LeaderEpoch int32 = 4 (versions 4+)
    "00000001",  # .PartitionIndex int32 = 1
    "004a",  # .ErrorCode int16 = 74 (FENCED_LEADER_EPOCH)
    "ffffffffffffffff",  # .Timestamp int64 = -1
    "ffffffffffffffff",  # .Offset int64 = -1
    "ffffffff",  # .LeaderEpoch int32 = -1
    "0001 75",  # Topics[1].Name "u"
    "00000001",  # Topics[1].Partitions: 1
    "00000002",  # .PartitionIndex int32 = 2
    "0000",  # .ErrorCode int16 = 0
    "ffffffffffffffff",  # .Timestamp int64 = -1
    "0000000100000000",  # .Offset int64 = 4294967296
    "00000004",  # .LeaderEpoch int32 = 4
)

# MetadataRequest.json v8 ("validVersions": "0-13", "flexibleVersions": "9+"), request
# header v1: no topics (an empty array; null would be every topic), three false flags.
METADATA_REQUEST = _golden(
    "00000013",  # int32 size prefix: 19 bytes follow
    "0003",  # RequestHeader v1 RequestApiKey int16 = 3 (Metadata)
    "0008",  # RequestApiVersion int16 = 8
    "00000005",  # CorrelationId int32 = 5
    "0002 6162",  # ClientId "ab"
    "00000000",  # Topics: int32 array length 0 (-1 would be null = every topic)
    "00",  # AllowAutoTopicCreation bool = false (versions 4+)
    "00",  # IncludeClusterAuthorizedOperations bool = false (versions 8-10)
    "00",  # IncludeTopicAuthorizedOperations bool = false (versions 8+)
)

# MetadataResponse.json v8, response header v0: three brokers (rack null, "r1", and "").
METADATA_RESPONSE = _golden(
    "00000004",  # ResponseHeader v0 CorrelationId int32 = 4
    "00000000",  # ThrottleTimeMs int32 = 0 (versions 3+)
    "00000003",  # Brokers: int32 array length 3
    "00000001",  # Brokers[0].NodeId int32 = 1
    "0009 31302e302e302e3134",  # Brokers[0].Host: int16 length 9, "10.0.0.14"
    "00002384",  # Brokers[0].Port int32 = 9092
    "ffff",  # Brokers[0].Rack: nullable string, int16 -1 = null
    "00000003",  # Brokers[1].NodeId int32 = 3
    "0009 31302e302e302e3136",  # Brokers[1].Host "10.0.0.16"
    "00002384",  # Brokers[1].Port int32 = 9092
    "0002 7231",  # Brokers[1].Rack "r1"
    "00000004",  # Brokers[2].NodeId int32 = 4
    "0002 6b34",  # Brokers[2].Host "k4"
    "00004a94",  # Brokers[2].Port int32 = 19092
    "0000",  # Brokers[2].Rack: "" (int16 0, empty, not null)
    "0003 616263",  # ClusterId: nullable string "abc" (versions 2+)
    "00000001",  # ControllerId int32 = 1 (versions 1+)
    "00000000",  # Topics: int32 array length 0
    "80000000",  # ClusterAuthorizedOperations int32 = -2147483648 (versions 8-10)
)


# DescribeClusterRequest.json v2 ("validVersions": "0-2", "flexibleVersions": "0+"),
# request header v2 (the fields as kafka-clients-4.0.0's DescribeClusterRequestData has them).
DESCRIBE_CLUSTER_REQUEST = _golden(
    "00000011",  # int32 size prefix: 17 bytes follow
    "003c",  # RequestHeader v2 RequestApiKey int16 = 60 (DescribeCluster)
    "0002",  # RequestApiVersion int16 = 2
    "00000009",  # CorrelationId int32 = 9
    "0002 6162",  # ClientId "ab" (int16 length even in header v2)
    "00",  # header tagged fields: count 0
    "00",  # IncludeClusterAuthorizedOperations bool = false
    "01",  # EndpointType int8 = 1 (brokers; versions 1+)
    "01",  # IncludeFencedBrokers bool = true (versions 2+)
    "00",  # request tagged fields: count 0
)

# DescribeClusterResponse.json v2, response header v1: broker 1 unfenced, broker 3
# fenced (rack "r1"), one unknown tagged field on broker 3. Both bodies were checked,
# once, against kafka-clients-4.0.0's DescribeCluster{Request,Response}Data
# serialised by MessageUtil.toByteBuffer(data, 2) (the same bytes, bar that field).
DESCRIBE_CLUSTER_RESPONSE = _golden(
    "00000009",  # ResponseHeader v1 CorrelationId int32 = 9
    "00",  # header tagged fields: count 0
    "00000000",  # ThrottleTimeMs int32 = 0
    "0000",  # ErrorCode int16 = 0
    "00",  # ErrorMessage: compact nullable string, 0 = null
    "01",  # EndpointType int8 = 1 (versions 1+)
    "04 616263",  # ClusterId: compact string, uvarint 3 + 1, "abc"
    "000003e9",  # ControllerId int32 = 1001
    "03",  # Brokers: compact array, uvarint 2 + 1
    "00000001",  # Brokers[0].BrokerId int32 = 1
    "0a 31302e302e302e3134",  # Brokers[0].Host: compact string "10.0.0.14"
    "00002384",  # Brokers[0].Port int32 = 9092
    "00",  # Brokers[0].Rack: compact nullable string, null
    "00",  # Brokers[0].IsFenced bool = false (versions 2+)
    "00",  # Brokers[0] tagged fields: count 0
    "00000003",  # Brokers[1].BrokerId int32 = 3
    "0a 31302e302e302e3136",  # Brokers[1].Host "10.0.0.16"
    "00002384",  # Brokers[1].Port int32 = 9092
    "03 7231",  # Brokers[1].Rack "r1"
    "01",  # Brokers[1].IsFenced bool = true
    "01 05 02 abcd",  # Brokers[1] tagged fields: 1 field, tag 5, 2 bytes (unknown: skipped)
    "80000000",  # ClusterAuthorizedOperations int32 = -2147483648 (not asked)
    "00",  # response tagged fields: count 0
)

DESCRIBE_CLUSTER_ERROR = _golden(
    "00000002", "00", "00000000",
    "001d",  # ErrorCode int16 = 29 (CLUSTER_AUTHORIZATION_FAILED)
    "06 6e6f706521",  # ErrorMessage "nope!"
    "01", "01 00", "ffffffff", "01", "80000000", "00",
)


def test_describe_cluster_request_matches_the_schema_bytes() -> None:
    assert encode_describe_cluster_request(9, "ab") == DESCRIBE_CLUSTER_REQUEST


def test_describe_cluster_response_says_which_brokers_are_fenced() -> None:
    assert decode_describe_cluster_response(DESCRIBE_CLUSTER_RESPONSE) == (
        9, {1: False, 3: True})


def test_a_describe_cluster_error_is_no_view() -> None:
    with pytest.raises(WireError, match="DescribeCluster error 29: nope!"):
        decode_describe_cluster_response(DESCRIBE_CLUSTER_ERROR)

@pytest.mark.parametrize(("request_bytes", "golden"), [
    (encode_describe_request(7, "ab", ["t", "u"]), DESCRIBE_REQUEST),
    (encode_describe_request(8, "ab", ["t", "u"], partition_limit=10, cursor=("u", 3)),
     DESCRIBE_REQUEST_WITH_CURSOR),
    (encode_describe_request(1, "ab", []), DESCRIBE_REQUEST_NO_TOPICS),
    (encode_describe_request(2, "ab", ["x" * 200]), DESCRIBE_REQUEST_LONG_NAME),
], ids=["no-cursor", "cursor", "no-topics", "two-byte-uvarint"])
def test_describe_request_matches_the_schema_bytes(request_bytes: bytes, golden: bytes) -> None:
    """DescribeTopicPartitionsRequest.json v0 with RequestHeader.json v2, Kafka 4.1.1."""
    assert request_bytes == golden


def test_describe_response_decodes_elr_last_known_elr_and_null_vs_empty() -> None:
    """DescribeTopicPartitionsResponse.json v0 with ResponseHeader.json v1, Kafka 4.1.1:
    an ELR and a null LastKnownElr, an empty (not null) ELR, a topic error, no cursor."""
    correlation_id, topics, cursor = decode_describe_response(DESCRIBE_RESPONSE)
    assert correlation_id == 9
    assert cursor is None
    assert topics == [
        DescribedTopic("t", 0, (
            DescribedPartition("t", 0, error_code=0, leader=1, leader_epoch=5,
                               replicas=(1, 2, 3), isr=(1, 2), elr=(3,),
                               last_known_elr=None, offline=()),
            DescribedPartition("t", 1, error_code=0, leader=-1, leader_epoch=7,
                               replicas=(1, 2, 3), isr=(), elr=(),
                               last_known_elr=(2,), offline=(1,)),
        )),
        DescribedTopic("u", 3, ()),
    ]
    # null and empty stay apart: the checker reads "no ELR" and "ELR unknown" differently
    first, second = topics[0].partitions
    assert first.last_known_elr is None and second.elr == ()


def test_describe_response_skips_unknown_tagged_fields_and_reads_the_cursor() -> None:
    """DescribeTopicPartitionsResponse.json v0, Kafka 4.1.1: tagged fields this schema
    does not know (in the header, a partition, a topic, the cursor and the response) are
    skipped by size; a partition error code; NextCursor present."""
    assert decode_describe_response(DESCRIBE_RESPONSE_TAGGED) == (10, [
        DescribedTopic("t", 0, (
            DescribedPartition("t", 1, error_code=6, leader=2, leader_epoch=8,
                               replicas=(2, 3), isr=(2,), elr=(3,),
                               last_known_elr=(1,), offline=()),
        )),
    ], ("t", 2))


def test_describe_response_with_no_topics() -> None:
    """DescribeTopicPartitionsResponse.json v0, Kafka 4.1.1: an empty Topics array."""
    assert decode_describe_response(DESCRIBE_RESPONSE_EMPTY) == (1, [], None)


def test_list_offsets_request_matches_the_schema_bytes() -> None:
    """ListOffsetsRequest.json v4 (not flexible) with RequestHeader.json v1, Kafka 4.1.1."""
    assert encode_list_offsets_request(7, "ab", {("t", 0): 3, ("t", 2): 5, ("u", 1): 0}) \
        == LIST_OFFSETS_REQUEST


def test_list_offsets_response_decodes_offsets_and_a_fenced_epoch() -> None:
    """ListOffsetsResponse.json v4 with ResponseHeader.json v0, Kafka 4.1.1."""
    assert decode_list_offsets_response(LIST_OFFSETS_RESPONSE) == (
        9, {("t", 0): (0, 1234), ("t", 1): (74, -1), ("u", 2): (0, 2**32)})


def test_metadata_request_matches_the_schema_bytes() -> None:
    """MetadataRequest.json v8 (not flexible) with RequestHeader.json v1, Kafka 4.1.1."""
    assert encode_metadata_request(5, "ab") == METADATA_REQUEST


def test_metadata_response_decodes_broker_ids() -> None:
    """MetadataResponse.json v8 with ResponseHeader.json v0, Kafka 4.1.1: racks null,
    set and empty."""
    assert decode_metadata_brokers(METADATA_RESPONSE) == (4, [1, 3, 4])


# Where METADATA_RESPONSE's brokers end: decode_metadata_brokers reads no further.
METADATA_BROKERS_END = METADATA_RESPONSE.index(bytes.fromhex("0003616263"))


@pytest.mark.parametrize(("decode", "golden", "read_up_to"), [
    (decode_describe_response, DESCRIBE_RESPONSE, len(DESCRIBE_RESPONSE)),
    (decode_describe_response, DESCRIBE_RESPONSE_TAGGED, len(DESCRIBE_RESPONSE_TAGGED)),
    (decode_describe_response, DESCRIBE_RESPONSE_EMPTY, len(DESCRIBE_RESPONSE_EMPTY)),
    (decode_list_offsets_response, LIST_OFFSETS_RESPONSE, len(LIST_OFFSETS_RESPONSE)),
    (decode_metadata_brokers, METADATA_RESPONSE, METADATA_BROKERS_END),
    (decode_describe_cluster_response, DESCRIBE_CLUSTER_RESPONSE,
     len(DESCRIBE_CLUSTER_RESPONSE)),
], ids=["describe", "describe-tagged", "describe-empty", "list-offsets", "metadata",
        "describe-cluster"])
def test_every_truncation_is_a_wire_error(decode: Callable[[bytes], object], golden: bytes,
                                          read_up_to: int) -> None:
    """Each golden response cut at every byte it needs: WireError, never IndexError,
    struct.error or a short answer."""
    for cut in range(read_up_to):
        with pytest.raises(WireError):
            decode(golden[:cut])


def test_a_negative_string_length_is_a_wire_error() -> None:
    """ListOffsetsResponse.json v4's topic Name is not nullable: an int16 length of -1 is
    unreadable. It used to move the reader back a byte and answer (9, {}): the high
    watermarks silently missing instead of a wire error."""
    payload = _golden(
        "00000009",  # CorrelationId
        "00000000",  # ThrottleTimeMs
        "00000001",  # Topics: 1
        "ffff",  # Topics[0].Name: int16 length -1 (not allowed: not a nullable string)
        "00000001",  # Partitions: 1
        "00000000 0000 ffffffffffffffff 00000000000004d2 00000004",  # partition 0
    )
    with pytest.raises(WireError):
        decode_list_offsets_response(payload)
    with pytest.raises(WireError):  # MetadataResponse.json v8: Host is not nullable either
        decode_metadata_brokers(_golden("00000004 00000000 00000001",  # id, throttle, 1
                                        "00000001 fffe 00002384 ffff"))  # host length -2


def test_a_name_that_is_not_utf8_is_a_wire_error() -> None:
    """A topic name must be UTF-8 (Kafka's string type). The observer's describe loop
    catches WireError to try the next broker; a UnicodeDecodeError went past it."""
    not_utf8 = DESCRIBE_RESPONSE.replace(bytes.fromhex("0274"), bytes.fromhex("02ff"), 1)
    with pytest.raises(WireError):
        decode_describe_response(not_utf8)
    with pytest.raises(WireError):
        decode_list_offsets_response(
            LIST_OFFSETS_RESPONSE.replace(bytes.fromhex("000174"), bytes.fromhex("0001ff"), 1))


# -- one connection, two pages ---------------------------------------------------

# DescribeTopicPartitionsResponse.json v0 pages for correlation ids 1 and 2: partition 0
# of "t" and a NextCursor at ("t", 1), then partition 1 and no cursor.
_PAGE_PARTITION = "00000001 00000004 03 00000001 00000002 02 00000001 02 00000002 00 01 00"
PAGE_1 = _golden(
    "00000001 00",  # ResponseHeader v1: CorrelationId 1, no tagged fields
    "00000000 02",  # ThrottleTimeMs 0, Topics: 1
    "0000 0274", TOPIC_ID, "00",  # ErrorCode 0, Name "t", TopicId, IsInternal false
    "02 0000 00000000",  # Partitions: 1; ErrorCode 0, PartitionIndex 0
    # LeaderId 1, LeaderEpoch 4, Replicas [1, 2], Isr [1], Elr [2], LastKnownElr null,
    # Offline [], no tagged fields
    _PAGE_PARTITION,
    "80000000 00",  # TopicAuthorizedOperations, no tagged fields
    "01 0274 00000001 00",  # NextCursor present: "t", partition 1, no tagged fields
    "00",  # response tagged fields: count 0
)
PAGE_2 = _golden(
    "00000002 00",  # ResponseHeader v1: CorrelationId 2, no tagged fields
    "00000000 02",  # ThrottleTimeMs 0, Topics: 1
    "0000 0274", TOPIC_ID, "00",  # ErrorCode 0, Name "t", TopicId, IsInternal false
    "02 0000 00000001",  # Partitions: 1; ErrorCode 0, PartitionIndex 1
    _PAGE_PARTITION,  # the same leader, epoch, replicas, ISR and ELR as partition 0
    "80000000 00",  # TopicAuthorizedOperations, no tagged fields
    "ff",  # NextCursor null: the last page
    "00",  # response tagged fields: count 0
)


def test_a_connection_follows_the_cursor_and_merges_the_pages() -> None:
    """A fake broker on a local socket: the second request carries the first page's
    NextCursor as its Cursor (byte for byte), and the two pages come back as one topic."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def broker() -> None:
        conn, _ = server.accept()
        with conn:
            for page in (PAGE_1, PAGE_2):
                size = struct.unpack(">i", _recv(conn, 4))[0]
                received.append(struct.pack(">i", size) + _recv(conn, size))
                conn.sendall(struct.pack(">i", len(page)) + page)

    thread = threading.Thread(target=broker, daemon=True)
    thread.start()
    connection = WireConnection(f"127.0.0.1:{server.getsockname()[1]}", 5.0, client_id="ab")
    try:
        topics = connection.describe_topic_partitions(["t"])
    finally:
        connection.close()
        thread.join(5.0)
        server.close()
    assert received == [
        _golden("00000017",  # size: 23 bytes follow
                "004b 0000 00000001 0002 6162 00",  # header v2: 75, v0, correlation 1, "ab"
                "02 0274 00",  # Topics: ["t"]
                "000007d0",  # ResponsePartitionLimit 2000
                "ff 00"),  # Cursor null, no tagged fields
        _golden("0000001e",  # size: 30 bytes follow
                "004b 0000 00000002 0002 6162 00",  # header v2: 75, v0, correlation 2, "ab"
                "02 0274 00",  # Topics: ["t"]
                "000007d0",  # ResponsePartitionLimit 2000
                "01 0274 00000001 00",  # Cursor: present, "t", partition 1, no tagged fields
                "00"),  # request tagged fields: count 0
    ]
    partition = dict(leader=1, leader_epoch=4, replicas=(1, 2), isr=(1,), elr=(2,),
                     last_known_elr=None, offline=())
    assert topics == [DescribedTopic("t", 0, (DescribedPartition("t", 0, 0, **partition),
                                              DescribedPartition("t", 1, 0, **partition)))]


def _recv(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        assert chunk, "client closed early"
        data += chunk
    return data
