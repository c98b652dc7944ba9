"""The unclean-last-replica scenario's steps, its shipped file played as `--nemesis
unclean-last-replica` plays it: roles from the observed state, the faults in
order, waits that time out and let it go on (#13, #55).

A unit test of the schedule only: the injector is the real one over fake nodes
(tests/fakes.py), its lines kept in a list; a scripted partition state answers
each fault once it is in force (its `ok` line) the way Kafka would. The
scenario on real Kafka is tests/integration's job.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

from fakes import (
    AnsweringRecorder,
    FakeCluster,
    FakeObserver,
    FakePageCache,
    cluster_of,
    specs,
)
from shipped_play import Outcome, play_scenario, scenario_player

from elr_harness.cluster.observe import PartitionState
from elr_harness.nemesis import grudges
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.schedule.played import Played

NAME = "unclean-last-replica"
NODES = ["broker-1", "broker-2", "broker-3", "controller-1"]
#: What the fake page-cache layer says a power loss dropped.
DROPPED = {"t-0/00000000000000000000.log": 512}


class World:
    """One partition (t-0) whose state follows the faults, as KIP-966 says (ELR on)."""

    def __init__(self, leader: int = 2, isr: tuple[int, ...] = (2, 3, 1),
                 follow: bool = True) -> None:
        self.state = PartitionState("t", 0, leader, 1, isr, (), (), 0, (1, 2, 3),
                                    fenced=(), elr_feature=1)
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
        elif line["fault"] == "heal":
            self.move()  # a new sample: A and B back, unfenced
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


def scenario(world: World) -> tuple[Played, FaultInjector]:
    injector = injector_of(world)
    played = scenario_player(NAME, injector, FakeObserver(lambda: [world.state]))
    return played, injector


def run(played: Played) -> list[Outcome]:
    return play_scenario(played)


def lines(injector: FaultInjector) -> list[dict[str, Any]]:
    return injector.recorder.lines  # type: ignore[attr-defined]


def fault_lines(injector: FaultInjector) -> list[dict[str, Any]]:
    return [x for x in lines(injector) if x["f"] == "fault"]


def test_roles_come_from_the_observed_state_and_the_steps_run_in_order() -> None:
    played, injector = scenario(World(leader=2, isr=(2, 3, 1)))
    outcomes = run(played)
    # L = 2 (the leader); A and B, followers, each drawn by the run's seed
    a, b = played.names["A"], played.names["B"]
    assert {a, b} == {"broker-1", "broker-3"}
    faults = fault_lines(injector)
    assert [x["type"] for x in faults] == ["invoke", "ok"] * 5
    said = {"schedule": NAME}
    assert [(x["fault"], x["nodes"], x["detail"]) for x in faults if x["type"] == "ok"] == [
        ("partition", NODES, {"grudge": grudges.isolate(a, NODES), "step": "T0", **said}),
        # B's cut, over A's still in force
        ("partition", NODES, {"grudge": grudges.isolate(b, NODES), "step": "T1", **said}),
        ("page-cache-loss", ["broker-2"],
         {"step": "T2", "bytes_dropped": DROPPED, "total_bytes_dropped": 512, **said}),
        ("heal", NODES, {"step": "T3", **said}),  # the end of T1's cut, by T3
        ("start", ["broker-2"], {"step": "T4", "pid": 202, **said}),
    ]
    assert injector.page_cache.losses == ["broker-2"]  # type: ignore[union-attr]
    assert not injector.down and injector.grudge == {}
    assert [(o.step, o.reached) for o in outcomes] == [
        ("setup", True), ("T0", True), ("T1", True), ("T2", True), ("T3", True), ("T4", True)]
    b_id = int(b.split("-")[1])
    assert outcomes[2].observed["elr"] == [b_id] and outcomes[5].observed["leader"] == b_id
    assert outcomes[0].observed["leader"] == 2
    # T2 reads the controller's own view, and records it as an observe line.
    (line,) = [x for x in lines(injector) if x["f"] != "fault"]
    assert (line["f"], line["source"], line["leader"]) == ("observe", "controller", -1)


def test_a_wait_that_runs_out_is_recorded_and_the_scenario_goes_on() -> None:
    world = World(follow=False)  # the cluster never shows what a step expects
    played, injector = scenario(world)
    outcomes = run(played)
    assert [x["detail"]["step"] for x in fault_lines(injector) if x["type"] == "ok"] == [
        "T0", "T1", "T2", "T3", "T4"]
    reached = {o.step: o.reached for o in outcomes}
    assert reached == {"setup": True, "T0": False, "T1": False, "T2": False, "T3": False,
                       "T4": False}
    t0 = next(s for s in played.played if s["step"] == "T0")
    assert t0["seen"] is False and t0["saw"].startswith("leader L, ISR [")


def test_no_full_isr_to_start_from_plays_no_step_rather_than_guess() -> None:
    played, injector = scenario(World(isr=(2, 3)))
    result: dict[str, Any] = {}
    played.run(10**9, threading.Event(), result)
    assert result["schedule"]["skipped"] == "no full ISR with a leader to start from"
    assert result["steps"] == [] and lines(injector) == []


def test_a_stop_ends_the_scenario_between_steps() -> None:
    world = World()
    played, injector = scenario(world)
    original = world.answer

    def answer_then_stop(line: dict[str, Any]) -> None:
        original(line)
        played.stop_event.set()

    world.answer = answer_then_stop  # type: ignore[method-assign]
    run(played)
    assert [(x["type"], x["fault"], x["detail"]["step"]) for x in fault_lines(injector)] == [
        ("invoke", "partition", "T0"), ("ok", "partition", "T0")]


def test_the_elr_off_cluster_is_expected_to_elect_l_again() -> None:
    """The file's waits say what each mode shows: ELR off, T1 needs no ELR and T4 sees
    L, the last ISR member, elected again."""
    world = World()
    world.state = replace(world.state, elr_feature=0)
    original = world.answer

    def legacy(line: dict[str, Any]) -> None:
        original(line)
        if line["fault"] == "partition":
            world.move(elr=())
        if line["fault"] == "start":  # no ELR: L, the last ISR member, comes back leader
            world.move(leader=2, isr=(2,))

    world.answer = legacy  # type: ignore[method-assign]
    played, _ = scenario(world)
    outcomes = run(played)
    assert all(o.reached for o in outcomes), outcomes
    assert outcomes[-1].observed["leader"] == 2
