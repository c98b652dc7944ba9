"""The history recorder against HISTORY.md: dense index, monotonic time, valid
JSON lines under many writer threads, durability across SIGKILL, no overwrite."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from elr_harness.core.errors import HarnessError, HistoryError
from elr_harness.workloads.recorder import HistoryRecorder


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_concurrent_writers_give_dense_index_and_ordered_time(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    recorder = HistoryRecorder(path, flush_interval_s=0.05)
    threads, per_thread = 12, 1500
    barrier = threading.Barrier(threads)

    def writer(process: int) -> None:
        barrier.wait()
        for seq in range(per_thread):
            op_type = "invoke" if seq % 2 == 0 else "ok"
            recorder.record(process=process, type=op_type, f="send", topic="t",
                            partition=seq % 3, acks="all", value=process * per_thread + seq,
                            seq=seq)

    workers = [threading.Thread(target=writer, args=(p,)) for p in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    recorder.close()

    lines = read_lines(path)
    assert len(lines) == threads * per_thread
    last_time = -1
    last_seq: dict[int, int] = {}
    for number, line in enumerate(lines):
        op = json.loads(line)
        assert op["index"] == number
        assert type(op["time"]) is int and op["time"] >= last_time
        last_time = op["time"]
        assert type(op["process"]) is int and op["type"] in ("invoke", "ok")
        assert op["f"] == "send" and op["acks"] == "all" and type(op["value"]) is int
        # each writer's lines keep that writer's order
        assert op["seq"] == last_seq.get(op["process"], -1) + 1
        last_seq[op["process"]] = op["seq"]
    assert all(seq == per_thread - 1 for seq in last_seq.values())


def test_record_returns_the_line_as_written(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as recorder:
        first = recorder.record(process=0, type="invoke", f="poll", topic="t", seek={0: 5})
        second = recorder.record(process=-1, type="ok", f="fault", fault="kill",
                                 nodes=["broker-1"])
    assert (first["index"], second["index"]) == (0, 1)
    written = [json.loads(line) for line in read_lines(path)]
    assert written[0]["seek"] == {"0": 5}  # JSON object keys are strings
    assert written[1] == second


def test_refuses_to_open_an_existing_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text('{"index":0}\n')
    with pytest.raises(HarnessError, match="never overwritten"):
        HistoryRecorder(path)
    assert path.read_text() == '{"index":0}\n'


def test_an_empty_existing_file_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.touch()
    with HistoryRecorder(path) as recorder:
        recorder.record(process=0, type="invoke", f="send")
    assert len(read_lines(path)) == 1


@pytest.mark.parametrize("fields, message", [
    ({"type": "invoke", "f": "send"}, "int process"),
    ({"process": "1", "type": "invoke", "f": "send"}, "int process"),
    ({"process": 1, "type": "done", "f": "send"}, "type must be"),
    ({"process": 1, "type": "ok", "f": "write"}, "f must be"),
    ({"process": 1, "type": "ok", "f": "send", "index": 3}, "assigned by the recorder"),
    ({"process": 1, "type": "ok", "f": "send", "offset": math.nan}, "not plain JSON"),
    ({"process": 1, "type": "ok", "f": "send", "value": object()}, "not plain JSON"),
])
def test_bad_lines_are_refused_and_not_written(tmp_path: Path, fields: dict,
                                               message: str) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as recorder:
        with pytest.raises(HistoryError, match=message):
            recorder.record(**fields)
        recorder.record(process=1, type="invoke", f="send")
    assert [json.loads(line)["index"] for line in read_lines(path)] == [0]


def test_record_after_close_raises(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path / "history.jsonl")
    recorder.close()
    with pytest.raises(HistoryError, match="closed"):
        recorder.record(process=0, type="invoke", f="send")


def test_lines_reach_the_file_within_a_second_without_close(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    recorder = HistoryRecorder(path, flush_interval_s=0.2)
    try:
        recorder.record(process=0, type="invoke", f="send", value=1)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not path.read_text():
            time.sleep(0.02)
        assert json.loads(path.read_text())["value"] == 1
    finally:
        recorder.close()


def test_process_ids_are_never_reused(tmp_path: Path) -> None:
    with HistoryRecorder(tmp_path / "history.jsonl") as recorder:
        ids = []
        threads = [threading.Thread(target=lambda: ids.extend(
            recorder.new_process() for _ in range(500))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(ids) == list(range(2000))


CRASH_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from elr_harness.workloads.recorder import HistoryRecorder
    recorder = HistoryRecorder(Path(sys.argv[1]), flush_interval_s=float(sys.argv[2]))
    print(recorder.origin_ns, flush=True)
    value = 0
    while True:
        recorder.record(process=value % 8, type="invoke", f="send", topic="t",
                        partition=0, acks="1", value=value, pad="x" * (value % 50))
        value += 1
        if value % 200 == 0:
            time.sleep(0.001)
""")


def test_sigkill_mid_stream_loses_at_most_the_last_second(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    flush_interval_s = 0.2
    child = subprocess.Popen(
        [sys.executable, "-c", CRASH_WRITER, str(path), str(flush_interval_s)],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        origin_ns = int(child.stdout.readline())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 200_000):
            time.sleep(0.05)
        time.sleep(0.37)  # land the kill at some arbitrary point of a flush cycle
        killed_at_ns = time.monotonic_ns()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL

    raw = path.read_bytes()
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    assert len(complete) > 1000
    ops = [json.loads(line) for line in complete]  # every complete line parses
    assert [op["index"] for op in ops] == list(range(len(ops)))
    assert all(a["time"] <= b["time"] for a, b in zip(ops, ops[1:], strict=False))
    if tail:  # only the very last line may be cut short, and it is a prefix of a line
        assert tail.startswith(b'{"index":')
        with pytest.raises(json.JSONDecodeError):
            json.loads(tail)
    lost_s = (killed_at_ns - (origin_ns + ops[-1]["time"])) / 1e9
    assert 0 <= lost_s <= 1.0, f"the crash lost {lost_s:.3f} s of records"
