"""The transactional workload's logic without a broker: the seeded planner, the
loop's history lines (HISTORY.md v4's `txn` table), and librdkafka's outcome
rules with a scripted confluent-kafka Producer standing in for the client
(Kafka itself: tests/integration and a real `harness run --workload txn`)."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from elr_harness.core.config import WorkloadConfig
from elr_harness.workloads.producers import RateLimiter
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector
from elr_harness.workloads.txn_librdkafka import LibrdkafkaTxnClient
from elr_harness.workloads.txn_plan import TxnLoop, TxnOutcome, TxnPlan, TxnPlanner

TARGETS = [("a", 0), ("a", 1), ("a", 2), ("b", 0)]


def planner(seed: int = 1, targets: list | None = None, values: Any = None,
            low: int = 2, high: int = 5, abort: float = 0.1) -> TxnPlanner:
    return TxnPlanner(targets or TARGETS, values or itertools.count(), random.Random(seed),
                      low, high, abort)


# -- the planner ------------------------------------------------------------------


def test_the_planner_is_seeded_and_spans_distinct_partitions() -> None:
    one, two = planner(7), planner(7)
    plans = [one.next() for _ in range(200)]
    assert plans == [two.next() for _ in range(200)]  # the seed alone decides
    assert plans != [planner(8).next() for _ in range(200)]
    for plan in plans:
        assert 2 <= len(plan.sends) <= 5
        places = [(t, p) for t, p, _ in plan.sends]
        if len(places) <= len(TARGETS):
            assert len(set(places)) == len(places)  # distinct while there are enough
    assert {len(p.sends) for p in plans} == {2, 3, 4, 5}
    assert {t for p in plans for t, _, _ in p.sends} == {"a", "b"}  # across topics
    values = [v for p in plans for _, _, v in p.sends]
    assert values == list(range(len(values)))  # the counter's, each once
    assert 0.03 < sum(p.abort for p in plans) / len(plans) < 0.2


def test_the_planner_repeats_partitions_only_when_it_must() -> None:
    plans = [planner(3, targets=[("t", 0)], low=3, high=3).next() for _ in range(5)]
    assert all([(t, p) for t, p, _ in plan.sends] == [("t", 0)] * 3 for plan in plans)
    assert not any(planner(3, abort=0.0).next().abort for _ in range(50))
    assert all(planner(s, abort=1.0).next().abort for s in range(20))
    with pytest.raises(ValueError):
        planner(low=4, high=3)


# -- the loop's history lines -------------------------------------------------------


class ScriptedClient:
    """A TxnClient whose outcomes are given in turn (init failures first, if any)."""

    name = "java"
    txn_id = "elr-txn-java-0"

    def __init__(self, outcomes: list[TxnOutcome], init_errors: list[str] | None = None,
                 dies_after: int | None = None) -> None:
        self.outcomes = list(outcomes)
        self.init_errors = list(init_errors or [])
        self.plans: list[TxnPlan] = []
        self.inits = 0
        self.closed = 0
        self._ready = False
        self.dies_after = dies_after

    def ready(self) -> bool:
        return self._ready

    def alive(self) -> bool:
        return self.dies_after is None or len(self.plans) < self.dies_after

    def init(self) -> str | None:
        self.inits += 1
        if self.init_errors:
            return self.init_errors.pop(0)
        self._ready = True
        return None

    def run(self, plan: TxnPlan) -> TxnOutcome:
        self.plans.append(plan)
        outcome = self.outcomes.pop(0) if self.outcomes else TxnOutcome("ok", (1,), 5)
        if outcome.replaced:
            self._ready = False
        return outcome

    def close(self) -> None:
        self.closed += 1


def loop_of(tmp_path: Path, client: ScriptedClient, *, count: int | None = None,
            config: WorkloadConfig | None = None, duration_s: float = 5.0):
    """A TxnLoop over `client` that stops after `count` transactions (or duration)."""
    recorder = HistoryRecorder(tmp_path / "history.jsonl")
    stop = threading.Event()
    config = config or WorkloadConfig(txn_init_retry_s=0.01)
    loop = TxnLoop(client=client, planner=planner(2), recorder=recorder,
                   stats=StatsCollector(), limiter=RateLimiter(0), config=config,
                   stop=stop, deadline=time.monotonic() + duration_s)
    if count is not None:
        run = client.run

        def counted(plan: TxnPlan) -> TxnOutcome:
            if len(client.plans) + 1 >= count:
                stop.set()
            return run(plan)
        client.run = counted  # type: ignore[method-assign]
    return loop, recorder


def lines_of(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]


def test_each_outcome_writes_the_contracts_fields(tmp_path: Path) -> None:
    client = ScriptedClient([
        TxnOutcome("ok", (10, None), end_ns=None),
        TxnOutcome("fail", (11,), end_ns=None, error="TRANSACTION_ABORTABLE", detail="x"),
        TxnOutcome("info", (12, 13), end_ns=None, error="REQUEST_TIMED_OUT", replaced=True),
        TxnOutcome("ok", (), end_ns=None),
    ], init_errors=["REQUEST_TIMED_OUT"])
    loop, recorder = loop_of(tmp_path, client, count=4)
    origin = recorder.origin_ns
    # the clients read their end time on the recorder's own monotonic clock
    client.outcomes = [TxnOutcome(o.type, o.offsets, origin + 1000 * (i + 1), o.error,
                                  o.detail, o.replaced) for i, o in enumerate(client.outcomes)]
    loop.start()
    assert loop.join(10) and loop.crashed is None
    recorder.close()
    ops = lines_of(tmp_path)
    assert client.inits == 3  # one refused, then ready, then a new instance after info
    assert [op["type"] for op in ops] == ["invoke", "ok", "invoke", "fail", "invoke", "info",
                                           "invoke", "ok"]
    invokes = [op for op in ops if op["type"] == "invoke"]
    for invoke, plan in zip(invokes, client.plans, strict=True):
        assert invoke["f"] == "txn" and invoke["txn_id"] == "elr-txn-java-0"
        assert invoke["client"] == "java"
        assert invoke["sends"] == [list(send) for send in plan.sends]
        assert invoke.get("abort", False) is plan.abort and invoke.get("abort") is not False
        assert not {"offsets", "end_time", "error"} & set(invoke)
    ok, fail, info, last = (op for op in ops if op["type"] != "invoke")
    assert ok["offsets"] == [10, None] and ok["end_time"] == 1000 and "error" not in ok
    assert "sends" not in ok and ok["txn_id"] == "elr-txn-java-0"
    assert fail["error"] == "TRANSACTION_ABORTABLE" and "offsets" not in fail
    assert fail["end_time"] == 2000 and fail["error_detail"] == "x"
    assert info["error"] == "REQUEST_TIMED_OUT" and info["offsets"] == [12, 13]
    assert "offsets" not in last  # a client that gave none: no field
    # ok and fail keep the process; after info the instance and the process are new
    assert ok["process"] == fail["process"] == info["process"] != last["process"]
    for invoke, done in zip(invokes, [ok, fail, info, last], strict=True):
        assert invoke["process"] == done["process"] and invoke["time"] <= done["time"]


def test_a_replaced_instance_takes_a_new_process_even_after_fail(tmp_path: Path) -> None:
    client = ScriptedClient([TxnOutcome("fail", error="PRODUCER_FENCED", replaced=True),
                             TxnOutcome("ok")])
    loop, recorder = loop_of(tmp_path, client, count=2)
    loop.start()
    assert loop.join(10)
    recorder.close()
    done = [op for op in lines_of(tmp_path) if op["type"] != "invoke"]
    assert [op["type"] for op in done] == ["fail", "ok"]
    assert done[0]["process"] != done[1]["process"]
    assert "end_time" not in done[0]  # it never called commit or abort


def test_a_client_that_dies_ends_the_loop_as_a_crash(tmp_path: Path) -> None:
    client = ScriptedClient([TxnOutcome("info", error="CLIENT_DIED", replaced=True)],
                            dies_after=1)
    loop, recorder = loop_of(tmp_path, client)
    loop.start()
    assert loop.join(10)
    recorder.close()
    assert loop.crashed is not None and "died" in str(loop.crashed)
    assert [op["type"] for op in lines_of(tmp_path)] == ["invoke", "info"]
    assert client.closed == 1


def test_a_crash_mid_transaction_leaves_it_info(tmp_path: Path) -> None:
    client = ScriptedClient([])

    def broken(plan: TxnPlan) -> TxnOutcome:
        raise RuntimeError("bug")
    client.run = broken  # type: ignore[method-assign]
    loop, recorder = loop_of(tmp_path, client)
    loop.start()
    assert loop.join(10)
    recorder.close()
    ops = lines_of(tmp_path)
    assert [op["type"] for op in ops] == ["invoke", "info"]
    assert ops[1]["error"] == "HARNESS_ERROR:RuntimeError"


def test_the_loop_stops_at_its_deadline_and_is_paced(tmp_path: Path) -> None:
    client = ScriptedClient([])
    config = WorkloadConfig(txn_init_retry_s=0.01)
    recorder = HistoryRecorder(tmp_path / "history.jsonl")
    loop = TxnLoop(client=client, planner=planner(2), recorder=recorder,
                   stats=StatsCollector(), limiter=RateLimiter(50), config=config,
                   stop=threading.Event(), deadline=time.monotonic() + 0.5)
    loop.start()
    assert loop.join(5)
    recorder.close()
    assert 10 <= len(client.plans) <= 50 * 0.5 + 5


# -- librdkafka's outcome rules --------------------------------------------------


def kafka_error(name: str, **flags: bool) -> KafkaException:
    return KafkaException(KafkaError(getattr(KafkaError, name), "scripted", **flags))


class ScriptedProducer:
    """confluent-kafka's transactional calls, each answering from a script: a list of
    exceptions (or None for success) per call name; produce() reports each record
    delivered at offset 100 + its index when the commit is served."""

    def __init__(self, **script: list[Any]) -> None:
        self.script = {name: list(answers) for name, answers in script.items()}
        self.calls: list[str] = []
        self.pending: list[Any] = []
        self.produced = 0

    def _answer(self, name: str) -> None:
        self.calls.append(name)
        answers = self.script.get(name)
        answer = answers.pop(0) if answers else None
        if answer is not None:
            raise answer

    def init_transactions(self, timeout: float) -> None:
        self._answer("init")

    def begin_transaction(self) -> None:
        self._answer("begin")

    def produce(self, topic: str, value: bytes, partition: int, on_delivery: Any) -> None:
        self._answer("produce")
        self.pending.append((on_delivery, 100 + self.produced))
        self.produced += 1

    def commit_transaction(self, timeout: float) -> None:
        self._answer("commit")
        self.poll(0)  # librdkafka's commit flushes: the delivery reports are served

    def abort_transaction(self, timeout: float) -> None:
        self._answer("abort")

    def poll(self, timeout: float) -> int:
        served, self.pending = self.pending, []
        for callback, offset in served:
            callback(None, type("Msg", (), {"offset": lambda self, o=offset: o})())
        return len(served)

    def purge(self, **kwargs: Any) -> None:
        self.calls.append("purge")


def rdkafka_client(*producers: ScriptedProducer, attempts: int = 3) -> LibrdkafkaTxnClient:
    made = iter(producers)
    client = LibrdkafkaTxnClient(
        txn_id="elr-txn-librdkafka-0", bootstrap=["127.0.0.1:9"],
        config=WorkloadConfig(txn_commit_attempts=attempts),
        producer_factory=lambda conf: next(made), clock=lambda: 42)
    assert client.init() is None and client.ready()
    return client


PLAN = TxnPlan((("t", 0, 1), ("t", 1, 2)), abort=False)
ABORT_PLAN = TxnPlan((("t", 0, 3),), abort=True)
TIMED_OUT = {"retriable": True}


@pytest.mark.parametrize("script, plan, expected", [
    ({}, PLAN, ("ok", (100, 101), None, False)),
    ({}, ABORT_PLAN, ("ok", (100,), None, False)),
    # a timed-out commit is retried (librdkafka: "okay to call this function again")
    ({"commit": [kafka_error("_TIMED_OUT", **TIMED_OUT)] * 2}, PLAN,
     ("ok", (100, 101), None, False)),
    # ... up to the attempts: then it may have committed
    ({"commit": [kafka_error("_TIMED_OUT", **TIMED_OUT)] * 3}, PLAN,
     ("info", (100, 101), "_TIMED_OUT", True)),
    # an error that requires an abort, and the abort returned: it did not commit
    ({"commit": [kafka_error("_STATE", txn_requires_abort=True)]}, PLAN,
     ("fail", (), "_STATE", False)),
    # ... but an abort that did not return leaves the commit unknown
    ({"commit": [kafka_error("_STATE", txn_requires_abort=True)],
      "abort": [kafka_error("_FENCED", fatal=True)]}, PLAN,
     ("info", (100, 101), "_STATE", True)),
    ({"commit": [kafka_error("_FENCED", fatal=True)]}, PLAN, ("info", (100, 101), "_FENCED", True)),
    # produce refused before any commit call: aborted, whatever the abort said
    ({"produce": [None, BufferError()]}, PLAN, ("fail", (), "_QUEUE_FULL", False)),
    ({"produce": [BufferError()], "abort": [kafka_error("_FENCED", fatal=True)]}, PLAN,
     ("fail", (), "_QUEUE_FULL", True)),
    ({"begin": [kafka_error("_FENCED", fatal=True)]}, PLAN, ("fail", (), "_FENCED", True)),
    # an abort on purpose that does not return: never committed, the instance closed
    ({"abort": [kafka_error("_TIMED_OUT", **TIMED_OUT)] * 3}, ABORT_PLAN,
     ("fail", (), "_TIMED_OUT", True)),
])
def test_librdkafka_outcomes_follow_its_documented_rules(script, plan, expected) -> None:
    producer = ScriptedProducer(**script)
    client = rdkafka_client(producer, ScriptedProducer())
    outcome = client.run(plan)
    assert (outcome.type, outcome.offsets, outcome.error, outcome.replaced) == expected
    assert client.ready() is not outcome.replaced
    if outcome.type == "fail" and "commit" not in producer.calls:
        assert "begin" in producer.calls  # never a commit call before a definite fail
    # read just before the first commit or abort call; absent when there was none
    assert outcome.end_ns == (42 if {"commit", "abort"} & set(producer.calls) else None)
    if plan.abort:
        assert "commit" not in producer.calls


def test_librdkafka_init_keeps_the_instance_only_on_a_retriable_error() -> None:
    first = ScriptedProducer(init=[kafka_error("_TIMED_OUT", retriable=True), None])
    made = [first, ScriptedProducer(init=[kafka_error("_FENCED", fatal=True)]),
            ScriptedProducer()]
    factory = iter(made)
    client = LibrdkafkaTxnClient(txn_id="x", bootstrap=["127.0.0.1:9"],
                                 config=WorkloadConfig(),
                                 producer_factory=lambda conf: next(factory))
    assert client.init() == "_TIMED_OUT" and not client.ready()
    assert client.init() is None and first.calls == ["init", "init"]  # the same instance
    client.close()
    assert client.init() == "_FENCED"  # a new instance, refused: dropped again
    assert client.init() is None and client.ready()  # and a third one


def test_librdkafka_txn_conf_is_transactional() -> None:
    from elr_harness.workloads.client_conf import txn_producer_conf

    conf = txn_producer_conf(["h:9092"], "elr-txn-librdkafka-3",
                             WorkloadConfig(txn_timeout_ms=12000))
    assert conf["transactional.id"] == "elr-txn-librdkafka-3"
    assert conf["transaction.timeout.ms"] == 12000
    assert conf["message.timeout.ms"] <= conf["transaction.timeout.ms"]
    assert "retries" not in conf and "acks" not in conf  # librdkafka's own: all, idempotent
