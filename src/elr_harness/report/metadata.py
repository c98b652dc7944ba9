"""The controller's metadata log turned into rows a person can follow.

Each partition record is shown with the partition's whole state after it and
the fields it changed, from core.metadata_records' fold (the one the scenario's
controller view uses too); broker records as events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from elr_harness.core.metadata_records import PARTITION_FIELDS as FOLDED_FIELDS
from elr_harness.core.metadata_records import fold_partitions, topic_names

BROKER_TYPES = (
    "REGISTER_BROKER_RECORD",
    "BROKER_REGISTRATION_CHANGE_RECORD",
    "FENCE_BROKER_RECORD",
    "UNFENCE_BROKER_RECORD",
    "UNREGISTER_BROKER_RECORD",
)

#: Partition fields shown, as (Kafka's JSON name, column title).
PARTITION_FIELDS = tuple(zip(FOLDED_FIELDS, ("leader", "epoch", "ISR", "ELR", "LastKnownELR"),
                             strict=True))


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
    """Rows for partition and broker records, in log order, with topic names resolved
    (the partition states come from core.metadata_records' one fold)."""
    topics = topic_names(records)
    steps = {id(step.record): step for step in fold_partitions(records, topics)}
    rows: list[MetadataRow] = []
    other: dict[str, int] = {}
    for record in records:
        rtype = str(record.get("type"))
        data = record.get("data") if isinstance(record.get("data"), dict) else {}
        step = steps.get(id(record))
        if step is not None:
            rows.append(MetadataRow(
                offset=record.get("offset"), timestamp_ms=record.get("timestamp_ms"),
                type=rtype, subject=f"{step.topic}-{step.partition}",
                values=step.state, changed=set(step.changed)))
        elif rtype in BROKER_TYPES:
            subject, event = _broker_event(rtype, data)
            rows.append(MetadataRow(
                offset=record.get("offset"), timestamp_ms=record.get("timestamp_ms"),
                type=rtype, subject=subject, event=event))
        else:
            other[rtype] = other.get(rtype, 0) + 1
    return DecodedMetadata(rows, topics, other, len(records))
