"""`harness cluster up|status|down|logs`: the containers alone, without a test."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from elr_harness.core.config import ClusterConfig
from elr_harness.core.errors import EXIT_UNKNOWN, BadInput
from elr_harness.run.flags import (
    add_cluster_flags,
    add_nodes_file_flag,
    add_topic_flags,
    bounded_int,
    cluster_config,
    cluster_name,
    topic_config,
    with_hosts,
)

console = Console(highlight=False)


def add_cluster_command(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("cluster", help="start, inspect or remove a cluster",
                            allow_abbrev=False)
    actions = parser.add_subparsers(dest="action", required=True)

    up = actions.add_parser("up", help="start a KRaft cluster and wait until it is ready",
                             allow_abbrev=False)
    add_cluster_flags(up)
    add_topic_flags(up, topic_default=None)
    up.set_defaults(func=_cmd_up)

    for name, func, text in (("status", _cmd_status, "nodes, roles and the partition table"),
                             ("down", _cmd_down, "remove every container and the network"),
                             ("logs", _cmd_logs, "show or collect the nodes' Kafka logs")):
        p = actions.add_parser(name, help=text, allow_abbrev=False)
        p.add_argument("--name", default=ClusterConfig.name, type=cluster_name,
                       help="cluster name")
        add_nodes_file_flag(p)
        if name == "logs":
            p.add_argument("node", nargs="?", help="one node (default: all)")
            p.add_argument("--lines", type=bounded_int(1, 100_000), default=40)
            p.add_argument("--to", type=Path, default=None, help="copy full logs to this folder")
        p.set_defaults(func=func)


def _cluster(args: argparse.Namespace, config: ClusterConfig | None = None):
    """The cluster of --name (and --nodes-file, when given)."""
    from elr_harness.cluster.cluster import Cluster

    return Cluster(config or with_hosts(ClusterConfig(name=args.name,
                                                      nodes_file=args.nodes_file)), log=_log)


def _log(message: str) -> None:
    console.print(f"[dim]·[/dim] {message}")


def _cmd_up(args: argparse.Namespace) -> int:
    from elr_harness.cluster.kraft import validate_topic
    from elr_harness.core.validate import default_where, validate_config
    from elr_harness.run.config import FIELD_FLAGS

    config = cluster_config(args)
    topic = topic_config(args)
    # the same boundary as a run's (flags checked by their types; the rest by rule)
    validate_config({"cluster": config, "topic": topic},
                    lambda path: FIELD_FLAGS.get(path, default_where(path)))
    if topic is not None:
        validate_topic(topic, config)
    from elr_harness.cluster import kraft

    kraft.validate_topology(config)
    cluster = _cluster(args, config)
    try:
        cluster.up()
        if topic is not None:
            cluster.create_topic(topic)
            _log(f"topic {topic.name}: {topic.partitions} partitions, RF "
                 f"{topic.replication_factor}, min ISR {topic.min_insync_replicas}")
    except KeyboardInterrupt:
        cluster.down()
        raise
    _print_status(cluster)
    return 0


def _running_cluster(args: argparse.Namespace):
    """The cluster of --name (or --nodes-file), or None (and a message) when it is
    not up."""
    cluster = _cluster(args)
    if not cluster.is_up():
        where = f"on the hosts of {args.nodes_file}" if args.nodes_file else ""
        print(f"harness: cluster '{args.name}' is not up{' ' + where if where else ''} "
              "(harness cluster up starts it)", file=sys.stderr)
        return None
    return cluster


def _cmd_status(args: argparse.Namespace) -> int:
    cluster = _running_cluster(args)
    if cluster is None:
        return EXIT_UNKNOWN  # no cluster is a harness error (2), never "invalid" (1)
    _print_status(cluster)
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    _cluster(args).down()
    return 0


def _cmd_logs(args: argparse.Namespace) -> int:
    cluster = _running_cluster(args)
    if cluster is None:
        return EXIT_UNKNOWN  # no cluster is a harness error (2), never "invalid" (1)
    if args.node and args.node not in cluster.nodes:
        raise BadInput(f"no node '{args.node}'; nodes: {', '.join(cluster.nodes)}")
    if args.to:
        cluster.collect_logs(args.to)
        console.print(f"logs copied to {args.to}")
        return 0
    for name, node in cluster.nodes.items():
        if args.node and name != args.node:
            continue
        console.rule(name)
        console.print(node.log_tail(args.lines), markup=False)
    return 0


def _print_status(cluster) -> None:
    transactions = cluster.has_transactions()
    nodes = Table(title=f"cluster '{cluster.config.name}'  Kafka {cluster.kafka_version()}  "
                        f"ELR {cluster.elr_label()}"
                        + ("  transactions on" if transactions else ""))
    for column in ("node", "role", "id", "address", "container", "kafka"):
        nodes.add_column(column)
    for status in cluster.node_status():
        kafka = f"up (pid {status.kafka_pid})" if status.kafka_pid else "[red]down[/red]"
        nodes.add_row(status.spec.name, status.spec.role.value, str(status.spec.node_id),
                      status.spec.address, status.container_state, kafka)
    console.print(nodes)
    console.print(f"bootstrap: {','.join(cluster.bootstrap)}")
    from elr_harness.cluster.observe import ObservationError

    try:
        states = cluster.describe_all()
    except ObservationError as err:
        console.print(f"[yellow]partition state unavailable: {err}[/yellow]")
        return
    if not states:
        console.print("no topics")
        return
    table = Table(title="partitions")
    # with transactions the guarded internal topics are rows too, and each data
    # partition's last stable offset a column
    for column in ("topic", "partition", "leader", "epoch", "replicas", "ISR", "ELR",
                   "LastKnownELR", "HWM", *(("LSO",) if transactions else ())):
        table.add_column(column)
    for s in states:
        lso = ("-" if s.last_stable_offset is None else str(s.last_stable_offset),)
        table.add_row(s.topic, str(s.partition), str(s.leader), str(s.leader_epoch),
                      _ids(s.replicas), _ids(s.isr), _ids(s.elr), _ids(s.last_known_elr),
                      "-" if s.high_watermark is None else str(s.high_watermark),
                      *(lso if transactions else ()))
    console.print(table)


def _ids(values) -> str:
    return "null" if values is None else "[" + ",".join(str(v) for v in values) + "]"
