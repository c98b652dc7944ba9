"""The Python segment reader (cluster/record_batches.py) against Kafka's own dump.

Each tested release's fixtures hold broker 1's segment files of a topic written
with every kind of record the reader meets (scripts/capture_kafka_fixtures.py:
several batches, a negative integer, text, an empty value, a key and a header,
a null value, committed and aborted transactions) and that release's
DumpLogSegments output for the same files: both readings must give the same
replica lines. Hand-built batches cover what a healthy log never holds."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from elr_harness.cluster.record_batches import UnreadableSegment, read_segment
from elr_harness.cluster.releases import TESTED
from elr_harness.cluster.replica_logs import parse_replica_dump, read_segments

FIXTURES = Path(__file__).parent / "fixtures"
RELEASES = sorted(p.parent for p in FIXTURES.glob("kafka-*/segments.dump.txt"))


def _files(release: Path) -> list[tuple[str, bytes]]:
    """(path as the broker named it, bytes) of the release's captured segments."""
    return sorted((f"/data/kafka/{p.parent.name}/{p.name}", p.read_bytes())
                  for p in (release / "segments").glob("*/*.log"))


def test_every_tested_release_has_captured_segments():
    captured = {p.name.removeprefix("kafka-") for p in RELEASES}
    assert set(TESTED) <= captured, f"no segments for {sorted(set(TESTED) - captured)}"


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_the_reader_agrees_with_the_releases_own_dump(release):
    by_kafka = parse_replica_dump((release / "segments.dump.txt").read_text())
    by_python = read_segments(_files(release))
    assert by_python == by_kafka
    (log,) = by_python.values()
    # what was written (the capture script): text and the empty value are no
    # integer; the null value and the two transaction markers (control batches)
    # are no records, but their offsets count in the log end offset
    values = [r[1] for r in log.records]
    assert values == [0, 1, 2, -5, None, None, 3, 4, 5, 6, 7]
    assert log.log_end_offset == len(values) + 3


def _batch(base_offset: int, records: list[bytes | None], *, epoch: int = 3,
           attributes: int = 0, magic: int = 2) -> bytes:
    """A v2 batch as a producer writes it (the CRC is not checked, so left 0)."""
    def varint(n: int) -> bytes:
        z, out = (n << 1) ^ (n >> 63), b""
        while True:
            if z < 0x80:
                return out + bytes([z])
            out += bytes([(z & 0x7F) | 0x80])
            z >>= 7

    body = b""
    for delta, value in enumerate(records):
        inner = (b"\x00" + varint(0) + varint(delta) + varint(-1)
                 + (varint(-1) if value is None else varint(len(value)) + value) + varint(0))
        body += varint(len(inner)) + inner
    header = struct.pack(">ibIhiqqqhii", epoch, magic, 0, attributes, len(records) - 1,
                         0, 0, -1, -1, -1, len(records))
    return struct.pack(">qi", base_offset, len(header) + len(body)) + header + body


def test_offsets_values_and_epochs_of_hand_built_batches():
    data = _batch(0, [b"10", b"11"], epoch=1) + _batch(2, [None, b"12"], epoch=4)
    assert [(r.offset, r.value, r.leader_epoch, r.control) for r in read_segment(data)] == [
        (0, b"10", 1, False), (1, b"11", 1, False), (2, None, 4, False), (3, b"12", 4, False)]


def test_a_torn_batch_at_the_end_is_where_the_log_ends():
    whole = _batch(0, [b"1"])
    torn = _batch(1, [b"2", b"3"])
    assert [r.offset for r in read_segment(whole + torn[:-3])] == [0]
    assert [r.offset for r in read_segment(whole + torn[:5])] == [0]


@pytest.mark.parametrize("data, why", [
    (_batch(0, [b"1"], attributes=1), "compressed"),   # gzip
    (_batch(0, [b"1"], attributes=4), "compressed"),   # zstd
    (_batch(0, [b"1"], magic=1), "magic 1"),
    (bytes(12) + bytes(49), "batch of 0 bytes"),       # zeros where a batch should be
])
def test_what_the_reader_does_not_know_is_refused_not_guessed(data, why):
    with pytest.raises(UnreadableSegment, match=why):
        list(read_segment(data))


def test_a_record_count_that_overruns_its_batch_is_refused():
    good = bytearray(_batch(0, [b"1", b"2"]))
    struct.pack_into(">i", good, 57, 3)  # claims three records, holds two
    with pytest.raises(UnreadableSegment):
        list(read_segment(bytes(good)))


def test_control_batches_count_in_the_log_end_offset_but_are_no_records():
    marker = _batch(5, [b"\x00\x00\x00\x00"], attributes=0x20)
    logs = read_segments([("/d/t-0/00000000000000000000.log", _batch(0, [b"1"]) + marker)])
    assert logs[("t", 0)].records == [[0, 1, 3]]
    assert logs[("t", 0)].log_end_offset == 6


def test_files_outside_a_partition_directory_are_left_out():
    data = _batch(0, [b"1"])
    assert read_segments([("/d/t-0.abc-delete/00000000000000000000.log", data)]) == {}
