"""The collect phase: what a run keeps of the nodes once the final reads are done
(cluster healed and quiet): each broker's own replicas as `replica` lines of the
history, and each node's logs, config and decoded controller metadata log.

Every node is read at once: a controller's metadata log is decoded by a JVM of
Kafka's dump tool in that node (a broker's segments are read in Python, see
cluster/record_batches.py), and one after another they made most of the phase's
time. What they found is written in the nodes' order, so the history does not
depend on which node answered first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.node import Node, Role
from elr_harness.cluster.replica_logs import ReplicaLog
from elr_harness.core.history import COLLECTOR_PROCESS
from elr_harness.core.parallel import at_once


@dataclass
class NodeFindings:
    """What one node gave up: its replicas (a broker), its decoded metadata log (a
    controller), and what could not be read."""

    node: Node
    replicas: list[ReplicaLog] = field(default_factory=list)
    metadata: list[dict] | None = None
    errors: list[str] = field(default_factory=list)


def collect(cluster: Cluster, topics: list[str], recorder, nodes_dir: Path,
            outcome: dict[str, Any]) -> None:
    """Read every node at once; then record each broker's replicas as `replica`
    lines (HISTORY.md) and write each controller's metadata-log.json, in the nodes'
    order. A node that cannot be read is noted in the outcome; the rest still counts."""
    def gather(node: Node) -> NodeFindings:
        found = NodeFindings(node)
        cluster.collect_node_logs(node, nodes_dir)
        if node.spec.role is Role.BROKER:
            try:
                found.replicas = cluster.replica_logs(node, topics)
            except Exception as err:  # noqa: BLE001 - the rest of the run still counts
                found.errors.append(f"replicas of {node.spec.name}: {err}")
        if node.spec.role is Role.CONTROLLER:
            try:
                found.metadata = cluster.decode_metadata_log(node)
            except Exception as err:  # noqa: BLE001 - the rest of the run still counts
                found.errors.append(f"metadata log of {node.spec.name}: {err}")
        return found

    findings: list[NodeFindings] = at_once(  # type: ignore[assignment]
        gather, [*cluster.brokers, *cluster.controllers])
    for found in findings:
        if found.errors:
            outcome.setdefault("errors", []).extend(found.errors)
        _record_replicas(found, recorder)
        if found.metadata is not None:
            target = nodes_dir / found.node.spec.name
            target.mkdir(parents=True, exist_ok=True)
            (target / "metadata-log.json").write_text(json.dumps(found.metadata))


def _record_replicas(found: NodeFindings, recorder) -> None:
    for log in found.replicas:
        fields = {"topic": log.topic, "partition": log.partition,
                  "node": found.node.spec.name, "broker": found.node.spec.node_id,
                  "log_end_offset": log.log_end_offset, "records": log.records}
        if log.high_watermark is not None:
            fields["high_watermark"] = log.high_watermark
        recorder.record(process=COLLECTOR_PROCESS, type="ok", f="replica", **fields)
