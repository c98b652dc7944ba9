"""The primitives of Kafka's wire encoding that every API of the harness's wire
client shares (cluster.kafka_wire, cluster.kafka_wire_config): request headers,
size prefixes, strings and varints, and a reader of response bytes that turns
anything unreadable into a WireError.

Encodings (Kafka protocol guide; types.ProtocolType): a compact string/array
length is an unsigned varint of length + 1 (0 = null); a nullable struct is an
int8, -1 for null; tagged fields are a uvarint count, then per field a uvarint
tag, a uvarint size and that many bytes.
"""

from __future__ import annotations

import struct


class WireError(Exception):
    """The broker could not be reached or answered something unreadable."""


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def compact_string(value: str) -> bytes:
    raw = value.encode()
    return uvarint(len(raw) + 1) + raw


def string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def header_v1(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    """Request header v1; v2 (flexible versions) is this plus empty tagged fields."""
    return struct.pack(">hhi", api_key, version, correlation_id) + string(client_id)


def framed(header: bytes, body: bytes) -> bytes:
    """A request with Kafka's int32 size prefix."""
    return struct.pack(">i", len(header) + len(body)) + header + body


class Reader:
    """Reads a response's fields in order; a short or impossible field is a WireError."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0:  # a length of -1 (null) where the schema allows none: would move back
            raise WireError(f"negative length {n} in response")
        if self.pos + n > len(self.data):
            raise WireError("response ended early")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def text(self, n: int) -> str:
        try:
            return self.take(n).decode()
        except UnicodeDecodeError as err:
            raise WireError(f"a name that is not UTF-8 in response: {err}") from err

    def int8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.text(n - 1)

    def compact_int32_array(self) -> tuple[int, ...] | None:
        n = self.uvarint()
        if n == 0:
            return None
        return struct.unpack(f">{n - 1}i", self.take(4 * (n - 1)))

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())

    def tagged_fields(self) -> dict[int, bytes]:
        """The tagged fields, by tag (each field's bytes, to be read by its schema)."""
        fields = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = self.take(self.uvarint())
        return fields
