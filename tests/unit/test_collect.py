"""The collect phase reads every node at once and writes what it found in the
nodes' order (run/collect.py)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from fakes import FakeCluster, ListRecorder, cluster_of, specs

from elr_harness.cluster.replica_logs import ReplicaLog
from elr_harness.run.collect import collect


@dataclass
class ReadCluster(FakeCluster):
    """Each node's read waits at a barrier that every node must reach: read one
    after another, the first read would wait forever (the barrier times out)."""

    failing: set[str] = field(default_factory=set)
    log_copies: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.barrier = threading.Barrier(len(self.nodes), timeout=10)

    def collect_node_logs(self, node, dest) -> None:
        self.log_copies.append(node.spec.name)

    def replica_logs(self, node, topics):
        self.barrier.wait()
        if node.spec.name in self.failing:
            raise RuntimeError("DumpLogSegments failed")
        # the first broker answers last, so the order is not the answers' order
        if node.spec.node_id == 1:
            threading.Event().wait(0.2)
        return [ReplicaLog("t", p, [[0, node.spec.node_id, 0]], high_watermark=1,
                           log_end_offset=1) for p in (0, 1)]

    def decode_metadata_log(self, node):
        self.barrier.wait()
        if node.spec.name in self.failing:
            raise RuntimeError("no metadata log")
        return [{"node": node.spec.name, "offset": 0}]


def read_cluster(brokers: int, controllers: int, failing: set[str] | None = None
                 ) -> ReadCluster:
    """broker-1..N (ids 1..) and controller-1..M (ids 1001..), tests/fakes.py's nodes."""
    nodes = cluster_of(specs(controllers=controllers, brokers=brokers)).nodes
    return ReadCluster(nodes, failing=failing or set())


def test_every_node_is_read_at_once_and_written_in_the_nodes_order(tmp_path):
    cluster = read_cluster(brokers=3, controllers=2)
    recorder = ListRecorder()
    outcome: dict = {}
    collect(cluster, ["t"], recorder, tmp_path, outcome)
    assert [(line["node"], line["partition"]) for line in recorder.lines] == [
        (f"broker-{b}", p) for b in (1, 2, 3) for p in (0, 1)]
    assert all(line["f"] == "replica" and line["high_watermark"] == 1
               for line in recorder.lines)
    assert sorted(cluster.log_copies) == ["broker-1", "broker-2", "broker-3",
                                          "controller-1", "controller-2"]
    for name in ("controller-1", "controller-2"):
        written = json.loads((tmp_path / name / "metadata-log.json").read_text())
        assert written == [{"node": name, "offset": 0}]
    assert not (tmp_path / "broker-1" / "metadata-log.json").exists()
    assert "errors" not in outcome


def test_a_node_that_cannot_be_read_is_noted_and_the_rest_still_counts(tmp_path):
    cluster = read_cluster(brokers=3, controllers=2, failing={"broker-2", "controller-1"})
    recorder = ListRecorder()
    outcome: dict = {}
    collect(cluster, ["t"], recorder, tmp_path, outcome)
    assert [line["node"] for line in recorder.lines] == ["broker-1"] * 2 + ["broker-3"] * 2
    assert outcome["errors"] == ["replicas of broker-2: DumpLogSegments failed",
                                 "metadata log of controller-1: no metadata log"]
    assert not (tmp_path / "controller-1" / "metadata-log.json").exists()
    assert (tmp_path / "controller-2" / "metadata-log.json").exists()
