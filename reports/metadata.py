"""The controller's metadata log turned into rows a person can follow.

Change records carry only what changed (an absent field means "unchanged"), so
the decoder keeps each partition's full state and shows the state after every
record, marking which fields the record changed. Topic ids are resolved to
names through TOPIC_RECORD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PARTITION_TYPES = ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
BROKER_TYPES = (
    "REGISTER_BROKER_RECORD",
    "BROKER_REGISTRATION_CHANGE_RECORD",
    "FENCE_BROKER_RECORD",
    "UNFENCE_BROKER_RECORD",
    "UNREGISTER_BROKER_RECORD",
)

#: Partition fields shown, as (Kafka's JSON name, column title).
PARTITION_FIELDS = (
    ("leader", "leader"),
    ("leaderEpoch", "epoch"),
    ("isr", "ISR"),
    ("eligibleLeaderReplicas", "ELR"),
    ("lastKnownElr", "LastKnownELR"),
)

#: PartitionChangeRecord's default for `leader`: Kafka writes -2 for "no change".
NO_LEADER_CHANGE = -2


@dataclass
class MetadataRow:
    """One record of interest, with the partition state after it (or a broker event)."""

    offset: Any
    timestamp_ms: Any
    type: str
    subject: str
    values: dict[str, Any] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    event: str = ""


@dataclass
class DecodedMetadata:
    rows: list[MetadataRow]
    topics: dict[str, str]
    other_types: dict[str, int]
    total_records: int


def _broker_event(rtype: str, data: dict[str, Any]) -> tuple[str, str]:
    broker = data.get("brokerId", data.get("id"))
    epoch = data.get("brokerEpoch", data.get("epoch"))
    subject = f"broker {broker}"
    if rtype == "REGISTER_BROKER_RECORD":
        fenced = data.get("fenced")
        state = "fenced" if fenced else "unfenced" if fenced is False else ""
        return subject, f"registered (epoch {epoch}) {state}".strip()
    if rtype == "FENCE_BROKER_RECORD":
        return subject, f"fenced (epoch {epoch})"
    if rtype == "UNFENCE_BROKER_RECORD":
        return subject, f"unfenced (epoch {epoch})"
    if rtype == "UNREGISTER_BROKER_RECORD":
        return subject, f"unregistered (epoch {epoch})"
    # BrokerRegistrationChangeRecord: fenced is 1 fenced, -1 unfenced, 0 unchanged.
    parts = []
    fenced = data.get("fenced")
    if fenced in (1, True):
        parts.append("fenced")
    elif fenced in (-1, False):
        parts.append("unfenced")
    shutdown = data.get("inControlledShutdown")
    if shutdown in (1, True):
        parts.append("in controlled shutdown")
    return subject, f"registration changed (epoch {epoch}): {', '.join(parts) or 'no state change'}"


def decode_metadata(records: list[dict[str, Any]]) -> DecodedMetadata:
    """Rows for partition and broker records, in log order, with topic names resolved."""
    topics: dict[str, str] = {}
    for record in records:
        data = record.get("data")
        if record.get("type") == "TOPIC_RECORD" and isinstance(data, dict):
            topics[str(data.get("topicId"))] = str(data.get("name"))
    rows: list[MetadataRow] = []
    states: dict[tuple[str, Any], dict[str, Any]] = {}
    other: dict[str, int] = {}
    for record in records:
        rtype = str(record.get("type"))
        data = record.get("data")
        if not isinstance(data, dict):
            data = {}
        if rtype in PARTITION_TYPES:
            topic_id = str(data.get("topicId"))
            topic = topics.get(topic_id, topic_id)
            key = (topic, data.get("partitionId"))
            state = states.setdefault(key, {})
            changed = set()
            for name, _title in PARTITION_FIELDS:
                if name not in data:
                    continue
                value = data[name]
                if name == "leader" and value == NO_LEADER_CHANGE:
                    continue
                if rtype == "PARTITION_RECORD" or state.get(name) != value:
                    changed.add(name)
                state[name] = value
            rows.append(MetadataRow(
                offset=record.get("offset"),
                timestamp_ms=record.get("timestamp_ms"),
                type=rtype,
                subject=f"{topic}-{key[1]}",
                values=dict(state),
                changed=changed,
            ))
        elif rtype in BROKER_TYPES:
            subject, event = _broker_event(rtype, data)
            rows.append(MetadataRow(
                offset=record.get("offset"),
                timestamp_ms=record.get("timestamp_ms"),
                type=rtype,
                subject=subject,
                event=event,
            ))
        else:
            other[rtype] = other.get(rtype, 0) + 1
    return DecodedMetadata(rows, topics, other, len(records))
