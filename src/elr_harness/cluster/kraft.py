"""Topology and the files each KRaft node runs with.

Controllers are controller-only, brokers broker-only, with a static quorum
(controller.quorum.voters). Broker ids are 1..N so an ISR such as [1, 3] reads
as broker-1 and broker-3; controller ids start at 1001. Everything a node
needs (server.properties, log4j2 config, start script) is generated here and
written into the node, so the image only carries OS packages.
"""

from __future__ import annotations

import ipaddress
import shlex

from elr_harness.cluster.node import Node, NodeSpec, Role
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.history import (  # noqa: F401 - the cluster's names of them
    CONSUMER_OFFSETS_TOPIC,
    INTERNAL_TOPICS,
    TRANSACTION_STATE_TOPIC,
)

CONTROLLER_ID_BASE = 1000
KAFKA_HOME = "/opt/kafka"
HARNESS_DIR = "/opt/harness"
SERVER_PROPERTIES = f"{HARNESS_DIR}/server.properties"
#: The same settings with log.dirs on the page-cache layer's backing dir: a broker
#: is formatted there (as if its disk was prepared and synced before the test).
FORMAT_PROPERTIES = f"{HARNESS_DIR}/format.properties"
LOG4J_CONFIG = f"{HARNESS_DIR}/log4j2.properties"
START_SCRIPT = f"{HARNESS_DIR}/kafka-start.sh"
#: A JBOD broker's log dirs are log_dir/dir-0, log_dir/dir-1, ...
LOG_SUBDIR_PREFIX = "dir-"
LOG_DIR = "/var/log/kafka"
SERVER_LOG = f"{LOG_DIR}/server.log"
#: What a broker logs once the controller has accepted its registration.
REGISTERED_LINE = "Successfully registered broker"
STDOUT_LOG = f"{LOG_DIR}/stdout.log"
KAFKA_MAIN_CLASS = "kafka.Kafka"
#: The class-data-sharing archive of Kafka's classes (cluster/class_archive.py),
#: mounted read-only into Docker nodes; every Kafka JVM names it, and one that
#: finds none there, or one that does not match, starts as before.
CLASS_ARCHIVE = f"{HARNESS_DIR}/kafka-classes.jsa"
#: Without these, a JVM prints a warning on stdout (a tool's output) for an
#: archive it cannot use.
CLASS_ARCHIVE_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
CLASS_ARCHIVE_OPTIONS = (f"-XX:SharedArchiveFile={CLASS_ARCHIVE}", *CLASS_ARCHIVE_QUIET)
#: pgrep/pkill pattern that matches the Kafka JVM and nothing else in a node.
KAFKA_PROCESS_PATTERN = r"kafka\.Kafka /opt/harness"
#: Kafka's internal topics of transactions and consumer groups (core/history.py):
#: with transactions (ClusterConfig.guard_internal_topics) they run with
#: replication factor 3 and min ISR 2, so ELR guards them too
#: (cluster/internal_topics.py).
GUARDED_REPLICATION_FACTOR = 3
GUARDED_MIN_ISR = 2
#: Partitions of each internal topic (Kafka's defaults, 50, are slow to create).
INTERNAL_TOPIC_PARTITIONS = 3
#: Largest node count of one test cluster: what fits the /24 network and one
#: machine's containers, and the most nodes a nodes file may name too.
MAX_NODES = 32


#: Replicas one broker of a test cluster is asked to host at most: Kafka's
#: operators' rule of thumb for a broker (a few thousand), here on a shared machine.
MAX_REPLICAS_PER_BROKER = 4000


def validate_topic(topic: TopicConfig, config: ClusterConfig) -> None:
    """Refuse a topic the cluster cannot host, before anything starts."""
    if topic.partitions < 1:
        raise BadInput("a topic needs at least 1 partition (--partitions)")
    if topic.replication_factor < 1:
        raise BadInput("replication factor must be at least 1 (--replication-factor)")
    if topic.replication_factor > config.brokers:
        raise BadInput(f"replication factor {topic.replication_factor} is more than the "
                       f"{config.brokers} brokers of the cluster (--brokers)")
    if not 1 <= topic.min_insync_replicas <= topic.replication_factor:
        raise BadInput(f"min.insync.replicas {topic.min_insync_replicas} must be between 1 "
                       f"and the replication factor {topic.replication_factor}")
    per_broker = -(-topic.partitions * topic.replication_factor // config.brokers)
    if per_broker > MAX_REPLICAS_PER_BROKER:
        raise BadInput(f"--partitions {topic.partitions} puts {per_broker} replicas on each "
                       f"broker; at most {MAX_REPLICAS_PER_BROKER} are allowed")


def validate_topology(config: ClusterConfig) -> None:
    """Refuse impossible topologies before anything starts."""
    if config.controllers < 1:
        raise BadInput("a KRaft cluster needs at least 1 controller (--controllers)")
    if config.brokers < 1:
        raise BadInput("a cluster needs at least 1 broker (--brokers)")
    if config.controllers + config.brokers > MAX_NODES:
        raise BadInput(f"a test cluster has at most {MAX_NODES} nodes; --controllers "
                       f"{config.controllers} and --brokers {config.brokers} ask for "
                       f"{config.controllers + config.brokers}")
    network = ipaddress.ip_network(config.subnet)
    if config.first_host + config.controllers + config.brokers >= network.num_addresses - 1:
        raise BadInput(f"subnet {config.subnet} is too small for the topology")
    if config.guard_internal_topics and config.brokers < GUARDED_REPLICATION_FACTOR:
        raise BadInput(f"transactions need at least {GUARDED_REPLICATION_FACTOR} brokers "
                       f"(--brokers): their internal topics run with replication factor "
                       f"{GUARDED_REPLICATION_FACTOR} and min ISR {GUARDED_MIN_ISR}")
    if config.transaction_version is not None and config.transaction_version < 0:
        raise BadInput(f"transaction.version {config.transaction_version} is not a "
                       f"feature level (0, 1 or 2)")


def node_specs(config: ClusterConfig) -> list[NodeSpec]:
    """Controllers first, then brokers, each with a fixed address."""
    validate_topology(config)
    network = ipaddress.ip_network(config.subnet)
    specs = []
    host = config.first_host
    for i in range(1, config.controllers + 1):
        specs.append(NodeSpec(f"controller-{i}", Role.CONTROLLER, CONTROLLER_ID_BASE + i,
                              str(network.network_address + host)))
        host += 1
    for i in range(1, config.brokers + 1):
        specs.append(NodeSpec(f"broker-{i}", Role.BROKER, i, str(network.network_address + host)))
        host += 1
    return specs


def gateway(config: ClusterConfig) -> str:
    return str(ipaddress.ip_network(config.subnet).network_address + 1)


def quorum_voters(specs: list[NodeSpec], config: ClusterConfig) -> str:
    return ",".join(f"{s.node_id}@{s.address}:{config.controller_port}"
                    for s in specs if s.role is Role.CONTROLLER)


def bootstrap_servers(specs: list[NodeSpec], config: ClusterConfig) -> list[str]:
    return [f"{s.address}:{config.broker_port}" for s in specs if s.role is Role.BROKER]


def server_properties(spec: NodeSpec, specs: list[NodeSpec], config: ClusterConfig) -> str:
    t = config.timings
    brokers = sum(1 for s in specs if s.role is Role.BROKER)
    common = {
        "node.id": spec.node_id,
        "controller.quorum.voters": quorum_voters(specs, config),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "metadata.log.dir": config.metadata_log_dir,
        "controller.quorum.election.timeout.ms": t.controller_quorum_election_timeout_ms,
        "controller.quorum.fetch.timeout.ms": t.controller_quorum_fetch_timeout_ms,
        "request.timeout.ms": t.request_timeout_ms,
        "num.network.threads": 2,
        "num.io.threads": 2,
        "background.threads": 2,
    }
    if spec.role is Role.CONTROLLER:
        props = {
            **common,
            "process.roles": "controller",
            "listeners": f"CONTROLLER://{spec.address}:{config.controller_port}",
            "log.dirs": config.metadata_log_dir,
            "broker.session.timeout.ms": t.broker_session_timeout_ms,
            "leader.imbalance.check.interval.seconds": t.leader_imbalance_check_interval_s,
        }
    else:
        internal_rf = min(3, brokers)
        guarded = config.guard_internal_topics
        props = {
            **common,
            "process.roles": "broker",
            "listeners": f"PLAINTEXT://{spec.address}:{config.broker_port}",
            "advertised.listeners": f"PLAINTEXT://{spec.address}:{config.broker_port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": ",".join(broker_log_dirs(config)),
            "broker.heartbeat.interval.ms": t.broker_heartbeat_interval_ms,
            "broker.session.timeout.ms": t.broker_session_timeout_ms,
            "replica.lag.time.max.ms": t.replica_lag_time_max_ms,
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor":
                GUARDED_REPLICATION_FACTOR if guarded else internal_rf,
            "offsets.topic.num.partitions": INTERNAL_TOPIC_PARTITIONS,
            "transaction.state.log.replication.factor":
                GUARDED_REPLICATION_FACTOR if guarded else internal_rf,
            "transaction.state.log.min.isr": GUARDED_MIN_ISR if guarded else 1,
            "transaction.state.log.num.partitions": INTERNAL_TOPIC_PARTITIONS,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms":
                t.transaction_abort_check_interval_ms,
            "transaction.max.timeout.ms": t.transaction_max_timeout_ms,
            "share.coordinator.state.topic.replication.factor": internal_rf,
            "share.coordinator.state.topic.min.isr": 1,
            "group.initial.rebalance.delay.ms": 0,
            "num.replica.fetchers": 1,
            "unclean.leader.election.enable": "false",
        }
    for key, value in props.items():
        if any(c in str(value) for c in "\n\r\0"):
            # one more line would be one more setting: a value is refused, not spliced
            raise BadInput(f"server.properties: {key} holds a newline or NUL: "
                           f"{str(value)[:60]!r}")
    return "".join(f"{k}={v}\n" for k, v in props.items())


def log4j2_properties() -> str:
    return "\n".join([
        "status = warn",
        "appender.file.type = File",
        "appender.file.name = FILE",
        f"appender.file.fileName = {SERVER_LOG}",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = FILE",
        "logger.kafka.name = org.apache.kafka",
        "logger.kafka.level = INFO",
        "logger.clients.name = org.apache.kafka.clients",
        "logger.clients.level = WARN",
        "",
    ])


def start_script(spec: NodeSpec, config: ClusterConfig) -> str:
    """A script that launches Kafka detached and returns at once."""
    heap = config.controller_heap if spec.role is Role.CONTROLLER else config.broker_heap
    # each option one quoted word: a value from a --config file or a replayed test.json
    # reaches the shell as an argument, never as shell syntax
    java = shlex.join(["java", *heap.split(), *config.jvm_opts.split(), *CLASS_ARCHIVE_OPTIONS,
                       "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                       "-cp", KAFKA_HOME + "/libs/*", KAFKA_MAIN_CLASS, SERVER_PROPERTIES])
    return "\n".join([
        "#!/bin/sh",
        f"mkdir -p {LOG_DIR}",
        f"if pgrep -f {shlex.quote(KAFKA_PROCESS_PATTERN)} >/dev/null; then exit 0; fi",
        f"echo \"--- start $(date -u +%FT%TZ)\" >> {STDOUT_LOG}",
        f"setsid nohup {java} >> {STDOUT_LOG} 2>&1 < /dev/null &",
        "",
    ])


def broker_log_dirs(config: ClusterConfig) -> list[str]:
    """A broker's log.dirs: log_dir itself, or with JBOD (log_dirs > 1) one
    subdirectory of it per log dir, so one storage layer mounted on log_dir
    holds them all and a disk fault can fail one."""
    if config.log_dirs <= 1:
        return [config.log_dir]
    return [f"{config.log_dir.rstrip('/')}/{LOG_SUBDIR_PREFIX}{i}"
            for i in range(config.log_dirs)]


def format_properties(properties: str, config: ClusterConfig, backing_dir: str) -> str:
    """server.properties with the broker's log.dirs moved to the layer's backing dir
    (each log dir at the same place under it as under log_dir)."""
    root = config.log_dir.rstrip("/")
    moved = ",".join(backing_dir.rstrip("/") + d[len(root):] for d in broker_log_dirs(config))
    return "".join(f"log.dirs={moved}\n" if line.startswith("log.dirs=") else line + "\n"
                   for line in properties.splitlines())


#: Kafka's command-line tools (storage format, log dump, config, features, the
#: quorum's status) are short JVMs the run waits on, at set-up, in the scenario's
#: T2 and in collect. The client compiler alone and the serial collector start
#: them faster: on this project's 2-core machine, medians of 5 (alternating) in a
#: quiet cluster, a metadata-log dump took 1.04 s instead of 1.42 s, a storage
#: format 1.43 s instead of 1.62 s. Kafka itself runs with the JVM's defaults.
TOOL_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def tool_command(heap: str, main_class: str, *args: str) -> list[str]:
    """One of Kafka's tools in a node: `heap` is its -Xmx size (like "128m")."""
    return ["java", f"-Xmx{heap}", *TOOL_JVM_OPTIONS, *CLASS_ARCHIVE_OPTIONS,
            "-cp", f"{KAFKA_HOME}/libs/*", main_class, *args]


def format_command(config: ClusterConfig, cluster_id: str, properties: str) -> list[str]:
    """Kafka's storage tool: format the node's log dirs with ELR on or off, and
    transaction.version finalized at the level asked (None: the release's default).
    `--feature NAME=LEVEL`, given once per feature, is the storage tool's syntax in
    every release 4.0 to 4.4 (kafka.tools.StorageTool format)."""
    features = [f"eligible.leader.replicas.version={1 if config.elr else 0}"]
    if config.transaction_version is not None:
        features.append(f"transaction.version={config.transaction_version}")
    return tool_command(
        "128m", "kafka.tools.StorageTool", "format",
        "--config", properties, "--cluster-id", cluster_id, "--ignore-formatted",
        *(arg for feature in features for arg in ("--feature", feature)))


def registrations(node: Node) -> int:
    """How often `node`'s log says the controller registered it (0 when the log
    cannot be read: a busy host's failed `exec` reads as none)."""
    found = node.exec(["grep", "-c", REGISTERED_LINE, SERVER_LOG])
    text = found.output.strip()
    return int(text) if text.isdigit() else 0
