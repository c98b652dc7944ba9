"""The nemesis thread of `harness run`: the plan's schedule (a schedule file: a
user's or a scripted scenario's shipped one; a scenario still in Python, a guided
run, random mixes) made from the run's spec and played until the time limit; then,
for a Python scenario's or a mix's run, what it played read back as
schedule.toml's steps (nemesis.schedule.recorded)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console

from elr_harness.cluster.observe import recovered
from elr_harness.core.config import WorkloadConfig
from elr_harness.nemesis.registry import NemesisPlan
from elr_harness.run.spec import RunSpec

if TYPE_CHECKING:
    from elr_harness.nemesis.guided.txn_recipes import Transactions

console = Console(highlight=False)


def first_transactional_id(workload: WorkloadConfig) -> str | None:
    """The transactional.id whose coordinator a schedule's `coordinator` (and C)
    names: the first transactional producer's (None: the run has none)."""
    if "txn" not in workload.workloads or workload.txn_producers < 1:
        return None
    from elr_harness.workloads.txn_workload import txn_ids

    return txn_ids(workload)[0]


def guided_transactions(workload: WorkloadConfig) -> Transactions | None:
    """What a guided run aims at transactions with (nemesis.guided.txn_recipes): every
    transactional producer's transactional.id and the transaction timeout (None:
    the run has no transactions, and guided aims at the KIP-966 states alone)."""
    if "txn" not in workload.workloads or workload.txn_producers < 1:
        return None
    from elr_harness.nemesis.guided.txn_recipes import Transactions
    from elr_harness.workloads.txn_workload import txn_ids

    return Transactions(tuple(txn_ids(workload)), workload.txn_timeout_ms)


def run_nemesis(plan: NemesisPlan, spec: RunSpec, injector, observer,
                 stop: threading.Event, result: dict[str, Any]) -> None:
    """The nemesis thread: the plan's schedule; never raises."""
    def log(message: str) -> None:
        console.print(f"[magenta]nemesis[/magenta] {message}")

    try:
        schedule = _schedule(plan, spec, injector, observer, log)
        began_ns = time.monotonic_ns() - getattr(injector.recorder, "origin_ns", 0)
        played_file = plan.played_file
        placement = placement_of(observer, injector, spec.topics[0].name,
                                 spec.run.scenario.step_timeout_s, log) \
            if schedule is not None and played_file is None else None
        if schedule is not None:
            schedule.run(time.monotonic() + spec.run.time_limit_s, stop, result)
        if played_file is None and (plan.scripted or plan.groups and not plan.guided):
            _record_schedule(plan, spec, injector, began_ns, result, log)
        if placement and isinstance(result.get("schedule"), dict):
            result["schedule"]["placement"] = placement  # a drawn or recorded schedule
    except Exception as err:  # noqa: BLE001 - recorded; the run heals and goes on
        result["error"] = f"{type(err).__name__}: {err}"
        log(f"[red]error: {result['error']}[/red]")
    finally:
        result["latencies_s"] = injector.latencies
        result["done"] = True


def placement_of(observer, injector, topic: str, within_s: float,
                 log: Callable[[str], None] = lambda message: None) -> dict[str, Any] | None:
    """Where the nodes are as the schedule begins (a schedule file's [placement]): the
    topic's partition 0's leader and replicas, and the active controller, from the
    observer's first sample with a leader there (within `within_s`: the workload and
    its observer start with the nemesis); None when none came, or when the lookup
    failed, which is logged (a silent failure here once hid a bug)."""
    from elr_harness.nemesis.targets import Topology
    from elr_harness.nemesis.watch import partition_in

    def led(states: list[Any]) -> bool:
        found = partition_in(states, topic, 0)
        return found is not None and found.leader >= 0

    try:
        states = observer.wait_for(led, within_s)
        state = partition_in(states or [], topic, 0)
        if state is None:
            return None
        topology = Topology.of(injector.cluster.nodes.values())
        placed: dict[str, Any] = {
            "leader": topology.name_of_broker(state.leader),
            "replicas": [topology.name_of_broker(b) for b in state.replicas or state.isr]}
        active = injector.cluster.quorum_leader()
    except Exception as err:  # noqa: BLE001 - a placement is a help to a replay, never a must
        log(f"[yellow]no placement for schedule.toml: the lookup failed: "
            f"{type(err).__name__}: {err}[/yellow]")
        return None
    named = {i: n for n, i in topology.controllers.items()}
    if active in named:
        placed["controller"] = named[active]
    return placed


def _record_schedule(plan: NemesisPlan, spec: RunSpec, injector, began_ns: int,
                     result: dict[str, Any], log) -> None:
    """What a random mix or a scripted scenario played, as schedule.toml's steps
    (nemesis.schedule.recorded), read from the injector's lines; a run goes on without it."""
    from elr_harness.nemesis.schedule.recorded import recorded_schedule
    from elr_harness.nemesis.targets import Topology

    what = f"the scenario {plan.scenario}" if plan.scripted else \
        f"a random mix of {', '.join(plan.faults)}"
    try:
        result["schedule"] = recorded_schedule(
            injector.lines, Topology.of(injector.cluster.nodes.values()), spec.run.faults,
            f"the faults of {what} (seed {spec.run.seed}), as they were made", began_ns,
            spec.topics[0].min_insync_replicas)
    except Exception as err:  # noqa: BLE001 - the run's evidence does not depend on it
        log(f"[yellow]no schedule.toml: {type(err).__name__}: {err}[/yellow]")


def _schedule(plan: NemesisPlan, spec: RunSpec, injector, observer, log):
    """The scenario then its recovery; or a guided schedule; or one mix; or mixes
    that overlap (each seeded from --seed upward, so the run reproduces)."""
    from elr_harness.nemesis.mix import RandomMix
    from elr_harness.nemesis.schedule.compose import Mix, Overlap, Phases, Recovery, Scenario

    played_file = plan.played_file
    if plan.scripted and plan.scripted.scenario is not None:
        scripted = plan.scripted.scenario
        expected = replication_of(spec)
        return Phases([
            Scenario(lambda stop: scripted(
                injector, observer, spec.topics[0].name, 0, elr=spec.cluster.elr,
                timings=spec.run.scenario, stop=stop, log=log, seed=spec.run.seed)),
            Recovery(lambda: recovered(observer.latest(), expected),
                     spec.run.scenario.step_timeout_s, spec.run.scenario.watch_poll_s,
                     spec.run.quiet_after_faults_s)])
    replication = min(t.replication_factor for t in spec.topics)
    if played_file is not None:  # --schedule's file, or a scenario's shipped one
        from elr_harness.nemesis.schedule.played import Played

        return Phases([
            Played(played_file, injector, observer, spec.topics[0].name, spec.run.seed,
                   spec.topics[0].replication_factor, spec.topics[0].min_insync_replicas,
                   faults=spec.run.faults, log=log,
                   start_within_s=spec.run.scenario.step_timeout_s,
                   timings=spec.run.scenario, scenario=plan.scenario,
                   transactional_id=first_transactional_id(spec.workload)),
            Recovery(lambda: recovered(observer.latest(), replication_of(spec)),
                     spec.run.scenario.step_timeout_s, spec.run.scenario.watch_poll_s,
                     spec.run.quiet_after_faults_s)])
    if plan.guided:
        from elr_harness.nemesis.guided.search import Guided

        return Guided(injector, observer, [(t.name, t.partitions) for t in spec.topics],
                      spec.run.seed, replication,
                      min(t.min_insync_replicas for t in spec.topics), spec.run.guided,
                      reached=spec.run.reached, faults=spec.run.faults, log=log,
                      transactions=guided_transactions(spec.workload),
                      rounds=spec.run.rounds)

    def maker(seed: int):
        return lambda kinds, stop: RandomMix(injector, observer, kinds, seed,
                                             spec.run.interval_s, replication, stop=stop,
                                             log=log, faults=spec.run.faults,
                                             rounds=spec.run.rounds)

    mixes = [Mix(group, maker(spec.run.seed + i)) for i, group in enumerate(plan.groups)]
    if not mixes:
        return None
    return mixes[0] if len(mixes) == 1 else Overlap(mixes)


def replication_of(spec: RunSpec) -> dict[tuple[str, int], int]:
    """(topic, partition) -> replication factor: what a recovered cluster shows."""
    return {(t.name, p): t.replication_factor for t in spec.topics
            for p in range(t.partitions)}
