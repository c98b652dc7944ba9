"""The streaming pass over history.jsonl, on small hand-written histories."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from reports.history_scan import Interest, scan_history
from reports.plots import downsample


def _write(path: Path, lines: list[dict | str]) -> Path:
    text = ""
    for i, line in enumerate(lines):
        if isinstance(line, dict):
            line = json.dumps({"index": i, **line})
        text += line + "\n"
    path.write_text(text)
    return path


def _send(t_ms: int, process: int, typ: str, value: int, acks: str = "all", p: int = 0,
          **extra) -> dict:
    return {"time": t_ms * 1_000_000, "process": process, "type": typ, "f": "send",
            "topic": "t", "partition": p, "acks": acks, "value": value, **extra}


def _final(t_ms: int, records: list[list], partitions: list[int]) -> dict:
    return {"time": t_ms * 1_000_000, "process": 50, "type": "ok", "f": "poll", "topic": "t",
            "final": True, "partitions": partitions, "records": records}


def test_latency_pairs_invoke_with_completion_of_the_same_process(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.jsonl", [
        _send(0, 0, "invoke", 1), _send(5, 1, "invoke", 2, acks="1"),
        _send(30, 0, "ok", 1, offset=0), _send(35, 1, "fail", 2, acks="1", error="X"),
        _send(40, 2, "invoke", 3),  # never completes
    ])
    scan = scan_history(path)
    ok = scan.latency[("send acks=all", "ok")]
    assert list(ok.y) == [30.0] and list(ok.x) == [0.03]
    assert list(scan.latency[("send acks=1", "fail")].y) == [30.0]
    assert scan.op_counts[("send", "ok", "all")] == 1
    assert scan.unfinished[("send", "all")] == 1
    assert scan.throughput["ok"][0] == 1 and scan.throughput["fail"][0] == 1


def test_malformed_lines_are_counted_and_a_cut_last_line_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    good = json.dumps(_send(0, 0, "invoke", 1) | {"index": 0})
    path.write_text(good + "\nnot json at all\n" + good + '\n{"index": 3, "ti')
    scan = scan_history(path)
    assert scan.lines == 4
    assert scan.malformed_count == 1 and scan.malformed_lines == [2]
    assert scan.truncated_last_line


def test_only_wanted_ops_are_kept_and_polls_cut_to_relevant_records(tmp_path: Path) -> None:
    records = [[0, off, 100 + off] for off in range(5000)]
    path = _write(tmp_path / "h.jsonl", [
        _send(0, 0, "invoke", 104), _send(1, 0, "ok", 104, offset=4),
        _final(2, records, [0]),
    ])
    scan = scan_history(path, {1: Interest(), 2: Interest(frozenset({104}),
                                                           frozenset({(0, 9)}))})
    assert set(scan.ops) == {1, 2}
    assert scan.ops[1]["value"] == 104
    final = scan.ops[2]
    assert "records" not in final
    assert final["records_total"] == 5000
    assert final["records_relevant"] == [[0, 4, 104], [0, 9, 109]]


def test_observed_state_keeps_changes_only(tmp_path: Path) -> None:
    def observe(t: int, isr: list[int], elr: list[int] | None, hwm: int) -> dict:
        return {"time": t * 1_000_000_000, "process": -2, "type": "ok", "f": "observe",
                "topic": "t", "partition": 0, "leader": 1, "leader_epoch": 0, "isr": isr,
                "elr": elr, "last_known_elr": [], "high_watermark": hwm}

    path = _write(tmp_path / "h.jsonl", [
        observe(0, [1, 2, 3], [], 5), observe(1, [3, 2, 1], [], 5), observe(2, [1], [2], 7),
        observe(3, [1], None, 7),
    ])
    scan = scan_history(path)
    states = scan.states[("t", 0)]
    assert [s.isr for s in states] == [(1, 2, 3), (1,), (1,)]
    assert [s.elr for s in states] == [(), (2,), None]
    assert list(scan.hwm[("t", 0)].y) == [5.0, 7.0]


def test_downsample_keeps_spikes_and_the_bound() -> None:
    x = np.arange(100_000, dtype=float)
    y = np.ones(100_000)
    y[54_321] = 1e6
    y[77_777] = -5
    dx, dy = downsample(x, y, 400)
    assert len(dx) <= 400
    assert 1e6 in dy and -5 in dy
    assert list(dx) == sorted(dx)
    small_x, small_y = downsample([1.0, 2.0], [3.0, 4.0], 400)
    assert list(small_y) == [3.0, 4.0]


def test_an_observe_of_fenced_brokers_is_a_state_of_its_own(tmp_path):
    """The partition lanes and the state table show fenced brokers (fenced-leader's
    evidence): a change of `fenced` alone is a new observed state."""

    lines = [{"index": i, "time": i * 10**9, "process": -2, "type": "ok", "f": "observe",
              "topic": "t", "partition": 0, "leader": 1, "leader_epoch": 2, "isr": [1],
              "elr": [], "last_known_elr": [], **fenced}
             for i, fenced in enumerate([{}, {"fenced": [1]}, {"fenced": [1]}, {"fenced": []}])]
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    states = scan_history(history).states[("t", 0)]
    assert [s.fenced for s in states] == [None, (1,), ()]
