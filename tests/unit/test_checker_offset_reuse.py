"""A lost acks=1 write frees its offset for the next record: that is one
reported loss, not also a bad inconsistent-offset. Seen in real
unclean-last-replica runs, where L lost acks=1 records it alone had."""

from __future__ import annotations

import json

import pytest
from checker_fixtures import TEST_CONFIG

from elr_harness.checker.check import check_history

pytestmark = pytest.mark.usefixtures("spark")

TEST_JSON = {"topics": {"t": {"partitions": 1, "replication_factor": 3,
                              "min_insync_replicas": 2, "unclean_leader_election": False}},
             "elr_enabled": True, "idempotent_producers": False, "nodes": {}, "seed": 0,
             "kafka_version": "4.1.1"}


def _write(path, ops):
    lines = []
    for i, op in enumerate(ops):
        lines.append(json.dumps({"index": i, "time": i * 1000, **op}))
    path.write_text("\n".join(lines) + "\n")


def _send(process, kind, acks, value, offset=None):
    op = {"process": process, "type": kind, "f": "send", "topic": "t", "partition": 0,
          "acks": acks, "value": value}
    if kind == "ok":
        op["offset"] = offset
    return op


def _final(records):
    return [{"process": 9, "type": "invoke", "f": "poll", "topic": "t", "final": True,
             "partitions": [0], "seek": {"0": 0}},
            {"process": 9, "type": "ok", "f": "poll", "topic": "t", "final": True,
             "partitions": [0], "records": records}]


def test_offset_of_a_lost_acks_1_write_reused(tmp_path):
    history = tmp_path / "history.jsonl"
    _write(history, [
        _send(0, "invoke", "all", 1), _send(0, "ok", "all", 1, 0),
        _send(1, "invoke", "1", 2), _send(1, "ok", "1", 2, 1),      # lost with L's page cache
        _send(0, "invoke", "all", 3), _send(0, "ok", "all", 3, 1),  # the new leader's offset 1
        *_final([[0, 0, 1], [0, 1, 3]]),
    ])
    results = check_history(history, TEST_JSON, TEST_CONFIG)
    assert results["anomalies"]["lost-write"]["by_acks"]["1"] == 1
    assert "inconsistent-offset" not in results["anomalies"], results["anomalies"]
    assert results["valid"] is True, results["reason"]


def test_offset_reused_under_an_acks_all_write_is_still_bad(tmp_path):
    history = tmp_path / "history.jsonl"
    _write(history, [
        _send(0, "invoke", "all", 1), _send(0, "ok", "all", 1, 0),
        _send(1, "invoke", "all", 2), _send(1, "ok", "all", 2, 1),  # acked by all, then gone
        _send(0, "invoke", "all", 3), _send(0, "ok", "all", 3, 1),
        *_final([[0, 0, 1], [0, 1, 3]]),
    ])
    results = check_history(history, TEST_JSON, TEST_CONFIG)
    assert results["anomalies"]["inconsistent-offset"]["count"] == 1
    assert results["valid"] is False
