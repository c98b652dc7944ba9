"""The decoded controller metadata log as a run directory keeps it
(nodes/<controller>/metadata-log.json, docs/FORMATS.md), folded into each
partition's state after each of its records.

Pure functions over the records' JSON: the cluster's controller view (what a
scenario waits on) and the report's metadata table both read the log through
this one fold, so they can never tell a different story.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: PartitionChangeRecord's `leader` when the leader does not change (a tagged
#: field: Kafka's dump omits it then, but a record may still spell it).
NO_LEADER_CHANGE = -2

#: The feature every KRaft bootstrap finalizes first: a log that names it reaches
#: back to the cluster's format, so any feature it never names is at level 0.
METADATA_VERSION = "metadata.version"

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


def finalized_level(records: list[dict[str, Any]], feature: str) -> int | None:
    """`feature`'s finalized level after the log's records: its last
    FEATURE_LEVEL_RECORD's level (a downgrade to 0 writes level 0), 0 when the log
    names metadata.version but never `feature` (never finalized), and None when
    the log names no feature at all (it does not reach back to the format)."""
    levels = {}
    for record in records:
        data = record.get("data")
        if record.get("type") == "FEATURE_LEVEL_RECORD" and isinstance(data, dict) and \
                isinstance(data.get("featureLevel"), int):
            levels[data.get("name")] = data["featureLevel"]
    if feature in levels:
        return levels[feature]
    return 0 if METADATA_VERSION in levels else None
