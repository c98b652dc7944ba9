"""The fakes the unit tests share, in one place: nodes that answer commands and
keep them, a cluster of them, a recorder that keeps lines in a list, Kafka's admin
tools, an observer, and a real FaultInjector over them.

A fake stands only for what a unit test cannot have (containers, Kafka, the
network); the logic around it is the real code. Whether iptables, SIGKILL, tc and
restarts act on real Kafka is the integration tests' job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from list_recorder import ListRecorder

from elr_harness.cluster.node import ExecResult, NodeSpec, Role
from elr_harness.core.config import KafkaTimings, NodeTimeouts
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.targets import Topology

__all__ = ["AnsweringRecorder", "FakeAdmin", "FakeCluster", "FakeConfig", "FakeNode",
           "FakeObserver", "FakePageCache", "ListRecorder", "cluster_of", "commands",
           "injector_rig", "specs", "topology_of"]


class FakeNode:
    """A node that answers every command (0, no output) and keeps it; a route look-up
    is answered (every address over eth0); a command holding `fail` fails; `answers`
    are given, in turn, to the commands `answers_for` matches (Kafka's tools). Its
    log dirs are as a broker's: a partition's folder is in one of them, `holds_in`
    (a `test -d` of a folder in another fails; None: in every one)."""

    def __init__(self, spec: NodeSpec, fail: str | None = None,
                 answers: list[ExecResult] | None = None,
                 answers_for: Callable[[str], bool] | None = None,
                 holds_in: str | None = "/data/kafka/dir-0/") -> None:
        self.spec = spec
        self.holds_in = holds_in
        self.pid: int | None = 100 + spec.node_id
        self.commands: list[str] = []
        self.signals: list[str] = []
        self.fail = fail
        self.answers = list(answers or [])
        self.answers_for = answers_for or (lambda command: False)

    def exec(self, cmd: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.commands.append(text)
        if self.fail and self.fail in text:
            return ExecResult(2, "RTNETLINK answers: File exists")
        if self.answers and self.answers_for(text):
            return self.answers.pop(0)
        if self.holds_in and text.startswith("test -d /data/kafka/dir-") and \
                not text.startswith(f"test -d {self.holds_in}"):
            return ExecResult(1, "")
        if "getent ahostsv4" in text:  # a route look-up: every address over eth0
            return ExecResult(0, "".join(f"{a} {a} eth0\n" for a in
                                         re.findall(r"getent ahostsv4 (\S+) ", text)))
        return ExecResult(0, "")

    def kafka_pid(self) -> int | None:
        return self.pid

    def signal_kafka(self, signal_name: str) -> bool:
        self.signals.append(signal_name)
        if signal_name in ("KILL", "TERM"):
            self.pid = None
        return True

    def wait_kafka_gone(self, timeout_s: float) -> bool:
        return self.pid is None

    def log_tail(self, lines: int = 10) -> str:
        return ""


@dataclass
class FakeConfig:
    broker_port: int = 9092
    node_start_timeout_s: float = 30.0
    dead_look_spacing_s: float = 0.0
    log_dir: str = "/data/kafka"
    log_dirs: int = 2
    timings: KafkaTimings = field(default_factory=KafkaTimings)
    timeouts: NodeTimeouts = field(default_factory=NodeTimeouts)


@dataclass
class FakeCluster:
    """The cluster as the injector and the schedules read it."""

    nodes: dict[str, FakeNode]
    config: FakeConfig = field(default_factory=FakeConfig)
    started: list[str] = field(default_factory=list)
    #: the active controller's id, as the quorum would say
    leader: int | None = None

    @property
    def brokers(self) -> list[FakeNode]:
        return [n for n in self.nodes.values() if n.spec.role is Role.BROKER]

    @property
    def controllers(self) -> list[FakeNode]:
        return [n for n in self.nodes.values() if n.spec.role is Role.CONTROLLER]

    @property
    def bootstrap(self) -> list[str]:
        return [f"{n.spec.address}:9092" for n in self.brokers]

    def broker_by_id(self, broker_id: int) -> FakeNode:
        for node in self.brokers:
            if node.spec.node_id == broker_id:
                return node
        raise KeyError(f"no broker with id {broker_id}")

    def restart_kafka(self, node: FakeNode) -> None:
        self.started.append(node.spec.name)
        node.pid = 200 + node.spec.node_id

    def quorum_leader(self) -> int | None:
        return self.leader


def specs(controllers: int = 3, brokers: int = 3) -> list[NodeSpec]:
    """controller-1..N (ids 1001..) at 10.0.0.1.., broker-1..M (ids 1..) at 10.0.0.11.."""
    out = [NodeSpec(f"controller-{i}", Role.CONTROLLER, 1000 + i, f"10.0.0.{i}")
           for i in range(1, controllers + 1)]
    return out + [NodeSpec(f"broker-{i}", Role.BROKER, i, f"10.0.0.{10 + i}")
                  for i in range(1, brokers + 1)]


def cluster_of(node_specs: Sequence[NodeSpec] | None = None, **node_args: Any) -> FakeCluster:
    """A FakeCluster of those nodes (specs() by default); node_args[name] are the
    FakeNode arguments of one node."""
    node_specs = list(node_specs or specs())
    return FakeCluster({s.name: FakeNode(s, **node_args.get(s.name.replace("-", "_"), {}))
                        for s in node_specs})


def topology_of(cluster: FakeCluster) -> Topology:
    return Topology.of(cluster.nodes.values())


@dataclass
class FakeAdmin:
    """Kafka's admin tools (cluster.admin_tools.AdminTools) as a dict: each topic's
    own min ISR (None: the cluster default), feature levels; `refuse` fails every
    change with that error (an AdminRefused or AdminError)."""

    min_isrs: dict[str | None, int | None] = field(default_factory=lambda: {None: 1})
    levels: dict[str, int] = field(
        default_factory=lambda: {"eligible.leader.replicas.version": 1})
    refuse: Exception | None = None
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)

    def min_isr(self, node: Any, topic: str | None) -> int | None:
        return self.min_isrs.get(topic)

    def alter_min_isr(self, node: Any, topic: str | None, to: int) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.changes.append(("min-isr", topic, to))
        self.min_isrs[topic] = to

    def feature_level(self, node: Any, feature: str) -> int | None:
        return self.levels.get(feature)

    def update_feature(self, node: Any, feature: str, to: int, current: int) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.changes.append(("feature", feature, to))
        self.levels[feature] = to


class AnsweringRecorder(ListRecorder):
    """The injector's lines, kept; each fault's `ok` line is handed to `answer` (a
    model of the cluster that moves when a fault is in force)."""

    def __init__(self, answer: Callable[[dict[str, Any]], object]) -> None:
        super().__init__()
        self.answer = answer

    def record(self, **fields: Any) -> dict[str, Any]:
        super().record(**fields)
        if fields.get("f") == "fault" and fields.get("type") == "ok":
            self.answer(fields)
        return fields


class FakePageCache:
    """The page-cache layer under the brokers (nemesis.pagecache.control.PageCacheLayer): a
    power loss drops `dropped` (file -> bytes) and is kept in `losses`; each disk
    fault set (None: cleared) is kept in `faults`, and clearing one answers what it
    did (`cleared`)."""

    def __init__(self, dropped: dict[str, int] | None = None,
                 cleared: dict[str, Any] | None = None,
                 mount: str = "/data/kafka/") -> None:
        self.dropped = dict(dropped or {})
        self.cleared = dict(cleared or {})
        self.mount = mount
        self.losses: list[str] = []
        self.faults: list[Any] = []

    def power_loss(self, node: Any) -> dict[str, Any]:
        self.losses.append(node.spec.name)
        return {"bytes_dropped": dict(self.dropped), "total_bytes": sum(self.dropped.values())}

    def relative(self, path: str) -> str:
        return path.removeprefix(self.mount)

    def disk_fault(self, node: Any, fault: Any) -> dict[str, Any]:
        self.faults.append(fault)
        return dict(self.cleared) if fault is None else {}


class FakeObserver:
    """The observer as schedules read it: `states()` gives the latest partition
    states (a list, or a callable for a world that moves), and wait_for answers at
    once from them."""

    def __init__(self, states: Any) -> None:
        self._states = states

    def latest(self) -> list[Any]:
        return list(self._states() if callable(self._states) else self._states)

    def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001 - the Observer protocol
        states = self.latest()
        return states if predicate(states) else None


def injector_rig(cluster: FakeCluster | None = None, **kwargs: Any
                 ) -> tuple[FaultInjector, ListRecorder]:
    """A real FaultInjector over a fake cluster (cluster_of() by default), recording
    into a list."""
    recorder = ListRecorder()
    injector = FaultInjector(cluster or cluster_of(), recorder, **kwargs)  # type: ignore[arg-type]
    return injector, recorder


def commands(injector: FaultInjector) -> dict[str, list[str]]:
    """Every node's commands so far."""
    return {name: list(node.commands) for name, node in injector.cluster.nodes.items()}
