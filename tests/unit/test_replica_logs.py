"""Reading a replica's own log from the log dump tool's text: records per
partition with their batch's leader epoch, control batches left out, values
that are not this run's ints kept as null; and the high watermark checkpoint.
Each tested release's real dump is decoded in test_release_fixtures.py."""

from __future__ import annotations

from elr_harness.cluster.replica_logs import parse_checkpoint, parse_replica_dump

# ruff: noqa: E501 - the dump tool's lines as it prints them

DUMP = """\
Dumping /data/kafka/t-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 7 producerEpoch: 0 partitionLeaderEpoch: 3 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1 size: 80 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 0 CreateTime: 1 keySize: -1 valueSize: 2 sequence: 0 headerKeys: [] payload: 17
| offset: 1 CreateTime: 1 keySize: -1 valueSize: 3 sequence: 1 headerKeys: [] payload: abc
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 0 partitionLeaderEpoch: 4 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 80 CreateTime: 1 size: 78 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 2 CreateTime: 1 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 2 lastSequence: 2 producerId: 7 producerEpoch: 0 partitionLeaderEpoch: 5 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 158 CreateTime: 1 size: 70 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 3 CreateTime: 1 keySize: 1 valueSize: 2 sequence: 2 headerKeys: [] key: k payload: 42
Dumping /data/kafka/t-1/00000000000000000000.log
Log starting offset: 0
"""


def test_records_per_partition_with_their_batch_epoch():
    logs = parse_replica_dump(DUMP)
    assert sorted(logs) == [("t", 0), ("t", 1)]
    assert logs[("t", 0)].records == [[0, 17, 3], [1, None, 3], [3, 42, 5]]
    assert logs[("t", 0)].log_end_offset == 4
    assert logs[("t", 1)].records == [] and logs[("t", 1)].log_end_offset == 0


def test_a_topic_name_with_dashes_and_the_checkpoint():
    logs = parse_replica_dump(DUMP.replace("/t-0/", "/elr-test-10/"))
    assert ("elr-test", 10) in logs
    assert parse_checkpoint("0\n2\nt 0 4\nelr-test 10 17\n") == {("t", 0): 4,
                                                                ("elr-test", 10): 17}
    assert parse_checkpoint("") == {}
