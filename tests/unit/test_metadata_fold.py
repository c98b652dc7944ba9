"""One fold of the controller's metadata log serves the scenario's controller view
(cluster.metadata_log.partition_states) and the report's table (reports.metadata)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elr_harness.core.metadata_records import finalized_level, fold_partitions, partition_states
from elr_harness.report.metadata import decode_metadata

#: A controller's log of a real ELR-on unclean-last-replica run, per Kafka release
#: (4.4.0's decoded by the log dump tool's new home, org.apache.kafka.tools).
REAL_LOGS = sorted((Path(__file__).parent / "fixtures").glob(
    "kafka-*/unclean-last-replica-elr-on.metadata-log.json"))


def _topic(name="t", topic_id="T1"):
    return {"type": "TOPIC_RECORD", "data": {"name": name, "topicId": topic_id}}


def _partition(**fields):
    return {"type": "PARTITION_RECORD", "data": {"topicId": "T1", "partitionId": 0, **fields}}


def _change(**fields):
    return {"type": "PARTITION_CHANGE_RECORD",
            "data": {"topicId": "T1", "partitionId": 0, **fields}}


def test_a_named_leader_bumps_the_epoch_and_absent_fields_stay():
    """Kafka's PartitionRegistration.merge: a change record naming a leader (even the
    same one) is a new epoch; -2 or no leader field is no change."""
    records = [_topic(), _partition(leader=1, leaderEpoch=4, isr=[1, 2, 3],
                                    eligibleLeaderReplicas=[], lastKnownElr=[]),
               _change(isr=[1, 2]), _change(leader=-2, isr=[1]),
               _change(leader=2, isr=[2], eligibleLeaderReplicas=[1]), _change(leader=2)]
    steps = list(fold_partitions(records))
    assert [s.state["leaderEpoch"] for s in steps] == [4, 4, 4, 5, 6]
    assert [s.state["leader"] for s in steps] == [1, 1, 1, 2, 2]
    assert steps[3].changed == {"leader", "leaderEpoch", "isr", "eligibleLeaderReplicas"}
    assert steps[4].changed == {"leaderEpoch"}
    assert partition_states(records) == {("t", 0): {
        "leader": 2, "leader_epoch": 6, "isr": [2], "elr": [1], "last_known_elr": []}}


def test_a_partition_of_an_unnamed_topic_is_left_out_of_the_view():
    records = [_change(leader=3)]
    assert partition_states(records) == {}
    assert [r.subject for r in decode_metadata(records).rows] == ["T1-0"]


def test_a_log_of_each_release_is_there():
    assert [p.parent.name for p in REAL_LOGS] == ["kafka-4.1.1", "kafka-4.4.0"]


@pytest.mark.parametrize("real_log", REAL_LOGS, ids=lambda p: p.parent.name)
def test_the_view_and_the_report_agree_on_a_real_log(real_log):
    records = json.loads(real_log.read_text())
    view = partition_states(records)
    assert view, "the real log names partitions"
    last_rows = {row.subject: row.values for row in decode_metadata(records).rows
                 if not row.event}
    for (topic, partition), state in view.items():
        row = last_rows[f"{topic}-{partition}"]
        assert (state["leader"], state["leader_epoch"], state["isr"], state["elr"],
                state["last_known_elr"]) == (
            row["leader"], row["leaderEpoch"], row["isr"], row["eligibleLeaderReplicas"],
            row.get("lastKnownElr", []))
    # on the way, the scenario emptied the ISR into the ELR and left partitions leaderless
    steps = list(fold_partitions(records))
    assert any(s.state.get("eligibleLeaderReplicas") for s in steps)
    assert any(s.state.get("leader") == -1 for s in steps)


def _feature(name: str, level: int) -> dict:
    return {"type": "FEATURE_LEVEL_RECORD", "data": {"name": name, "featureLevel": level}}


ELR = "eligible.leader.replicas.version"


def test_the_elr_features_level_is_its_last_record():
    """A downgrade writes level 0 and an upgrade its level back; the last one counts."""
    bootstrap = [_feature("metadata.version", 27), _feature(ELR, 1)]
    assert finalized_level(bootstrap, ELR) == 1
    assert finalized_level([*bootstrap, _topic(), _feature(ELR, 0)], ELR) == 0
    assert finalized_level([*bootstrap, _feature(ELR, 0), _change(leader=2),
                            _feature(ELR, 1)], ELR) == 1


def test_a_feature_the_log_never_names_is_at_0_only_when_the_log_reaches_its_format():
    """No record of it after the bootstrap's metadata.version: never finalized, level 0.
    No feature record at all: the log does not reach back to the format; unknown."""
    assert finalized_level([_feature("metadata.version", 27), _topic()], ELR) == 0
    assert finalized_level([_topic(), _partition(leader=1, isr=[1])], ELR) is None
    assert finalized_level([{"type": "FEATURE_LEVEL_RECORD", "data": {"name": ELR}}],
                           ELR) is None, "a record without its level says nothing"


@pytest.mark.parametrize("real_log", REAL_LOGS, ids=lambda p: p.parent.name)
def test_a_real_elr_on_log_says_level_1(real_log):
    assert finalized_level(json.loads(real_log.read_text()), ELR) == 1


def test_the_controller_view_carries_the_level_its_log_says(monkeypatch):
    """What a wait on the controller reads (`read = "controller"`): its partitions and
    the ELR feature level, so `elr on` / `elr off` hold or fail on its word."""
    from types import SimpleNamespace

    from elr_harness.cluster.cluster import Cluster

    cluster = Cluster.__new__(Cluster)  # no engine: the log is handed in
    cluster.nodes = {"controller-1": SimpleNamespace(spec=SimpleNamespace(
        node_id=1001, name="controller-1", role=None))}
    monkeypatch.setattr(Cluster, "controllers", property(lambda self: list(self.nodes.values())))
    monkeypatch.setattr(Cluster, "quorum_leader", lambda self: 1001)
    records = [_feature("metadata.version", 27), _feature(ELR, 1), _topic(),
               _partition(leader=1, leaderEpoch=0, isr=[1, 2], eligibleLeaderReplicas=[3])]
    monkeypatch.setattr(Cluster, "decode_metadata_log", lambda self, node: records)
    [view] = cluster.controller_view("t")
    assert (view.leader, view.isr, view.elr, view.elr_feature) == (1, (1, 2), (3,), 1)
    records.append(_feature(ELR, 0))
    [view] = cluster.controller_view("t")
    assert view.elr_feature == 0 and view.as_observation()["elr_feature"] == 0
