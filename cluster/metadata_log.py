"""The controllers' `__cluster_metadata` log, decoded by Kafka's own tool.

Kafka's DumpLogSegments with --cluster-metadata-decoder prints every record
as `| offset: N CreateTime: T ... payload: {json}`; this turns that into the
JSON array of docs/FORMATS.md, so the report can show every ISR/ELR/leader
change the controller made. NO_OP_RECORDs (heartbeats of the quorum) are
left out: they say nothing and are most of the log.
"""

from __future__ import annotations

import json
import re

from cluster import kraft
from cluster.node import Node
from harness.core.errors import HarnessError

_RECORD = re.compile(
    r"^\| offset: (?P<offset>\d+) CreateTime: (?P<time>-?\d+) .*?"
    r"(?:payload: (?P<payload>\{.*\})|(?P<control>\w+): (?P<control_data>\{.*\}))\s*$"
)
SKIPPED_TYPES = {"NO_OP_RECORD"}


def parse_dump(output: str, node_name: str) -> list[dict]:
    """Records of a DumpLogSegments --cluster-metadata-decoder output, in log order."""
    records = []
    for line in output.splitlines():
        match = _RECORD.match(line)
        if not match:
            continue
        offset, created = int(match["offset"]), int(match["time"])
        if match["payload"]:
            try:
                payload = json.loads(match["payload"])
            except json.JSONDecodeError:
                continue
            if payload.get("type") in SKIPPED_TYPES:
                continue
            records.append({"node": node_name, "offset": offset, "timestamp_ms": created,
                            "type": payload.get("type"), "version": payload.get("version"),
                            "data": payload.get("data", {})})
        else:
            try:
                data = json.loads(match["control_data"])
            except json.JSONDecodeError:
                continue
            records.append({"node": node_name, "offset": offset, "timestamp_ms": created,
                            "type": _control_type(match["control"]),
                            "version": data.get("version"), "data": data})
    return records


def _control_type(name: str) -> str:
    """`LeaderChange` -> `LEADER_CHANGE`, in the style of the metadata record types."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def decode_metadata_log(node: Node, metadata_dir: str, timeout_s: float = 120.0) -> list[dict]:
    """Decode every segment of a controller's metadata log, in offset order."""
    partition_dir = f"{metadata_dir}/__cluster_metadata-0"
    listing = node.exec(f"ls {partition_dir}/*.log", timeout_s=10)
    segments = sorted(listing.output.split()) if listing.ok else []
    if not segments:
        raise HarnessError(f"{node.spec.name}: no metadata log segments in {partition_dir}")
    result = node.exec(
        ["java", "-Xmx256m", "-cp", f"{kraft.KAFKA_HOME}/libs/*", "kafka.tools.DumpLogSegments",
         "--cluster-metadata-decoder", "--files", ",".join(segments)],
        timeout_s=timeout_s)
    if not result.ok:
        raise HarnessError(f"{node.spec.name}: DumpLogSegments failed: {result.output[-500:]}")
    return parse_dump(result.output, node.spec.name)


def partition_states(records: list[dict]) -> dict[tuple[str, int], dict]:
    """Each partition's state as the controller's log says it is now.

    Folds TOPIC_RECORD (name <-> id), PARTITION_RECORD (full state) and
    PARTITION_CHANGE_RECORD (only the fields that changed) in log order;
    returns (topic, partition) -> {leader, leader_epoch, isr, elr, last_known_elr}.
    """
    names: dict[str, str] = {}
    states: dict[tuple[str, int], dict] = {}
    for record in records:
        data = record.get("data", {})
        kind = record.get("type")
        if kind == "TOPIC_RECORD":
            names[data.get("topicId")] = data.get("name")
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            topic = names.get(data.get("topicId"))
            if topic is None:
                continue
            key = (topic, data.get("partitionId"))
            state = states.setdefault(key, {"leader": -1, "leader_epoch": 0, "isr": [],
                                            "elr": [], "last_known_elr": []})
            if kind == "PARTITION_RECORD":
                state["leader_epoch"] = data.get("leaderEpoch", 0)
            elif "leader" in data:
                state["leader_epoch"] += 1
            for field, name in (("leader", "leader"), ("isr", "isr"),
                                ("eligibleLeaderReplicas", "elr"),
                                ("lastKnownElr", "last_known_elr")):
                if field in data and data[field] is not None:
                    state[name] = data[field]
    return states
