"""Capture what a Kafka release really says to the harness, as unit-test fixtures.

For each version: a cluster of that release (ELR on, its own name and subnet),
a topic with a known number of acks=all records per partition, then the raw
bytes of the three responses the harness decodes (DescribeTopicPartitions v0,
ListOffsets v4, Metadata v8, from broker 1) and the raw text the release's own
log dump tool prints for the active controller's metadata log; and, for the
Python segment reader (cluster/record_batches.py), the segment files of a second
topic written with every kind of record the reader meets, with the release's
own dump of those same files. Written to tests/unit/fixtures/kafka-<version>/,
where tests/unit/test_release_fixtures.py and test_record_batches.py decode
them with the harness's code.

    .venv/bin/python scripts/capture_kafka_fixtures.py [--segments-only] 4.0.0 4.1.1 ...

--segments-only captures the segment files and their dump alone (the other
fixtures of that release stay as they were captured).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from confluent_kafka import Producer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from elr_harness.cluster import kafka_wire, kraft  # noqa: E402
from elr_harness.cluster.cluster import Cluster  # noqa: E402
from elr_harness.cluster.metadata_log import DUMP_LOG_CLASSES  # noqa: E402
from elr_harness.cluster.replica_logs import dump_segments  # noqa: E402
from elr_harness.core.config import ClusterConfig, TopicConfig  # noqa: E402

FIXTURES = REPO / "tests" / "unit" / "fixtures"
RECORDS_PER_PARTITION = 10
#: The topic whose segment files are kept: one partition, three replicas.
SEGMENTS_TOPIC = "elr-segments"


class RecordingConnection(kafka_wire.WireConnection):
    """A WireConnection that keeps every response payload it was sent."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.payloads: list[bytes] = []

    def _roundtrip(self, request: bytes) -> bytes:
        payload = super()._roundtrip(request)
        self.payloads.append(payload)
        return payload


def write_varied_records(bootstrap: str) -> None:
    """Batches of every kind the segment reader meets, on SEGMENTS_TOPIC: several
    batches, integers (one negative), text that is no integer, an empty value, a
    key with a header, a null value, and a committed and an aborted transaction
    (their markers are control batches)."""
    plain = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for values in ([b"0", b"1", b"2"], [b"-5", b"x", b""], [b"3"]):
        for value in values:
            plain.produce(SEGMENTS_TOPIC, value=value, partition=0)
        assert plain.flush(30) == 0, "records left unsent"  # each flush: its own batch
    plain.produce(SEGMENTS_TOPIC, key=b"k", value=b"4", headers=[("h", b"v")], partition=0)
    plain.produce(SEGMENTS_TOPIC, key=b"gone", value=None, partition=0)
    assert plain.flush(30) == 0, "records left unsent"
    tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": "fixture",
                   "log_level": 0})
    tx.init_transactions(60)
    for value, commit in ((b"5", True), (b"6", False)):
        tx.begin_transaction()
        tx.produce(SEGMENTS_TOPIC, value=value, partition=0)
        # written before the end: an abort would drop a record still unsent
        assert tx.flush(30) == 0, "records left unsent"
        (tx.commit_transaction if commit else tx.abort_transaction)(60)
    plain.produce(SEGMENTS_TOPIC, value=b"7", partition=0)
    assert plain.flush(30) == 0, "records left unsent"


def capture_segments(cluster: Cluster, out: Path) -> None:
    """Broker 1's segment files of SEGMENTS_TOPIC, byte for byte, under
    out/segments/<partition dir>/, and the release's dump of them."""
    broker = cluster.broker_by_id(1)
    listing = broker.exec(f"ls {cluster.config.log_dir}/{SEGMENTS_TOPIC}-*/*.log")
    assert listing.ok, listing.output
    paths = listing.output.split()
    (out / "segments.dump.txt").write_text(dump_segments(
        broker, paths, cluster.distribution.main_class(DUMP_LOG_CLASSES),
        cluster.config.timeouts.metadata_dump_s))
    for path in paths:
        target = out / "segments" / Path(path).parent.name / Path(path).name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(broker.read_file(path))


def _segments(cluster: Cluster, out: Path) -> None:
    cluster.create_topic(TopicConfig(name=SEGMENTS_TOPIC, partitions=1))
    write_varied_records(",".join(cluster.bootstrap))
    capture_segments(cluster, out)


def capture(version: str, segments_only: bool = False) -> Path:
    config = ClusterConfig(name="elrfix", subnet="10.213.79.0/24", kafka_version=version)
    cluster = Cluster(config, log=lambda m: print(f"  {m}"))
    topic = TopicConfig()
    out = FIXTURES / f"kafka-{version}"
    out.mkdir(parents=True, exist_ok=True)
    try:
        cluster.up()
        if segments_only:
            _segments(cluster, out)
            return out
        cluster.create_topic(topic)
        producer = Producer({"bootstrap.servers": ",".join(cluster.bootstrap), "acks": "all",
                             "log_level": 0})
        for partition in range(topic.partitions):
            for i in range(RECORDS_PER_PARTITION):
                producer.produce(topic.name, value=str(i).encode(), partition=partition)
        assert producer.flush(30) == 0, "records left unsent"

        broker = cluster.broker_by_id(1)
        wire = RecordingConnection(f"{broker.spec.address}:{config.broker_port}", 5.0)
        described = wire.describe_topic_partitions([topic.name])
        epochs = {(topic.name, p.partition): p.leader_epoch for p in described[0].partitions}
        wire.latest_offsets(epochs)
        wire.broker_ids()
        wire.close()
        names = ("describe-topic-partitions-v0", "list-offsets-v4", "metadata-v8")
        for name, payload in zip(names, wire.payloads, strict=True):
            (out / f"{name}.bin").write_bytes(payload)

        controller = next(n for n in cluster.controllers
                          if n.spec.node_id == cluster.quorum_leader())
        segments = controller.exec(f"ls {config.metadata_log_dir}/__cluster_metadata-0/*.log")
        dump = controller.exec(
            kraft.tool_command("256m", cluster.distribution.main_class(DUMP_LOG_CLASSES),
                               "--cluster-metadata-decoder", "--files",
                               ",".join(segments.output.split())),
            timeout_s=config.timeouts.metadata_dump_s)
        assert dump.ok, dump.output[-500:]
        (out / "metadata-log.dump.txt").write_text(dump.output)

        # broker 1's own replicas of the topic, as the collector dumps them
        time.sleep(6)  # the high watermark checkpoint is written every 5 s
        log_dir = config.log_dir
        segments = broker.exec(f"ls {log_dir}/{topic.name}-*/*.log")
        (out / "replica-log.dump.txt").write_text(dump_segments(
            broker, segments.output.split(), cluster.distribution.main_class(DUMP_LOG_CLASSES),
            config.timeouts.metadata_dump_s))
        checkpoint = broker.exec(["cat", f"{log_dir}/replication-offset-checkpoint"])
        assert checkpoint.ok, checkpoint.output
        (out / "replication-offset-checkpoint").write_text(checkpoint.output)
        (out / "facts.json").write_text(json.dumps({
            "kafka_version": version, "topic": topic.name, "partitions": topic.partitions,
            "replication_factor": topic.replication_factor,
            "records_per_partition": RECORDS_PER_PARTITION,
            "broker_ids": sorted(n.spec.node_id for n in cluster.brokers),
            "controller": controller.spec.name}, indent=1) + "\n")
        # last: the metadata log captured above holds the first topic alone
        _segments(cluster, out)
    finally:
        cluster.down(quiet=True)
    return out


if __name__ == "__main__":
    only = "--segments-only" in sys.argv[1:]
    for wanted in [a for a in sys.argv[1:] if a != "--segments-only"]:
        print(f"Kafka {wanted}")
        print(f"  -> {capture(wanted, segments_only=only)}")
