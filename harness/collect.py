"""The collect phase: what a run keeps of the nodes once the final reads are done
(cluster healed and quiet): each broker's own replicas as `replica` lines of the
history, and each node's logs, config and decoded controller metadata log."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cluster.cluster import Cluster
from harness.core.history import COLLECTOR_PROCESS


def record_replicas(cluster: Cluster, topics: list[str], recorder, outcome: dict[str, Any]
                    ) -> None:
    """Each broker's own replicas as `replica` lines (HISTORY.md), one log dump JVM
    per broker, the brokers in parallel; a broker that cannot be read is noted."""

    def dump(node):
        try:
            return node, cluster.replica_logs(node, topics), None
        except Exception as err:  # noqa: BLE001 - the rest of the run still counts
            return node, [], err

    with ThreadPoolExecutor(max_workers=max(len(cluster.brokers), 1)) as pool:
        for node, logs, err in pool.map(dump, cluster.brokers):
            if err is not None:
                outcome.setdefault("errors", []).append(f"replicas of {node.spec.name}: {err}")
            for log in logs:
                fields = {"topic": log.topic, "partition": log.partition,
                          "node": node.spec.name, "broker": node.spec.node_id,
                          "log_end_offset": log.log_end_offset, "records": log.records}
                if log.high_watermark is not None:
                    fields["high_watermark"] = log.high_watermark
                recorder.record(process=COLLECTOR_PROCESS, type="ok", f="replica", **fields)


def collect_nodes(cluster: Cluster, nodes_dir: Path, outcome: dict[str, Any]) -> None:
    """Logs and configs of every node; each controller's metadata log, decoded."""
    cluster.collect_logs(nodes_dir)
    for node in cluster.controllers:
        try:
            records = cluster.decode_metadata_log(node)
        except Exception as err:  # noqa: BLE001 - the rest of the run still counts
            outcome.setdefault("errors", []).append(f"metadata log of {node.spec.name}: {err}")
            continue
        target = nodes_dir / node.spec.name
        target.mkdir(parents=True, exist_ok=True)
        (target / "metadata-log.json").write_text(json.dumps(records))
