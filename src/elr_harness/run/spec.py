"""What one run is made of (RunSpec), the checks it passes before anything
starts, and how test.json records it so it can be read and run again."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from elr_harness.cluster.distribution import check_request
from elr_harness.cluster.kraft import node_specs, validate_topic, validate_topology
from elr_harness.cluster.observe import OBSERVER_READS
from elr_harness.core.config import (
    CheckerConfig,
    ClusterConfig,
    RunConfig,
    TopicConfig,
    WorkloadConfig,
)
from elr_harness.core.config_file import TEST_JSON_FORMAT
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.validate import validate_config
from elr_harness.nemesis.faults import COLOURS
from elr_harness.nemesis.registry import NemesisPlan, parse_nemesis
from elr_harness.nemesis.schedule.file import check_nodes, check_partitions
from elr_harness.run.config import FAULT_RULES
from elr_harness.run.store import check_store
from elr_harness.workloads.validation import validate as validate_workload
from elr_harness.workloads.validation import validate_txn_cluster

console = Console(highlight=False)


@dataclass
class RunSpec:
    """Everything one run is made of; test.json records it."""

    cluster: ClusterConfig
    topics: list[TopicConfig]
    workload: WorkloadConfig
    run: RunConfig
    checker: CheckerConfig = field(default_factory=CheckerConfig)
    cli_args: list[str] = field(default_factory=list)
    #: A file to write the run directory's path to once it exists (for `soak`).
    record_run_dir: Path | None = None


def validate(spec: RunSpec) -> NemesisPlan:
    """Every check that needs no cluster, before anything starts."""
    # the typed boundary again (run_configs checked it naming each source): a spec
    # built any other way meets the same rules before a value reaches a host
    for topic in spec.topics or [None]:
        validate_config({"cluster": spec.cluster, "topic": topic, "run": spec.run,
                         "workload": spec.workload, "checker": spec.checker},
                        rules=FAULT_RULES)
    plan = parse_nemesis(spec.run.nemesis, spec.run.schedule)
    validate_topology(spec.cluster)
    for topic in spec.topics:
        validate_topic(topic, spec.cluster)
    validate_workload(spec.workload)
    validate_txn_cluster(spec.workload, spec.cluster.timings)
    check_request(spec.cluster.kafka_version, spec.cluster.kafka_dist)
    check_store(spec.run.store, plan.test_name)
    if spec.run.time_limit_s <= 0:
        raise HarnessError("--time-limit must be positive")
    if plan.faults and spec.run.interval_s < spec.run.min_interval_s:
        raise BadInput(f"--interval must be at least {spec.run.min_interval_s:g} s, got "
                       f"{spec.run.interval_s:g} (shorter is a fault storm)")
    if spec.cluster.controllers % 2 == 0:
        console.print(f"[yellow]warning:[/yellow] {spec.cluster.controllers} controllers "
                      f"tolerate no more failures than {spec.cluster.controllers - 1}; an odd "
                      "quorum is the usual choice")
    if plan.scripted:
        plan.scripted.refuse(spec.cluster, spec.topics)
    # what its file needs ([needs]): a scenario's own check first, in its words
    plan.needs.refuse(plan.schedule.path if plan.schedule else spec.run.nemesis.strip(),
                      spec.cluster.brokers, spec.cluster.log_dirs,
                      [t.min_insync_replicas for t in spec.topics],
                      workloads=spec.workload.workloads, elr=spec.cluster.elr,
                      unclean_leader_election=[t.unclean_leader_election
                                               for t in spec.topics],
                      flag="--schedule" if plan.schedule else "--nemesis")
    if plan.schedule:
        check_partitions(plan.schedule, {t.name: t.partitions for t in spec.topics})
        if spec.cluster.nodes_file is None:  # a nodes file's names: checked as the run starts
            check_nodes(plan.schedule, {n.name for n in node_specs(spec.cluster)})
    if spec.run.rounds is not None and not (plan.guided or plan.groups):
        why = ("--schedule has no rounds: a schedule file ends when its steps are done"
               if plan.schedule else
               f"--nemesis {plan.text} has no rounds: "
               + ("a scenario ends when its steps are done" if plan.scenario
                  else "it makes no faults"))
        raise BadInput(f"--rounds is for --nemesis guided or a random mix; {why}")
    if spec.run.reached and not plan.guided:
        raise BadInput("--reached is for --nemesis guided (the states it need not aim at "
                       "first)")
    if plan.guided and (spec.cluster.brokers < 3 or
                        any(t.replication_factor < 3 for t in spec.topics)):
        raise BadInput("--nemesis guided needs 3 brokers and replication factor 3 (a "
                       "leader and two followers)")
    return plan


def reproduce_command(cli_args: list[str], ran: str | None, dist: Path | None) -> str:
    """The command that runs this test again: the one typed, with the Kafka release
    that ran pinned (a `latest` run repeated tomorrow may get another release)."""
    # a soak's bookkeeping flags mean nothing to a person repeating the run: its
    # marker, and the --no-check it adds (the soak checks its runs itself), which
    # repeated would record a run and give no verdict
    typed = _without(cli_args, "--record-run-dir")
    if len(typed) < len(cli_args):
        typed = [arg for arg in typed if arg != "--no-check"]
    args = _without(typed, "--kafka-version")
    if dist is None and ran:
        args += ["--kafka-version", ran]
    elif dist is None:
        args = typed
    return "harness " + " ".join(shlex.quote(a) for a in args)


def _without(args: list[str], flag: str) -> list[str]:
    """args without `flag VALUE` and `flag=VALUE`."""
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(f"{flag}="):
            kept.append(arg)
    return kept


def started_test_json(spec: RunSpec, plan: NemesisPlan, started_at: datetime) -> dict[str, Any]:
    """test.json as the run starts: what was asked, the config to replay it from;
    the run adds the nodes, the release that ran and the outcome."""
    return {
        "format": TEST_JSON_FORMAT,
        "test": plan.test_name,
        # a schedule file's run says so (its steps as played: schedule.toml)
        "nemesis": f"schedule {spec.run.schedule}" if plan.schedule else spec.run.nemesis,
        "seed": spec.run.seed,
        "kafka_version": spec.cluster.kafka_version,
        "kafka_version_requested": spec.cluster.kafka_version,
        "kafka_dist": str(spec.cluster.kafka_dist) if spec.cluster.kafka_dist else None,
        "elr_enabled": spec.cluster.elr,
        # how the observer reads the fenced list (HISTORY.md v4, elr-member-unclean)
        "observer": dict(OBSERVER_READS),
        "idempotent_producers": spec.workload.idempotent,
        "topics": {t.name: {"partitions": t.partitions,
                            "replication_factor": t.replication_factor,
                            "min_insync_replicas": t.min_insync_replicas,
                            "unclean_leader_election": t.unclean_leader_election}
                   for t in spec.topics},
        "nodes": {},
        "workload": {"producers": spec.workload.producers, "acks": list(spec.workload.acks),
                     "consumers": spec.workload.consumers, "rate": spec.workload.rate,
                     "time_limit_s": spec.run.time_limit_s},
        "command": "harness " + " ".join(shlex.quote(a) for a in spec.cli_args),
        "cli_args": spec.cli_args,
        "started_at": started_at.isoformat(timespec="seconds"),
        # how the report draws each recorded kind (it reads them here, never the nemesis)
        "fault_colours": dict(COLOURS),
        "config": json.loads(json.dumps({
            "cluster": asdict(spec.cluster), "topics": [asdict(t) for t in spec.topics],
            "workload": asdict(spec.workload), "run": asdict(spec.run),
            "checker": asdict(spec.checker)}, default=str)),
    }
