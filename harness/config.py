"""Every tunable of the harness, in one typed place.

Each stage reads its own section: the CLI builds these dataclasses from flags,
test.json stores them, and nothing else in the code base hard-codes a timeout,
a port or a size. Sections are frozen so a run's configuration cannot drift
while it runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# --------------------------------------------------------------------------
# Where things live
# --------------------------------------------------------------------------

#: Default Kafka release: the newest 4.1.x known to resolve from Maven Central
#: (ELR is on by default for new clusters from 4.1).
DEFAULT_KAFKA_VERSION = "4.1.1"
SCALA_BINARY_VERSION = "2.13"


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
        "python3-pip",
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


@dataclass(frozen=True)
class ClusterConfig:
    """Topology and node settings of one KRaft cluster."""

    name: str = "elr"
    controllers: int = 3
    brokers: int = 3
    elr: bool = True
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
    timings: KafkaTimings = field(default_factory=KafkaTimings)
    image: ImageConfig = field(default_factory=ImageConfig)
    #: Bound on waiting for the cluster to be ready after `up`.
    ready_timeout_s: float = 120.0
    #: Bound on waiting for one node's process to come up.
    node_start_timeout_s: float = 60.0
    #: Log dirs of a broker (the page-cache layer mounts over this later).
    log_dir: str = "/data/kafka"
    metadata_log_dir: str = "/data/metadata"


@dataclass(frozen=True)
class TopicConfig:
    """One topic the workload writes to."""

    name: str = "elr-test"
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False


# --------------------------------------------------------------------------
# checkers/
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckerConfig:
    """How the Spark checker runs."""

    spark_master: str = "local[*]"
    driver_memory: str = "2g"
    max_examples: int = 20
    shuffle_partitions: int = 8


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
    poll_interval_s: float = 0.1
    #: Lines of daemon.log quoted in an error.
    log_tail_lines: int = 30


# --------------------------------------------------------------------------
# reports/
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportConfig:
    """How reports are drawn."""

    #: Plots never draw more points than this per series (they downsample).
    max_plot_points: int = 4000
    serve_host: str = "127.0.0.1"
    serve_port: int = 8080
