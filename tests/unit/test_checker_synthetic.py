"""The synthetic history generator follows the contract (no Spark)."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from synthetic import MIXABLE, Injection, SyntheticSpec, write_history

#: The fields HISTORY.md gives each kind of line (the common ones included).
_COMMON = {"index", "time", "process", "type", "f"}
CONTRACT_FIELDS = {
    "send": _COMMON | {"topic", "partition", "acks", "value", "offset", "error"},
    "poll": _COMMON | {"topic", "records", "high_watermark", "final", "seek", "error"},
    "fault": _COMMON | {"fault", "nodes", "detail"},
    "observe": _COMMON | {"topic", "partition", "leader", "leader_epoch", "isr", "elr",
                          "last_known_elr", "high_watermark", "fenced"},
}


def test_lines_follow_the_contract(tmp_path):
    path = tmp_path / "history.jsonl"
    generated = write_history(path, SyntheticSpec(lines=3000, seed=1))
    ops = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(ops) == generated.lines
    assert [op["index"] for op in ops] == list(range(len(ops)))
    assert all(a["time"] <= b["time"] for a, b in zip(ops, ops[1:], strict=False))
    in_flight: dict[int, dict] = {}
    for op in ops:
        if op["process"] < 0:
            continue
        if op["type"] == "invoke":
            assert op["process"] not in in_flight, "one operation in flight per process"
            in_flight[op["process"]] = op
        else:
            assert in_flight.pop(op["process"])["f"] == op["f"]
    # only the contract's fields: a checker must judge it with nothing else
    assert all(set(op) <= CONTRACT_FIELDS[op["f"]] for op in ops), [
        sorted(set(op) - CONTRACT_FIELDS[op["f"]]) for op in ops
        if not set(op) <= CONTRACT_FIELDS[op["f"]]][:3]
    finals = [op for op in ops if op.get("final")]
    assert finals and all("high_watermark" in op for op in finals if op["type"] == "ok")
    assert sum(generated.sends_ok.values()) == sum(
        1 for op in ops if op["f"] == "send" and op["type"] == "ok")
    assert {op["acks"] for op in ops if op["f"] == "send"} == {"all", "1", "0"}
    assert any(op.get("seek") for op in ops if not op.get("final"))
    assert any(op["type"] == "info" for op in ops if op["f"] == "send")


def test_streams_without_keeping_the_history_in_memory(tmp_path):
    tracemalloc.start()
    write_history(tmp_path / "h.jsonl", SyntheticSpec(lines=200_000, seed=2))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = (tmp_path / "h.jsonl").stat().st_size
    assert peak < size / 4, (peak, size)


def test_unknown_injection_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cannot inject"):
        write_history(tmp_path / "h.jsonl", SyntheticSpec(
            injections=(Injection("time-travel"),)))


def test_every_injection_returns_its_op_indices(tmp_path):
    names = MIXABLE
    generated = write_history(tmp_path / "h.jsonl", SyntheticSpec(lines=3000, injections=tuple(
        Injection(n, at=0.05 + 0.08 * i) for i, n in enumerate(names))))
    lines = (tmp_path / "h.jsonl").read_text().splitlines()
    for name in names:
        (planted,) = generated.expected[name]
        assert planted.ops and all(0 <= i < len(lines) for i in planted.ops), name
