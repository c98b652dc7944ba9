"""What every node backend offers: the operations nemeses and the cluster use.

A Node is one Kafka process host (a Docker container by default, a real host
over SSH later). Nothing outside cluster/ knows how the commands get there.
"""

from __future__ import annotations

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

    def exec(self, cmd: list[str] | str, *, timeout_s: float = 60.0,
             detach: bool = False) -> ExecResult:
        """Run a command in the node (a string runs under `sh -c`)."""
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
