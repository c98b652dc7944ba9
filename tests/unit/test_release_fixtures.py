"""Each tested Kafka release's real output, decoded by the harness's own code.

scripts/capture_kafka_fixtures.py captured, from a real cluster of each release
(ELR on, one topic of 3 partitions x 3 replicas, 10 acks=all records in each),
the raw responses the observer decodes and the raw text of the release's log
dump tool. A release that changes a response layout or the dump's format
fails here, on its own bytes, before any scenario runs on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elr_harness.cluster.kafka_wire import (
    decode_describe_response,
    decode_list_offsets_response,
    decode_metadata_brokers,
)
from elr_harness.cluster.metadata_log import parse_dump
from elr_harness.cluster.releases import TESTED
from elr_harness.cluster.replica_logs import parse_checkpoint, parse_replica_dump
from elr_harness.core.metadata_records import partition_states

RELEASES = sorted(p.parent for p in (Path(__file__).parent / "fixtures").glob(
    "kafka-*/facts.json"))


def _facts(release: Path) -> dict:
    return json.loads((release / "facts.json").read_text())


def test_every_tested_release_has_captured_output():
    captured = {_facts(release)["kafka_version"] for release in RELEASES}
    assert set(TESTED) <= captured, f"no fixtures for {sorted(set(TESTED) - captured)}"


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_describe_topic_partitions_of_a_full_isr(release):
    facts = _facts(release)
    _, topics, cursor = decode_describe_response(
        (release / "describe-topic-partitions-v0.bin").read_bytes())
    assert cursor is None
    [topic] = topics
    assert (topic.name, topic.error_code) == (facts["topic"], 0)
    assert [p.partition for p in topic.partitions] == list(range(facts["partitions"]))
    for p in topic.partitions:
        assert p.error_code == 0
        assert sorted(p.replicas) == facts["broker_ids"]
        assert sorted(p.isr) == facts["broker_ids"]
        assert p.leader in p.isr and p.leader_epoch >= 0
        # ELR on: the fields are there, and empty while the ISR is full
        assert (p.elr, p.last_known_elr, p.offline) == ((), (), ())


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_list_offsets_gives_the_records_written(release):
    """Asked of broker 1 for every partition: its own partitions answer with the
    records written, the others with NOT_LEADER_OR_FOLLOWER (6) and -1."""
    facts = _facts(release)
    _, [topic], _ = decode_describe_response(
        (release / "describe-topic-partitions-v0.bin").read_bytes())
    _, offsets = decode_list_offsets_response((release / "list-offsets-v4.bin").read_bytes())
    assert offsets == {
        (facts["topic"], p.partition):
            (0, facts["records_per_partition"]) if p.leader == 1 else (6, -1)
        for p in topic.partitions}
    assert any(p.leader == 1 for p in topic.partitions), "an answer with offsets"


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_metadata_lists_every_broker(release):
    _, brokers = decode_metadata_brokers((release / "metadata-v8.bin").read_bytes())
    assert sorted(brokers) == _facts(release)["broker_ids"]


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_the_log_dump_parses_into_the_same_partitions(release):
    facts = _facts(release)
    records = parse_dump((release / "metadata-log.dump.txt").read_text(), facts["controller"])
    features = {r["data"]["name"]: r["data"]["featureLevel"] for r in records
                if r["type"] == "FEATURE_LEVEL_RECORD"}
    assert features["eligible.leader.replicas.version"] == 1
    assert [r["offset"] for r in records] == sorted(r["offset"] for r in records)
    assert any(r["type"] == "LEADER_CHANGE" for r in records), "control records parse too"
    _, [topic], _ = decode_describe_response(
        (release / "describe-topic-partitions-v0.bin").read_bytes())
    view = partition_states(records)
    assert {key: (s["leader"], s["leader_epoch"], sorted(s["isr"]), s["elr"])
            for key, s in view.items()} == {
        (facts["topic"], p.partition): (p.leader, p.leader_epoch, sorted(p.isr), [])
        for p in topic.partitions}


@pytest.mark.parametrize("release", [r for r in RELEASES if (r / "replica-log.dump.txt").is_file()],
                         ids=lambda p: p.name)
def test_the_replica_dump_holds_the_records_written(release):
    """Broker 1 holds a replica of every partition (RF 3 of 3 brokers): the values
    written (0..9), each in a batch of a real leader epoch, and its checkpointed
    high watermark at the end of them."""
    facts = _facts(release)
    logs = parse_replica_dump((release / "replica-log.dump.txt").read_text())
    marks = parse_checkpoint((release / "replication-offset-checkpoint").read_text())
    n = facts["records_per_partition"]
    assert sorted(logs) == [(facts["topic"], p) for p in range(facts["partitions"])]
    for key, log in logs.items():
        assert [r[0] for r in log.records] == list(range(n))
        assert [r[1] for r in log.records] == list(range(n))
        assert all(r[2] >= 0 for r in log.records)
        assert log.log_end_offset == n and marks[key] == n
