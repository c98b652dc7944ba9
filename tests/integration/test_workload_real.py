"""The workload against a real KRaft cluster (no faults): producers with acks
all, 1 and 0, a consumer and the observer for ~15 s, then final reads.

Runs against ELR_HARNESS_BOOTSTRAP=host:port,... when set, else against a
3+3 cluster of its own. Each test creates its own topic.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from elr_harness.cluster.observe import topic_ready_everywhere
from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.core.wait import wait_until
from elr_harness.workloads.client_conf import consumer_conf
from elr_harness.workloads.consumers import PositionBook, collect
from elr_harness.workloads.final_reads import final_reads
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.workload import Workload

pytestmark = pytest.mark.integration

PARTITIONS = 3


@pytest.fixture(scope="module")
def bootstrap(docker_client):
    """ELR_HARNESS_BOOTSTRAP=host:port,... when given; else a cluster of its own,
    started for this module and removed after it (never a skip: CI must run it)."""
    given = os.environ.get("ELR_HARNESS_BOOTSTRAP")
    if given:
        yield given.split(",")
        return
    from elr_harness.cluster.cluster import Cluster
    from elr_harness.core.config import ClusterConfig

    cluster = Cluster(ClusterConfig(name="it-workload", subnet="10.213.81.0/24"),
                      client=docker_client)
    try:
        cluster.up()
        yield cluster.bootstrap
    finally:
        cluster.down()


@pytest.fixture()
def topic(bootstrap: list[str]) -> TopicConfig:
    name = f"workload-it-{os.getpid()}-{time.monotonic_ns()}"
    admin = AdminClient({"bootstrap.servers": ",".join(bootstrap)})
    futures = admin.create_topics([NewTopic(name, PARTITIONS, 3,
                                            config={"min.insync.replicas": "2"})])
    for future in futures.values():
        future.result(60)
    # as a run's topic: ready in every broker's view and served by each leader
    assert wait_until(lambda: topic_ready_everywhere(bootstrap, name, PARTITIONS, 3, 10),
                      60, 0.3), f"topic {name} not ready on every broker within 60 s"
    return TopicConfig(name=name, partitions=PARTITIONS, replication_factor=3,
                       min_insync_replicas=2)


def test_workload_and_final_reads_against_real_kafka(bootstrap: list[str], topic: TopicConfig,
                                                     tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    # The run's client timeouts are short so that a fault's operations resolve
    # within seconds; without faults, on a CI machine busy with Spark beside it,
    # a 3 s produce wait can lapse with nothing wrong in Kafka. This test is about
    # what is recorded, so its sends get time enough for a loaded machine.
    config = WorkloadConfig(producers=6, acks=("all", "1", "0"), consumers=1, rate=300,
                            time_limit_s=15, message_timeout_ms=60_000,
                            request_timeout_ms=30_000, socket_timeout_ms=30_000,
                            stop_timeout_s=60.0)
    path = tmp_path / "history.jsonl"
    # the librdkafka line behind a CLIENT_RESENT, should one appear, for the message
    caplog.set_level(logging.INFO, logger="elr_harness.workloads.producers")
    recorder = HistoryRecorder(path)
    workload = Workload()
    workload.start(bootstrap, [topic], recorder, config)
    assert workload.wait(config.time_limit_s + config.stop_timeout_s + 30)
    workload.stop()
    stats = workload.stats()
    summary = final_reads(bootstrap, [topic], recorder, config)
    recorder.close()
    ops = [json.loads(line) for line in path.read_text().splitlines()]

    assert [op["index"] for op in ops] == list(range(len(ops)))
    assert all(a["time"] <= b["time"] for a, b in zip(ops, ops[1:], strict=False))

    # every send invoke has exactly one completion, of the same process and value
    open_sends: dict[int, dict] = {}
    completions: list[tuple[dict, dict]] = []
    for op in ops:
        if op["f"] != "send":
            continue
        if op["type"] == "invoke":
            assert op["process"] not in open_sends
            open_sends[op["process"]] = op
        else:
            invoke = open_sends.pop(op["process"])
            assert (op["value"], op["partition"], op["acks"]) == (
                invoke["value"], invoke["partition"], invoke["acks"])
            completions.append((invoke, op))
    assert not open_sends
    by_acks: dict[str, list[dict]] = defaultdict(list)
    for _invoke, done in completions:
        by_acks[done["acks"]].append(done)
    assert set(by_acks) == {"all", "1", "0"}
    # paced by the rate, over the whole run: never more sends than the rate allows
    # (one limiter for every producer; a second of slack, as an invoke is recorded a
    # moment after its turn was taken and a loaded host may delay the first), and
    # sends in each third of it. How many fit is the machine's speed (a loaded CI
    # host made 163/s of the 300 asked), so no lower count is asked: benchmarks/
    # measure throughput
    invoked = [invoke["time"] for invoke, _done in completions]
    span_s = (max(invoked) - min(invoked)) / 1e9
    assert len(invoked) <= config.rate * (span_s + 1.0)
    assert span_s >= 0.5 * config.time_limit_s  # it ran to its time limit, not just begun
    thirds = {min(2, int(3 * (t - min(invoked)) / (max(invoked) - min(invoked))))
              for t in invoked}
    assert thirds == {0, 1, 2}

    # without faults, every acks=all send is ok with a real offset
    not_ok = [op for op in by_acks["all"]
              if not (op["type"] == "ok" and type(op["offset"]) is int and op["offset"] >= 0)]
    resends = [r.getMessage() for r in caplog.records if "re-sends" in r.getMessage()]
    assert not_ok == [], (f"{len(not_ok)} acks=all sends not ok, first: {not_ok[:3]}; "
                          f"librdkafka said: {resends[:3]}")
    assert all(op["offset"] is None for op in by_acks["0"] if op["type"] == "ok")

    # final reads cover every partition from its start to its end
    assert summary.complete, summary
    # each final reader is a process of its own that seeks one partition first
    first_final: dict[int, dict] = {}
    for op in ops:
        if op["f"] == "poll" and op.get("final") and op["type"] == "invoke":
            first_final.setdefault(op["process"], op)
    read_by = {process: int(next(iter(op["seek"]))) for process, op in first_final.items()}
    assert sorted(read_by.values()) == list(range(PARTITIONS))
    final_log: dict[int, dict[int, int]] = defaultdict(dict)
    for op in ops:
        if op["f"] == "poll" and op.get("final") and op["type"] == "ok":
            assert "partitions" not in op, "final polls carry only the contract's fields"
            assert set(op["high_watermark"]) == {str(read_by[op["process"]])}
            for partition, offset, value in op["records"]:
                assert partition == read_by[op["process"]]
                final_log[partition][offset] = value
    for result in summary.partitions:
        assert result.start == 0 and result.end > 0
        assert sorted(final_log[result.partition]) == list(range(result.start, result.end))
    assert sorted((op["seek"] for op in first_final.values()), key=str) == sorted(
        ({str(p): 0} for p in range(PARTITIONS)), key=str)

    # every acknowledged acks=all value is in the final log at its recorded offset
    for op in by_acks["all"]:
        assert final_log[op["partition"]].get(op["offset"]) == op["value"]
    written = {op["value"] for _, op in completions}
    assert all(v in written for log in final_log.values() for v in log.values())

    # the consumer read continuously from its initial seek, values all ours
    polls = [op for op in ops if op["f"] == "poll" and not op.get("final")]
    # each partition's first seek is to its start, on the first poll or, when its
    # leader did not answer the consumer's watermark query in time (a loaded CI host:
    # partition 1 once), on a later one; no record of it is read before that seek
    assert polls[0]["type"] == "invoke" and polls[0]["seek"]
    first_seek: dict[str, int] = {}
    seeked: set[int] = set()
    for op in polls:
        for partition, offset in (op.get("seek") or {}).items():
            first_seek.setdefault(partition, offset)
            seeked.add(int(partition))
        if op["type"] == "ok":
            assert {p for p, _o, _v in op["records"]} <= seeked, op
    assert first_seek == {"0": 0, "1": 0, "2": 0}
    consumed = [r for op in polls if op["type"] == "ok" for r in op["records"]]
    assert consumed and all(value in written for _p, _o, value in consumed)
    next_offset: dict[int, int] = {}
    for partition, offset, _value in consumed:
        assert offset == next_offset.get(partition, 0)
        next_offset[partition] = offset + 1

    # the observer saw every partition with a leader and its ISR
    observed = [op for op in ops if op["f"] == "observe"]
    assert {op["partition"] for op in observed} == set(range(PARTITIONS))
    assert all(op["leader"] >= 1 and op["isr"] for op in observed)
    # ... and kept sampling through the run: each tick records a sample or counts a
    # failed describe, and a tick takes at most a describe's timeout and the
    # interval; so a sample within a tick (and a second of slack) of the first send's
    # invoke, one within that of the last, and no silence longer than the ticks the
    # failures account for (how many samples fit in 15 s is the machine's speed,
    # not the observer's behaviour: a busy CI host once gave 29)
    sample_times = [op["time"] for op in observed if op["partition"] == 0]  # one per sample
    send_times = [op["time"] for op in ops if op["f"] == "send" and op["type"] == "invoke"]
    tick_ns = int((config.observe_timeout_s + config.observe_interval_s) * 1e9)
    slack_ns = tick_ns + int(1e9)
    assert stats.observer_samples == len(sample_times) > 2
    assert sample_times[0] <= send_times[0] + slack_ns
    assert sample_times[-1] >= send_times[-1] - slack_ns
    assert max(b - a for a, b in zip(sample_times, sample_times[1:], strict=False)) <= \
        (stats.observer_failures + 1) * tick_ns + int(1e9)
    assert stats.count("send", "ok") == sum(
        1 for _, op in completions if op["type"] == "ok")


def test_out_of_range_position_is_an_error_and_reassignment_recovers(
        bootstrap: list[str], topic: TopicConfig) -> None:
    """The consumer's design rests on this librdkafka behaviour with real Kafka:
    with auto.offset.reset=error an out-of-range fetch is an _AUTO_OFFSET_RESET
    error (no silent jump), and unassign + assign at a valid offset reads on."""
    producer = Producer({"bootstrap.servers": ",".join(bootstrap), "acks": "all"})
    for value in range(5):
        producer.produce(topic.name, value=str(value).encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(consumer_conf(bootstrap, WorkloadConfig(), "it-reset"))
    try:
        tp = TopicPartition(topic.name, 0)
        low, high = consumer.get_watermark_offsets(tp, timeout=10)
        assert high - low == 5
        consumer.incremental_assign([TopicPartition(topic.name, 0, high + 1000)])
        book = PositionBook()
        book.seek(0, high + 1000)
        errors: list[str] = []
        deadline = time.monotonic() + 30
        while not errors and time.monotonic() < deadline:
            errors = collect(consumer.consume(10, 1.0), book).errors
        assert errors == ["_AUTO_OFFSET_RESET"] and book.lost == {0}
        # it did not jump by itself: records written now are not read
        for value in range(5, 8):
            producer.produce(topic.name, value=str(value).encode(), partition=0)
        assert producer.flush(30) == 0
        silent_end = time.monotonic() + 3
        while time.monotonic() < silent_end:
            assert collect(consumer.consume(10, 0.5), book).records == []

        consumer.incremental_unassign([tp])
        consumer.incremental_assign([TopicPartition(topic.name, 0, low)])
        book.seek(0, low)
        records: list[list] = []
        deadline = time.monotonic() + 30
        while len(records) < 8 and time.monotonic() < deadline:
            outcome = collect(consumer.consume(10, 1.0), book)
            assert outcome.errors == []
            records += outcome.records
        assert records == [[0, low + v, v] for v in range(8)]
        assert book.position(0) == high + 3
    finally:
        consumer.close()
