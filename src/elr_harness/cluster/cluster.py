"""A real KRaft cluster on nodes a provider makes: bring it up, watch it, take it down.

`up` goes: validate -> sweep leftovers -> Kafka distribution -> nodes (for
Docker: image, network, containers) -> configs -> format (ELR on/off,
transaction.version) -> start controllers and brokers -> ready (every broker
registered and unfenced, the quorum has a leader) -> with transactions, the
internal topics made and guarded (internal_topics). A node that fails to start
has its last log lines shown and everything is torn down.

One way to talk to Kafka per purpose: the AdminClient creates topics; the
harness's own wire client (kafka_wire) observes (DescribeTopicPartitions for
leader/ISR/ELR, Metadata for registered brokers, ListOffsets for high
watermarks); the controllers' quorum-state files name the active controller
(Kafka's metadata-quorum tool where none does); its log dump tool decodes the
controller's metadata log.

It runs about 500 lines because it is the one class the layers above talk to
for a cluster (the node seam's KafkaCluster); the pieces that stand alone
already live beside it (kraft, kafka_wire, observe, replica_logs,
internal_topics).
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from elr_harness.cluster import kraft
from elr_harness.cluster.distribution import KafkaDistribution, resolve_distribution
from elr_harness.cluster.kafka_wire import WireConnection, WireError
from elr_harness.cluster.node import (
    Node,
    NodeProvider,
    NodeSpec,
    Role,
    StorageLayer,
    kafka_looks_dead,
)
from elr_harness.cluster.observe import PartitionObserver, PartitionState, topic_ready_everywhere
from elr_harness.cluster.providers import provider_for
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import ClusterStartError, HarnessError
from elr_harness.core.parallel import at_once
from elr_harness.core.wait import wait_until

if TYPE_CHECKING:
    import docker

    from elr_harness.cluster.replica_logs import ReplicaLog

Log = Callable[[str], None]

@dataclass(frozen=True)
class NodeStatus:
    spec: NodeSpec
    container_state: str
    kafka_pid: int | None


class Cluster:
    """A KRaft cluster on the nodes a NodeProvider makes (Docker containers unless
    told otherwise): configs, format, start, readiness, topics, observation,
    collection, written against the Node protocol alone."""

    def __init__(self, config: ClusterConfig, log: Log = print,
                 client: docker.DockerClient | None = None,
                 broker_storage: StorageLayer | None = None,
                 provider: NodeProvider | None = None) -> None:
        self.config = config
        #: Mounted under every broker's log dirs when given (the page-cache layer).
        self.broker_storage = broker_storage
        self.log = log
        self.provider: NodeProvider = provider or provider_for(config, client)
        self.specs = self.provider.node_specs()
        self.nodes: dict[str, Node] = {}
        self.distribution: KafkaDistribution | None = None
        #: what the nodes were created with ("kafka-version", "elr")
        self.facts: dict[str, str] = {}
        self._attach_existing()

    # -- who is who ----------------------------------------------------------

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.spec.role is Role.BROKER]

    @property
    def controllers(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.spec.role is Role.CONTROLLER]

    @property
    def bootstrap(self) -> list[str]:
        return kraft.bootstrap_servers([n.spec for n in self.brokers], self.config)

    def broker_by_id(self, broker_id: int) -> Node:
        for node in self.brokers:
            if node.spec.node_id == broker_id:
                return node
        raise KeyError(f"no broker with id {broker_id}")

    def is_up(self) -> bool:
        return bool(self.nodes)

    def _attach_existing(self) -> None:
        attached = self.provider.attach()
        self.specs = attached.specs or self.specs
        self.nodes = dict(attached.nodes)
        self.facts = dict(attached.facts)

    # -- up and down ---------------------------------------------------------

    def up(self) -> None:
        """Start every node and wait until the cluster is ready; tear down on failure."""
        kraft.validate_topology(self.config)
        self.provider.preflight(self.log)
        self.sweep_leftovers()
        self.specs = self.provider.node_specs()
        self.distribution = resolve_distribution(self.config.kafka_version,
                                                 self.config.kafka_dist, self.log,
                                                 self.config.releases)
        try:
            self._create_nodes()
            self._format_and_start()
            self.wait_ready()
            if self.config.guard_internal_topics:  # transactions: ELR guards them too
                from elr_harness.cluster.internal_topics import guard_internal_topics

                guard_internal_topics(self)
        except BaseException:
            self.down(quiet=True)
            raise

    def down(self, quiet: bool = False) -> int:
        """Remove this cluster's nodes and network; returns how many nodes."""
        removed = self.provider.remove()
        self.nodes.clear()
        if not quiet:
            self.log(f"removed {removed} nodes of cluster '{self.config.name}'")
        return removed

    def sweep_leftovers(self) -> None:
        """Remove what a crashed run left (the provider knows where to look)."""
        self.provider.clear_leftovers(self.log)

    def _create_nodes(self) -> None:
        assert self.distribution is not None
        self.facts = {"kafka-version": self.distribution.version,
                      "elr": "on" if self.config.elr else "off"}
        if self.config.guard_internal_topics:
            self.facts["transactions"] = "on"
        self.nodes = dict(self.provider.create(self.specs, str(self.distribution.home),
                                               self.facts, self.log))

        def write_files(spec: NodeSpec) -> None:
            node = self.nodes[spec.name]
            properties = kraft.server_properties(spec, self.specs, self.config)
            node.write_file(kraft.SERVER_PROPERTIES, properties.encode())
            if self._on_page_cache_layer(node):
                assert self.broker_storage is not None
                node.write_file(kraft.FORMAT_PROPERTIES, kraft.format_properties(
                    properties, self.config, self.broker_storage.backing_dir).encode())
            node.write_file(kraft.LOG4J_CONFIG, kraft.log4j2_properties().encode())
            node.write_file(kraft.START_SCRIPT, kraft.start_script(spec, self.config).encode(),
                            mode=0o755)

        at_once(write_files, self.specs)  # a command per file: each node's at once

    def _format_and_start(self) -> None:
        cluster_id = kafka_uuid()
        self.log(f"formatting {len(self.nodes)} nodes (cluster id {cluster_id}, "
                 f"ELR {'on' if self.config.elr else 'off'})")

        def format_storage(node: Node) -> None:
            layered = self._on_page_cache_layer(node)
            properties = kraft.FORMAT_PROPERTIES if layered else kraft.SERVER_PROPERTIES
            result = node.exec(kraft.format_command(self.config, cluster_id, properties),
                               timeout_s=self.config.timeouts.format_s)
            if not result.ok:
                raise ClusterStartError(f"{node.spec.name}: formatting storage failed:\n"
                                        f"{_tail(result.output)}")
            if layered:
                assert self.broker_storage is not None
                self.broker_storage.prepare(node)

        # each node's format is a JVM of its own: one after another they took 9.3 s of
        # a 26.5 s set-up (6 nodes)
        at_once(format_storage, list(self.nodes.values()))
        for node in self.controllers + self.brokers:
            node.start_kafka()

    def _on_page_cache_layer(self, node: Node) -> bool:
        return self.broker_storage is not None and node.spec.role is Role.BROKER

    def restart_kafka(self, node: Node) -> None:
        """Start Kafka on a node where it is down, its storage layer mounted first."""
        if self._on_page_cache_layer(node):
            assert self.broker_storage is not None
            self.broker_storage.ensure(node)
        node.start_kafka()

    # -- readiness -------------------------------------------------------------

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Every broker registered and unfenced, and the quorum has a leader."""
        timeout_s = timeout_s or self.config.ready_timeout_s
        expected = {n.spec.node_id for n in self.brokers}
        seen: set[int] = set()
        last_look = -math.inf

        def all_registered() -> bool:
            # a look for dead nodes is a command in every node (1.3 s for six while
            # six JVMs start on 2 cores, and CPU taken from them): the broker list,
            # one request, is asked first and every poll, the looks less often and
            # once more at the end, so a node that died is still never called ready
            nonlocal seen, last_look
            seen = self.unfenced_brokers()
            now = time.monotonic()
            if expected <= seen or now - last_look >= self.config.dead_look_interval_s:
                self._fail_if_a_node_died()
                last_look = now
            return expected <= seen

        if not wait_until(all_registered, timeout_s, self.config.ready_poll_s):
            missing = sorted(expected - seen)
            raise ClusterStartError(f"brokers {missing} never registered unfenced within "
                                    f"{timeout_s:.0f} s" + self._log_tails(missing))
        leader = self.quorum_leader()
        if leader is None:
            raise ClusterStartError("the controller quorum has no leader")
        self.log(f"cluster ready: {len(self.controllers)} controllers (leader {leader}), "
                 f"{len(expected)} brokers unfenced")

    def unfenced_brokers(self, avoid: set[str] | None = None,
                         timeout_s: float | None = None) -> set[int]:
        """Broker ids the first broker that answers lists as registered and unfenced
        (empty if none answers). Over the harness's own wire client: librdkafka's
        DescribeCluster aborted the process while brokers were being fenced."""
        for address in self.bootstrap:
            if avoid and address in avoid:
                continue
            connection = WireConnection(address, self.config.timeouts.broker_list_s
                                        if timeout_s is None else timeout_s)
            try:
                return set(connection.broker_ids())
            except (WireError, UnicodeDecodeError):
                continue
            finally:
                connection.close()
        return set()

    def _fail_if_a_node_died(self, spacing_s: float | None = None) -> None:
        """Raise if a node's Kafka process is gone (it must look dead several times in
        a row: cluster.node.kafka_looks_dead), every node looked at at once."""
        spacing_s = self.config.dead_look_spacing_s if spacing_s is None else spacing_s

        def look_at(node: Node) -> None:
            if kafka_looks_dead(node, spacing_s):
                raise ClusterStartError(f"{node.spec.name} stopped while starting; its last "
                                        f"log lines:\n{_tail(node.log_tail(), 25)}")

        at_once(look_at, list(self.nodes.values()))

    def _log_tails(self, broker_ids: Sequence[int]) -> str:
        parts = []
        for broker_id in broker_ids:
            node = self.broker_by_id(broker_id)
            parts.append(f"\n--- {node.spec.name}:\n{_tail(node.log_tail(), 15)}")
        return "".join(parts)

    def quorum_leader(self) -> int | None:
        """The active controller's id: the leader of the newest epoch the controllers'
        own quorum-state files name (a file read, where Kafka's metadata-quorum tool
        is a JVM start: the scenario's T2 asks for it every second), else as that
        tool reports it."""
        known = self.quorum_state_leader()
        if known is not None:
            return known
        status = self.quorum_status()
        leader = status.get("LeaderId")
        return int(leader) if leader is not None and int(leader) >= 0 else None

    def quorum_state_leader(self) -> int | None:
        """The leader of the newest epoch in the controllers' quorum-state files (KRaft
        writes each node's election state there: leaderId and leaderEpoch in every
        4.x release); None when no file names one."""
        path = f"{self.config.metadata_log_dir}/__cluster_metadata-0/quorum-state"

        def read(node: Node) -> tuple[int, int] | None:
            try:
                state = json.loads(node.read_file(path))
                return int(state["leaderEpoch"]), int(state["leaderId"])
            except (FileNotFoundError, HarnessError, ValueError, KeyError, TypeError):
                return None

        known = [s for s in at_once(read, self.controllers) if s is not None and s[1] >= 0]
        return max(known)[1] if known else None

    def quorum_status(self) -> dict[str, str]:
        for node in self.controllers:
            if node.kafka_pid() is None:
                continue
            result = node.exec(
                kraft.tool_command("96m", "org.apache.kafka.tools.MetadataQuorumCommand",
                                   "--bootstrap-controller",
                                   f"{node.spec.address}:{self.config.controller_port}",
                                   "describe", "--status"),
                timeout_s=self.config.timeouts.quorum_tool_s)
            if result.ok:
                return dict(re.findall(r"^(\w+):\s*(.*)$", result.output, re.M))
        return {}

    # -- topics and observation -----------------------------------------------

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": ",".join(self.bootstrap), "log_level": 0})

    def create_topic(self, topic: TopicConfig) -> None:
        """Create the topic and wait until every partition has a leader and a full ISR."""
        kraft.validate_topic(topic, self.config)
        new = NewTopic(topic.name, num_partitions=topic.partitions,
                       replication_factor=topic.replication_factor,
                       config={"min.insync.replicas": str(topic.min_insync_replicas),
                               "unclean.leader.election.enable":
                                   str(topic.unclean_leader_election).lower()})
        admin = self.admin()  # must outlive the futures
        timeouts = self.config.timeouts
        attempts = timeouts.create_topic_attempts
        for attempt in range(1, attempts + 1):
            try:
                admin.create_topics([new], request_timeout=timeouts.create_topic_request_s)[
                    topic.name].result(timeout=timeouts.create_topic_result_s)
                break
            except KafkaException as err:
                error = err.args[0]
                if attempt > 1 and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    break  # an earlier attempt went through
                if attempt == attempts or not (error.retriable() or error.code() in (
                        KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT)):
                    raise HarnessError(f"creating topic {topic.name} failed: {err}") from err
                time.sleep(timeouts.create_topic_retry_s)
        self.wait_partitions_full(topic, self.config.timeouts.topic_ready_s)

    def wait_partitions_full(self, topic: TopicConfig, timeout_s: float | None = None) -> None:
        """Wait until every broker describes each partition with a leader and a full
        ISR and each leader serves it (observe.topic_ready_everywhere says why one
        broker's view is not enough)."""
        timeout_s = self.config.timeouts.topic_ready_s if timeout_s is None else timeout_s
        if wait_until(lambda: topic_ready_everywhere(
                self.bootstrap, topic.name, topic.partitions, topic.replication_factor,
                self.config.timeouts.describe_s), timeout_s, self.config.partitions_poll_s):
            return
        raise HarnessError(f"topic {topic.name}: partitions lack a leader or a full ISR "
                           f"in some broker's view, or a leader that serves them, after "
                           f"{timeout_s:.0f} s")

    def observer(self, timeout_s: float | None = None,
                 avoid: Callable[[], set[str]] | None = None) -> PartitionObserver:
        """A partition observer; `avoid` names broker addresses whose view may be stale."""
        timeout_s = self.config.timeouts.describe_s if timeout_s is None else timeout_s
        addresses = {n.spec.node_id: f"{n.spec.address}:{self.config.broker_port}"
                     for n in self.brokers}
        return PartitionObserver(self.bootstrap, timeout_s, avoid=avoid, addresses=addresses,
                                 transactions=self.has_transactions())

    def has_transactions(self) -> bool:
        """Built for transactions (guarded internal topics), by its config or, for a
        cluster found running, by what its nodes were created with."""
        return self.config.guard_internal_topics or self.facts.get("transactions") == "on"

    def transaction_coordinator(self, transactional_id: str) -> int | None:
        """The broker id of `transactional_id`'s transaction coordinator now (None:
        no broker names one yet)."""
        from elr_harness.cluster.kafka_wire_txn import transaction_coordinator

        return transaction_coordinator(self.bootstrap, transactional_id,
                                       self.config.timeouts.describe_s)

    def controller_view(self, topic: str) -> list[PartitionState]:
        """The partitions of `topic` as the active controller's metadata log has them,
        with the ELR feature's finalized level from its FeatureLevelRecords.

        Brokers cut off from the controllers answer from a stale cache; when no
        broker has a fresh view (the scenario's T2), this is the cluster's word.
        """
        from elr_harness.core.history import ELR_FEATURE
        from elr_harness.core.metadata_records import finalized_level, partition_states

        leader = self.quorum_leader()
        nodes = [n for n in self.controllers if n.spec.node_id == leader] or self.controllers
        records = self.decode_metadata_log(nodes[0])
        elr_feature = finalized_level(records, ELR_FEATURE)
        return [PartitionState(topic=t, partition=p, leader=s["leader"],
                               leader_epoch=s["leader_epoch"], isr=tuple(s["isr"]),
                               elr=tuple(s["elr"]), last_known_elr=tuple(s["last_known_elr"]),
                               high_watermark=None, elr_feature=elr_feature)
                for (t, p), s in sorted(partition_states(records).items()) if t == topic]

    def decode_metadata_log(self, node: Node) -> list[dict]:
        """A controller's metadata log, decoded by the log dump tool of the Kafka
        under test (wherever that release keeps it)."""
        from elr_harness.cluster.metadata_log import decode_metadata_log

        return decode_metadata_log(node, self.config.metadata_log_dir,
                                   self.config.timeouts.metadata_dump_s,
                                   self._log_dump_class(),
                                   self.config.timeouts.lost_output_retries)

    def _log_dump_class(self) -> str:
        """DumpLogSegments of the Kafka under test, wherever that release keeps it."""
        from elr_harness.cluster.metadata_log import DUMP_LOG_CLASSES

        return self.tool_class(DUMP_LOG_CLASSES)

    def tool_class(self, candidates: tuple[str, ...]) -> str:
        """The first of `candidates` (a tool's class names, newest first) that the
        Kafka under test holds: releases move their tools between packages."""
        distribution = self.distribution or resolve_distribution(
            self.facts.get("kafka-version", self.config.kafka_version), self.config.kafka_dist,
            self.log)
        return distribution.main_class(candidates)

    def replica_logs(self, node: Node, topics: Sequence[str]) -> list[ReplicaLog]:
        """A broker's own replicas of `topics`, read from its segment files (by the
        log dump tool of the Kafka under test where Python cannot read them)."""
        from elr_harness.cluster.replica_logs import replica_logs

        return replica_logs(node, kraft.broker_log_dirs(self.config), topics,
                             self._log_dump_class(),
                             self.config.timeouts.metadata_dump_s)

    def describe_all(self) -> list[PartitionState]:
        """Every user topic's partitions (internal topics left out, but for the
        guarded ones of a cluster built for transactions)."""
        from elr_harness.cluster.kraft import INTERNAL_TOPICS

        shown = INTERNAL_TOPICS if self.has_transactions() else ()
        observer = self.observer()
        try:
            return [s for s in observer.describe([])
                    if not s.topic.startswith("__") or s.topic in shown]
        finally:
            observer.close()

    def node_status(self) -> list[NodeStatus]:
        statuses = []
        for spec in self.specs:
            node = self.nodes.get(spec.name)
            if node is None:
                statuses.append(NodeStatus(spec, "missing", None))
                continue
            state = node.host_state()
            pid = node.kafka_pid() if state == "running" else None
            statuses.append(NodeStatus(spec, state, pid))
        return statuses

    def kafka_version(self) -> str | None:
        return self.facts.get("kafka-version")

    def elr_label(self) -> str | None:
        return self.facts.get("elr")

    # -- logs ------------------------------------------------------------------

    def collect_logs(self, dest: Path) -> None:
        """Copy each node's server.log and config into dest/<node>/."""
        for node in self.nodes.values():
            self.collect_node_logs(node, dest)

    @staticmethod
    def collect_node_logs(node: Node, dest: Path) -> None:
        """Copy one node's server.log, stdout and config into dest/<node>/ (a file the
        node lacks is skipped)."""
        target = dest / node.spec.name
        target.mkdir(parents=True, exist_ok=True)
        for path, name in ((kraft.SERVER_LOG, "server.log"),
                           (kraft.STDOUT_LOG, "stdout.log"),
                           (kraft.SERVER_PROPERTIES, "server.properties")):
            try:
                (target / name).write_bytes(node.read_file(path))
            except (FileNotFoundError, HarnessError):
                continue


def kafka_uuid() -> str:
    """A random Kafka cluster id: a UUID in Kafka's URL-safe base64 form. Like
    Kafka's Uuid.randomUuid(), never one starting with "-": kafka-storage's
    argument parser takes `--cluster-id -Ml4...` for a missing value (seen)."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
