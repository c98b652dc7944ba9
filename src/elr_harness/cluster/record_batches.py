"""A replica's segment files read in Python: Kafka's record-batch format, v2.

The collect phase used to start Kafka's log dump tool (a JVM) in every broker
to learn which records each replica holds. The on-disk format is documented
(https://kafka.apache.org/documentation/#recordbatch) and has not changed since
Kafka 0.11, so the bytes are read here instead: a batch header of 61 bytes,
then its records, each a length and zigzag varints. Only what the `replica`
lines need is kept: each record's offset, value and its batch's leader epoch,
and whether the batch is a control batch (a transaction marker).

What this reader does not know (a compressed batch, a magic other than 2, a
record that runs past its batch) raises UnreadableSegment, and the collector
asks Kafka's own tool instead (cluster.replica_logs). A torn batch at the end
of a file is where the log ends, as Kafka's own reader stops there too.
tests/unit/test_record_batches.py checks this reader against each release's
own dump of the same files (tests/unit/fixtures/kafka-*/).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

#: baseOffset (int64) and batchLength (int32): what precedes every batch's length.
LOG_OVERHEAD = 12
#: The v2 batch header, through its record count.
BATCH_HEADER = 61
_HEAD = struct.Struct(">qiibIhiqqqhii")
_COMPRESSION_MASK = 0x07
_CONTROL_FLAG = 0x20


class UnreadableSegment(ValueError):
    """A segment this reader cannot read as Kafka would: ask Kafka's tool instead."""


@dataclass(frozen=True)
class SegmentRecord:
    offset: int
    #: None: the record has a null value.
    value: bytes | None
    leader_epoch: int
    control: bool


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka's ByteUtils.readVarint/readVarlong) at pos; its value
    and the position after it."""
    shift = raw = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise UnreadableSegment(f"a varint runs past its record at byte {pos}")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def read_segment(data: bytes) -> Iterator[SegmentRecord]:
    """Every record of a segment file's batches, in file order."""
    pos = 0
    while len(data) - pos >= LOG_OVERHEAD:
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        end = pos + LOG_OVERHEAD + batch_length
        if end > len(data):
            return  # a torn batch: the log ends before it
        if batch_length < BATCH_HEADER - LOG_OVERHEAD:
            raise UnreadableSegment(f"a batch of {batch_length} bytes at byte {pos}")
        (_, _, epoch, magic, _crc, attributes, _last_delta, _base_ts, _max_ts, _pid, _pepoch,
         _base_seq, count) = _HEAD.unpack_from(data, pos)
        if magic != 2:
            raise UnreadableSegment(f"a batch of magic {magic} at byte {pos}")
        if attributes & _COMPRESSION_MASK:
            raise UnreadableSegment(f"a compressed batch at byte {pos}")
        control = bool(attributes & _CONTROL_FLAG)
        at = pos + BATCH_HEADER
        for _ in range(count):
            length, at = _varint(data, at)
            record_end = at + length
            if length < 0 or record_end > end:
                raise UnreadableSegment(f"a record runs past its batch at byte {at}")
            at += 1  # the record's attributes (unused)
            _, at = _varint(data, at)  # timestampDelta
            offset_delta, at = _varint(data, at)
            key_length, at = _varint(data, at)
            at += max(key_length, 0)
            value_length, at = _varint(data, at)
            value = None if value_length < 0 else data[at:at + value_length]
            if at + max(value_length, 0) > record_end:
                raise UnreadableSegment(f"a value runs past its record at byte {at}")
            yield SegmentRecord(base_offset + offset_delta, value, epoch, control)
            at = record_end  # headers are not needed
        if at != end:
            raise UnreadableSegment(f"batch at byte {pos} holds {end - at} bytes past "
                                    f"its {count} records")
        pos = end
