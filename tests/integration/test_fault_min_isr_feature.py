"""min-isr-change and feature-change against real Kafka (#33): the injector's change
is really made, the controller really clears ELR (KAFKA-16540; KIP-966 with the
feature off), and the restore really puts the old value back.

One cluster for the module: 1 controller, 3 brokers, ELR on (the default of the
Kafka under test), one partition with RF 3 and min ISR 2. ELR gets a member the
way KIP-966 says: two followers stopped one after the other, so the ISR shrinks
to the leader alone and the second follower stays eligible.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import ConfigResource

from elr_harness.cluster.admin_tools import ELR_FEATURE
from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.observe import ObservationError, PartitionState
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.wait import wait_until
from elr_harness.nemesis.faults import feature_change, min_isr_change, stop
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.workloads.recorder import HistoryRecorder

pytestmark = pytest.mark.integration

TOPIC = TopicConfig(name="minisr", partitions=1, replication_factor=3, min_insync_replicas=2)
#: Bounds of this test's waits on the observed state (a fenced broker leaves the
#: ISR within the broker session timeout, 6 s; a restarted one catches up in seconds).
SETTLE_S = 45.0
POLL_S = 0.3
#: How long a stale ELR is watched once the feature is at 0 with nothing changing.
STALE_ELR_WAIT_S = 10.0


@pytest.fixture(scope="module")
def rig(docker_client, tmp_path_factory):
    cluster = Cluster(ClusterConfig(name="it-minisr", controllers=1, brokers=3,
                                    subnet="10.213.91.0/24"), client=docker_client)
    history = tmp_path_factory.mktemp("minisr") / "history.jsonl"
    recorder = HistoryRecorder(history)
    try:
        cluster.up()
        cluster.create_topic(TOPIC)
        yield cluster, FaultInjector(cluster, recorder), history, recorder
    finally:
        recorder.close()
        cluster.down()


def _state(cluster: Cluster) -> PartitionState | None:
    observer = cluster.observer()
    try:
        (state,) = observer.describe([TOPIC.name])
        return state
    except ObservationError:
        return None
    finally:
        observer.close()


def _wait_state(cluster: Cluster, predicate, what: str) -> PartitionState:
    seen: list[PartitionState | None] = [None]

    def holds() -> bool:
        seen[0] = _state(cluster)
        return seen[0] is not None and predicate(seen[0])

    assert wait_until(holds, SETTLE_S, POLL_S), f"never {what}; last seen {seen[0]}"
    assert seen[0] is not None
    return seen[0]


def _elr_with_two_followers_stopped(cluster: Cluster, injector: FaultInjector
                                    ) -> tuple[PartitionState, list[str]]:
    """Stop one follower, then the other: the ISR is the leader alone and the
    follower stopped second is in ELR (it left the ISR while below min ISR)."""
    full = _wait_state(cluster, lambda s: s.leader >= 0 and len(s.isr) == 3, "a full ISR")
    first, second = sorted(b for b in full.isr if b != full.leader)
    names = [cluster.broker_by_id(b).spec.name for b in (first, second)]
    stop.stop(injector, names[0])
    _wait_state(cluster, lambda s: first not in s.isr and len(s.isr) == 2,
                f"{names[0]} out of the ISR")
    stop.stop(injector, names[1])
    state = _wait_state(cluster, lambda s: s.isr == (full.leader,) and bool(s.elr),
                        "the ISR at the leader alone with ELR not empty")
    assert state.elr == (second,), "only the follower that left below min ISR is eligible"
    return state, names


def _restart(cluster: Cluster, injector: FaultInjector, names: list[str]) -> None:
    for name in names:
        injector.start(name)
    _wait_state(cluster, lambda s: len(s.isr) == 3, "the ISR full again")


def _topic_min_isr(cluster: Cluster) -> str:
    """The topic's min.insync.replicas as DescribeConfigs answers it (librdkafka,
    from the host: not the tool the injector ran)."""
    admin = cluster.admin()
    resource = ConfigResource(ConfigResource.Type.TOPIC, TOPIC.name)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    return configs["min.insync.replicas"].value


def _records(cluster: Cluster, kind: str) -> list[dict]:
    """Records of `kind` in the controller's metadata log (Kafka's own decoder)."""
    return [r for r in cluster.decode_metadata_log(cluster.controllers[0])
            if r["type"] == kind]


def _fault_lines(path: Path, recorder: HistoryRecorder, kind: str) -> list[dict]:
    recorder.flush()
    return [e for e in map(json.loads, path.read_text().splitlines())
            if e["f"] == "fault" and e["fault"] == kind]


def _elr_again(cluster: Cluster, injector: FaultInjector, name: str) -> PartitionState:
    """Start the follower stopped second and stop it again: back in the ISR, then
    out of it while the ISR is below min ISR, so in ELR once more."""
    broker = next(n.spec.node_id for n in cluster.brokers if n.spec.name == name)
    injector.start(name)
    _wait_state(cluster, lambda s: broker in s.isr, f"{name} back in the ISR")
    stop.stop(injector, name)
    return _wait_state(cluster, lambda s: s.elr == (broker,), f"{name} in ELR again")


def test_min_isr_change_clears_elr_and_its_restore_puts_the_old_value_back(rig):
    cluster, injector, history, recorder = rig
    started = time.monotonic()
    state, stopped = _elr_with_two_followers_stopped(cluster, injector)
    clears = len(_records(cluster, "CLEAR_ELR_RECORD"))

    # The cluster default (the brokers' dynamic default, 1 unless set): ELR of
    # every topic is cleared, though this topic's own min ISR stays 2.
    default = min_isr_change.current(injector, None)
    assert default == 1
    min_isr_change.change(injector, None, 2, default)
    _wait_state(cluster, lambda s: not s.elr and s.isr == state.isr,
                "ELR cleared after the cluster default changed")
    assert min_isr_change.current(injector, None) == 2 and _topic_min_isr(cluster) == "2"
    records = _records(cluster, "CLEAR_ELR_RECORD")
    assert len(records) == clears + 1 and not records[-1]["data"].get("topicName")
    min_isr_change.restore(injector, None)
    assert min_isr_change.current(injector, None) == default
    # the restore is an update of the cluster default too: ELR cleared once more
    assert len(_records(cluster, "CLEAR_ELR_RECORD")) == clears + 2

    # The topic's own, raised to 3: the ISR (the leader alone) stays below min ISR,
    # so nothing but the change itself (KAFKA-16540's ClearElrRecord) empties ELR.
    state = _elr_again(cluster, injector, stopped[1])
    assert min_isr_change.current(injector, TOPIC.name) == 2
    min_isr_change.change(injector, TOPIC.name, 3, 2)
    after = _wait_state(cluster, lambda s: not s.elr, "ELR cleared after the topic's change")
    assert after.isr == state.isr and after.leader == state.leader
    assert _topic_min_isr(cluster) == "3"
    records = _records(cluster, "CLEAR_ELR_RECORD")
    assert len(records) == clears + 3 and records[-1]["data"].get("topicName") == TOPIC.name

    min_isr_change.restore(injector, TOPIC.name)
    assert _topic_min_isr(cluster) == "2" and min_isr_change.current(injector, TOPIC.name) == 2
    assert not _wait_state(cluster, lambda s: True, "described").elr
    assert injector.kept("min-isr-change", dict) == {}

    lines = [(e["type"], e["detail"]["topic"], e["detail"]["from"], e["detail"]["to"],
              e["detail"].get("restore", False), e["nodes"])
             for e in _fault_lines(history, recorder, "min-isr-change")]
    assert lines == [
        ("invoke", None, 1, 2, False, []), ("ok", None, 1, 2, False, []),
        ("invoke", None, 2, 1, True, []), ("ok", None, 2, 1, True, []),
        ("invoke", TOPIC.name, 2, 3, False, []), ("ok", TOPIC.name, 2, 3, False, []),
        ("invoke", TOPIC.name, 3, 2, True, []), ("ok", TOPIC.name, 3, 2, True, [])]
    _restart(cluster, injector, stopped)
    print(f"min-isr-change test: {time.monotonic() - started:.1f} s")


def _elr_levels(cluster: Cluster) -> list[int]:
    return [r["data"]["featureLevel"] for r in _records(cluster, "FEATURE_LEVEL_RECORD")
            if r["data"].get("name") == ELR_FEATURE]


def test_feature_change_turns_elr_off_and_its_restore_turns_it_on(rig):
    """With the feature at 0 the ISR shrinks below min ISR and nobody enters ELR
    (with it at 1 the follower stopped second does: the test above)."""
    cluster, injector, history, recorder = rig
    started = time.monotonic()
    full = _wait_state(cluster, lambda s: s.leader >= 0 and len(s.isr) == 3, "a full ISR")
    assert feature_change.level(injector, ELR_FEATURE) == 1
    feature_change.change(injector, ELR_FEATURE, 0, 1)
    assert feature_change.level(injector, ELR_FEATURE) == 0 and injector.protection_off
    assert _elr_levels(cluster)[-1] == 0

    followers = [cluster.broker_by_id(b).spec.name for b in sorted(full.isr) if b != full.leader]
    for name in followers:
        stop.stop(injector, name)
    alone = _wait_state(cluster, lambda s: s.isr == (full.leader,), "the leader alone in ISR")
    # a few more looks while it stays so: ELR never gets a member with the feature off
    looks = [alone, *(_wait_state(cluster, lambda s: True, "described") for _ in range(5))]
    assert all(s.isr == (full.leader,) and not s.elr and not s.last_known_elr for s in looks)

    feature_change.restore(injector, ELR_FEATURE)
    assert feature_change.level(injector, ELR_FEATURE) == 1 and not injector.protection_off
    assert _elr_levels(cluster)[-2:] == [0, 1]

    lines = [(e["type"], e["detail"]["feature"], e["detail"]["from"], e["detail"]["to"],
              e["detail"].get("restore", False))
             for e in _fault_lines(history, recorder, "feature-change")]
    assert lines == [("invoke", ELR_FEATURE, 1, 0, False), ("ok", ELR_FEATURE, 1, 0, False),
                     ("invoke", ELR_FEATURE, 0, 1, True), ("ok", ELR_FEATURE, 0, 1, True)]
    _restart(cluster, injector, followers)
    print(f"feature-change test: {time.monotonic() - started:.1f} s")


def test_turning_elr_off_keeps_the_elr_until_the_partition_next_changes(rig):
    """KIP-966 on a downgrade: the ELR fields "will be removed on the next partition
    change", not at once. The controller writes only a FeatureLevelRecord, so the
    stale member stays while nothing changes; the partition's next change (the
    follower stopped first back in the ISR) removes ELR and last known ELR. The
    checker's elr-while-disabled judges exactly this (docs/CHECKING.md)."""
    cluster, injector, _, _ = rig
    state, stopped = _elr_with_two_followers_stopped(cluster, injector)
    try:
        feature_change.change(injector, ELR_FEATURE, 0, 1)
        assert feature_change.level(injector, ELR_FEATURE) == 0
        time.sleep(STALE_ELR_WAIT_S)
        kept = _state(cluster)
        assert kept is not None and (kept.isr, kept.elr) == (state.isr, state.elr), kept
        injector.start(stopped[0])
        changed = _wait_state(cluster, lambda s: len(s.isr) == 2,
                              f"{stopped[0]} back in the ISR")
        assert (changed.elr, changed.last_known_elr) == ((), ()), changed
    finally:
        feature_change.restore(injector, ELR_FEATURE)
        _restart(cluster, injector, [n for n in stopped if n in injector.down])
