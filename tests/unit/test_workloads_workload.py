"""The Workload's wiring without a broker: clients per acks level, time limit,
bounded stop, stats snapshot, its own observer closed at stop. Scripted
clients stand in for librdkafka here (Kafka itself: tests/integration)."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

from test_workloads_consumers import FakeMessage, ScriptedConsumer
from test_workloads_observer import FlakySource
from test_workloads_producers import ScriptedProducer, check_process_discipline

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.workload import Workload


class ClosableSource(FlakySource):
    closed = False

    def close(self) -> None:
        self.closed = True


def test_workload_runs_its_clients_for_the_time_limit(tmp_path: Path) -> None:
    source = ClosableSource()
    workload = Workload(
        producer_factory=lambda conf: ScriptedProducer(
            itertools.cycle(["ok", "ok", "NOT_ENOUGH_REPLICAS", "_MSG_TIMED_OUT"])),
        consumer_factory=lambda conf: ScriptedConsumer(
            [[FakeMessage(0, 0, b"0")]], {0: (0, 5), 1: (0, 5)}))
    config = WorkloadConfig(producers=4, acks=("all", "1"), processes_per_client=1,
                            consumers=1, rate=400, time_limit_s=0.6, observe_interval_s=0.05,
                            poll_timeout_s=0.05, stop_timeout_s=0.5)
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as recorder:
        started = time.monotonic()
        workload.start(["127.0.0.1:9"], [TopicConfig(name="t", partitions=2)], recorder,
                       config, state_source=source)
        assert workload.observer is not None
        assert workload.wait(5)
        assert 0.6 <= time.monotonic() - started < 3
        workload.stop()
        stats = workload.stats()
    # its own observer loop stops; the source stays open for the caller who made it
    assert not workload.observer.running and not source.closed
    ops = [json.loads(line) for line in path.read_text().splitlines()]
    sends = [op for op in ops if op["f"] == "send"]
    check_process_discipline(sends)
    assert {op["acks"] for op in sends} == {"all", "1"}
    invokes = [op for op in sends if op["type"] == "invoke"]
    assert 0.3 * 400 * 0.6 < len(invokes) <= 400 * 0.6 + 25  # paced by the rate limit
    assert len({op["value"] for op in invokes}) == len(invokes)  # unique across clients
    assert {op["partition"] for op in invokes} == {0, 1}
    assert any(op["f"] == "poll" and op["type"] == "ok" for op in ops)
    assert any(op["f"] == "observe" for op in ops)
    done = [op for op in sends if op["type"] != "invoke"]
    assert stats.count("send", "ok") == sum(op["type"] == "ok" for op in done)
    assert stats.sends_by_acks["all"]["fail"] == sum(
        op["type"] == "fail" and op["acks"] == "all" for op in done)
    assert stats.last_errors and stats.observer_samples > 0
