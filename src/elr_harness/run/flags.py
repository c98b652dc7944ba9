"""Command-line flags shared by `harness cluster` and `harness run`.

Flags map one to one onto the typed config of harness.core.config; defaults come
from there, so the help text and the code never disagree.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from elr_harness.core import validate
from elr_harness.core.config import ClusterConfig, TopicConfig


def _on_off(value: str) -> bool:
    if value.lower() in ("on", "true", "yes", "1"):
        return True
    if value.lower() in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {value[:60]!r}")


def _flag_type(rule: Callable[[Any], Any], name: str) -> Callable[[str], Any]:
    """A core rule (core/validate.py) as an argparse type: the same check
    a --config file's value meets, its reason as argparse's message."""
    def parse(value: str) -> Any:
        try:
            return rule(value)
        except validate.Invalid as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    parse.__name__ = name
    return parse


topic_name = _flag_type(validate.topic_name, "topic_name")
cluster_name = _flag_type(validate.cluster_name, "cluster_name")
spark_master = _flag_type(validate.spark_master, "spark_master")
subnet = _flag_type(validate.subnet, "subnet")
_image_name = _flag_type(validate.image_name, "image_name")

#: A number as a person types it: ASCII digits only (Python's int() and float()
#: also take other scripts' digits, `int('\u0663') == 3`), no `_` separators.
_ASCII_INT = re.compile(r"[+-]?[0-9]{1,30}")
_ASCII_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
                          r"|[+-]?(nan|inf|infinity)", re.IGNORECASE)


def ascii_int(value: str) -> int:
    """An int flag: ASCII digits, an optional sign."""
    if not _ASCII_INT.fullmatch(value):
        raise argparse.ArgumentTypeError(f"invalid int value: {value[:60]!r}")
    return int(value)


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """ascii_int within [low, high]."""
    def parse(value: str) -> int:
        number = ascii_int(value)
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number} is not between {low} and {high}")
        return number
    parse.__name__ = "int"
    return parse


def finite_float(value: str) -> float:
    """A number of seconds or a rate: ASCII, finite, >= 0 (nan and inf are refused)."""
    if not _ASCII_FLOAT.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{value[:60]!r} is not a number")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise argparse.ArgumentTypeError(f"{value[:60]!r} is not a finite number >= 0")
    return number


def seconds(value: str) -> float:
    """A time in seconds: finite_float, at most 7 days (1e308 is a typo, not a plan)."""
    number = finite_float(value)
    if number > validate.MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{value[:60]!r} is more than 7 days ({validate.MAX_SECONDS:g} s)")
    return number


def coverage_states(value: str) -> tuple[str, ...]:
    """A comma list of KIP-966 coverage states (HISTORY.md's list; empty: none),
    checked by the rule a --config file's run.reached meets."""
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    return _flag_type(validate.RULES["run.reached"], "coverage_states")(names)


def workload_list(value: str) -> tuple[str, ...]:
    """`--workload plain,txn` as a tuple; which names are allowed is the rule a
    --config file's workload.workloads meets (core/validate.py), judged with the
    rest of the config so that a refusal is one line."""
    return tuple(name.strip() for name in value.split(",") if name.strip())


def port(value: str) -> int:
    if not _ASCII_INT.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{value[:60]!r} is not a port number")
    number = int(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} is not between 0 and 65535")
    return number


def add_cluster_flags(parser: argparse.ArgumentParser) -> None:
    d = ClusterConfig()
    g = parser.add_argument_group("cluster")
    g.add_argument("--name", default=d.name, type=cluster_name,
                   help="cluster name (labels, network)")
    g.add_argument("--controllers", type=ascii_int, default=d.controllers,
                   help=f"controller-only nodes (default {d.controllers})")
    g.add_argument("--brokers", type=ascii_int, default=d.brokers,
                   help=f"broker-only nodes (default {d.brokers})")
    g.add_argument("--elr", type=_on_off, default=d.elr, metavar="on|off",
                   help="eligible.leader.replicas.version at format time (default on)")
    g.add_argument("--kafka-version", default=d.kafka_version,
                   help="Kafka release resolved from Maven Central, or latest (the default: "
                        "the newest 4.x release; `harness versions` lists them)")
    g.add_argument("--kafka-dist", type=Path, default=None,
                   help="a Kafka tarball, unpacked distribution or built source tree instead")
    g.add_argument("--subnet", type=subnet, default=d.subnet,
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
    g.add_argument("--partitions", type=ascii_int, default=d.partitions)
    g.add_argument("--replication-factor", type=ascii_int, default=d.replication_factor)
    g.add_argument("--min-insync-replicas", type=ascii_int, default=d.min_insync_replicas)
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
    from elr_harness.cluster.nodes_file import with_nodes_file

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
