"""A node counts as dead while the cluster starts only when it looks dead every time."""

from __future__ import annotations

import pytest

from cluster.cluster import Cluster, ClusterStartError


class _Node:
    def __init__(self, name: str, pids: list[int | None]) -> None:
        self.spec = type("Spec", (), {"name": name})()
        self.pids = pids
        self.looks = 0

    def kafka_pid(self) -> int | None:
        self.looks += 1
        return self.pids.pop(0) if self.pids else None

    def log_tail(self) -> str:
        return "last line of the server log"


def _cluster(*nodes: _Node) -> Cluster:
    cluster = Cluster.__new__(Cluster)  # no engine: only the nodes matter here
    cluster.nodes = {n.spec.name: n for n in nodes}
    return cluster


def test_one_empty_pgrep_is_not_a_dead_node() -> None:
    flaky = _Node("broker-2", [None, 4242])
    _cluster(_Node("broker-1", [7]), flaky)._fail_if_a_node_died(spacing_s=0)
    assert flaky.looks == 2


def test_a_node_that_looks_dead_every_time_fails_the_start_with_its_log() -> None:
    dead = _Node("broker-3", [None, None, None])
    with pytest.raises(ClusterStartError,
                       match="(?s)broker-3 stopped while starting.*last line of the server log"):
        _cluster(dead)._fail_if_a_node_died(spacing_s=0)
    assert dead.looks == 3
