"""Fault pairing (FORMATS.md) and decoding of the controller metadata log."""

from __future__ import annotations

from elr_harness.report.faults import FaultEvent, pair_faults
from elr_harness.report.metadata import decode_metadata


def ev(i: int, t: float, kind: str, nodes: list[str], typ: str = "ok", **detail) -> FaultEvent:
    return FaultEvent(i, t, kind, tuple(nodes), typ, detail)


def test_each_fault_ends_at_its_opposite_on_the_same_nodes() -> None:
    bands = pair_faults([
        ev(0, 1, "partition", ["broker-2"], step="T0"),
        ev(1, 2, "kill", ["broker-1", "broker-3"]),
        ev(2, 3, "pause", ["broker-2"]),
        ev(3, 4, "start", ["broker-1"]),           # half of the kill
        ev(4, 5, "heal", ["broker-2"]),
        ev(5, 6, "start", ["broker-3"]),           # the other half
        ev(6, 7, "stop", ["broker-1"], "fail"),    # certainly did not happen
        ev(7, 8, "page-cache-loss", ["broker-1"], "info"),
    ])
    by_kind = {b.kind: b for b in bands}
    assert set(by_kind) == {"partition", "kill", "pause", "page-cache-loss"}
    assert (by_kind["partition"].end_s, by_kind["partition"].ended_by) == (5, "heal broker-2")
    assert by_kind["partition"].label == "T0 partition broker-2"
    assert by_kind["kill"].end_s == 6
    assert by_kind["pause"].end_s is None  # never resumed: drawn to the end
    assert by_kind["page-cache-loss"].uncertain and by_kind["page-cache-loss"].end_s is None


def test_heal_without_nodes_ends_every_partition() -> None:
    bands = pair_faults([
        ev(0, 1, "partition", ["broker-1"]), ev(1, 2, "partition", ["broker-2"]),
        ev(2, 3, "heal", []), ev(3, 4, "custom-fault", ["broker-1"]),
    ])
    assert [b.end_s for b in bands] == [3, 3, 4]
    assert not bands[2].lasting


def test_metadata_change_records_keep_unchanged_fields_and_resolve_topics() -> None:
    records = [
        {"offset": 0, "type": "TOPIC_RECORD", "data": {"name": "orders", "topicId": "AAA"}},
        {"offset": 1, "type": "PARTITION_RECORD",
         "data": {"topicId": "AAA", "partitionId": 0, "leader": 1, "leaderEpoch": 0,
                  "isr": [1, 2, 3], "eligibleLeaderReplicas": [], "lastKnownElr": []}},
        {"offset": 2, "type": "PARTITION_CHANGE_RECORD",
         "data": {"topicId": "AAA", "partitionId": 0, "isr": [1], "leader": -2,
                  "eligibleLeaderReplicas": [3]}},
        {"offset": 3, "type": "FENCE_BROKER_RECORD", "data": {"id": 1, "epoch": 9}},
        {"offset": 4, "type": "BROKER_REGISTRATION_CHANGE_RECORD",
         "data": {"brokerId": 1, "brokerEpoch": 9, "fenced": -1}},
        {"offset": 5, "type": "NO_OP_RECORD", "data": {}},
        {"offset": 6, "type": "PARTITION_CHANGE_RECORD",
         "data": {"topicId": "BBB", "partitionId": 2, "leader": 4}},
    ]
    decoded = decode_metadata(records)
    first, change, fence, unfence, unknown_topic = decoded.rows
    assert first.subject == "orders-0" and "isr" in first.changed
    assert change.values == {"leader": 1, "leaderEpoch": 0, "isr": [1],
                             "eligibleLeaderReplicas": [3], "lastKnownElr": []}
    assert change.changed == {"isr", "eligibleLeaderReplicas"}  # leader -2: no change
    assert (fence.subject, fence.event) == ("broker 1", "fenced (epoch 9)")
    assert "unfenced" in unfence.event
    assert unknown_topic.subject == "BBB-2"
    assert decoded.other_types == {"NO_OP_RECORD": 1, "TOPIC_RECORD": 1}
