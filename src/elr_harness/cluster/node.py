"""What every node backend offers: the operations nemeses and the cluster use.

A Node is one Kafka process host (a Docker container by default, a real host
over SSH with --nodes-file). Nothing outside cluster/ knows how the commands get there: the
cluster (cluster/cluster.py) and the nemeses are written against Node alone, and
a NodeProvider makes and finds the nodes of one cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Role(StrEnum):
    CONTROLLER = "controller"
    BROKER = "broker"


@dataclass(frozen=True)
class NodeSpec:
    """A node's identity in the topology: name, role, Kafka node.id, address."""

    name: str
    role: Role
    node_id: int
    address: str


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class Node(Protocol):
    """Operations on one node. Every call is synchronous and bounded."""

    spec: NodeSpec

    def exec(self, cmd: list[str] | str, *, timeout_s: float | None = None,
             detach: bool = False) -> ExecResult:
        """Run a command in the node (a string runs under `sh -c`), within timeout_s
        (default: the node's NodeTimeouts.command_s)."""
        ...

    def signal_kafka(self, signal_name: str) -> bool:
        """Send TERM, KILL, STOP or CONT to the Kafka process; False if none runs."""
        ...

    def start_kafka(self) -> None:
        """Start the Kafka process (again); returns once it was launched."""
        ...

    def kafka_pid(self) -> int | None:
        """The Kafka JVM's pid in the node, or None when it is not running."""
        ...

    def read_file(self, path: str) -> bytes:
        ...

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        ...

    def wait_kafka_gone(self, timeout_s: float | None = None) -> bool:
        """True once no Kafka process is left on the node (after KILL or TERM)."""
        ...

    def log_tail(self, lines: int = 30) -> str:
        """The last lines Kafka wrote (server.log, else the JVM's stdout)."""
        ...

    def host_state(self) -> str:
        """The host's own state: "running" when commands can run on it (else e.g.
        "exited", "paused", "unreachable")."""
        ...


@dataclass(frozen=True)
class Attached:
    """The nodes of a cluster that is up, and what was recorded when it was made."""

    specs: list[NodeSpec]
    nodes: dict[str, Node]
    #: "kafka-version", "elr": as the nodes were created with
    facts: dict[str, str]


class NodeProvider(Protocol):
    """Makes, finds and removes the nodes of one cluster (Docker containers on a
    private network, cluster/docker_backend.py; hosts of a nodes file over SSH,
    cluster/ssh_backend.py)."""

    def node_specs(self) -> list[NodeSpec]:
        """The topology this provider makes: names, roles, ids and addresses."""
        ...

    def preflight(self, log: Callable[[str], None]) -> None:
        """Refuse at once (HarnessError, one line naming the node) when the nodes
        cannot be made or reached, before anything is changed on any of them."""
        ...

    def attach(self) -> Attached:
        """The cluster's nodes if it is up (empty specs and nodes if not)."""
        ...

    def clear_leftovers(self, log: Callable[[str], None]) -> None:
        """Remove what a crashed run of this cluster (or one on its addresses) left."""
        ...

    def create(self, specs: Sequence[NodeSpec], kafka_home: str, facts: dict[str, str],
               log: Callable[[str], None]) -> dict[str, Node]:
        """Make every node, reachable at its spec's address, with the Kafka
        distribution at kafka_home available as kraft.KAFKA_HOME (not started)."""
        ...

    def remove(self) -> int:
        """Remove every node of the cluster and what connects them; how many nodes."""
        ...


class StorageLayer(Protocol):
    """Something mounted under a broker's log dirs (the page-cache layer).

    The cluster formats a broker's storage in `backing_dir` (plain disk), calls
    `prepare` before Kafka first starts and `ensure` before every restart, so
    Kafka never runs on the bare directory.
    """

    backing_dir: str

    def prepare(self, node: Node) -> None:
        ...

    def ensure(self, node: Node) -> None:
        ...


#: How many empty asks in a row make a node's Kafka count as gone.
DEAD_LOOKS = 3


def kafka_looks_dead(node: Node, spacing_s: float) -> bool:
    """No Kafka process on DEAD_LOOKS asks in a row, `spacing_s` apart. One empty
    pgrep is no proof: a set-up once ended on a single miss while a broker was
    starting, and heal_all once started a controller that ran all along."""
    for look in range(DEAD_LOOKS):
        if node.kafka_pid() is not None:
            return False
        if look < DEAD_LOOKS - 1:
            time.sleep(spacing_s)
    return True


class RunsCommands(Protocol):
    """What exec_answered needs of a node: its exec (Node's, or the half of a
    backend that KafkaProcessCommands is written against)."""

    def exec(self, cmd: list[str] | str, *, timeout_s: float | None = None,
             detach: bool = False) -> ExecResult: ...


def exec_answered(node: RunsCommands, cmd: list[str] | str, answered: Callable[[ExecResult], bool],
                  retries: int, *, timeout_s: float | None = None) -> ExecResult:
    """Run cmd in node until its result is an answer (`answered`), at most 1 + retries
    times; the last result either way. The Docker engine loses a short command's
    output now and then under load (moby/moby#27289): a result that cannot be the
    true one (pgrep exiting 0 with no pid printed, a file that always has content
    read as empty) is asked again, never taken for an answer."""
    for _ in range(retries):
        result = node.exec(cmd, timeout_s=timeout_s)
        if answered(result):
            return result
    return node.exec(cmd, timeout_s=timeout_s)
