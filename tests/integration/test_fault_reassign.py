"""The `reassign` fault against real Kafka: the replicas really move and the ISR
catches up; one a stopped follower holds back is really cancelled at heal.

One module-scoped cluster (1 controller, 4 brokers, ELR on) with a topic of
replication factor 3 and min ISR 2 holding acks=all records, so an added
replica has data to fetch before it may join the ISR.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.observe import ObservationError, PartitionObserver, PartitionState
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.nemesis.faults import reassign, stop
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.workloads.recorder import HistoryRecorder

pytestmark = pytest.mark.integration

TOPIC = TopicConfig(name="moved", partitions=1, replication_factor=3, min_insync_replicas=2)
RECORDS = 2000
WAIT_S = 60.0


class Watch:
    """The partition as the harness's observer describes it, every observation kept,
    so the test can also hold Kafka to KIP-966: ELR never names a non-replica."""

    def __init__(self, observer: PartitionObserver) -> None:
        self.observer = observer
        self.seen: list[PartitionState] = []

    def now(self) -> PartitionState:
        (state,) = self.observer.describe([TOPIC.name])
        self.seen.append(state)
        return state

    def until(self, what: str, ok: Callable[[PartitionState], bool]) -> PartitionState:
        deadline = time.monotonic() + WAIT_S
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.now()
            except ObservationError:
                last = None
            if last is not None and ok(last):
                return last
            time.sleep(0.3)
        raise AssertionError(f"never {what} within {WAIT_S:.0f} s; last seen {last}")

    def elr_outside_replicas(self) -> list[PartitionState]:
        return [s for s in self.seen
                if not set(s.elr or ()) | set(s.last_known_elr or ()) <= set(s.replicas)]


@pytest.fixture(scope="module")
def rig(docker_client, tmp_path_factory):
    cluster = Cluster(ClusterConfig(name="it-reassign", controllers=1, brokers=4,
                                    subnet="10.213.92.0/24"), client=docker_client)
    history = tmp_path_factory.mktemp("reassign") / "history.jsonl"
    recorder = HistoryRecorder(history)
    observer = None
    try:
        cluster.up()
        cluster.create_topic(TOPIC)
        _produce(cluster, RECORDS)
        observer = cluster.observer()
        yield cluster, FaultInjector(cluster, recorder), Watch(observer), history, recorder
    finally:
        if observer is not None:
            observer.close()
        recorder.close()
        cluster.down()


def _produce(cluster: Cluster, count: int) -> None:
    producer = Producer({"bootstrap.servers": ",".join(cluster.bootstrap), "acks": "all",
                         "log_level": 0})
    delivered = []
    for value in range(count):
        producer.produce(TOPIC.name, str(value).encode(), partition=0,
                         on_delivery=lambda err, _msg: delivered.append(err is None))
    assert producer.flush(60) == 0
    assert delivered.count(True) == count


def _fault_lines(path: Path, recorder: HistoryRecorder) -> list[dict]:
    recorder.flush()
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["f"] == "fault"]


def test_adding_then_removing_a_replica_moves_it_and_the_isr_catches_up(rig) -> None:
    cluster, injector, watch, history, recorder = rig
    before = watch.until("led with a full ISR", lambda s: s.leader >= 0 and len(s.isr) == 3)
    original = list(before.replicas)
    (spare,) = {n.spec.node_id for n in cluster.brokers} - set(original)
    grown = [*original, spare]
    reassign.start(injector, TOPIC.name, 0, original, grown, detail={"change": "add"})
    state = watch.until(f"replicas {grown} all in the ISR",
                        lambda s: list(s.replicas) == grown and set(s.isr) == set(grown))
    assert (state.high_watermark or 0) >= RECORDS
    assert reassign.end(injector, TOPIC.name, 0)["outcome"] == "completed"
    assert list(watch.now().replicas) == grown, "a completed reassignment is left in force"

    removed = grown[1]
    shrunk = [b for b in grown if b != removed]
    reassign.start(injector, TOPIC.name, 0, grown, shrunk, detail={"change": "remove"})
    state = watch.until(f"replicas {shrunk}, ISR without {removed}",
                        lambda s: list(s.replicas) == shrunk and set(s.isr) == set(shrunk))
    assert removed not in (state.elr or ()) and removed not in (state.last_known_elr or ())
    end = reassign.end(injector, TOPIC.name, 0)
    assert (end["outcome"], end["restored"]) == ("completed", False)
    assert watch.elr_outside_replicas() == []

    lines = _fault_lines(history, recorder)
    names = sorted(cluster.broker_by_id(b).spec.name for b in grown)
    assert [(e["type"], e["fault"], e["nodes"]) for e in lines] == [
        (t, kind, names) for kind in ("reassign", "reassign-end") for t in ("invoke", "ok")] * 2
    oks = [e["detail"] for e in lines if e["type"] == "ok"]
    assert [(d["from"], d["to"], d.get("outcome")) for d in oks] == [
        (original, grown, None), (original, grown, "completed"),
        (grown, shrunk, None), (grown, shrunk, "completed")]
    assert [d["change"] for d in oks] == ["add", "add", "remove", "remove"]
    assert all(d["topic"] == TOPIC.name and d["partition"] == 0 for d in oks)


def test_a_reassignment_a_stopped_follower_holds_back_is_cancelled_at_heal(rig) -> None:
    cluster, injector, watch, history, recorder = rig
    before = watch.until("led with a full ISR", lambda s: s.leader >= 0 and len(s.isr) == 3)
    original = list(before.replicas)
    removed, stopped = [b for b in original if b != before.leader]
    target = [b for b in original if b != removed]
    stopped_name = cluster.broker_by_id(stopped).spec.name
    stop.stop(injector, stopped_name)
    watch.until(f"{stopped} out of the ISR", lambda s: stopped not in s.isr)
    reassign.start(injector, TOPIC.name, 0, original, target, restore=True,
                      detail={"change": "remove"})
    # Under way: Kafka holds the replica it is removing (last) until every target
    # replica is in the ISR, which the stopped one cannot be.
    merged = [*target, removed]
    assert merged != original, "the removed replica was not the last one"
    watch.until(f"replicas {merged} (the reassignment under way)",
                lambda s: list(s.replicas) == merged)
    # held: what is asserted is that nothing changes for a while (no condition ends it)
    time.sleep(3)
    assert list(watch.now().replicas) == merged and stopped not in watch.now().isr

    injector.heal_all()
    after = watch.until("all three replicas back in the ISR",
                        lambda s: sorted(s.isr) == sorted(original) and s.leader >= 0)
    assert sorted(after.replicas) == sorted(original), "the assignment is the original one"
    # Kafka's revert keeps the replicas it was removing, after the others
    assert list(after.replicas) == merged
    assert watch.elr_outside_replicas() == []

    lines = [e for e in _fault_lines(history, recorder) if e["type"] == "ok"]
    index = max(i for i, e in enumerate(lines) if e["fault"] == "reassign")
    tail = [(e["fault"], e["nodes"]) for e in lines[index:] if e["fault"] != "heal"]
    names = sorted(cluster.broker_by_id(b).spec.name for b in original)
    assert tail == [("reassign", names), ("reassign-end", names), ("start", [stopped_name])]
    end = lines[index + 1 + [e["fault"] for e in lines[index + 1:]].index("reassign-end")]
    assert end["detail"] == {"topic": TOPIC.name, "partition": 0, "from": original,
                             "to": target, "change": "remove", "step": "final-heal",
                             "outcome": "cancelled", "restored": False}
