"""Schedules as data (#55): a TOML file of steps that `harness run --schedule FILE`
plays on one partition, the first topic's partition 0, as the scripted scenarios
do.

    help = "KIP-966's last replica standing"     # what the file is for (optional)

    [needs]                      # what the cluster must be (optional); set unless the
    brokers = 4                  # user chose otherwise, refused when the run's is less:
    min_insync_replicas = 1      # at least 4 brokers, min ISR exactly 1, at least
    log_dirs = 2                 # 2 log dirs per broker,
    workloads = ["txn"]          # these workloads driven (set: the default ones and these),
    unclean_leader_election = "elr-off"   # the topic's unclean leader election: true,
                                 # false, or "elr-off" (on exactly when --elr is off)

    [placement]                  # where the run it came from had its nodes at the
    leader = "broker-2"          # start (optional; a run's schedule.toml has it): the
    replicas = ["broker-2", "broker-3", "broker-1"]   # partition's leader, its replicas
    controller = "controller-1"  # and the active controller. Played with it, every node
                                 # a step names is renamed to the node in the same place
                                 # on the cluster it plays on (its leader, its first
                                 # follower, ...), since a fresh cluster places its
                                 # leaders elsewhere

    [[step]]
    name = "T0"                  # optional: step-1, step-2, ... otherwise
    fault = "partition"          # a registered kind (`harness run --help` lists them)
    target = "follower"          # leader | follower | isr | elr | any | active-controller
                                 # | coordinator (the transaction coordinator of the run's
                                 # first transactional producer, now), a name an earlier
                                 # step bound, or a node (broker-2)
    as = "A"                     # binds the node chosen (L: the leader at the start; C:
                                 # the transaction coordinator at the start, with --workload
                                 # txn: its transactional.id's __transaction_state leader)
    until = "A not in isr"       # a wait (nemesis.schedule.conditions), bounded by within_s
    within_s = 30
    read = "controller"          # where the wait reads the partition (default: observer,
                                 # the brokers; controller: the active controller's
                                 # metadata log, for when no broker has a fresh view)
    hold_s = 2                   # a while before the next step (optional)
    watch = "L leads"            # watched for through the hold (what must not happen
                                 # while it lasts); recorded whether and when it was
                                 # seen, read where `read` says
    partition = "t-3"            # the partition its roles and wait read (default: the
                                 # first topic's partition 0; a guided run's rounds);
                                 # "coordinator": C's __transaction_state partition
    settings = { ... }           # the kind's settings, as [run.faults.<kind>] of --config
    cut = { "broker-1" = ["broker-2", "controller-1"] }   # a network cut, exactly:
                                 # each node and the peers it drops (no target then)
    scope = "cluster"            # a min ISR change of the cluster default (default:
                                 # the topic of `partition`)

    [[step]]
    end = "T0"                   # ends what step T0 did (its heal, start, resume, ...)

    [[step]]
    until = "high-watermark at least 300"   # a step may only wait
    within_s = 60

A run writes the schedule it played into its run directory as schedule.toml: the
file's steps, each with a `played` table (the node its target resolved to, whether
its wait saw its condition and what it saw instead), which playing ignores, so that
file plays the run's schedule again.

A kind that changes the cluster's config takes no target: the ELR feature's change
and the min ISR's take `to` (the level, the new min ISR), and a reassignment a role
for the replica it moves (`target = "elr"`); which kind is which, its capabilities
say (nemesis.faults.base.Capability), never its name.

Every mistake is an input error naming the file, the line, the step and the field;
nothing is played before the whole file is checked.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elr_harness.core.errors import BadInput
from elr_harness.core.files import MAX_SETTINGS_BYTES, MISSING, path_problem, read_text
from elr_harness.core.validate import printable
from elr_harness.nemesis.faults import PACKAGES, FaultPackage
from elr_harness.nemesis.needs import Needs
from elr_harness.nemesis.schedule.step import NODE, Earlier, Step, StepChecker

BROKER = re.compile(r"broker-[0-9]{1,4}")
CONTROLLER_NODE = re.compile(r"controller-[0-9]{1,4}")

_TOP = ("help", "needs", "placement", "step")
#: A schedule file is read as a settings file is (core/files.py): this many bytes
#: at most...
MAX_SCHEDULE_BYTES = MAX_SETTINGS_BYTES
#: ...and this many steps (a guided soak of a day records fewer than 10,000).
MAX_STEPS = 50_000


@dataclass(frozen=True)
class Placement:
    """Where a run had its nodes at its start (a file's [placement])."""

    #: the partition's leader, and its replicas in the partition's order
    leader: str
    replicas: tuple[str, ...]
    #: the active controller (None: not said)
    controller: str | None = None

    @classmethod
    def from_table(cls, raw: Any, where: str) -> Placement:
        if not isinstance(raw, dict):
            raise BadInput(f"{where}: `placement` must be a table ([placement])")
        known = ("leader", "replicas", "controller")
        for key in raw:
            if key not in known:
                raise BadInput(f"{where}: [placement] has no field {str(key)[:40]!r}; known: "
                               f"{', '.join(known)}")
        replicas = raw.get("replicas")
        if not isinstance(replicas, list) or not replicas or len(set(map(str, replicas))) != \
                len(replicas) or not all(isinstance(r, str) and BROKER.fullmatch(r)
                                         for r in replicas):
            raise BadInput(f"{where}: [placement] replicas: a list of distinct brokers "
                           "(broker-N)")
        leader = raw.get("leader")
        if leader not in replicas:
            raise BadInput(f"{where}: [placement] leader: {str(leader)[:40]!r} is none of "
                           "its replicas")
        controller = raw.get("controller")
        if controller is not None and not (isinstance(controller, str)
                                           and CONTROLLER_NODE.fullmatch(controller)):
            raise BadInput(f"{where}: [placement] controller: {str(controller)[:40]!r} is no "
                           "controller (controller-N)")
        return cls(leader, tuple(replicas), controller)

    def table(self) -> dict[str, Any]:
        return {"leader": self.leader, "replicas": list(self.replicas),
                **({"controller": self.controller} if self.controller else {})}


@dataclass(frozen=True)
class ScheduleFile:
    """A checked schedule file: its steps and where it came from."""

    path: str
    help: str
    steps: tuple[Step, ...]
    needs: Needs = field(default_factory=Needs)
    placement: Placement | None = None

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.fault for s in self.steps if s.fault))

    @property
    def packages(self) -> tuple[FaultPackage, ...]:
        return tuple(PACKAGES[k] for k in self.kinds)


def shipped_schedules() -> dict[str, Path]:
    """The scenario files the package ships, by name (`--schedule NAME` plays one)."""
    folder = Path(__file__).parents[1] / "scenario_files"
    return {p.stem: p for p in sorted(folder.glob("*.toml"))}


def read_schedule(path: Path) -> ScheduleFile:
    """The file at `path` (or the shipped scenario file of that name), checked whole
    (BadInput on the first mistake)."""
    shown = printable(str(path)[:200])
    shipped = shipped_schedules()
    if not os.path.lexists(path) and str(path) in shipped:
        path = shipped[str(path)]
    if path_problem(path) == MISSING and not os.path.islink(path):
        raise BadInput(f"--schedule {shown}: no such file (nor a shipped scenario: "
                       f"{', '.join(shipped)})")
    # the guards of every settings file: a regular file (a FIFO would hang, /dev/zero
    # eat memory), bounded, UTF-8 without a byte order mark
    text = read_text(path, f"--schedule {shown}", MAX_SCHEDULE_BYTES)
    return parse_schedule(text, shown)


def parse_schedule(text: str, path: str) -> ScheduleFile:
    try:
        table = tomllib.loads(text)
    except ValueError as err:  # TOMLDecodeError, or an int of more than 4300 digits
        raise BadInput(f"--schedule {path}: not TOML: {str(err)[:160]}") from None
    except RecursionError:
        raise BadInput(f"--schedule {path}: not TOML (nested too deep)") from None
    unknown = sorted(set(table) - set(_TOP))
    if unknown:
        raise BadInput(f"--schedule {path}: no field {unknown[0][:40]!r} at the top; known: "
                       f"{', '.join(_TOP)}")
    steps = table.get("step")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise BadInput(f"--schedule {path}: no [[step]] tables: a schedule is a list of steps")
    help_text = table.get("help", "")
    if not isinstance(help_text, str):
        raise BadInput(f"--schedule {path}: `help` must be text")
    if len(steps) > MAX_STEPS:
        raise BadInput(f"--schedule {path}: {len(steps)} steps, more than the {MAX_STEPS} "
                       "a schedule may hold")
    checked = Earlier()
    for number, raw in enumerate(steps, start=1):
        checked.append(StepChecker(text, path, number, raw, checked).step())
    needs = Needs.from_table(table.get("needs", {}), f"--schedule {path}")
    placement = Placement.from_table(table["placement"], f"--schedule {path}") \
        if "placement" in table else None
    return ScheduleFile(path, help_text, tuple(checked), needs, placement)

def check_nodes(schedule: ScheduleFile, node_names: set[str]) -> None:
    """Every node a step names is one of the cluster's (checked before the run)."""
    placed = schedule.placement
    if placed is not None:
        for name in [*placed.replicas, *([placed.controller] if placed.controller else [])]:
            if name not in node_names:
                raise BadInput(f"--schedule {schedule.path}: [placement]: {name!r} is no "
                               f"node of the cluster; nodes: {', '.join(sorted(node_names))}")
    for step in schedule.steps:
        names = [step.target] if step.target and NODE.fullmatch(step.target) else []
        names += sorted({n for node, peers in (step.cut or {}).items() for n in [node, *peers]})
        names += sorted(n for c in (step.until, step.watch) if c for n in c.names
                        if NODE.fullmatch(n))
        for name in names:
            if name not in node_names:
                raise BadInput(f"--schedule {schedule.path}: step {step.number} "
                               f"({step.name}): {name!r} is no node of the cluster; nodes: "
                               f"{', '.join(sorted(node_names))}")


def check_partitions(schedule: ScheduleFile, partitions: dict[str, int]) -> None:
    """Every partition a step names is one of the run's topics' (`partitions`: topic ->
    its count), checked before the run."""
    for step in schedule.steps:
        if step.partition is None or isinstance(step.partition, str):
            continue  # the schedule's own, or the coordinator's (found as it plays)
        topic, number = step.partition
        if number >= partitions.get(topic, 0):
            raise BadInput(f"--schedule {schedule.path}: step {step.number} ({step.name}): "
                           f"`partition`: {topic[:60]}-{number} is no partition of the run's "
                           f"topics ({', '.join(f'{t} x{n}' for t, n in partitions.items())})")
