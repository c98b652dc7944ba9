"""Command-line flags shared by `harness cluster` and `harness run`.

Flags map one to one onto the typed config of harness.core.config; defaults come
from there, so the help text and the code never disagree.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from harness.core.config import ClusterConfig, TopicConfig


def _on_off(value: str) -> bool:
    if value.lower() in ("on", "true", "yes", "1"):
        return True
    if value.lower() in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got '{value}'")


#: Kafka's own rule for a topic's name (org.apache.kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def topic_name(value: str) -> str:
    if value in (".", "..") or not _TOPIC_NAME.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"'{value[:60]}' is not a Kafka topic name (1-249 of a-z A-Z 0-9 . _ -)")
    return value


def cluster_name(value: str) -> str:
    """A name Docker accepts for containers and networks, short enough for both."""
    if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,39}", value):
        raise argparse.ArgumentTypeError(
            f"'{value[:60]}' is not a cluster name (1-40 of a-z A-Z 0-9 _ . -, "
            "starting with a letter or digit)")
    return value


def _parsed(value: str, parse, what: str):
    try:
        return parse(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value[:60]}' is not {what}") from None


def finite_float(value: str) -> float:
    """A number of seconds or a rate: nan and inf are refused, not run."""
    number = _parsed(value, float, "a number")
    if not math.isfinite(number) or number < 0:
        raise argparse.ArgumentTypeError(f"'{value[:60]}' is not a finite number >= 0")
    return number


#: The master URLs Spark itself accepts (SparkContext's master parsing).
_SPARK_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+, *[0-9]+, *[0-9]+\]"
    r"|spark://[^\s,:/]+:[0-9]+(,[^\s,:/]+:[0-9]+)*|yarn|k8s://\S+")


def spark_master(value: str) -> str:
    if not _SPARK_MASTER.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"'{value[:60]}' is not a Spark master URL (local[*], local[N], "
            "spark://host:port, yarn or k8s://...)")
    return value


def port(value: str) -> int:
    number = _parsed(value, int, "a port number")
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} is not between 0 and 65535")
    return number


def _subnet(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not an IPv4 subnet like 10.213.77.0/24: {err}") \
            from err
    return str(network)


def _image_name(value: str) -> str:
    """A Docker image reference (name[:tag] or name@digest); Docker's own check
    comes later, this one refuses what cannot be one."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._/:@-]{0,254}", value):
        raise argparse.ArgumentTypeError(f"'{value[:60]}' is not a Docker image name")
    return value


def add_cluster_flags(parser: argparse.ArgumentParser) -> None:
    d = ClusterConfig()
    g = parser.add_argument_group("cluster")
    g.add_argument("--name", default=d.name, type=cluster_name,
                   help="cluster name (labels, network)")
    g.add_argument("--controllers", type=int, default=d.controllers,
                   help=f"controller-only nodes (default {d.controllers})")
    g.add_argument("--brokers", type=int, default=d.brokers,
                   help=f"broker-only nodes (default {d.brokers})")
    g.add_argument("--elr", type=_on_off, default=d.elr, metavar="on|off",
                   help="eligible.leader.replicas.version at format time (default on)")
    g.add_argument("--kafka-version", default=d.kafka_version,
                   help="Kafka release resolved from Maven Central, or latest (the default: "
                        "the newest 4.x release; `harness versions` lists them)")
    g.add_argument("--kafka-dist", type=Path, default=None,
                   help="a Kafka tarball, unpacked distribution or built source tree instead")
    g.add_argument("--subnet", type=_subnet, default=d.subnet,
                   help=f"the cluster's private network (default {d.subnet}); two clusters "
                        f"at once need two subnets")
    g.add_argument("--base-image", default=None, type=_image_name,
                   help="start the node image from this registry image instead of debootstrap")
    add_nodes_file_flag(g)


def add_nodes_file_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--nodes-file: real hosts over SSH instead of containers (docs/SSH.md); every
    command that makes or finds a cluster takes it."""
    parser.add_argument("--nodes-file", type=Path, default=None, metavar="HOSTS.yaml",
                        help="run on the hosts this YAML file names, over SSH, instead of "
                             "Docker containers (it sets the topology; see docs/SSH.md)")


def add_topic_flags(parser: argparse.ArgumentParser, topic_default: str | None) -> None:
    d = TopicConfig()
    g = parser.add_argument_group("topic")
    g.add_argument("--topic", default=topic_default, type=topic_name,
                   help="topic to create" + (f" (default {topic_default})" if topic_default
                                             else " (none unless given)"))
    g.add_argument("--partitions", type=int, default=d.partitions)
    g.add_argument("--replication-factor", type=int, default=d.replication_factor)
    g.add_argument("--min-insync-replicas", type=int, default=d.min_insync_replicas)
    g.add_argument("--unclean-leader-election", type=_on_off, default=d.unclean_leader_election,
                   metavar="on|off", help="unclean.leader.election.enable (default off)")


#: Cluster and topic flags (their dests) -> the config field each sets;
#: `--base-image` sets ClusterConfig.image.base_image.
CLUSTER_FLAGS = {"name": "name", "controllers": "controllers", "brokers": "brokers",
                 "elr": "elr", "kafka_version": "kafka_version", "kafka_dist": "kafka_dist",
                 "subnet": "subnet", "nodes_file": "nodes_file"}
TOPIC_FLAGS = {"topic": "name", "partitions": "partitions",
               "replication_factor": "replication_factor",
               "min_insync_replicas": "min_insync_replicas",
               "unclean_leader_election": "unclean_leader_election"}


def cluster_config(args: argparse.Namespace, base: ClusterConfig | None = None,
                   given: set[str] | None = None) -> ClusterConfig:
    """`base` (the defaults) with the cluster flags applied: all of them, or only
    those in `given` (the flags typed, which win over a --config file)."""
    config = replace(base or ClusterConfig(), **{
        field: getattr(args, dest) for dest, field in CLUSTER_FLAGS.items()
        if given is None or dest in given})
    if getattr(args, "base_image", None) and (given is None or "base_image" in given):
        config = replace(config, image=replace(config.image, base_image=args.base_image))
    return with_hosts(config)


def with_hosts(config: ClusterConfig) -> ClusterConfig:
    """config with the topology of its nodes file, when it names one (read and
    checked now: a bad file is one line before anything starts)."""
    if config.nodes_file is None:
        return config
    from cluster.nodes_file import with_nodes_file

    return with_nodes_file(config, config.nodes_file)


def topic_config(args: argparse.Namespace, base: TopicConfig | None = None,
                 given: set[str] | None = None) -> TopicConfig | None:
    """As cluster_config, for the topic flags; None when no topic is named."""
    if not args.topic:
        return None
    return replace(base or TopicConfig(), **{
        field: getattr(args, dest) for dest, field in TOPIC_FLAGS.items()
        if given is None or dest in given})


def given_flags(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> set[str]:
    """The dests of the options the command line named, defaults left out (so a
    --config file's setting yields only to a flag the user typed)."""
    actions = list(_every_action(parser))
    saved = [(action, action.default) for action in actions]
    try:
        for action in actions:
            if action.option_strings:
                action.default = argparse.SUPPRESS
        named = parser.parse_args(argv)
    finally:
        for action, default in saved:
            action.default = default
    return {dest for dest, _ in vars(named).items()
            if any(a.dest == dest and a.option_strings for a in actions)}


def _every_action(parser: argparse.ArgumentParser):
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _every_action(sub)
