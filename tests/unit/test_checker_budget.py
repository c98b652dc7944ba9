"""The fault budget counts a page-cache loss against a partition only when the
node is one of its replicas: a broker the observer saw as its leader or in its
ISR, ELR or last-known ELR, or any broker for a partition never observed."""

from __future__ import annotations

import json

import pytest
from checker_fixtures import TEST_CONFIG

from elr_harness.checker.check import check_history

pytestmark = pytest.mark.usefixtures("spark")

TEST_JSON = {"topics": {"t": {"partitions": 4, "replication_factor": 3,
                              "min_insync_replicas": 2, "unclean_leader_election": False}},
             "elr_enabled": True, "idempotent_producers": False, "nodes": {}, "seed": 0,
             "kafka_version": "4.1.1"}


def _observe(partition: int, leader: int, isr: list[int], elr: list[int] | None) -> dict:
    return {"process": -2, "type": "ok", "f": "observe", "topic": "t",
            "partition": partition, "leader": leader, "leader_epoch": 1, "isr": isr,
            "elr": elr, "last_known_elr": elr}


def _page_cache_loss(node: str) -> list[dict]:
    return [{"process": -1, "type": kind, "f": "fault", "fault": "page-cache-loss",
             "nodes": [node]} for kind in ("invoke", "ok")]


def test_only_losses_on_a_partitions_replicas_count(tmp_path):
    history = tmp_path / "history.jsonl"
    ops = [
        _observe(0, 1, [1, 2, 3], []),   # replicas 1, 2, 3, ISR full
        _observe(2, -1, [], None),       # seen, but with no replica at all
        _observe(3, 2, [2], [5]),        # broker 5 only in the ELR
        # partition 1 is never observed: every broker counts as its replica
        *_page_cache_loss("broker-4"), *_page_cache_loss("broker-1"),
        *_page_cache_loss("broker-5"),
        {"process": 9, "type": "invoke", "f": "poll", "topic": "t", "final": True,
         "partitions": [0, 1, 2, 3], "seek": {"0": 0, "1": 0, "2": 0, "3": 0}},
        {"process": 9, "type": "ok", "f": "poll", "topic": "t", "final": True,
         "partitions": [0, 1, 2, 3], "records": []},
    ]
    history.write_text("".join(json.dumps({"index": i, "time": i * 1000, **op}) + "\n"
                               for i, op in enumerate(ops)))
    results = check_history(history, TEST_JSON, TEST_CONFIG)
    losses = {name: g["page_cache_losses"] for name, g in results["guarantee"].items()}
    assert losses == {"t-0": 1, "t-1": 3, "t-2": 0, "t-3": 1}
    assert results["stats"]["faults"]["page-cache-loss"] == 3
