"""The producer bookkeeping around librdkafka: one send in flight per process,
exactly one completion per invoke, classification, process retirement, stop.

The Producer here is a scripted stand-in that hands back delivery reports; it
checks the harness's logic around the client, not Kafka (the integration test
does that against a real cluster).
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

from elr_harness.core.config import WorkloadConfig
from elr_harness.workloads.client_conf import consumer_conf, producer_conf
from elr_harness.workloads.producers import (
    CLIENT_RESENT,
    STOPPED_IN_FLIGHT,
    PartitionChooser,
    ProducerClient,
    RateLimiter,
)
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector
from elr_harness.workloads.workload import producer_groups


class _Delivered:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def offset(self) -> int:
        return self._offset


class ScriptedProducer:
    """Answers each produce() with the next scripted outcome on a later poll()."""

    def __init__(self, outcomes: Any) -> None:
        self._outcomes = outcomes
        self._reports: list[tuple[Any, Any]] = []
        self.in_flight_values: set[int] = set()
        self.max_in_flight = 0
        self.next_offset = 0
        self.conf: dict[str, Any] = {}  # set when used as the factory

    def __call__(self, conf: dict) -> ScriptedProducer:  # the factory
        self.conf = conf
        return self

    def produce(self, topic: str, value: bytes, partition: int, on_delivery: Any) -> None:
        outcome = next(self._outcomes)
        if outcome == "queue-full":
            raise BufferError("queue full")
        self.in_flight_values.add(int(value))
        self.max_in_flight = max(self.max_in_flight, len(self.in_flight_values))
        if outcome != "hang":
            self._reports.append((on_delivery, outcome, int(value)))

    def poll(self, timeout: float) -> int:
        if not self._reports:
            time.sleep(min(timeout, 0.002))
            return 0
        on_delivery, outcome, value = self._reports.pop(0)
        self.in_flight_values.discard(value)
        if outcome.startswith("resent:"):
            # librdkafka's own words when it drops a broker handle mid-request
            self.conf["logger"].log(7, "%s", "REQERR [rdkafka#producer-1] [thrd:b/1]: b/1: "
                                    "ProduceRequest failed: Local: Broker handle destroyed "
                                    "without termination: actions Refresh,MsgNotPersisted")
            outcome = outcome.removeprefix("resent:")
        elif outcome.startswith("not-leader:"):
            # ... and when a leader that lost leadership answers an appended request
            self.conf["logger"].log(7, "%s", "REQERR [rdkafka#producer-1] [thrd:b/2]: b/2: "
                                    "ProduceRequest failed: Broker: Not leader for partition: "
                                    "explicit actions Refresh,MsgNotPersisted")
            outcome = outcome.removeprefix("not-leader:")
        if outcome == "ok":
            self.next_offset += 1
            on_delivery(None, _Delivered(self.next_offset - 1))
        else:
            on_delivery(KafkaError(getattr(KafkaError, outcome)), None)
        return 1

    def purge(self, **kwargs: Any) -> None:
        self._reports.clear()


def run_client(tmp_path: Path, outcomes: Any, *, acks: str = "all", slots: int = 3,
               run_s: float = 0.3, config: WorkloadConfig | None = None) -> tuple[list[dict],
                                                                                   ScriptedProducer]:
    config = config or WorkloadConfig(rate=0, stop_timeout_s=0.3)
    fake = ScriptedProducer(outcomes)
    with HistoryRecorder(tmp_path / "history.jsonl") as recorder:
        client = ProducerClient(
            name="t", bootstrap=["127.0.0.1:9"], acks=acks, slots=slots,
            chooser=PartitionChooser([("t", 0), ("t", 1)], "round-robin", random.Random(1)),
            values=itertools.count(), recorder=recorder, stats=StatsCollector(),
            limiter=RateLimiter(config.rate), config=config, stop=threading.Event(),
            deadline=time.monotonic() + run_s, producer_factory=fake)
        client.start()
        assert client.join(10)
        assert client.crashed is None
    lines = (tmp_path / "history.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines], fake


def check_process_discipline(ops: list[dict]) -> None:
    """Each invoke has exactly one completion; after info a process is never reused."""
    open_ops: dict[int, dict] = {}
    retired: set[int] = set()
    for op in ops:
        process = op["process"]
        assert process not in retired, f"process {process} reused after info"
        if op["type"] == "invoke":
            assert process not in open_ops, f"process {process} has two sends in flight"
            open_ops[process] = op
        else:
            invoke = open_ops.pop(process)
            for key in ("topic", "partition", "acks", "value"):
                assert op[key] == invoke[key]
            if op["type"] == "info":
                retired.add(process)
    assert not open_ops, "an invoke was left without completion"


def test_every_send_completes_once_and_errors_are_classified(tmp_path: Path) -> None:
    script = itertools.cycle(["ok", "NOT_ENOUGH_REPLICAS", "ok", "_MSG_TIMED_OUT",
                              "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "queue-full", "_TRANSPORT"])
    ops, fake = run_client(tmp_path, script)
    check_process_discipline(ops)
    assert fake.max_in_flight <= 3  # never more sends in flight than processes
    values = [op["value"] for op in ops if op["type"] == "invoke"]
    assert len(values) == len(set(values)) > 20
    completions = [op for op in ops if op["type"] != "invoke"]
    by_error = {op.get("error"): op["type"] for op in completions}
    assert by_error["NOT_ENOUGH_REPLICAS"] == "fail"
    assert by_error["_QUEUE_FULL"] == "fail"
    assert by_error["_MSG_TIMED_OUT"] == "info"
    assert by_error["NOT_ENOUGH_REPLICAS_AFTER_APPEND"] == "info"
    assert by_error["_TRANSPORT"] == "info"
    oks = [op for op in completions if op["type"] == "ok"]
    assert oks and all(type(op["offset"]) is int for op in oks)
    assert all("offset" not in op for op in completions if op["type"] != "ok")
    # info retires the process: more process ids than slots were used
    assert len({op["process"] for op in ops}) > 3


def test_acks_zero_ok_has_null_offset(tmp_path: Path) -> None:
    ops, _ = run_client(tmp_path, itertools.repeat("ok"), acks="0", slots=1, run_s=0.1)
    oks = [op for op in ops if op["type"] == "ok"]
    assert oks and all(op["offset"] is None and op["acks"] == "0" for op in oks)


def test_sends_unanswered_at_stop_are_recorded_as_info(tmp_path: Path) -> None:
    config = WorkloadConfig(rate=0, stop_timeout_s=0.2)
    started = time.monotonic()
    ops, _ = run_client(tmp_path, itertools.repeat("hang"), slots=2, run_s=0.1, config=config)
    assert time.monotonic() - started < 2.0  # the stop wait is bounded
    check_process_discipline(ops)
    completions = [op for op in ops if op["type"] != "invoke"]
    assert len(completions) == 2
    assert all(op["type"] == "info" and op["error"] == STOPPED_IN_FLIGHT for op in completions)


def test_idempotent_producer_errors_are_info(tmp_path: Path) -> None:
    config = WorkloadConfig(rate=0, acks=("all",), producers=1, idempotent=True,
                            stop_timeout_s=0.2)
    ops, fake = run_client(tmp_path, itertools.repeat("NOT_ENOUGH_REPLICAS"), slots=1,
                           run_s=0.05, config=config)
    assert {op["type"] for op in ops if op["type"] != "invoke"} == {"info"}
    assert fake.conf["enable.idempotence"] is True and "retries" not in fake.conf


def test_sends_librdkafka_may_have_sent_twice_are_info(tmp_path: Path) -> None:
    """A definite error or an ok after librdkafka dropped a broker handle with the
    request on the wire covers the re-send only: the first copy may be in a log."""
    script = iter(["resent:NOT_ENOUGH_REPLICAS", "resent:ok", "NOT_ENOUGH_REPLICAS", "ok"]
                  + ["hang"] * 100)
    ops, fake = run_client(tmp_path, script, slots=1, run_s=0.2)
    check_process_discipline(ops)
    done = [op for op in ops if op["type"] != "invoke"][:4]
    assert [(op["type"], op.get("error")) for op in done] == [
        ("info", CLIENT_RESENT), ("info", CLIENT_RESENT), ("fail", "NOT_ENOUGH_REPLICAS"),
        ("ok", None)]
    assert done[0]["last_attempt"] == {"type": "error", "error": "NOT_ENOUGH_REPLICAS"}
    assert done[1]["last_attempt"] == {"type": "ok", "offset": 0}
    assert "broker" in fake.conf["debug"].split(",")


def test_a_send_resent_after_not_leader_is_info(tmp_path: Path) -> None:
    """A leader that loses leadership while an appended acks=all request waits for
    its followers answers NOT_LEADER_OR_FOLLOWER; librdkafka re-sends, and the
    re-send's NOT_ENOUGH_REPLICAS says nothing of the first copy (seen in a real
    ELR-on run, where that copy was committed when the same broker was elected
    again from the ELR)."""
    script = iter(["not-leader:NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS"] + ["hang"] * 100)
    ops, _fake = run_client(tmp_path, script, slots=1, run_s=0.2)
    check_process_discipline(ops)
    done = [op for op in ops if op["type"] != "invoke"][:2]
    assert [(op["type"], op.get("error")) for op in done] == [
        ("info", CLIENT_RESENT), ("fail", "NOT_ENOUGH_REPLICAS")]


def test_rate_limiter_paces_sends() -> None:
    now = [0.0]
    limiter = RateLimiter(100, clock=lambda: now[0])
    assert limiter.try_acquire() == 0.0
    assert abs(limiter.try_acquire() - 0.01) < 1e-9
    now[0] = 0.01
    assert limiter.try_acquire() == 0.0
    now[0] = 10.0  # after a long idle period only a short burst is allowed
    granted = 0
    while limiter.try_acquire() == 0.0:
        granted += 1
    assert granted <= 6
    assert RateLimiter(0).try_acquire() == 0.0


def test_partition_chooser() -> None:
    targets = [("a", 0), ("a", 1), ("b", 0)]
    turn = PartitionChooser(targets, "round-robin", random.Random(0), start=1)
    assert [turn.next() for _ in range(4)] == [("a", 1), ("b", 0), ("a", 0), ("a", 1)]
    first = [PartitionChooser(targets, "random", random.Random(7)).next() for _ in range(1)]
    again = [PartitionChooser(targets, "random", random.Random(7)).next() for _ in range(1)]
    assert first == again


def test_producer_groups_spread_acks_round_robin() -> None:
    config = WorkloadConfig(producers=7, acks=("all", "1", "0"), processes_per_client=2)
    assert producer_groups(config) == [("all", 2), ("all", 1), ("1", 2), ("0", 2)]


def test_client_settings_are_accepted_by_librdkafka() -> None:
    config = WorkloadConfig()
    conf = producer_conf(["127.0.0.1:9"], "all", config)
    assert conf["retries"] == 0 and conf["enable.idempotence"] is False
    Producer(conf)
    Producer(producer_conf(["127.0.0.1:9"], "all",
                           WorkloadConfig(idempotent=True, acks=("all",))))
    consumer = Consumer(consumer_conf(["127.0.0.1:9"], config, "unit"))
    assert consumer_conf(["127.0.0.1:9"], config, "unit")["auto.offset.reset"] == "error"
    consumer.close()
