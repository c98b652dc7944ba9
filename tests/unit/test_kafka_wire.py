"""The observer's wire codec for ListOffsets v2, byte for byte against Kafka's
ListOffsetsRequest.json / ListOffsetsResponse.json (non-flexible v2)."""

from __future__ import annotations

import struct

import pytest

from cluster.kafka_wire import (
    WireError,
    decode_list_offsets_response,
    decode_metadata_brokers,
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
