"""The synthetic history generator follows the contract (no Spark)."""

from __future__ import annotations

import hashlib
import json
import tracemalloc

import pytest
from reference_checker import reference_check
from synthetic import (
    MIXABLE,
    Injection,
    SyntheticSpec,
    every_anomaly,
    write_history,
    write_run_dir,
)

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


#: sha256 of histories generated before transactions existed (#61): a spec
#: without `transactions` must keep every byte, or the checker benchmarks'
#: histories would change under them.
BEFORE_TRANSACTIONS = {
    "plain": (SyntheticSpec(lines=3000, seed=1),
              "2b938ccd98ac441a311405d7bcf8417a1288daa71c389b69a14f5ba46e1bb79f"),
    "anomalies": (every_anomaly(lines=3000, seed=2),
                  "0242142205364624c5eb1e09398f4dfa70eaf4ed688191da3614811768853544"),
    "no-consumers": (SyntheticSpec(lines=1500, seed=5, consumers=0, retry_rate=0.1,
                                   idempotent=True, leave_pending=False),
                     "15c8a538e5801961ad97560beac401c13689c6d5535c0dc3c3b6f8db1399c7f4"),
}


@pytest.mark.parametrize("name", sorted(BEFORE_TRANSACTIONS))
def test_specs_without_transactions_write_what_they_wrote(tmp_path, name):
    spec, digest = BEFORE_TRANSACTIONS[name]
    write_history(tmp_path / "h.jsonl", spec)
    assert hashlib.sha256((tmp_path / "h.jsonl").read_bytes()).hexdigest() == digest


#: Contract v4's fields of each kind (HISTORY.md "Transactions (v4)").
V4_FIELDS = {
    **CONTRACT_FIELDS,
    "txn": _COMMON | {"txn_id", "sends", "abort", "offsets", "end_time", "error", "client"},
    "poll": CONTRACT_FIELDS["poll"] | {"isolation", "position", "last_stable_offset"},
    "observe": CONTRACT_FIELDS["observe"] | {"last_stable_offset", "open_txn_offsets"},
}


def test_transactions_follow_contract_v4_and_are_clean(tmp_path):
    spec = SyntheticSpec(lines=4000, seed=3, transactions=True)
    generated = write_run_dir(tmp_path, spec)
    ops = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert len(ops) == generated.lines
    assert all(set(op) <= V4_FIELDS[op["f"]] for op in ops)
    txns = [op for op in ops if op["f"] == "txn"]
    invokes = [op for op in txns if op["type"] == "invoke"]
    assert any(op.get("abort") for op in invokes) and {op["type"] for op in txns} >= {"ok"}
    assert len({v for op in invokes for _, _, v in op["sends"]}) == sum(
        len(op["sends"]) for op in invokes)
    assert any(len({p for _, p, _ in op["sends"]}) > 1 for op in invokes)
    assert sum(generated.txn_outcomes.values()) == len(invokes)
    rc = [op for op in ops if op["f"] == "poll" and op.get("isolation") == "read_committed"]
    assert any(not op.get("final") for op in rc) and any(op.get("final") for op in rc)
    finals = [op for op in ops if op.get("final") and op["type"] == "ok"]
    assert all("position" in op for op in finals)
    assert any(op.get("open_txn_offsets") for op in ops if op["f"] == "observe")
    test = json.loads((tmp_path / "test.json").read_text())
    assert test["transactions"]["enabled"] is True
    ref = reference_check(tmp_path / "history.jsonl", test)
    assert ref.valid is True and not any(ref.counts.values()), {
        k: v for k, v in ref.counts.items() if v}


def test_transactions_take_no_injection(tmp_path):
    with pytest.raises(ValueError, match="clean"):
        write_history(tmp_path / "h.jsonl", SyntheticSpec(
            transactions=True, injections=(Injection("duplicate"),)))
