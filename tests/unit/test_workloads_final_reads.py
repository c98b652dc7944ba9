"""Final reads' history fields (final, seek, high_watermark: only the contract's)
and the incomplete case, with the scripted consumer of the consumer tests (no
broker)."""

from __future__ import annotations

import json
from pathlib import Path

from test_workloads_consumers import FakeMessage, ScriptedConsumer

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.workloads.final_reads import FINAL_READ_INCOMPLETE, final_reads
from elr_harness.workloads.recorder import HistoryRecorder


def run(tmp_path: Path, fake: ScriptedConsumer, config: WorkloadConfig):
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as recorder:
        summary = final_reads(["127.0.0.1:9"], [TopicConfig(name="t", partitions=1)],
                              recorder, config, consumer_factory=fake)
    return summary, [json.loads(line) for line in path.read_text().splitlines()]


def test_reads_from_low_to_high_watermark(tmp_path: Path) -> None:
    fake = ScriptedConsumer(
        batches=[[FakeMessage(0, 3, b"30"), FakeMessage(0, 4, b"40")],
                 [],
                 [FakeMessage(0, 5, b"50")]],
        watermarks={0: (3, 6)})
    summary, ops = run(tmp_path, fake, WorkloadConfig(poll_timeout_s=0.01))
    assert summary.complete and summary.end_offsets() == {"t": {0: 6}}
    assert summary.partitions[0].records == 3
    assert ("assign", [(0, 3)]) in fake.calls
    assert all(op["final"] is True and op["topic"] == "t" and "partitions" not in op
               for op in ops)
    # every ok poll reports the high watermark it reads to (rule (b) of HISTORY.md)
    assert [op["high_watermark"] for op in ops if op["type"] == "ok"] == [{"0": 6}] * 3
    assert ops[0]["type"] == "invoke" and ops[0]["seek"] == {"0": 3}
    assert all("seek" not in op for op in ops[1:])
    records = [r for op in ops if op["type"] == "ok" for r in op["records"]]
    assert records == [[0, 3, 30], [0, 4, 40], [0, 5, 50]]
    assert len({op["process"] for op in ops}) == 1
    assert [op["type"] for op in ops] == ["invoke", "ok"] * 3


def test_an_empty_partition_is_complete_after_one_real_poll(tmp_path: Path) -> None:
    fake = ScriptedConsumer(batches=[], watermarks={0: (7, 7)})
    summary, ops = run(tmp_path, fake, WorkloadConfig(poll_timeout_s=0.01))
    assert summary.complete
    assert [op["type"] for op in ops] == ["invoke", "ok"] and ops[1]["records"] == []


def test_unfinished_partition_is_recorded_as_incomplete_info(tmp_path: Path) -> None:
    fake = ScriptedConsumer(batches=[[FakeMessage(0, 0, b"1")]], watermarks={0: (0, 5)})
    summary, ops = run(tmp_path, fake,
                       WorkloadConfig(poll_timeout_s=0.01, final_read_timeout_s=0.3))
    assert not summary.complete and summary.incomplete == [("t", 0)]
    assert summary.partitions[0].reached == 1
    assert ops[-2]["type"] == "invoke" and ops[-1]["type"] == "info"
    assert ops[-1]["error"] == FINAL_READ_INCOMPLETE
    # the ok poll's records stop short of the high watermark it reported: by the
    # contract's fields alone the read is incomplete
    ok = [op for op in ops if op["type"] == "ok"]
    assert ok[0]["records"] == [[0, 0, 1]] and ok[0]["high_watermark"] == {"0": 5}
    types = [op["type"] for op in ops]
    assert types.count("invoke") == len(types) - types.count("invoke")  # all paired
