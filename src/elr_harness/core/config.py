"""Every tunable of the harness, in one typed place.

Each stage reads its own section: the CLI builds these dataclasses from flags,
test.json stores them, and nothing else in the code base hard-codes a timeout,
a port or a size. Sections are frozen so a run's configuration cannot drift
while it runs. The file is long on purpose: one place to read every setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------
# Where things live
# --------------------------------------------------------------------------

#: Default Kafka release: the newest 4.x release on Maven Central, learnt at run
#: time (cluster/releases.py); a pinned version (`--kafka-version 4.1.1`) runs
#: offline from the cache. ELR is on by default for new clusters from 4.1.
DEFAULT_KAFKA_VERSION = "latest"
SCALA_BINARY_VERSION = "2.13"


#: How the harness's own log files (a run's harness.log, a check's Spark log) read.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def cache_dir() -> Path:
    """Where downloaded jars and built root filesystems are kept between runs."""
    return Path(os.environ.get("ELR_HARNESS_CACHE", Path.home() / ".cache" / "elr-harness"))


def default_store_dir() -> Path:
    return Path(os.environ.get("ELR_HARNESS_STORE", "store"))


# --------------------------------------------------------------------------
# cluster/
# --------------------------------------------------------------------------

#: Label on every container and network the harness creates; `down` and the
#: leftover sweep find them by it.
LABEL = "elr-harness"
#: Set (by scripts/test.sh, say) to stamp every container and network a process
#: and its children create with `elr-harness.owner=<value>`, so that whoever set
#: it removes its own clusters afterwards and nobody else's.
OWNER_ENV = "ELR_HARNESS_OWNER"


#: Set by `harness soak` for its runs, to the soak's own random token (soak.json
#: records it): every container and network they create carries
#: `elr-harness.soak=<token>`, and a process with it set removes a cluster of its
#: name only when the cluster carries that label (never another's of that name).
SOAK_TOKEN_ENV = "ELR_HARNESS_SOAK_CLUSTER"
SOAK_LABEL = f"{LABEL}.soak"


def soak_token() -> str | None:
    """The soak token this process runs under (SOAK_TOKEN_ENV), or None."""
    return os.environ.get(SOAK_TOKEN_ENV, "").strip() or None


def owner_labels() -> dict[str, str]:
    """`{elr-harness.owner: value}` when OWNER_ENV is set, and the soak's label when
    SOAK_TOKEN_ENV is; else nothing."""
    owner = os.environ.get(OWNER_ENV, "").strip()
    token = soak_token()
    return {**({f"{LABEL}.owner": owner} if owner else {}),
            **({SOAK_LABEL: token} if token else {})}


@dataclass(frozen=True)
class ReleasesConfig:
    """Where `--kafka-version latest` learns Kafka's releases, and how long that
    list is trusted."""

    metadata_url: str = ("https://repo1.maven.org/maven2/org/apache/kafka/kafka_"
                         f"{SCALA_BINARY_VERSION}/maven-metadata.xml")
    cache_hours: float = 24.0
    fetch_timeout_s: float = 10.0


@dataclass(frozen=True)
class MutantsConfig:
    """How `harness mutants build` makes mutant Kafkas (cluster/mutants)."""

    #: Maven's build of the mutator (its first run downloads javassist and plugins)
    mutator_build_timeout_s: float = 600.0
    #: one mutant: javassist rewrites one class, the JVM loads it to verify it
    rewrite_timeout_s: float = 120.0


@dataclass(frozen=True)
class ImageConfig:
    """The node image: a debootstrapped Debian, tagged by a hash of this recipe."""

    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    packages: tuple[str, ...] = (
        "openjdk-17-jre-headless",
        "iproute2",
        "iptables",
        "procps",
        "python3",
        "fuse3",
        "openssh-server",
        "ca-certificates",
    )
    #: A registry image to start from instead of debootstrap (where one is reachable).
    base_image: str | None = None
    repository: str = "elr-harness/node"


@dataclass(frozen=True)
class KafkaTimings:
    """Kafka settings shortened so that every fault settles within seconds."""

    broker_session_timeout_ms: int = 6000
    broker_heartbeat_interval_ms: int = 1000
    replica_lag_time_max_ms: int = 5000
    controller_quorum_election_timeout_ms: int = 1000
    controller_quorum_fetch_timeout_ms: int = 2000
    request_timeout_ms: int = 10000
    #: How often the controller moves leadership back to preferred replicas
    #: (Kafka's default, 300 s, unless a bounce-leader mix asks for 5 s).
    leader_imbalance_check_interval_s: int = 300
    #: transaction.abort.timed.out.transaction.cleanup.interval.ms: how often a
    #: transaction coordinator aborts the transactions past their timeout (Kafka's
    #: default is 10 s; short, so an abandoned transaction ends before the final
    #: read_committed read, and is not taken for a hanging one).
    transaction_abort_check_interval_ms: int = 2000
    #: transaction.max.timeout.ms: the longest transaction.timeout.ms a client may ask.
    transaction_max_timeout_ms: int = 60000


@dataclass(frozen=True)
class NodeTimeouts:
    """Bounds, in seconds, on what the harness asks of a node or of Kafka's tools:
    every call returns or fails within one of these."""

    #: A call to the Docker engine's API.
    engine_s: float = 120.0
    #: A command with no bound of its own.
    command_s: float = 60.0
    #: pgrep, pkill, mkdir, tail: commands that return at once on a live node.
    quick_command_s: float = 10.0
    #: The start script launching Kafka (it returns once the JVM is forked).
    start_kafka_s: float = 20.0
    #: Kafka's process gone after KILL or TERM.
    kafka_gone_s: float = 30.0
    #: kafka-storage format of one node.
    format_s: float = 120.0
    #: Bound on training the class archive: a one-node Kafka formatted, started
    #: and stopped (10.4 s on 2 cores for 4.4.0; once per release and node image).
    class_archive_training_s: float = 120.0
    #: Kafka's metadata-quorum tool (a JVM) asked for the quorum's leader.
    quorum_tool_s: float = 30.0
    #: Kafka's log dump tool decoding the controller's metadata log.
    metadata_dump_s: float = 120.0
    #: The AdminClient's CreateTopics request, and the wait for its result.
    create_topic_request_s: float = 30.0
    create_topic_result_s: float = 40.0
    #: Every partition of a new topic led, with a full ISR.
    topic_ready_s: float = 60.0
    #: iptables rules applied or removed on one node.
    iptables_s: float = 30.0
    #: Kafka's config or feature tool (a JVM in a node) describing or changing
    #: min.insync.replicas or a feature level (the min-isr-change and
    #: feature-change faults): JVM start, the admin client and the controller.
    admin_tool_s: float = 60.0
    #: A slow network's routes looked up, or its tc qdisc and loss rules applied
    #: or removed, on one node.
    shaping_s: float = 30.0
    #: Tries of a slow network's route look-up on one node, and the pause between
    #: two: the Docker engine was seen (1 in ~160 execs under load) to lose the
    #: first lines a short command printed, with exit code 0.
    route_lookup_attempts: int = 3
    route_lookup_retry_s: float = 0.5
    #: Tries of reading one file of a Docker node: docker-py was seen to lose its
    #: place in the engine's stdout/stderr frames of a large file under load
    #: (ValueError "103 is not a valid stream" while collecting a server.log,
    #: which ended the run in a harness error); its frame check catches that.
    read_file_attempts: int = 3
    # -- moved here from the code (#32): each a literal where it was used ------
    #: Kafka's process gone after TERM (a clean shutdown closes its logs first;
    #: after KILL or STOP the bound is kafka_gone_s).
    kafka_gone_after_term_s: float = 60.0
    #: How often a node is asked whether Kafka's process is gone or there.
    process_poll_s: float = 0.1
    #: Times a command that must print is asked again when it printed nothing: the
    #: Docker engine loses a short command's output now and then under load
    #: (moby/moby#27289), e.g. pgrep exits 0 (Kafka found) with no pid printed.
    lost_output_retries: int = 3
    #: One broker asked over the harness's wire client which brokers are
    #: registered and unfenced.
    broker_list_s: float = 3.0
    #: One metadata request of the partition observer the cluster uses itself
    #: (a new topic's readiness, the partitions collected at the end).
    describe_s: float = 2.0
    #: CreateTopics tries on a retriable error, and the pause between two.
    create_topic_attempts: int = 3
    create_topic_retry_s: float = 2.0
    #: Pause before creating the cluster's Docker network again while its subnet
    #: is still taken (a leftover network going away), and how many tries.
    network_retry_s: float = 1.0
    network_attempts: int = 10
    #: Pause before removing a Docker network again (its endpoints take a moment
    #: to go after a forced container removal); as many tries as for creating it.
    network_remove_retry_s: float = 0.5
    #: How long a removal waits for a container another process is already
    #: removing (a run's teardown while the next run of that name sweeps it), and
    #: how often it looks whether the container has gone.
    container_gone_s: float = 30.0
    container_gone_poll_s: float = 0.5
    #: One AlterPartitionReassignments request (starting or cancelling a partition
    #: reassignment): the controller's own bound on it (its TimeoutMs), and how
    #: long the harness waits for the answer (longer: a broker forwards it).
    reassign_request_s: float = 10.0
    reassign_answer_s: float = 15.0


@dataclass(frozen=True)
class SshConfig:
    """How the SSH node backend (cluster/ssh_backend.py) reaches real hosts: the
    bounds on connecting and on moving the Kafka distribution there. A command's
    own bound is NodeTimeouts'."""

    #: TCP connect, the SSH banner and authentication, each.
    connect_timeout_s: float = 10.0
    #: Keep-alive packets on an idle connection (a NAT or firewall may drop it).
    keepalive_s: float = 15.0
    #: Upload and unpack of one Kafka distribution (~130 MB) to one host.
    upload_timeout_s: float = 600.0
    #: Extra time the harness waits for a command's answer beyond its own bound
    #: (the command runs under `timeout`, so it ends first).
    answer_grace_s: float = 5.0
    #: Where the harness keeps uploaded distributions on a host (one folder per
    #: content hash, kept between runs), unless the nodes file says otherwise.
    kafka_dir: str = "/opt/elr-harness/dist"


@dataclass(frozen=True)
class ClusterConfig:
    """Topology and node settings of one KRaft cluster."""

    name: str = "elr"
    controllers: int = 3
    brokers: int = 3
    elr: bool = True
    #: transaction.version finalized at format time (--txn-version): None leaves
    #: the release's default (2 on 4.x where the feature exists)
    transaction_version: int | None = None
    #: The transactions' internal topics (__transaction_state, __consumer_offsets)
    #: get replication factor 3 and min ISR 2, so ELR guards them too (a run with
    #: --workload txn or eos)
    guard_internal_topics: bool = False
    kafka_version: str = DEFAULT_KAFKA_VERSION
    #: A user's tarball, unpacked distribution or Kafka build tree instead of Maven.
    kafka_dist: Path | None = None
    #: Private network the harness creates; nodes get fixed addresses in it.
    subnet: str = "10.213.77.0/24"
    #: Host part of the first controller's address; brokers follow controllers.
    first_host: int = 11
    broker_port: int = 9092
    controller_port: int = 9093
    controller_heap: str = "-Xms128m -Xmx256m"
    broker_heap: str = "-Xms256m -Xmx384m"
    jvm_opts: str = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k"
    #: Docker nodes start Kafka's JVMs from a class-data-sharing archive of its
    #: classes, trained once per release and image (cluster/class_archive.py).
    class_archive: bool = True
    timings: KafkaTimings = field(default_factory=KafkaTimings)
    timeouts: NodeTimeouts = field(default_factory=NodeTimeouts)
    releases: ReleasesConfig = field(default_factory=ReleasesConfig)
    image: ImageConfig = field(default_factory=ImageConfig)
    #: Bound on waiting for the cluster to be ready after `up`.
    ready_timeout_s: float = 120.0
    #: Bound on waiting for one node's Kafka process to be there after a
    #: (re)start by the nemesis (nemesis/injector.py start).
    node_start_timeout_s: float = 30.0
    #: How often `up` asks whether every broker is registered and unfenced.
    ready_poll_s: float = 0.5
    #: A starting node must look dead (no Kafka process) three times this far
    #: apart before setup gives up on it (one empty pgrep is no proof).
    dead_look_spacing_s: float = 0.5
    #: While `up` waits, how often it looks for a node whose Kafka died (and once
    #: more when every broker is registered): the look is a command in each node.
    dead_look_interval_s: float = 3.0
    #: How often a new topic's partitions are described until each is led with a
    #: full ISR.
    partitions_poll_s: float = 0.3
    #: Log dirs of a broker (the page-cache layer mounts over this later).
    log_dir: str = "/data/kafka"
    #: How many log directories each broker has (JBOD). One is log_dir itself; more
    #: are log_dir/dir-0, log_dir/dir-1, ... (one page-cache mount holds them all),
    #: so one can fail while the broker lives on (the disk-fault kind asks for 2).
    log_dirs: int = 1
    metadata_log_dir: str = "/data/metadata"
    #: Real hosts over SSH (a YAML file naming them, cluster/nodes_file.py)
    #: instead of Docker containers; the file also sets the topology.
    nodes_file: Path | None = None
    ssh: SshConfig = field(default_factory=SshConfig)


@dataclass(frozen=True)
class TopicConfig:
    """One topic the workload writes to."""

    name: str = "elr-test"
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False


# --------------------------------------------------------------------------
# workloads/
# --------------------------------------------------------------------------



#: How a producer picks a partition, and where a consumer starts (WorkloadConfig).
PARTITION_CHOICES = ("round-robin", "random")
CONSUMER_STARTS = ("earliest", "latest")
#: What `--workload` may name: the plain sends and polls, and transactions
#: (contract v4); LATER_WORKLOADS are named in the contract but not built yet.
WORKLOADS = ("plain", "txn")
LATER_WORKLOADS = ("eos",)
#: The transactional clients (`--txn-client`), and the levels of the Java one's log.
TXN_CLIENTS = ("java", "librdkafka")
JAVA_LOG_LEVELS = ("ERROR", "WARN", "INFO", "DEBUG")


@dataclass(frozen=True)
class WorkloadConfig:
    """Clients, pacing and client timeouts of one run's workload.

    Client timeouts are short on purpose: during a fault every operation must
    resolve (ok, fail or info) within seconds, so the history stays dense.
    """

    #: Logical producer processes (each has at most one send in flight).
    producers: int = 3
    #: acks level per producer process, assigned round-robin over processes.
    acks: tuple[str, ...] = ("all", "1", "0")
    #: Logical processes one librdkafka Producer (one worker thread) serves.
    processes_per_client: int = 8
    #: Consumer processes; each reads every partition of one topic.
    consumers: int = 1
    #: Each producer and consumer is a librdkafka client with its own threads: more
    #: than this many of either starve a test machine's cores, not Kafka.
    max_clients: int = 256
    #: Total sends per second over all producers; 0 means unbounded.
    rate: float = 200.0
    #: How long clients run before they stop on their own.
    time_limit_s: float = 60.0
    #: Idempotent producers (enable.idempotence); needs acks "all" only.
    idempotent: bool = False
    #: librdkafka debug contexts for every client (e.g. "msg,protocol"), logged to
    #: the run's harness.log: the client's side of an anomaly's evidence.
    client_debug: str = ""
    #: How a send picks its partition: "round-robin" or "random" (seeded).
    partition_choice: str = "round-robin"
    seed: int = 0
    #: librdkafka message.timeout.ms: the bound on one send, queue time included.
    message_timeout_ms: int = 5000
    #: librdkafka request.timeout.ms: the broker's ack wait for one produce request.
    request_timeout_ms: int = 3000
    #: librdkafka socket.timeout.ms: the bound on other requests (metadata, fetch).
    socket_timeout_ms: int = 5000
    linger_ms: int = 0
    #: How often clients refresh metadata even without an error (finds new leaders).
    metadata_refresh_interval_ms: int = 2000
    #: Bound on waiting for in-flight sends at stop; what is left is recorded as info.
    stop_timeout_s: float = 10.0
    #: Records one consumer poll returns at most.
    poll_batch: int = 200
    #: How long one consumer poll waits for records.
    poll_timeout_s: float = 0.5
    fetch_wait_max_ms: int = 100
    #: How often a consumer's librdkafka statistics (its fetch high watermarks,
    #: recorded on polls) are refreshed.
    fetch_stats_interval_ms: int = 250
    #: Where consumers start: "earliest" (low watermark) or "latest" (high watermark).
    consumer_start: str = "earliest"
    #: Bound on one watermark query (a consumer's start or repositioning).
    watermark_timeout_s: float = 2.0
    #: Run the observer with the workload (needs the cluster's partition observer).
    observe: bool = True
    observe_interval_s: float = 0.25
    observe_timeout_s: float = 2.0
    #: Deadline for the final reads of every partition together.
    final_read_timeout_s: float = 60.0
    #: Partitions read in parallel by the final reads.
    final_read_parallelism: int = 4
    #: The recorder writes, flushes and fsyncs its buffer this often (at most 1 s).
    recorder_flush_interval_s: float = 0.2
    #: Errors kept for the progress display.
    last_errors_kept: int = 10
    #: A consumer with no partition assigned yet waits this long (at most one
    #: poll_timeout_s) before it looks again.
    unassigned_wait_s: float = 0.2
    #: A final read whose watermark query went unanswered asks again after this.
    watermark_retry_s: float = 0.2
    # -- transactions (contract v4; --workload txn) -----------------------------
    #: What the run drives: "plain" (the sends and polls above), "txn"
    #: (transactional producers and read_committed consumers), or both.
    workloads: tuple[str, ...] = ("plain",)
    #: The transactional client: "java" (the Kafka under test's kafka-clients,
    #: KIP-890 with transaction.version 2) or "librdkafka" (confluent-kafka).
    txn_client: str = "java"
    #: Transactional producers, each its own transactional.id.
    txn_producers: int = 2
    #: Records one transaction sends, at least and at most (across partitions and topics).
    txn_min_sends: int = 2
    txn_max_sends: int = 5
    #: Share of transactions a producer aborts on purpose (`abort: true`).
    txn_abort_ratio: float = 0.1
    #: The producers' transaction.timeout.ms: a transaction a dead producer left
    #: open is aborted by its coordinator after this (plus the abort check).
    txn_timeout_ms: int = 10000
    #: Transactions per second over all transactional producers; 0 means unbounded.
    txn_rate: float = 20.0
    #: read_committed consumer processes, beside the plain consumers.
    read_committed_consumers: int = 1
    #: hanging-txn's margin beyond the transaction timeout and the abort check
    #: (HISTORY.md v4): an LSO stuck longer than all three is hanging.
    txn_hang_margin_ms: int = 10000
    #: The Java client's values start here (librdkafka's transactions share the
    #: plain producers' counter, which starts at 0): unique in the run, and a
    #: value says which client wrote it.
    txn_value_base: int = 10**15
    #: Bound on one blocking transactional call: the Java client's max.block.ms
    #: (init, commit, abort), librdkafka's init_transactions timeout (its commit and
    #: abort take the transaction's remaining time, as librdkafka recommends).
    txn_max_block_ms: int = 5000
    #: Commit (or abort) calls a transaction makes while they time out (both
    #: clients document a timed-out call as safe to retry); after the last the
    #: outcome is `info` (a commit) and the producer instance is replaced.
    txn_commit_attempts: int = 3
    #: The Java client's delivery.timeout.ms (at least linger.ms + request.timeout.ms).
    txn_delivery_timeout_ms: int = 8000
    #: Pause before a producer instance that could not initialize tries again.
    txn_init_retry_s: float = 0.5
    #: The Java client's JVM: heap, and the level of kafka-clients' own log
    #: (to the run's harness.log; its stdout carries only the client's JSON lines).
    txn_java_heap: str = "-Xms64m -Xmx256m"
    txn_java_log_level: str = "WARN"
    #: Bound on the Java client's JVM starting (its first line), and on compiling
    #: it with javac against the Kafka under test's kafka-clients (once per jar).
    txn_java_start_s: float = 60.0
    txn_compile_timeout_s: float = 120.0


# --------------------------------------------------------------------------
# run/ (one run, and a soak of runs)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ScenarioTimings:
    """The scripted scenarios' bounds on each step's wait for the observed state
    it expects (nemesis/scenarios/). A scenario played from its shipped file says
    its own warm-up, waits and holds there; these are the Python scenario's
    (elr-downgrade) and the polls every schedule file's player shares."""

    step_timeout_s: float = 60.0
    #: elr-downgrade: records committed on the scenario's partition (its observed high watermark,
    #: so on every replica of its full ISR) before T0. The acks=all writes
    #: acknowledged before T0 are nearly all the faults put at risk: from T0 an
    #: acks=all send waits for the cut-off follower to leave the ISR, and from T1
    #: it fails. At 100 (about 2 s of the default workload) ELR off lost only 3-12
    #: acks=all writes in 3 runs, a thin proof of its loss; 300 is about 5 s (it
    #: was a fixed 8 s sleep, and ELR off lost 372-398); the shipped files wait for
    #: `high-watermark at least 300` for the same reason.
    warmup_high_watermark: int = 300
    #: elr-downgrade: time in T1 so that acks=1 writes land on L alone (and acks=all
    #: ones fail); at the default rate, about 40 acks=1 sends to L's partition in
    #: 2 s (unclean-last-replica's file holds T1 as long).
    hold_t1_s: float = 2.0
    #: unclean-last-replica (and its -alone variant): the Kafka timeouts its steps
    #: wait out, shorter than the cluster's (KafkaTimings) unless --config gives
    #: [cluster.timings]. T0 and T1 wait for a cut-off follower to leave the ISR
    #: (replica.lag.time.max.ms; the leader looks every half of it), T2 for the
    #: killed leader to be fenced (broker.session.timeout.ms). 1500 ms (was 2500)
    #: is three of a follower's fetch waits (replica.fetch.wait.max.ms, 500 ms),
    #: so a follower that keeps fetching stays in; T0 and T1 each settle about
    #: 1 s sooner. On 4.4.0, seeds 1-5 each way: ELR on valid 5 of 5, off invalid
    #: 5 of 5 (52-91 acks=all writes lost).
    replica_lag_time_max_ms: int = 1500
    broker_session_timeout_ms: int = 3000
    broker_heartbeat_interval_ms: int = 500
    #: How often a `X registered` wait reads X's log for the new registration
    #: (fenced-last-leader's SIGSTOP must land before it catches up and is unfenced).
    registration_poll_s: float = 0.05
    #: The pause between two readings of the active controller's metadata log by a
    #: step waiting on it. A reading is a dump JVM of about 1 s, so at 0.2 s the
    #: readings run nearly back to back: T2 (unclean-last-replica) sees the fencing
    #: up to 0.8 s sooner than at 1.0 s, for a few more short JVMs while L is down.
    controller_poll_s: float = 0.2
    #: How often a step that watches the observations for a whole hold reads them.
    watch_poll_s: float = 0.5
    #: elr-downgrade (elect): time at ELR feature level 0 with B leading and A back in
    #: the ISR, for acks=all writes that L, the stale last known leader, never sees.
    hold_level0_s: float = 5.0
    #: elr-downgrade (reassign, downgrade-first): how long the leaderless partition
    #: is watched for a leader with its replicas back, at level 0 and after the
    #: feature is restored.
    hold_offline_s: float = 15.0


@dataclass(frozen=True)
class GuidedConfig:
    """`--nemesis guided` (nemesis/guided/search.py): the bounds of its rounds and what
    their holds are drawn from ([run.guided] in --config)."""

    #: A round starts only with this much of the workload left (its faults, their
    #: waits and the recovery after them fit in it).
    min_round_s: float = 45.0
    #: How long a round holds the state it reached (drawn between these) before
    #: it ends its faults: the workload writes in that state meanwhile.
    min_hold_s: float = 3.0
    max_hold_s: float = 8.0
    #: Bound on each wait of a round for the observed state its faults lead to.
    wait_s: float = 20.0
    #: Beyond the brokers' session timeout, how long a round that restarts the
    #: leader alone waits after shutting it down (the controller fences it first).
    session_margin_s: float = 2.0
    #: Bound on a round's recovery: every partition back to a full ISR (a round
    #: that drops a page cache starts only after one, KIP-966's fault budget).
    recovery_s: float = 60.0
    #: Quiet time before the first round (acks=all writes reach every replica).
    warmup_s: float = 8.0
    #: Bound on a transaction round's wait for a partition's leader to move once its
    #: leader was taken away (nemesis.guided.txn_recipes): a frozen or cut-off leader loses
    #: its leadership only when the controller fences it, past the session timeout.
    leader_move_s: float = 30.0
    #: How long leader-change-between-commit-and-marker keeps the markers held back
    #: (L cut from C) before taking L away, so that commits called meanwhile still
    #: wait for their markers when the leadership moves.
    marker_lag_s: float = 3.0
    #: Beyond the transaction timeout (test.json's transaction_timeout_ms), how long
    #: lso-below-hwm-beyond-txn-timeout keeps a marker held back: the LSO must stay
    #: below the high watermark across observations spanning more than the timeout.
    txn_timeout_margin_s: float = 5.0
    #: Brokers a guided run asks for unless --brokers (or [cluster] brokers) is
    #: given: one more than the replication factor, so that while a round has every
    #: replica of its partition away or down, a broker that is no replica of it still
    #: hears the controllers and answers the observer. On three brokers that are all
    #: replicas, the leaderless spells of guided's rounds went unobserved, and so did
    #: a mutant Kafka's election in them (docs/MUTANTS.md).
    brokers: int = 4


@dataclass(frozen=True)
class RunConfig:
    """One `harness run`: which nemesis, how long, where the evidence goes."""

    nemesis: str = "none"
    #: `--schedule FILE`: a schedule file's steps instead of --nemesis (#55).
    schedule: str | None = None
    seed: int = 0
    #: Cap on the workload (a scenario ends its workload earlier, once done).
    time_limit_s: float = 60.0
    #: Quiet and fault periods of a random mix.
    interval_s: float = 10.0
    #: The shortest --interval: faults closer than this are a storm that never lets
    #: the cluster settle, and nothing the checker says about it means much.
    min_interval_s: float = 1.0
    #: A scripted scenario's workload after its last step goes on until every
    #: partition is observed led with a whole ISR (bounded by the scenario's
    #: step_timeout_s), then this much longer: the report shows the recovery and
    #: writes after it (it was a fixed 10 s from the last step, then 3 s; at the
    #: workload's 200 operations a second, 1 s shows a few hundred after recovery).
    quiet_after_faults_s: float = 1.0
    #: Bound on the cluster recovering after healing (leaders and full ISRs).
    recovery_timeout_s: float = 120.0
    store: Path = Path("store")
    keep_cluster: bool = False
    check: bool = True
    #: The scripted scenarios' step bounds ([run.scenario] in --config).
    scenario: ScenarioTimings = field(default_factory=ScenarioTimings)
    #: A scripted scenario's cap on the workload when no time limit is given (a
    #: scenario ends its workload once its steps are done).
    scenario_time_limit_s: float = 300.0
    #: Bound on the nemesis thread ending its faults after the workload phase.
    nemesis_join_s: float = 60.0
    #: Each fault kind's own settings, by its name ([run.faults.<kind>] in --config):
    #: frozen dataclasses its module (nemesis/faults/<kind>.py) defines with their
    #: rules; a kind not named here has its defaults (the run fills every one in).
    faults: Mapping[str, Any] = field(default_factory=dict)
    #: `--nemesis guided`'s rounds ([run.guided] in --config).
    guided: GuidedConfig = field(default_factory=GuidedConfig)
    #: `--rounds`: a guided run plays at most this many rounds, a random mix this
    #: many rounds of its rotation (every kind once each), and the run ends when
    #: they are done, healed (None: they go on until the time limit, which still
    #: caps them).
    rounds: int | None = None
    #: `--reached`: KIP-966 states reached before (a soak's runs so far), which a
    #: guided run aims at only after the others.
    reached: tuple[str, ...] = ()
    #: The progress display is refreshed this often; off a terminal a line is
    #: printed at most every progress_line_every_s.
    progress_poll_s: float = 0.5
    progress_line_every_s: float = 10.0
    #: fenced-last-leader (KAFKA-19522's recipe) unless brokers or min ISR are given:
    #: a fourth broker to answer, and an ISR that may shrink to one.
    fenced_last_leader_brokers: int = 4
    fenced_last_leader_min_insync_replicas: int = 1
    #: min-isr-drop unless min ISR is given: 3 on three replicas, lowered to 2 at T1.
    min_isr_drop_min_insync_replicas: int = 3
    #: elr-downgrade unless brokers are given: a fourth broker, no replica of the
    #: partition, answers the observer while L, A and B are all down.
    elr_downgrade_brokers: int = 4


@dataclass(frozen=True)
class SoakConfig:
    """`harness soak`: runs one after another until the duration is used up."""

    duration_s: float = 8 * 3600.0
    #: First seed; run n of the soak has seed + n, so each run reproduces alone.
    seed: int = 1
    #: Kafka releases rotated over the plan's entries (each entry on each one).
    kafka_versions: tuple[str, ...] = ("latest",)
    #: What a finished run keeps: "all"; "no-cache" (a valid run drops its
    #: Parquet cache, an invalid or unknown one keeps everything); "failing"
    #: (a valid run keeps only test.json, results.json and report.html).
    keep: str = "no-cache"
    #: The soak stops cleanly when the store's disk has less free space than this.
    min_free_bytes: int = 2 * 1024**3
    #: Harness errors in a row that stop the soak (the machine is sick, not Kafka).
    max_errors_in_a_row: int = 3
    #: The soak stops once this many runs are done (None: only the duration
    #: bounds it); soak.json keeps it, so a --resume stops at the same count.
    max_runs: int | None = None
    #: Before a plan entry has run once, its run is expected to take its workload
    #: time plus this (cluster up, heal, final reads, collect, teardown, check)...
    run_overhead_s: float = 75.0
    #: ...where a scenario's workload (which ends when its steps are done) is
    #: taken to last this long (61-66 s on 4.0.0-4.4.0, see docs/VERSIONS.md).
    scenario_workload_s: float = 70.0
    #: Bound on a run ending after the soak forwarded Ctrl-C to it (heal,
    #: collect, teardown); after that it is killed.
    interrupt_grace_s: float = 240.0
    #: How often the live progress line is printed while a run goes on.
    progress_every_s: float = 30.0
    #: A child run of a replay, a shrink or a score that has not ended after this
    #: long is hung: it is handed a Ctrl-C (then killed after interrupt_grace_s),
    #: its cluster removed, and its cell is an error that says so.
    child_timeout_s: float = 3600.0


# --------------------------------------------------------------------------
# checker/
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckerConfig:
    """How the Spark checker runs."""

    spark_master: str = "local[*]"
    #: How long a spark:// master may take to accept a connection before the
    #: check gives up with one line (Spark itself retries for over a minute).
    spark_master_connect_timeout_s: float = 5.0
    #: JVM logs of past checks kept in the cache's logs/ folder (one per check)
    spark_logs_kept: int = 10
    #: Heap of the driver JVM (in local mode it also runs the tasks); fixed, so
    #: the checker's memory does not grow with the history (Spark spills).
    driver_memory: str = "2g"
    #: Heap of each executor when --spark-master points at a cluster.
    executor_memory: str = "1g"
    max_examples: int = 20
    shuffle_partitions: int = 8
    #: Input split size when reading history.jsonl (more splits, more parallel tasks).
    max_partition_bytes: int = 64 * 1024 * 1024
    #: History bytes per bucket of the events table at most (at least 2 buckets, at
    #: most 256): a bucket is a task of every check's stages, and a batch of 350
    #: tiny histories took 256 buckets (one per topic-partition), so the unit
    #: tests' reference batch ran 4,930 tasks of a few rows each (118 s; #60).
    bucket_bytes: int = 8 * 1024 * 1024
    #: The longest history line a check reads: the recorder's lines are kilobytes,
    #: and one line must fit the driver's heap (a 1 GiB line of NUL bytes ended
    #: the JVM after 26 s); a longer one is refused by its line number first.
    max_line_bytes: int = 64 * 1024 * 1024
    #: Convert history.jsonl once to Parquet next to it (history.parquet) and reuse it.
    parquet_cache: bool = True
    #: Below this history size Spark runs each stage without whole-stage code
    #: generation (spark.sql.codegen.wholeStage=false): on a small history the
    #: cold JVM spends longer compiling the generated classes than running them.
    interpreted_below_bytes: int = 16 * 1024 * 1024
    #: Below this history size Spark also evaluates each expression interpreted,
    #: without generating and compiling a class for it
    #: (spark.sql.codegen.factoryMode=NO_CODEGEN, Spark's own fallback path): a
    #: cold check of a run's history spends 2-3 s of CPU less (16k lines: 21.9 ->
    #: 19.3 CPU-s), while at 14.5 MB the interpreted rows cost 5 s more.
    interpreted_expressions_below_bytes: int = 8 * 1024 * 1024
    #: Below this history size the conversion keeps the parsed lines in memory for
    #: its passes; above, it writes them as Parquet once and reads that back.
    parsed_in_memory_below_bytes: int = 16 * 1024 * 1024
    #: Defaults for a history without test.json (HISTORY.md, check docs).
    default_replication_factor: int = 3
    default_min_insync_replicas: int = 2
    #: Extra JVM options of the driver (and executors); the checker is a short
    #: batch job, so a throughput collector without G1's concurrent work.
    jvm_options: str = "-XX:+UseParallelGC"
    #: Below this history size the JIT stops at C1 (-XX:TieredStopAtLevel=1):
    #: C2's compile time does not pay back on a short job, it does on a long one.
    #: First checks on 2 cores, C1 only against C2: 30 MB 18 s against 26 s;
    #: 90 MB 27 s against 34 s; 183 MB 40 s either way; 294 MB 61 s against
    #: 49 s (the conversion's parse and validation are the long CPU work).
    quick_jit_below_bytes: int = 192 * 1024 * 1024
    #: The same bound for a history whose Parquet cache is current: its check
    #: does no conversion, a shorter job (294 MB cached: 20 s with C1 only, 26 s
    #: with C2; 1.5 GB cached: 94 s with C1 only, 54 s with C2).
    quick_jit_cached_below_bytes: int = 512 * 1024 * 1024
    #: Start the driver JVM from the class-data-sharing archive of Spark's
    #: classes when one was built (checker/jvm_archive.py; scripts/setup.sh
    #: builds it): 5–7 s less per check on 2 cores (1M lines).
    class_archive: bool = True
    #: Bound on building that archive (a training check, then the JVM's dump).
    class_archive_timeout_s: float = 300.0
    #: How long a failed or interrupted conversion waits for its cancelled Spark
    #: tasks to stop before it removes what they wrote (a running task may still
    #: create files until it stops).
    cancelled_tasks_wait_s: float = 30.0
    #: ... and how long its session must then stay without a job: after a Ctrl-C
    #: the JVM may still be planning a job Python gave up on, which starts within it.
    cancelled_tasks_settle_s: float = 1.0
    #: Further Spark settings, as (key, value) pairs, applied last.
    spark_conf: tuple[tuple[str, str], ...] = ()


# --------------------------------------------------------------------------
# nemesis/ page-cache layer
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PageCacheConfig:
    """Where the page-cache-loss FUSE layer lives in a node and how long its steps may take."""

    #: Where pagecache_fs.py and its copy of mfusepy are installed in the node.
    files_dir: str = "/opt/elr-harness/pagecache"
    #: The real directory under the layer: what survives a power loss.
    backing_dir: str = "/data/kafka.backing"
    #: Where Kafka sees its log dirs (ClusterConfig.log_dir).
    mountpoint: str = "/data/kafka"
    #: The daemon's pid, daemon.log and dropped.json (outside the mount).
    control_dir: str = "/data/pagecache"
    python: str = "python3"
    #: Bound on the daemon coming up and its mount showing in /proc/mounts.
    mount_timeout_s: float = 30.0
    #: Bound on the dropped-bytes report appearing after SIGUSR1.
    report_timeout_s: float = 15.0
    #: Bound on a crashed or stopped daemon's process being gone.
    exit_timeout_s: float = 10.0
    #: Bound on a clean unmount (it writes back every dirty byte first).
    unmount_timeout_s: float = 120.0
    #: Bound on the live daemon answering a disk-fault request (SIGUSR2).
    fault_control_timeout_s: float = 10.0
    #: The request's signal is sent again when no answer came within this.
    fault_signal_retry_s: float = 1.0
    poll_interval_s: float = 0.1
    #: Looks (poll_interval_s apart) that must all find no live layer before a
    #: restart mounts a fresh one (one failed exec is no proof).
    dead_looks: int = 3
    #: Times a read of a file that is never empty (a pid, /proc/mounts, the report)
    #: is repeated when it printed nothing: output the Docker engine lost.
    lost_output_retries: int = 3
    #: Lines of daemon.log quoted in an error.
    log_tail_lines: int = 30


# --------------------------------------------------------------------------
# report/
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportConfig:
    """How reports are drawn: bounds that keep report.html small for any history."""

    #: Plots never draw more points than this per series (they downsample).
    max_plot_points: int = 4000
    serve_host: str = "127.0.0.1"
    serve_port: int = 8080
    #: Resolution of the inline PNG plots.
    plot_dpi: int = 90
    #: Partitions that get their own leader/ISR/ELR timeline (the rest are listed).
    max_partition_timelines: int = 12
    #: Rows of observed state changes shown per partition.
    max_state_rows: int = 400
    #: Rows of the decoded controller metadata log shown.
    max_metadata_rows: int = 3000
    #: Records of one poll shown beside an anomaly example (the matching ones first).
    max_example_records: int = 8
    #: Faults drawn with a text label on a plot; more get a legend by kind only.
    max_fault_labels: int = 40
