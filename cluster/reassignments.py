"""Partition reassignments (KIP-455's AlterPartitionReassignments) through Kafka's
own reassign-partitions tool, run inside a node.

Inside a node, as the cluster runs Kafka's other tools, so it works alike on
Docker and over SSH and needs nothing librdkafka lacks (it has no
AlterPartitionReassignments). The tool reads the wanted assignment from a JSON
file written into the node beside it, and its AdminClient's bounds from a
properties file (NodeTimeouts), so a cut-off cluster makes it give up and say
why before the node's own bound kills it.

Only what the tool certainly refused to do is told apart (Refused: nothing was
changed); any other failure may have happened half-way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import StrEnum

from cluster import kraft
from cluster.node import ExecResult, Node
from harness.core.config import NodeTimeouts
from harness.core.errors import HarnessError, Refused

#: The tool's main class in every 4.x release (it left the Scala `kafka.admin` in 3.7).
TOOL_CLASS = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
#: Where the tool's input files go in the node.
PLAN_FILE = f"{kraft.HARNESS_DIR}/reassignment.json"
ADMIN_FILE = f"{kraft.HARNESS_DIR}/reassignment-admin.properties"

#: What the tool prints (ReassignPartitionsCommand, 4.0 to 4.4).
STARTED = "Successfully started partition reassignment"
CANCELLED = "Successfully cancelled partition reassignment"
NONE_ACTIVE = "None of the specified partition reassignments are active"
#: --execute while any reassignment is under way (it sends nothing then).
EXISTING = "Cannot execute because there is an existing partition assignment"
#: The controller's answer to a cancel of one that completed a moment ago.
NOT_IN_PROGRESS = "No partition reassignment is in progress"


class Outcome(StrEnum):
    """How a reassignment ended: cancelled while still under way, or completed."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"


def plan_json(topic: str, partition: int, replicas: Sequence[int]) -> str:
    """The tool's reassignment file for one partition (version 1)."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": [int(r) for r in replicas]}]})


def admin_properties(timeouts: NodeTimeouts) -> str:
    """The tool's AdminClient bounds (its defaults wait 60 s on a silent cluster)."""
    return (f"request.timeout.ms={int(timeouts.reassign_request_s * 1000)}\n"
            f"default.api.timeout.ms={int(timeouts.reassign_admin_s * 1000)}\n")


def tool_command(action: str, bootstrap: Sequence[str], heap: str) -> list[str]:
    """The tool's argv for `--execute` or `--cancel` of the plan file. A cancel keeps
    throttles alone: clearing them alters each broker's config, which waits on a
    broker that is down after the cancel itself went through."""
    if action not in ("--execute", "--cancel"):
        raise ValueError(f"unknown action {action}")
    return ["java", *heap.split(), "-cp", f"{kraft.KAFKA_HOME}/libs/*", TOOL_CLASS,
            "--bootstrap-server", ",".join(bootstrap), "--command-config", ADMIN_FILE,
            "--reassignment-json-file", PLAN_FILE, action,
            *(["--preserve-throttles"] if action == "--cancel" else [])]


def _run(node: Node, action: str, topic: str, partition: int, replicas: Sequence[int],
         bootstrap: Sequence[str], timeouts: NodeTimeouts, heap: str) -> ExecResult:
    node.write_file(ADMIN_FILE, admin_properties(timeouts).encode())
    node.write_file(PLAN_FILE, plan_json(topic, partition, replicas).encode())
    return node.exec(tool_command(action, bootstrap, heap), timeout_s=timeouts.reassign_tool_s)


def _said(result: ExecResult) -> str:
    """The tool's last words, for an error message."""
    return " ".join(result.output.split())[-400:] or f"exit {result.exit_code}, no output"


def execute(node: Node, topic: str, partition: int, replicas: Sequence[int],
            bootstrap: Sequence[str], timeouts: NodeTimeouts, heap: str) -> None:
    """Ask Kafka to move the partition to `replicas` (the controller starts the
    reassignment; it completes once every target replica is in the ISR)."""
    result = _run(node, "--execute", topic, partition, replicas, bootstrap, timeouts, heap)
    if EXISTING in result.output:
        raise Refused(f"{topic}-{partition}: another reassignment is under "
                                  "way; the tool refused to start this one")
    if not result.ok or STARTED not in result.output:
        raise HarnessError(f"{topic}-{partition}: reassigning to {list(replicas)} failed: "
                           f"{_said(result)}")


def cancel(node: Node, topic: str, partition: int, replicas: Sequence[int],
           bootstrap: Sequence[str], timeouts: NodeTimeouts, heap: str) -> Outcome:
    """Cancel the partition's reassignment if it is still under way (Kafka puts the
    replicas it was adding out again); say whether it was cancelled or had completed."""
    result = _run(node, "--cancel", topic, partition, replicas, bootstrap, timeouts, heap)
    if result.ok and CANCELLED in result.output:
        return Outcome.CANCELLED
    if (result.ok and NONE_ACTIVE in result.output) or NOT_IN_PROGRESS in result.output:
        return Outcome.COMPLETED
    raise HarnessError(f"{topic}-{partition}: cancelling the reassignment failed: "
                       f"{_said(result)}")
