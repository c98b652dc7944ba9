"""Reads at read_committed (HISTORY.md v4): the consumer's `isolation`, `position`
and `last_stable_offset`, partition-EOF events as positions past markers, and the
final reads at both levels, with the scripted consumer of the consumer tests (no
broker). A run without transactions reads exactly as before."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from test_workloads_consumers import FakeMessage, ScriptedConsumer

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.workloads.consumers import ConsumerProcess, PositionBook, collect
from elr_harness.workloads.final_reads import final_reads
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector

TXN = WorkloadConfig(poll_timeout_s=0.01, workloads=("plain", "txn"))


class StableConsumer(ScriptedConsumer):
    """The scripted consumer whose statistics also say each partition's LSO
    (librdkafka's ls_offset), and whose watermark query answers per isolation level
    (ListOffsets at read_committed ends at the LSO)."""

    def __init__(self, batches: list[Any], watermarks: dict[int, tuple[int, int]],
                 stable: dict[int, int], committed_batches: list[Any] | None = None,
                 listed: dict[int, int] | None = None) -> None:
        super().__init__(batches, watermarks)
        self.stable = dict(stable)
        #: ListOffsets' LSO (the fetches' by default)
        self.listed = dict(listed or stable)
        self.committed_batches = list(committed_batches or [])
        self.confs: list[dict[str, Any]] = []

    def __call__(self, conf: dict) -> StableConsumer:
        self.confs.append(conf)
        if conf["isolation.level"] == "read_committed" and self.committed_batches:
            self.batches, self.committed_batches = self.committed_batches, []
        return super().__call__(conf)

    def get_watermark_offsets(self, tp: Any, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        low, high = self.watermarks[tp.partition]
        if self.conf["isolation.level"] == "read_committed":
            return low, self.listed[tp.partition]
        return low, high

    def _serve_stats(self) -> None:
        if "stats_cb" in self.conf:
            self.conf["stats_cb"](json.dumps({"topics": {"t": {"partitions": {
                str(p): {"hi_offset": high, "ls_offset": self.stable.get(p, -1001)}
                for p, (_low, high) in self.watermarks.items()}}}}))


def eof(partition: int, offset: int) -> FakeMessage:
    return FakeMessage(partition, offset, error="_PARTITION_EOF")


def test_a_partition_eof_is_a_position_not_an_error() -> None:
    book = PositionBook()
    book.seek(0, 3)
    outcome = collect([FakeMessage(0, 3, b"30"), eof(0, 6), eof(1, 2)], book)
    assert outcome.completion() == ("ok", {"records": [[0, 3, 30]]})
    assert book.position(0) == 6 and book.position(1) == 2  # past the trailing marker
    collect([eof(0, 5)], book)
    assert book.position(0) == 6  # an earlier end never moves it back


def run_consumer(tmp_path: Path, fake: ScriptedConsumer, isolation: str) -> list[dict]:
    stop = threading.Event()
    with HistoryRecorder(tmp_path / "history.jsonl") as recorder:
        process = ConsumerProcess(name="rc-0", bootstrap=["127.0.0.1:9"], topic="t",
                                  partitions=[0, 1], recorder=recorder,
                                  stats=StatsCollector(), config=TXN, stop=stop,
                                  deadline=time.monotonic() + 10, consumer_factory=fake,
                                  isolation=isolation)
        process.start()
        deadline = time.monotonic() + 5
        while fake.batches and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        stop.set()
        assert process.join(5) and process.crashed is None
    return [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]


def test_a_read_committed_consumer_says_its_level_position_and_lso(tmp_path: Path) -> None:
    fake = StableConsumer(batches=[[FakeMessage(0, 0, b"5"), FakeMessage(1, 0, b"6")],
                                   [eof(0, 4)], [FakeMessage(1, 3, b"7")]],
                          watermarks={0: (0, 9), 1: (0, 9)}, stable={0: 4, 1: 8})
    ops = run_consumer(tmp_path, fake, "read_committed")
    assert fake.conf["isolation.level"] == "read_committed"
    assert fake.conf["enable.partition.eof"] is True
    invokes = [op for op in ops if op["type"] == "invoke"]
    assert invokes and all(op["isolation"] == "read_committed" for op in invokes)
    ok = [op for op in ops if op["type"] == "ok"]
    assert ok and all("high_watermark" not in op for op in ok)  # the LSO is not the HWM
    assert all(op["last_stable_offset"] == {"0": 4, "1": 8} for op in ok)
    assert ok[0]["records"] == [[0, 0, 5], [1, 0, 6]]
    assert ok[0]["position"] == {"0": 1, "1": 1}
    assert ok[1]["records"] == [] and ok[1]["position"] == {"0": 4, "1": 1}
    assert ok[2]["records"] == [[1, 3, 7]] and ok[2]["position"] == {"0": 4, "1": 4}


def test_a_plain_consumer_records_as_before(tmp_path: Path) -> None:
    fake = StableConsumer(batches=[[FakeMessage(0, 0, b"5")]], watermarks={0: (0, 9), 1: (0, 9)},
                          stable={0: 4, 1: 8})
    ops = run_consumer(tmp_path, fake, "read_uncommitted")
    assert fake.conf["isolation.level"] == "read_uncommitted"
    assert fake.conf["enable.partition.eof"] is False
    assert not any({"isolation", "position", "last_stable_offset"} & set(op) for op in ops)
    assert all("high_watermark" in op for op in ops if op["type"] == "ok")


# -- final reads -------------------------------------------------------------------


def final(tmp_path: Path, fake: ScriptedConsumer, config: WorkloadConfig,
          settle_s: float = 0.0) -> tuple[Any, list[dict], list[float]]:
    path = tmp_path / "history.jsonl"
    slept: list[float] = []
    with HistoryRecorder(path) as recorder:
        summary = final_reads(["127.0.0.1:9"], [TopicConfig(name="t", partitions=1)],
                              recorder, config, consumer_factory=fake, txn_settle_s=settle_s,
                              sleep=slept.append)
    return summary, [json.loads(line) for line in path.read_text().splitlines()], slept


def test_a_plain_runs_final_read_is_as_before(tmp_path: Path) -> None:
    fake = StableConsumer(batches=[[FakeMessage(0, 0, b"1"), FakeMessage(0, 1, b"2")]],
                          watermarks={0: (0, 2)}, stable={0: 2})
    summary, ops, slept = final(tmp_path, fake, WorkloadConfig(poll_timeout_s=0.01),
                                settle_s=30)
    assert summary.complete and not summary.committed and slept == []
    assert len(fake.confs) == 1 and fake.confs[0]["enable.partition.eof"] is False
    assert not any({"isolation", "position", "last_stable_offset"} & set(op) for op in ops)


def test_with_transactions_both_levels_are_read_after_the_wait(tmp_path: Path) -> None:
    # read_uncommitted: records 0-2, then a commit marker at 3 (an EOF says 4);
    # read_committed: record 0 committed, 1-2 aborted, markers: the LSO is 4
    fake = StableConsumer(
        batches=[[FakeMessage(0, 0, b"1"), FakeMessage(0, 1, b"2"), FakeMessage(0, 2, b"3")],
                 [eof(0, 4)]],
        committed_batches=[[FakeMessage(0, 0, b"1")], [], [eof(0, 4)]],
        watermarks={0: (0, 4)}, stable={0: 4})
    summary, ops, slept = final(tmp_path, fake, TXN, settle_s=30)
    assert summary.complete and len(summary.committed) == 1
    assert summary.end_offsets(committed=True) == {"t": {0: 4}}
    assert len(slept) == 1 and 29 < slept[0] <= 30  # once, counted from the reads' start
    assert [c["isolation.level"] for c in fake.confs] == ["read_uncommitted", "read_committed"]
    assert all(c["enable.partition.eof"] for c in fake.confs)
    plain = [op for op in ops if op["process"] == ops[0]["process"] and op["type"] != "invoke"]
    committed = [op for op in ops if op["process"] != ops[0]["process"]]
    assert all(op["final"] for op in ops) and len({op["process"] for op in ops}) == 2
    assert [op["position"] for op in plain] == [{"0": 3}, {"0": 4}]  # past the marker
    assert all(op["high_watermark"] == {"0": 4} for op in plain)
    assert all(op["isolation"] == "read_committed" for op in committed if op["type"] == "invoke")
    ok = [op for op in committed if op["type"] == "ok"]
    assert [op["position"] for op in ok] == [{"0": 1}, {"0": 1}, {"0": 4}]
    assert all(op["last_stable_offset"] == {"0": 4} and "high_watermark" not in op for op in ok)
    assert ok[0]["records"] == [[0, 0, 1]] and all(op["final"] for op in committed)


def test_a_read_committed_final_read_follows_a_rising_lso(tmp_path: Path) -> None:
    """A transaction its coordinator aborts during the read lifts the LSO: the read goes
    on to the new one, and never ends short of an LSO it reported."""
    fake = StableConsumer(batches=[[FakeMessage(0, 0, b"1"), eof(0, 6)]],
                          committed_batches=[[FakeMessage(0, 0, b"1")], [], [eof(0, 6)]],
                          watermarks={0: (0, 6)}, stable={0: 6}, listed={0: 1})
    summary, ops, _ = final(tmp_path, fake, TXN)
    assert summary.complete and summary.committed[0].end == 6
    assert summary.committed[0].reached == 6
    ok = [op for op in ops if op.get("last_stable_offset") is not None]
    assert [op["position"] for op in ok] == [{"0": 1}, {"0": 1}, {"0": 6}]
    assert all(op["last_stable_offset"] == {"0": 6} for op in ok)
