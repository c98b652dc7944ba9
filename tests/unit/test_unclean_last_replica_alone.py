"""unclean-last-replica-alone's steps (its shipped file, played as `--nemesis` plays
it) on faked observed state: T0-T2 shared
with unclean-last-replica, L restarted while B is still cut off, the watch that
L is never elected (ELR on) or is elected at once (ELR off), the controller's
view, then the heal that brings B back.

The injector is the real one over fake nodes (tests/fakes.py), its lines kept in
a list; each fault in force (its `ok` line) moves one partition the way KRaft
would (ELR on, ELR off, or a Kafka that elects the uncleanly restarted L). The
scenario on real Kafka is tests/integration/test_scenario_alone.py's.
"""

from __future__ import annotations

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
from shipped_play import play_scenario, scenario_player

from elr_harness.cluster.observe import PartitionState
from elr_harness.nemesis import grudges
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios import SCENARIOS
from elr_harness.nemesis.schedule.played import Played

NODES = ["broker-1", "broker-2", "broker-3", "controller-1"]
NAME = "unclean-last-replica-alone"
L, A, B = 2, 3, 1  # the leader and its followers (the run's seed draws A, then B)


class World:
    """Partition t-0, moved by the faults as `kafka` would: "elr" (KIP-966), "legacy"
    (ELR off) or "keeps-l" (ELR on, yet the unclean L stays eligible and leads)."""

    def __init__(self, kafka: str) -> None:
        self.kafka = kafka
        self.state = PartitionState("t", 0, L, 1, (L, A, B), (), (), 0, (1, 2, 3), fenced=(),
                                    elr_feature=0 if kafka == "legacy" else 1)

    def move(self, **changes: Any) -> None:
        """A new sample (a new object), as the observer's next tick would be."""
        self.state = replace(self.state, **changes)

    def answer(self, line: dict[str, Any]) -> None:
        """KRaft's answer to a fault now in force (its `ok` line)."""
        {"partition": self.partition, "page-cache-loss": self.page_cache_loss,
         "start": self.start, "heal": self.heal}[line["fault"]](line["detail"]["step"])

    def partition(self, step: str) -> None:
        if step == "T0":
            self.move(isr=(L, B), fenced=(A,))
        else:  # T1: below min ISR 2, B joins the ELR (ELR on)
            self.move(isr=(L,), elr=() if self.kafka == "legacy" else (B,), fenced=(A, B))

    def page_cache_loss(self, step: str) -> None:
        if self.kafka == "legacy":
            self.move(leader=-1)  # ISR stays {L}
        else:
            self.move(leader=-1, isr=(), elr=(B, L))

    def start(self, step: str) -> None:
        if self.kafka == "elr":  # unclean shutdown: L out of ISR and ELR, B fenced
            self.move(leader=-1, isr=(), elr=(B,), last_known_elr=(L,), fenced=(A, B))
        else:  # legacy, or a Kafka that kept L eligible: L leads at once
            self.move(leader=L, isr=(L,), elr=(), fenced=(A, B))

    def heal(self, step: str) -> None:
        leader = B if self.kafka == "elr" else L
        self.move(leader=leader, isr=(leader,), elr=(), last_known_elr=(), fenced=())


@dataclass
class WorldCluster(FakeCluster):
    """The fake cluster, whose active controller reads the world (and says nothing of
    fenced brokers)."""

    world: World | None = None

    def controller_view(self, topic: str) -> list[PartitionState]:
        assert self.world is not None
        return [replace(self.world.state, fenced=None)]


def scenario(kafka: str, elr: bool) -> tuple[Played, FaultInjector, World]:
    """The file on `kafka`'s model (`elr`: the mode the model's feature level says)."""
    world = World(kafka)
    assert (world.state.elr_feature == 1) is elr
    cluster = WorldCluster(cluster_of(specs(controllers=1, brokers=3)).nodes, world=world)
    recorder = AnsweringRecorder(lambda line: world.answer(line))
    injector = FaultInjector(cluster, recorder,  # type: ignore[arg-type]
                             page_cache=FakePageCache({"t-0/00000000000000000000.log": 512}))  # type: ignore[arg-type]
    played = scenario_player(NAME, injector, FakeObserver(lambda: [world.state]))
    return played, injector, world


def lines(injector: FaultInjector) -> list[dict[str, Any]]:
    return injector.recorder.lines  # type: ignore[attr-defined]


def faults(injector: FaultInjector) -> list[tuple[str, str, Any]]:
    """Each fault in force, as (kind, step, its grudge or nodes)."""
    return [(x["fault"], x["detail"]["step"], x["detail"].get("grudge", x["nodes"]))
            for x in lines(injector) if x["f"] == "fault" and x["type"] == "ok"]


def outcome(outcomes, step: str):  # noqa: ANN001, ANN201
    (found,) = [o for o in outcomes if o.step == step]
    return found


def test_it_is_registered_and_needs_the_page_cache_layer() -> None:
    package = SCENARIOS[NAME]
    assert package.file == NAME and package.scenario is None
    assert package.layers == {Layer.PAGE_CACHE}


def test_l_restarts_before_the_heal_with_t1s_partition_still_in_force() -> None:
    played, injector, _ = scenario("elr", elr=True)
    outcomes = play_scenario(played)
    assert (played.names["A"], played.names["B"]) == ("broker-3", "broker-1")
    assert faults(injector) == [
        ("partition", "T0", grudges.isolate("broker-3", NODES)),
        ("partition", "T1", grudges.isolate("broker-1", NODES)),
        ("page-cache-loss", "T2", ["broker-2"]),
        ("start", "T3", ["broker-2"]),
        ("heal", "T4", NODES),
    ]
    assert [(o.step, o.reached) for o in outcomes] == [
        ("setup", True), ("T0", True), ("T1", True), ("T2", True), ("T3", True),
        ("T3-hold", True), ("T3-controller", True), ("T4", True)]
    hold = outcome(outcomes, "T3-hold")
    assert hold.watched["seen"] is False and hold.watched["for"] == "L leads"
    assert hold.observed["leader"] == -1 and hold.observed["elr"] == [B]
    t3 = outcome(outcomes, "T3").observed
    assert L not in t3["fenced"] and B in t3["fenced"] and L not in t3["elr"]
    assert outcome(outcomes, "T4").observed["leader"] == B
    # T2 and T3-controller read the controller's own view, each an observe line
    assert [(x["source"], x["leader"], x["elr"]) for x in lines(injector)
            if x["f"] == "observe"] == [("controller", -1, [B, L]), ("controller", -1, [B])]


def test_elr_off_expects_l_elected_at_once() -> None:
    played, _, _ = scenario("legacy", elr=False)
    outcomes = play_scenario(played)
    assert all(o.reached for o in outcomes), outcomes
    hold = outcome(outcomes, "T3-hold")
    assert hold.watched["seen"] is True and hold.observed["leader"] == L
    assert outcome(outcomes, "T4").observed["leader"] == L


def test_a_kafka_that_elects_the_unclean_l_fails_the_elr_on_steps_and_goes_on() -> None:
    played, injector, _ = scenario("keeps-l", elr=True)
    outcomes = play_scenario(played)
    reached = {o.step: o.reached for o in outcomes}
    # the watch read the partition (reached); what it saw is the bug. The controller's
    # log says ELR is on, so T3-controller fails too: ELR off's `L leads` is not its
    # alternative (it held while the controller's view had no feature level)
    assert reached == {"setup": True, "T0": True, "T1": True, "T2": True, "T3": False,
                       "T3-hold": True, "T3-controller": False, "T4": False}
    assert outcome(outcomes, "T3-hold").watched["seen"] is True
    assert faults(injector)[-1] == ("heal", "T4", NODES)


@pytest.mark.parametrize("elr", [True, False])
def test_the_stale_sample_from_before_l_restarted_counts_for_nothing(elr: bool) -> None:
    """Until L answers, the observer's latest sample is T1's (L leading): it must
    neither read as L elected nor as the partition leaderless."""
    played, injector, world = scenario("elr" if elr else "legacy", elr=elr)
    # L never answers: no sample after the restart
    world.start = lambda step: None  # type: ignore[method-assign]
    # T2 left a sample of its own here; make the stale one T1's view, L leading
    original = world.page_cache_loss

    def lose_and_keep_t1(step: str) -> None:
        t1 = world.state
        original(step)
        world.state = t1

    world.page_cache_loss = lose_and_keep_t1  # type: ignore[method-assign]
    outcomes = play_scenario(played)
    assert ("start", "T3", ["broker-2"]) in faults(injector)
    for step in ("T3", "T3-hold"):
        found = outcome(outcomes, step)
        assert not found.reached and found.observed == {}, found
    hold = outcome(outcomes, "T3-hold").watched
    assert hold["seen"] is False and hold["read"] is False


def test_a_stop_during_the_hold_ends_the_scenario_before_the_heal() -> None:
    played, injector, world = scenario("elr", elr=True)
    original = world.start

    def start_then_stop(step: str) -> None:
        original(step)
        played.stop_event.set()

    world.start = start_then_stop  # type: ignore[method-assign]
    play_scenario(played)
    assert [kind for kind, _, _ in faults(injector)][-1] == "start"
