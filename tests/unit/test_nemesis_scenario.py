"""The unclean-last-replica scenario's step logic: roles from the observed state,
the faults in order, waits that time out and let it go on (#13).

A unit test of the schedule only: the injector is a fake that writes down the
faults it is asked for and moves a scripted partition state the way Kafka
would; the scenario on real Kafka is tests/integration's job.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest
from list_recorder import ListRecorder

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ScenarioTimings
from elr_harness.nemesis import grudges
from elr_harness.nemesis.scenarios.unclean_last_replica import UncleanLastReplica

NODES = ["broker-1", "broker-2", "broker-3", "controller-1"]
FAST = ScenarioTimings(step_timeout_s=0.3, warmup_high_watermark=0, hold_t1_s=0.0)


class Broker:
    def __init__(self, name: str, node_id: int) -> None:
        self.spec = type("Spec", (), {"name": name, "node_id": node_id})()


class World:
    """One partition (t-0) whose state follows the faults, as KIP-966 says (ELR on)."""

    def __init__(self, leader: int = 2, isr: tuple[int, ...] = (2, 3, 1),
                 follow: bool = True) -> None:
        self.state = PartitionState("t", 0, leader, 1, isr, (), (), 0, (1, 2, 3))
        self.follow = follow
        self.unfenced = {1, 2, 3}

    def move(self, **changes: Any) -> None:
        if self.follow:
            self.state = replace(self.state, **changes)


class FakeCluster:
    def __init__(self, world: World) -> None:
        self.world = world
        self.nodes = dict.fromkeys(NODES)

    def broker_by_id(self, broker_id: int) -> Broker:
        return Broker(f"broker-{broker_id}", broker_id)

    def controller_view(self, topic: str) -> list[PartitionState]:
        return [self.world.state]

    def unfenced_brokers(self) -> set[int]:
        return self.world.unfenced


class FakeInjector:
    """Writes down each fault; moves the world as the cluster would answer it."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.cluster = FakeCluster(world)
        self.recorder = ListRecorder()
        self.calls: list[tuple[Any, ...]] = []

    def partition(self, grudge: grudges.Grudge, step: str | None = None) -> None:
        self.calls.append(("partition", step, grudge))
        cut = {int(n.split("-")[1]) for n, peers in grudge.items()
               if n.startswith("broker") and len(peers) == len(NODES) - 1}
        isr = tuple(b for b in self.world.state.isr if b not in cut)
        removed = tuple(b for b in self.world.state.isr if b in cut)
        # Below min ISR (2) a replica leaving the ISR enters the ELR (KIP-966).
        self.world.move(isr=isr, elr=removed if len(isr) < 2 else self.world.state.elr)

    def page_cache_loss(self, name: str, step: str | None = None) -> None:
        self.calls.append(("page-cache-loss", step, name))
        self.world.move(leader=-1, isr=())

    def heal(self, step: str | None = None) -> None:
        self.calls.append(("heal", step))

    def start(self, name: str, step: str | None = None) -> None:
        self.calls.append(("start", step, name))
        elr = self.world.state.elr or ()
        self.world.move(leader=elr[0] if elr else -1, isr=tuple(elr), elr=())


class FakeObserver:
    def __init__(self, world: World) -> None:
        self.world = world

    def latest(self) -> list[PartitionState]:
        return [self.world.state]

    def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001 - the Observer protocol
        states = self.latest()
        return states if predicate(states) else None


def scenario(world: World) -> tuple[UncleanLastReplica, FakeInjector]:
    injector = FakeInjector(world)
    run = UncleanLastReplica(injector, FakeObserver(world), "t", 0, elr=True,  # type: ignore[arg-type]
                             timings=FAST, stop=threading.Event(), log=lambda _m: None)
    return run, injector


def test_roles_come_from_the_observed_state_and_the_steps_run_in_order() -> None:
    run, injector = scenario(World(leader=2, isr=(2, 3, 1)))
    outcomes = run.run()
    # L = 2 (the leader), A and B its followers in ISR order: 3, then 1.
    assert injector.calls == [
        ("partition", "T0", grudges.isolate("broker-3", NODES)),
        ("partition", "T1", grudges.isolate_all(["broker-3", "broker-1"], NODES)),
        ("page-cache-loss", "T2", "broker-2"),
        ("heal", "T3"),
        ("start", "T4", "broker-2"),
    ]
    assert [(o.step, o.reached) for o in outcomes] == [
        ("setup", True), ("T0", True), ("T1", True), ("T2", True), ("T3", True), ("T4", True)]
    # T2 reads the controller's own view, and records it as an observe line.
    (line,) = injector.recorder.lines
    assert (line["f"], line["source"], line["leader"]) == ("observe", "controller", -1)


def test_a_wait_that_runs_out_is_recorded_and_the_scenario_goes_on() -> None:
    world = World(follow=False)  # the cluster never shows what a step expects
    run, injector = scenario(world)
    outcomes = run.run()
    assert [c[1] for c in injector.calls] == ["T0", "T1", "T2", "T3", "T4"]
    reached = {o.step: o.reached for o in outcomes}
    assert reached == {"setup": True, "T0": False, "T1": False, "T2": False, "T3": True,
                       "T4": False}


def test_no_full_isr_before_t0_is_an_error_not_a_guess() -> None:
    run, injector = scenario(World(isr=(2, 3)))
    with pytest.raises(RuntimeError, match="never had a full ISR"):
        run.run()
    assert injector.calls == []


def test_a_stop_ends_the_scenario_between_steps() -> None:
    run, injector = scenario(World())
    original = injector.partition

    def partition_then_stop(grudge: grudges.Grudge, step: str | None = None) -> None:
        original(grudge, step)
        run.stop_event.set()

    injector.partition = partition_then_stop  # type: ignore[method-assign]
    run.run()
    assert [c[1] for c in injector.calls] == ["T0"]


class GrowingObserver(FakeObserver):
    """The partition's high watermark grows by 30 records a reading, as a workload's
    commits would; wait_for polls until the predicate holds or `readings` run out."""

    def __init__(self, world: World, readings: int) -> None:
        super().__init__(world)
        self.readings = readings
        self.seen: list[int] = []

    def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001 - the Observer protocol
        for _ in range(self.readings):
            states = self.latest()
            self.seen.append(states[0].high_watermark)
            if predicate(states):
                return states
            self.world.state = replace(self.world.state,
                                       high_watermark=self.world.state.high_watermark + 30)
        return None


def test_t0_waits_for_the_warm_up_records_committed_not_for_a_sleep() -> None:
    world = World()
    injector = FakeInjector(world)
    observer = GrowingObserver(world, readings=10)
    run = UncleanLastReplica(injector, observer, "t", 0, elr=True,  # type: ignore[arg-type]
                             timings=replace(FAST, warmup_high_watermark=100),
                             stop=threading.Event(), log=lambda _m: None)
    run._roles()
    # 0, 30, 60, 90 are too few; 120 >= 100 starts the scenario
    assert observer.seen == [0, 30, 60, 90, 120]
    assert run.outcomes[0].step == "setup" and run.outcomes[0].reached


def test_too_few_records_in_time_is_noted_and_the_scenario_goes_on() -> None:
    world = World()
    injector = FakeInjector(world)
    run = UncleanLastReplica(injector, GrowingObserver(world, readings=2), "t", 0,  # type: ignore[arg-type]
                             elr=True, timings=replace(FAST, warmup_high_watermark=1000),
                             stop=threading.Event(), log=lambda _m: None)
    assert run._roles() == (2, 3, 1)
    assert run.outcomes[0].step == "setup" and not run.outcomes[0].reached
