"""The consumer's record and seek bookkeeping, without a broker.

The Consumer here is a scripted stand-in returning prepared batches: it tests
what the harness records around the client (seeks on every repositioning,
fail polls on errors, values parsed strictly), not Kafka itself.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from elr_harness.core.config import WorkloadConfig
from elr_harness.workloads.consumers import (
    ConsumerProcess,
    FetchWatermarks,
    PollOutcome,
    PositionBook,
    collect,
    parse_value,
    reposition_target,
)
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector


class FakeMessage:
    def __init__(self, partition: int, offset: int = -1, value: bytes | None = None,
                 error: str | None = None) -> None:
        self._partition, self._offset, self._value = partition, offset, value
        self._error = None if error is None else KafkaError(getattr(KafkaError, error))

    def error(self) -> KafkaError | None:
        return self._error

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes | None:
        return self._value


class ScriptedConsumer:
    """Returns prepared batches; watermarks per partition can change mid-script."""

    def __init__(self, batches: list[Any], watermarks: dict[int, tuple[int, int]]) -> None:
        self.batches = list(batches)
        self.watermarks = dict(watermarks)
        self.calls: list[tuple[str, Any]] = []
        self.clients = 0
        self.conf: dict[str, Any] = {}  # set when used as the factory

    def __call__(self, conf: dict) -> ScriptedConsumer:  # the factory
        self.clients += 1
        self.conf = conf
        return self

    def get_watermark_offsets(self, tp: Any, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        return self.watermarks[tp.partition]

    def incremental_assign(self, tps: list[Any]) -> None:
        self.calls.append(("assign", [(tp.partition, tp.offset) for tp in tps]))

    def assign(self, tps: list[Any]) -> None:
        self.calls.append(("assign", [(tp.partition, tp.offset) for tp in tps]))

    def incremental_unassign(self, tps: list[Any]) -> None:
        self.calls.append(("unassign", [tp.partition for tp in tps]))

    def _serve_stats(self) -> None:
        """librdkafka serves its statistics callback inside consume()."""
        if "stats_cb" in self.conf:
            self.conf["stats_cb"](json.dumps({"topics": {"t": {"partitions": {
                **{str(p): {"hi_offset": high} for p, (_low, high) in self.watermarks.items()},
                "-1": {"hi_offset": -1001}}}}}))

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        self._serve_stats()
        if not self.batches:
            time.sleep(0.005)
            return []
        batch = self.batches.pop(0)
        if callable(batch):
            return batch(self)
        if isinstance(batch, Exception):
            raise batch
        return batch

    def close(self) -> None:
        self.calls.append(("close", None))


def run_consumer(tmp_path: Path, fake: ScriptedConsumer, partitions: list[int],
                 config: WorkloadConfig | None = None) -> list[dict]:
    config = config or WorkloadConfig(poll_timeout_s=0.01)
    stop = threading.Event()
    with HistoryRecorder(tmp_path / "history.jsonl") as recorder:
        process = ConsumerProcess(name="u", bootstrap=["127.0.0.1:9"], topic="t",
                                  partitions=partitions, recorder=recorder,
                                  stats=StatsCollector(), config=config, stop=stop,
                                  deadline=time.monotonic() + 10, consumer_factory=fake)
        process.start()
        deadline = time.monotonic() + 5
        while fake.batches and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        stop.set()
        assert process.join(5)
        assert process.crashed is None
    return [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]


def polls(ops: list[dict]) -> list[tuple[dict, dict]]:
    """(invoke, completion) pairs, checking they alternate on one process."""
    pairs = []
    for invoke, done in zip(ops[::2], ops[1::2], strict=True):
        assert invoke["type"] == "invoke" and done["type"] in ("ok", "fail")
        assert invoke["process"] == done["process"] and invoke["f"] == done["f"] == "poll"
        assert invoke["topic"] == done["topic"] == "t"
        pairs.append((invoke, done))
    return pairs


def test_fetch_watermarks_come_from_librdkafka_statistics() -> None:
    marks = FetchWatermarks("t")
    marks.on_stats(json.dumps({"topics": {
        "t": {"partitions": {"0": {"hi_offset": 12}, "1": {"hi_offset": -1001},
                             "-1": {"hi_offset": -1}}},
        "other": {"partitions": {"2": {"hi_offset": 99}}}}}))
    marks.on_stats("{not json")  # ignored, the last good figures stay
    marks.on_stats(json.dumps({"topics": {}}))
    assert marks.latest([0, 1, 2]) == {0: 12}


def test_offset_reset_is_a_failed_poll_then_an_explicit_recorded_seek(tmp_path: Path) -> None:
    def log_start_moves(fake: ScriptedConsumer) -> list[Any]:
        fake.watermarks[0] = (3, 10)  # retention (or truncation) moved p0's start past 2
        return [FakeMessage(0, error="_AUTO_OFFSET_RESET")]

    fake = ScriptedConsumer(
        batches=[
            [FakeMessage(0, 0, b"5"), FakeMessage(1, 2, b"7"), FakeMessage(0, 1, b"junk")],
            log_start_moves,
            [FakeMessage(0, 3, b"9"), FakeMessage(1, 3, b"11")],
        ],
        watermarks={0: (0, 10), 1: (2, 10)})
    pairs = polls(run_consumer(tmp_path, fake, [0, 1]))

    (inv1, ok1), (inv2, fail2), (inv3, ok3) = pairs[:3]
    assert inv1["seek"] == {"0": 0, "1": 2}  # the initial position is a seek
    assert ok1["type"] == "ok"
    assert ok1["records"] == [[0, 0, 5], [1, 2, 7], [0, 1, None]]
    assert ok1["high_watermark"] == {"0": 10, "1": 10}
    assert "seek" not in inv2
    assert fail2["type"] == "fail" and fail2["error"] == "_AUTO_OFFSET_RESET"
    assert inv3["seek"] == {"0": 3}  # position 2 clamped to the new low watermark
    assert ok3["records"] == [[0, 3, 9], [1, 3, 11]]
    assert all("seek" not in invoke for invoke, _ in pairs[3:])
    assert ("unassign", [0]) in fake.calls
    assert fake.calls.index(("unassign", [0])) < fake.calls.index(("assign", [(0, 3)]))


def test_consume_exception_fails_the_poll_and_a_new_client_resumes(tmp_path: Path) -> None:
    fake = ScriptedConsumer(
        batches=[[FakeMessage(0, 4, b"1")],
                 KafkaException(KafkaError(KafkaError._TRANSPORT)),
                 [FakeMessage(0, 5, b"2")]],
        watermarks={0: (4, 6)})
    pairs = polls(run_consumer(tmp_path, fake, [0]))
    assert pairs[1][1]["type"] == "fail" and pairs[1][1]["error"] == "_TRANSPORT"
    assert pairs[2][0]["seek"] == {"0": 5}  # the new client continues after offset 4
    assert fake.clients == 2


def test_consumer_can_start_at_the_end(tmp_path: Path) -> None:
    fake = ScriptedConsumer(batches=[[]], watermarks={0: (0, 42)})
    pairs = polls(run_consumer(tmp_path, fake, [0],
                               WorkloadConfig(poll_timeout_s=0.01, consumer_start="latest")))
    assert pairs[0][0]["seek"] == {"0": 42}


def test_client_is_configured_never_to_reset_by_itself(tmp_path: Path) -> None:
    fake = ScriptedConsumer(batches=[[]], watermarks={0: (0, 0)})
    run_consumer(tmp_path, fake, [0])
    assert fake.conf["auto.offset.reset"] == "error"
    assert fake.conf["enable.auto.commit"] is False


def test_position_book() -> None:
    book = PositionBook()
    assert book.take_seek() is None and book.position(0) is None
    book.seek(1, 10)
    book.seek(0, 3)
    book.advance(0, 3)
    book.advance(0, 4)
    assert book.position(0) == 5 and book.position(1) == 10
    assert book.take_seek() == {0: 3, 1: 10}
    assert book.take_seek() is None
    book.mark_lost(1)
    assert book.lost == {1}
    book.seek(1, 12)
    assert book.lost == frozenset() and book.take_seek() == {1: 12}


@pytest.mark.parametrize("position, low, high, target", [
    (None, 4, 9, 4), (5, 0, 9, 5), (2, 4, 9, 4), (12, 0, 9, 9)])
def test_reposition_target(position: int | None, low: int, high: int, target: int) -> None:
    assert reposition_target(position, low, high) == target


@pytest.mark.parametrize("raw, value", [
    (b"0", 0), (b"123", 123), (b"-7", -7), (None, None), (b"", None), (b"007", None),
    (b" 1", None), (b"1_000", None), (b"+5", None), (b"12\n", None), (b"\xff", None)])
def test_values_parse_strictly(raw: bytes | None, value: int | None) -> None:
    assert parse_value(raw) == value


def test_records_read_beside_an_error_keep_the_poll_ok() -> None:
    book = PositionBook()
    outcome = collect([FakeMessage(0, 7, b"1"), FakeMessage(1, error="_AUTO_OFFSET_RESET")],
                      book)
    op_type, fields = outcome.completion()
    assert op_type == "ok" and fields["records"] == [[0, 7, 1]]
    assert fields["errors"] == ["_AUTO_OFFSET_RESET"]
    assert book.lost == {1} and book.position(0) == 8
    assert PollOutcome().completion() == ("ok", {"records": []})
