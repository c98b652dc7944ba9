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
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from elr_harness.cluster import kraft
from elr_harness.cluster.node import Node
from elr_harness.core.errors import HarnessError

_RECORD = re.compile(
    r"^\| offset: (?P<offset>\d+) CreateTime: (?P<time>-?\d+) .*?"
    r"(?:payload: (?P<payload>\{.*\})|(?P<control>\w+): (?P<control_data>\{.*\})"
    r"|controlType: (?P<control_type>\w+)\(\d+\))\s*$"
)
SKIPPED_TYPES = {"NO_OP_RECORD"}


def parse_dump(output: str, node_name: str) -> list[dict]:
    """Records of a DumpLogSegments --cluster-metadata-decoder output, in log order.

    A control record is `LeaderChange: {...}` from 4.1 on, and only
    `controlType: LEADER_CHANGE(2)` in 4.0.x (kept, with empty data)."""
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
        elif match["control_type"]:
            # 4.0.x names a control record's type without decoding it
            records.append({"node": node_name, "offset": offset, "timestamp_ms": created,
                            "type": match["control_type"], "version": None, "data": {}})
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


#: Kafka's log dump tool, where releases keep it (newest first): Java from 4.2,
#: Scala before (KafkaDistribution.main_class picks the one a release has).
DUMP_LOG_CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")


def decode_metadata_log(node: Node, metadata_dir: str, timeout_s: float,
                        dump_class: str = DUMP_LOG_CLASSES[-1]) -> list[dict]:
    """Decode every segment of a controller's metadata log, in offset order."""
    partition_dir = f"{metadata_dir}/__cluster_metadata-0"
    # the folder quoted, only the *.log glob left to the shell
    listing = node.exec(f"ls {shlex.quote(partition_dir)}/*.log")
    segments = sorted(listing.output.splitlines()) if listing.ok else []
    if not segments:
        raise HarnessError(f"{node.spec.name}: no metadata log segments in {partition_dir}")
    result = node.exec(
        kraft.tool_command("256m", dump_class, "--cluster-metadata-decoder",
                           "--files", ",".join(segments)),
        timeout_s=timeout_s)
    if not result.ok:
        raise HarnessError(f"{node.spec.name}: DumpLogSegments failed: {result.output[-500:]}")
    return parse_dump(result.output, node.spec.name)


#: PartitionChangeRecord's `leader` when the leader does not change (a tagged
#: field: Kafka's dump omits it then, but a record may still spell it).
NO_LEADER_CHANGE = -2

#: A partition's fields as the records name them, in the order reports show them.
PARTITION_FIELDS = ("leader", "leaderEpoch", "isr", "eligibleLeaderReplicas", "lastKnownElr")


@dataclass(frozen=True)
class PartitionStep:
    """A partition record and the partition's whole state after it."""

    record: dict[str, Any]
    topic: str
    partition: Any
    #: PARTITION_FIELDS -> value after the record (leaderEpoch derived, see fold)
    state: dict[str, Any]
    #: the fields this record changed (all it sets, for a PARTITION_RECORD)
    changed: frozenset[str]


def topic_names(records: list[dict[str, Any]]) -> dict[str, str]:
    """Topic id -> name, from the log's TOPIC_RECORDs."""
    return {str(r["data"].get("topicId")): str(r["data"].get("name")) for r in records
            if r.get("type") == "TOPIC_RECORD" and isinstance(r.get("data"), dict)}


def fold_partitions(records: list[dict[str, Any]],
                    names: dict[str, str] | None = None) -> Iterator[PartitionStep]:
    """The one fold of the metadata log: each partition's state after each of its
    records, in log order.

    Change records carry only what changed (absent or null: unchanged). Topic
    ids resolve to names through TOPIC_RECORD (an unknown id stays the id).
    The leader epoch follows Kafka's PartitionRegistration.merge: a
    PARTITION_RECORD sets it, a change record that names a leader bumps it by one.
    """
    names = topic_names(records) if names is None else names
    states: dict[tuple[str, Any], dict[str, Any]] = {}
    for record in records:
        kind, data = record.get("type"), record.get("data")
        if kind not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") or \
                not isinstance(data, dict):
            continue
        topic_id = str(data.get("topicId"))
        key = (names.get(topic_id, topic_id), data.get("partitionId"))
        state = states.setdefault(key, {})
        before = dict(state)
        for name in PARTITION_FIELDS:
            value = data.get(name)
            if value is None or (name == "leader" and value == NO_LEADER_CHANGE):
                continue
            if name == "leaderEpoch" and kind != "PARTITION_RECORD":
                continue
            state[name] = value
            if name == "leader" and kind == "PARTITION_CHANGE_RECORD":
                state["leaderEpoch"] = before.get("leaderEpoch", 0) + 1
        changed = (set(state) if kind == "PARTITION_RECORD"
                   else {n for n in state if before.get(n) != state[n]})
        yield PartitionStep(record, key[0], key[1], dict(state), frozenset(changed))


def partition_states(records: list[dict]) -> dict[tuple[str, int], dict]:
    """Each partition's state as the controller's log says it is now:
    (topic, partition) -> {leader, leader_epoch, isr, elr, last_known_elr}."""
    names = topic_names(records)
    named = set(names.values())
    states: dict[tuple[str, int], dict] = {}
    for step in fold_partitions(records, names):
        if step.topic not in named:
            continue  # a partition of a topic the log never named
        s = step.state
        states[(step.topic, step.partition)] = {
            "leader": s.get("leader", -1), "leader_epoch": s.get("leaderEpoch", 0),
            "isr": s.get("isr", []), "elr": s.get("eligibleLeaderReplicas", []),
            "last_known_elr": s.get("lastKnownElr", [])}
    return states
