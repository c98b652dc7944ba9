"""A real KRaft cluster: up, topic, produce/consume, ELR on and off, metadata log."""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import replace

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from elr_harness.cluster import kraft
from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.docker_backend import labels
from elr_harness.cluster.kafka_wire import WireConnection
from elr_harness.cluster.metadata_log import DUMP_LOG_CLASSES
from elr_harness.cluster.observe import ObservationError
from elr_harness.cluster.replica_logs import dump_segments, parse_replica_dump, read_segments
from elr_harness.core.config import ClusterConfig, TopicConfig

pytestmark = pytest.mark.integration

TOPIC = TopicConfig(name="it-topic", partitions=1, replication_factor=3, min_insync_replicas=2)


def _cluster(docker_client, elr: bool) -> Cluster:
    config = ClusterConfig(name=f"it-elr-{'on' if elr else 'off'}", elr=elr,
                           subnet="10.213.78.0/24" if elr else "10.213.79.0/24")
    return Cluster(config, log=print, client=docker_client)


def _wait_for(predicate, timeout_s: float = 60.0, what: str = "condition", show=None):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}"
                         + (f"; now: {show()}" if show else ""))


def _produce_and_read_back(cluster: Cluster, values: list[int]) -> list[int]:
    producer = Producer({"bootstrap.servers": ",".join(cluster.bootstrap), "acks": "all"})
    offsets: dict[int, int] = {}

    def delivered(err, msg):
        assert err is None, err
        offsets[int(msg.value())] = msg.offset()

    for v in values:
        producer.produce(TOPIC.name, str(v).encode(), partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert sorted(offsets) == sorted(values)
    consumer = Consumer({"bootstrap.servers": ",".join(cluster.bootstrap),
                         "group.id": "it", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC.name, 0, 0)])
    got: list[int] = []
    deadline = time.monotonic() + 30
    while len(got) < len(values) and time.monotonic() < deadline:
        for msg in consumer.consume(100, timeout=1):
            assert msg.error() is None, msg.error()
            got.append(int(msg.value()))
            assert offsets[int(msg.value())] == msg.offset()
    consumer.close()
    return got


def _isr_shrinks_to_leader(cluster: Cluster):
    """Stop (SIGTERM) the followers of partition 0 one after the other, as KIP-966's
    T0 and T1 do, waiting each time for the ISR to shrink."""
    state = cluster.describe_all()[0]
    followers = [b for b in state.isr if b != state.leader]
    remaining = list(state.isr)
    for broker_id in followers:
        assert cluster.broker_by_id(broker_id).signal_kafka("TERM")
        remaining.remove(broker_id)

        expected = sorted(remaining)

        def shrunk(expected=expected):
            s = [p for p in cluster.describe_all() if p.topic == TOPIC.name][0]
            return s if sorted(s.isr) == expected else None

        state = _wait_for(shrunk, 60, f"ISR to shrink to {remaining}", show=cluster.describe_all)
    return state.leader, followers, state


def _high_watermark_is_the_leaders(cluster: Cluster, acked: int) -> None:
    """The observer's high watermark is what the leader says over ListOffsets, and a
    request carrying another leader epoch (a stale leader's view) gets no number."""
    state, = cluster.observer(2.0).describe([TOPIC.name])
    assert state.high_watermark == acked, state
    leader = cluster.broker_by_id(state.leader)
    connection = WireConnection(f"{leader.spec.address}:{cluster.config.broker_port}", 2.0)
    try:
        stale = connection.latest_offsets({(TOPIC.name, 0): state.leader_epoch + 1})
        current = connection.latest_offsets({(TOPIC.name, 0): state.leader_epoch})
    finally:
        connection.close()
    assert stale[(TOPIC.name, 0)][0] != 0 and current[(TOPIC.name, 0)] == (0, acked)
    assert cluster.unfenced_brokers() == {1, 2, 3}


def _python_reads_what_kafka_dumps(cluster: Cluster, acked: int) -> None:
    """The collector's segment reader (cluster/record_batches.py) and Kafka's own
    DumpLogSegments, on the same real segment files of every broker, give the same
    replica lines: every acked record, in the batches the producer made."""
    for broker in cluster.brokers:
        listing = broker.exec(f"ls {cluster.config.log_dir}/{TOPIC.name}-*/*.log")
        paths = sorted(listing.output.split())
        assert listing.ok and paths, listing.output
        by_kafka = parse_replica_dump(dump_segments(
            broker, paths, cluster.tool_class(DUMP_LOG_CLASSES), 120))
        by_python = read_segments((path, broker.read_file(path)) for path in paths)
        assert by_python == by_kafka, broker.spec.name
        (log,) = by_python.values()
        assert sorted(r[1] for r in log.records) == list(range(1, acked + 1))


#: Kafka's config tool, by release (it left the Scala `kafka.admin` for Java's tools).
CONFIG_COMMAND = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")


def _alter_cluster_default_min_isr(cluster: Cluster, value: int) -> None:
    """Set the cluster-wide dynamic default of min.insync.replicas with Kafka's own
    tool on a broker node (librdkafka takes no default broker resource; with ELR on,
    Kafka refuses to delete it, so it is set back rather than removed)."""
    broker = cluster.brokers[0]
    change = ["--add-config", f"min.insync.replicas={value}"]
    result = broker.exec(
        kraft.tool_command("256m", cluster.distribution.main_class(CONFIG_COMMAND),
                           "--bootstrap-server",
                           f"{broker.spec.address}:{cluster.config.broker_port}",
                           "--entity-type", "brokers", "--entity-default", "--alter", *change),
        timeout_s=120)
    assert result.ok, result.output[-500:]


def _settings_are_observed(cluster: Cluster, elr: bool) -> None:
    """Real observations carry the contract's min_isr (the topic's effective value:
    its own setting, and for a topic without one the cluster default, followed when
    it changes), replicas (the assignment) and elr_feature (the finalized level)."""
    admin = AdminClient({"bootstrap.servers": ",".join(cluster.bootstrap)})
    assigned = admin.list_topics(TOPIC.name, timeout=10).topics[TOPIC.name].partitions[0]
    observer = cluster.observer(2.0)
    default_topic = "it-default-min-isr"
    try:
        state, = observer.describe([TOPIC.name])
        line = state.as_observation()
        assert line["min_isr"] == TOPIC.min_insync_replicas, line
        assert line["replicas"] == list(assigned.replicas) and len(line["replicas"]) == 3, line
        # ELR off: formatted at level 0, which KRaft leaves out of the finalized features
        assert line["elr_feature"] == (1 if elr else 0), line

        admin.create_topics([NewTopic(default_topic, 1, 3)])[default_topic].result(60)

        def described() -> bool:
            try:
                return len(observer.describe([default_topic])) == 1
            except ObservationError:  # not in this broker's metadata yet
                return False

        _wait_for(described, 60, "the new topic")

        def topic_min_isr() -> int | None:
            """The new topic's min ISR as Kafka's config answer gives it; None while
            the broker AdminClient asks does not know the topic yet (the observer's
            broker may know it first: a loaded CI machine once failed here)."""
            resource = ConfigResource(ResourceType.TOPIC, default_topic)
            (answer,) = admin.describe_configs([resource]).values()
            try:
                return int(answer.result(30)["min.insync.replicas"].value)
            except KafkaException as err:
                if err.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise
                return None

        expected = _wait_for(topic_min_isr, 60, "the new topic's config")
        both = [TOPIC.name, default_topic]

        def observed() -> dict[str, int | None]:
            return {s.topic: s.min_isr for s in observer.describe(both)}

        assert observed() == {TOPIC.name: 2, default_topic: expected}
        _alter_cluster_default_min_isr(cluster, 3)
        _wait_for(lambda: observed() == {TOPIC.name: 2, default_topic: 3}, 30,
                  "the cluster default in effect for a topic without its own", show=observed)
        _alter_cluster_default_min_isr(cluster, expected)
        _wait_for(lambda: observed() == {TOPIC.name: 2, default_topic: expected}, 30,
                  "the default back", show=observed)
        admin.delete_topics([default_topic])[default_topic].result(60)
    finally:
        observer.close()


@pytest.mark.parametrize("elr", [True, False], ids=["elr-on", "elr-off"])
def test_cluster_elr(docker_client, elr, tmp_path):
    cluster = _cluster(docker_client, elr)
    try:
        cluster.up()
        statuses = cluster.node_status()
        assert [s.spec.role.value for s in statuses] == ["controller"] * 3 + ["broker"] * 3
        assert all(s.kafka_pid for s in statuses)
        assert cluster.quorum_leader() in {1001, 1002, 1003}
        # the controllers' quorum-state files name the leader the quorum tool reports
        assert cluster.quorum_state_leader() == int(cluster.quorum_status()["LeaderId"])

        cluster.create_topic(TOPIC)
        values = list(range(1, 201))
        assert sorted(_produce_and_read_back(cluster, values)) == values
        _high_watermark_is_the_leaders(cluster, len(values))
        _python_reads_what_kafka_dumps(cluster, len(values))
        _settings_are_observed(cluster, elr)

        leader, (first, last), state = _isr_shrinks_to_leader(cluster)
        if elr:
            # KIP-966: the replica whose removal took the ISR below min ISR joins the
            # ELR; the one removed while the ISR was still at min ISR does not.
            assert list(state.elr) == [last], state
            assert first not in state.elr
            # the ELR is among the replicas the same description gave, feature on
            line = state.as_observation()
            assert set(line["elr"]) <= set(line["replicas"]) and line["elr_feature"] == 1
        else:
            assert not state.elr, f"ELR must be empty or absent with ELR off, got {state.elr}"
        assert state.leader == leader

        records = cluster.decode_metadata_log(cluster.controllers[0])
        changes = [r for r in records if r["type"] == "PARTITION_CHANGE_RECORD"]
        assert changes, "the metadata log has no PartitionChangeRecord"
        assert any(r["data"].get("isr") == [leader] for r in changes), changes
        elr_changes = [r for r in changes if r["data"].get("eligibleLeaderReplicas")]
        if elr:
            assert any(r["data"]["eligibleLeaderReplicas"] == [last] for r in elr_changes), changes
        else:
            assert not elr_changes
    finally:
        cluster.down()
    assert not docker_client.containers.list(
        all=True, filters={"label": f"elr-harness.cluster={cluster.config.name}"})


def test_node_operations(docker_client):
    """exec, signals (STOP/CONT/KILL), restart, file read/write on a real node."""
    cluster = _cluster(docker_client, True)
    cluster = Cluster(replace(cluster.config, brokers=1, controllers=1), client=docker_client)
    try:
        cluster.up()
        broker = cluster.brokers[0]
        assert broker.exec("echo hello").output.strip() == "hello"
        # Kafka's JVMs map its classes from the class archive (cluster/class_archive.py,
        # trained on a server): a tool on the nodes' class path loads the Kafka classes
        # a server loads too (Uuid, Exit, ...) from it, not from their jars
        loaded = broker.exec(shlex.join([
            "java", *kraft.CLASS_ARCHIVE_OPTIONS, "-Xlog:class+load=info",
            "-cp", f"{kraft.KAFKA_HOME}/libs/*", "kafka.tools.StorageTool", "random-uuid"]))
        from_archive = re.findall(r"\] ((?:org\.apache\.)?kafka\.\S+) source: shared objects "
                                  r"file \(top\)", loaded.output)
        assert loaded.ok and "org.apache.kafka.common.Uuid" in from_archive, \
            loaded.output[-2000:]
        broker.write_file("/tmp/x/data.bin", b"\x00\x01payload")
        assert broker.read_file("/tmp/x/data.bin") == b"\x00\x01payload"

        pid = broker.kafka_pid()
        assert pid
        assert broker.signal_kafka("STOP")
        state = broker.exec(f"cat /proc/{pid}/stat").output.split()[2]
        assert state == "T", f"paused process should be stopped (T), was {state}"
        assert broker.signal_kafka("CONT")
        state = broker.exec(f"cat /proc/{pid}/stat").output.split()[2]
        assert state != "T"

        assert broker.signal_kafka("KILL")
        assert broker.wait_kafka_gone(10)
        assert not broker.signal_kafka("TERM"), "no Kafka process should be left to signal"
        broker.start_kafka()
        new_pid = _wait_for(broker.kafka_pid, 20, "Kafka to start again")
        assert new_pid != pid
        cluster.wait_ready(60)
    finally:
        cluster.down()


def test_leftover_network_of_another_cluster_on_the_subnet_is_swept(docker_client):
    """A crashed run's network (any cluster name) must not block the next `up`."""
    import docker

    subnet = "10.213.82.0/24"
    ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=subnet)])
    docker_client.networks.create("elr-harness-it-stale", driver="bridge", ipam=ipam,
                                          labels=labels("it-stale"))
    cluster = Cluster(ClusterConfig(name="it-sweep", subnet=subnet), client=docker_client)
    try:
        cluster.sweep_leftovers()
        assert not docker_client.networks.list(names=["elr-harness-it-stale"])
        cluster.provider.create_network(print)  # the subnet is free again
        assert cluster.down(quiet=True) == 0
        assert not docker_client.networks.list(
            filters={"label": ["elr-harness.cluster=it-sweep"]}), "down removes the network"
    finally:
        for name in ("elr-harness-it-stale", "elr-harness-it-sweep"):
            for network in docker_client.networks.list(names=[name]):
                network.remove()
