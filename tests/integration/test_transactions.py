"""A cluster built for transactions (contract v4), on real Kafka: the internal
topics come up with RF 3 and min ISR 2 and are observed like the test topics,
transaction.version is finalized as asked, FindCoordinator names the leader of
the transactional.id's __transaction_state partition, and the observer sees an
open transaction hold the LSO at its first offset until it commits."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from elr_harness.cluster import kraft
from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.kafka_wire import WireConnection
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, TopicConfig

pytestmark = pytest.mark.integration

TOPIC = TopicConfig(name="it-txn", partitions=1, replication_factor=3, min_insync_replicas=2)
TXN_ID = "it-txn-producer"


@pytest.fixture(scope="module")
def rig(docker_client):
    cluster = Cluster(ClusterConfig(name="it-txn", controllers=1, brokers=3,
                                    subnet="10.213.95.0/24", guard_internal_topics=True,
                                    transaction_version=2), client=docker_client)
    try:
        cluster.up()
        cluster.create_topic(TOPIC)
        observer = cluster.observer()
        yield cluster, observer
        observer.close()
    finally:
        cluster.down()


def _observed(observer, predicate, what: str, timeout_s: float = 30.0
              ) -> dict[tuple[str, int], PartitionState]:
    """The first description (one every 0.25 s, as a run's observer) that satisfies
    `predicate`; the last one is shown when none does."""
    deadline = time.monotonic() + timeout_s
    states: dict[tuple[str, int], PartitionState] = {}
    while time.monotonic() < deadline:
        states = {(s.topic, s.partition): s for s in observer.describe([TOPIC.name])}
        if predicate(states):
            return states
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}; last: {states}")


def test_the_internal_topics_are_observed_with_rf_3_and_min_isr_2(rig) -> None:
    cluster, observer = rig
    states = _observed(observer, lambda s: all(
        (topic, p) in s for topic in kraft.INTERNAL_TOPICS for p in range(3)),
        "every internal partition")
    for topic in kraft.INTERNAL_TOPICS:
        for p in range(3):
            line = states[(topic, p)].as_observation()
            assert len(line["replicas"]) == 3 and sorted(line["isr"]) == sorted(
                line["replicas"]), line
            assert line["min_isr"] == 2 and line["elr"] is not None, line
            assert "last_stable_offset" not in line, "an LSO only for data partitions"
    connection = WireConnection(cluster.bootstrap[0], 5.0)
    try:
        assert connection.features().level("transaction.version") == 2
    finally:
        connection.close()


def _java_hash(text: str) -> int:
    """Java's String.hashCode, as Kafka maps a transactional.id to its partition."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_an_open_transaction_holds_the_lso_until_it_commits(rig) -> None:
    cluster, observer = rig
    producer = Producer({"bootstrap.servers": ",".join(cluster.bootstrap),
                         "transactional.id": TXN_ID, "transaction.timeout.ms": 30000})
    producer.init_transactions(30)
    # the coordinator FindCoordinator names leads the id's __transaction_state partition
    # (Kafka's Utils.abs(hashCode) % partitions)
    hashed = _java_hash(TXN_ID)
    slot = (0 if hashed == -(1 << 31) else abs(hashed)) % kraft.INTERNAL_TOPIC_PARTITIONS
    states = _observed(observer, lambda s: (kraft.TRANSACTION_STATE_TOPIC, slot) in s,
                       "the coordinator's partition")
    assert cluster.transaction_coordinator(TXN_ID) == \
        states[(kraft.TRANSACTION_STATE_TOPIC, slot)].leader
    producer.begin_transaction()
    for value in (b"a", b"b", b"c"):
        producer.produce(TOPIC.name, value, partition=0)
    assert producer.flush(30) == 0
    key = (TOPIC.name, 0)
    held = _observed(observer, lambda s: s[key].high_watermark == 3
                     and s[key].open_txn_offsets == (0,), "the open transaction")[key]
    assert held.last_stable_offset == 0, "the LSO waits at the open transaction's start"
    producer.commit_transaction(30)
    # the COMMIT marker takes offset 3: the high watermark is 4 and the LSO reaches it
    done = _observed(observer, lambda s: s[key].last_stable_offset == 4,
                     "the LSO after the commit")[key].as_observation()
    assert (done["high_watermark"], done["open_txn_offsets"]) == (4, []), done
