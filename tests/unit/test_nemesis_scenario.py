"""The unclean-last-replica scenario's step logic: roles from the observed state,
the faults in order, waits that time out and let it go on (#13).

A unit test of the schedule only: the injector is the real one over fake nodes
(tests/fakes.py), its lines kept in a list; a scripted partition state answers
each fault once it is in force (its `ok` line) the way Kafka would. The
scenario on real Kafka is tests/integration's job.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

import pytest
from fakes import (
    AnsweringRecorder,
    FakeCluster,
    FakeObserver,
    FakePageCache,
    cluster_of,
    specs,
)

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ScenarioTimings
from elr_harness.nemesis import grudges
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.scenarios.unclean_last_replica import UncleanLastReplica

NODES = ["broker-1", "broker-2", "broker-3", "controller-1"]
FAST = ScenarioTimings(step_timeout_s=0.3, warmup_high_watermark=0, hold_t1_s=0.0)
#: What the fake page-cache layer says a power loss dropped.
DROPPED = {"t-0/00000000000000000000.log": 512}


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

    def answer(self, line: dict[str, Any]) -> None:
        """Kafka's answer to a fault now in force (its `ok` line)."""
        if line["fault"] == "partition":
            cut = {int(n.split("-")[1]) for n, peers in line["detail"]["grudge"].items()
                   if n.startswith("broker") and len(peers) == len(NODES) - 1}
            isr = tuple(b for b in self.state.isr if b not in cut)
            removed = tuple(b for b in self.state.isr if b in cut)
            # Below min ISR (2) a replica leaving the ISR enters the ELR (KIP-966).
            self.move(isr=isr, elr=removed if len(isr) < 2 else self.state.elr)
        elif line["fault"] == "page-cache-loss":
            self.move(leader=-1, isr=())
        elif line["fault"] == "start":
            elr = self.state.elr or ()
            self.move(leader=elr[0] if elr else -1, isr=tuple(elr), elr=())


@dataclass
class WorldCluster(FakeCluster):
    """The fake cluster, whose controller and registrations are the world's."""

    world: World | None = None

    def controller_view(self, topic: str) -> list[PartitionState]:
        assert self.world is not None
        return [self.world.state]

    def unfenced_brokers(self) -> set[int]:
        assert self.world is not None
        return self.world.unfenced


def injector_of(world: World) -> FaultInjector:
    cluster = WorldCluster(cluster_of(specs(controllers=1, brokers=3)).nodes, world=world)
    recorder = AnsweringRecorder(lambda line: world.answer(line))
    return FaultInjector(cluster, recorder,  # type: ignore[arg-type]
                         page_cache=FakePageCache(DROPPED))  # type: ignore[arg-type]


def scenario(world: World) -> tuple[UncleanLastReplica, FaultInjector]:
    injector = injector_of(world)
    run = UncleanLastReplica(injector, FakeObserver(lambda: [world.state]), "t", 0, elr=True,
                             timings=FAST, stop=threading.Event(), log=lambda _m: None)
    return run, injector


def lines(injector: FaultInjector) -> list[dict[str, Any]]:
    return injector.recorder.lines  # type: ignore[attr-defined]


def fault_lines(injector: FaultInjector) -> list[dict[str, Any]]:
    return [x for x in lines(injector) if x["f"] == "fault"]


def test_roles_come_from_the_observed_state_and_the_steps_run_in_order() -> None:
    run, injector = scenario(World(leader=2, isr=(2, 3, 1)))
    outcomes = run.run()
    # L = 2 (the leader), A and B its followers in ISR order: 3, then 1.
    faults = fault_lines(injector)
    assert [x["type"] for x in faults] == ["invoke", "ok"] * 5
    assert [(x["fault"], x["nodes"], x["detail"]) for x in faults if x["type"] == "ok"] == [
        ("partition", NODES, {"grudge": grudges.isolate("broker-3", NODES), "step": "T0"}),
        ("partition", NODES,
         {"grudge": grudges.isolate_all(["broker-3", "broker-1"], NODES), "step": "T1"}),
        ("page-cache-loss", ["broker-2"],
         {"step": "T2", "bytes_dropped": DROPPED, "total_bytes_dropped": 512}),
        ("heal", NODES, {"step": "T3"}),
        ("start", ["broker-2"], {"step": "T4", "pid": 202}),
    ]
    assert injector.page_cache.losses == ["broker-2"]  # type: ignore[union-attr]
    assert not injector.down and injector.grudge == {}
    assert [(o.step, o.reached) for o in outcomes] == [
        ("setup", True), ("T0", True), ("T1", True), ("T2", True), ("T3", True), ("T4", True)]
    # T2 reads the controller's own view, and records it as an observe line.
    (line,) = [x for x in lines(injector) if x["f"] != "fault"]
    assert (line["f"], line["source"], line["leader"]) == ("observe", "controller", -1)


def test_a_wait_that_runs_out_is_recorded_and_the_scenario_goes_on() -> None:
    world = World(follow=False)  # the cluster never shows what a step expects
    run, injector = scenario(world)
    outcomes = run.run()
    assert [x["detail"]["step"] for x in fault_lines(injector) if x["type"] == "ok"] == [
        "T0", "T1", "T2", "T3", "T4"]
    reached = {o.step: o.reached for o in outcomes}
    assert reached == {"setup": True, "T0": False, "T1": False, "T2": False, "T3": True,
                       "T4": False}


def test_no_full_isr_before_t0_is_an_error_not_a_guess() -> None:
    run, injector = scenario(World(isr=(2, 3)))
    with pytest.raises(RuntimeError, match="never had a full ISR"):
        run.run()
    assert lines(injector) == []


def test_a_stop_ends_the_scenario_between_steps() -> None:
    world = World()
    run, injector = scenario(world)
    original = world.answer

    def answer_then_stop(line: dict[str, Any]) -> None:
        original(line)
        run.stop_event.set()

    world.answer = answer_then_stop  # type: ignore[method-assign]
    run.run()
    assert [(x["type"], x["fault"], x["detail"]["step"]) for x in fault_lines(injector)] == [
        ("invoke", "partition", "T0"), ("ok", "partition", "T0")]


class GrowingObserver(FakeObserver):
    """The partition's high watermark grows by 30 records a reading, as a workload's
    commits would; wait_for polls until the predicate holds or `readings` run out."""

    def __init__(self, world: World, readings: int) -> None:
        super().__init__(lambda: [world.state])
        self.world = world
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
    observer = GrowingObserver(world, readings=10)
    run = UncleanLastReplica(injector_of(world), observer, "t", 0, elr=True,
                             timings=replace(FAST, warmup_high_watermark=100),
                             stop=threading.Event(), log=lambda _m: None)
    run._roles()
    # 0, 30, 60, 90 are too few; 120 >= 100 starts the scenario
    assert observer.seen == [0, 30, 60, 90, 120]
    assert run.outcomes[0].step == "setup" and run.outcomes[0].reached


def test_too_few_records_in_time_is_noted_and_the_scenario_goes_on() -> None:
    world = World()
    run = UncleanLastReplica(injector_of(world), GrowingObserver(world, readings=2), "t", 0,
                             elr=True, timings=replace(FAST, warmup_high_watermark=1000),
                             stop=threading.Event(), log=lambda _m: None)
    assert run._roles() == (2, 3, 1)
    assert run.outcomes[0].step == "setup" and not run.outcomes[0].reached
