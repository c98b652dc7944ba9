"""`--nemesis guided` (nemesis/guided.py) against a small model of one partition's
KIP-966 state: the faults each round makes, the state it aims at in every fault
line's detail, the order of its aims (states reached before come last), the fault
budget (at most one broker's unflushed data a round, only from a full ISR, min
ISR >= 2 and ELR on), its deadline, and that one seed gives one schedule.

The faults go through the real FaultInjector and the kinds' own modules, over
fake nodes (tests/fakes.py); the model moves on each fault's `ok` line, as the
observer would see a cluster move."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from fakes import AnsweringRecorder, FakeAdmin, FakePageCache, cluster_of

from elr_harness.cluster import reassignments
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import GuidedConfig
from elr_harness.core.history import COVERAGE_STATES
from elr_harness.nemesis.guided import Guided
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.registry import parse_nemesis
from elr_harness.nemesis.targets import Topology

BROKERS = {f"broker-{i}": i for i in (1, 2, 3)}
CONTROLLERS = {f"controller-{i}" for i in (1, 2, 3)}
TOPOLOGY = Topology(BROKERS, {f"controller-{i}": 1000 + i for i in (1, 2, 3)})
FAST = GuidedConfig(min_round_s=1.0, min_hold_s=0.0, max_hold_s=0.0, recovery_s=0.0,
                    warmup_s=0.0, wait_s=0.0)
#: Kinds whose `ok` takes their broker away (out of the ISR); the unclean ones also
#: leave it out of the ELR when it comes back.
AWAY = {"kill", "stop", "pause", "bounce-leader", "page-cache-loss", "slow-network"}
UNCLEAN = {"kill", "page-cache-loss"}
#: Kinds whose `ok` brings their broker back.
BACK = {"start", "resume", "unthrottle"}


@dataclass
class World:
    """One partition as KIP-966 moves it: a broker leaving the ISR joins the ELR
    when the ISR is then below min ISR; a leader leaving leaves no leader; an ELR
    member coming back unfenced is elected; an unclean restart leaves the ELR; with
    every broker back, the ISR is full again (unless `stuck`)."""

    min_isr: int = 2
    leader: int = 1
    isr: list[int] = field(default_factory=lambda: [1, 2, 3])
    elr: list[int] = field(default_factory=list)
    fenced: set[int] = field(default_factory=set)
    away: set[int] = field(default_factory=set)
    unclean: set[int] = field(default_factory=set)
    #: brokers a cut keeps away (from the injector's grudge)
    cut: set[int] = field(default_factory=set)
    stuck: bool = False
    injector: Any = None

    def state(self) -> PartitionState:
        return PartitionState("t", 0, self.leader, 1, tuple(self.isr), tuple(self.elr),
                              tuple(self.elr) if self.leader == -1 else (), 10,
                              replicas=(1, 2, 3), fenced=tuple(sorted(self.fenced)),
                              min_isr=self.min_isr, elr_feature=1)

    def leave(self, broker: int, fenced: bool = True) -> None:
        self.away.add(broker)
        if fenced:
            self.fenced.add(broker)
        if broker in self.isr:
            self.isr.remove(broker)
            if len(self.isr) < self.min_isr or broker == self.leader:
                self.elr.append(broker)
        if broker == self.leader:
            self.leader = -1

    def back(self, broker: int) -> None:
        if broker not in self.away:
            return
        self.away.discard(broker)
        self.fenced.discard(broker)
        if broker in self.unclean:
            self.unclean.discard(broker)
            if broker in self.elr:
                self.elr.remove(broker)
        if self.leader == -1 and broker in self.elr:
            self.leader, self.isr = broker, [broker]
            self.elr.remove(broker)
        if not self.away and not self.stuck:
            self.leader = self.leader if self.leader != -1 else 1
            self.isr, self.elr = [1, 2, 3], []

    def answer(self, line: dict[str, Any]) -> None:
        """Move as the cluster would once the fault of this `ok` line is in force."""
        kind = str(line["fault"])
        brokers = [BROKERS[n] for n in line["nodes"] if n in BROKERS]
        if kind in AWAY:
            for broker in brokers:
                self.leave(broker, fenced=kind != "slow-network")
                if kind in UNCLEAN:
                    self.unclean.add(broker)
        elif kind in BACK:
            for broker in brokers:
                self.back(broker)
        # a broker that hears no controller is out of the ISR; fenced unless only
        # its own receiving is cut (its heartbeats still reach the controllers)
        deaf = {BROKERS[n] for n, peers in self.injector.grudge.items()
                if n in BROKERS and CONTROLLERS <= set(peers)}
        for broker in sorted(deaf - self.cut):
            self.leave(broker, fenced=kind != "one-way-partition")
        for broker in sorted(self.cut - deaf):
            self.back(broker)
        self.cut = deaf


class FakeObserver:
    def __init__(self, world: World) -> None:
        self.world = world

    def latest(self) -> list[PartitionState]:
        return [self.world.state()]

    def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001 - the Observer protocol
        states = self.latest()
        return states if predicate(states) else None


@pytest.fixture(autouse=True)
def _reassignments_answer(monkeypatch) -> None:
    """Kafka's answer to a reassignment (the wire requests are test_fault_reassign's):
    accepted, and cancelled at its end."""
    monkeypatch.setattr(reassignments, "execute", lambda *args, **kwargs: None)
    monkeypatch.setattr(reassignments, "cancel",
                        lambda *args, **kwargs: reassignments.Outcome.CANCELLED)


def _guided(seed: int = 7, reached=(), world: World | None = None, min_isr: int = 2,
            config: GuidedConfig = FAST) -> tuple[Guided, FaultInjector, World]:
    world = world or World(min_isr=min_isr)
    cluster = cluster_of()
    cluster.leader = 1002
    recorder = AnsweringRecorder(world.answer)
    injector = FaultInjector(cluster, recorder, page_cache=FakePageCache(),  # type: ignore[arg-type]
                             admin=FakeAdmin(min_isrs={None: min_isr}))  # type: ignore[arg-type]
    world.injector = injector
    guided = Guided(injector, FakeObserver(world), [("t", 1)], seed, 3, min_isr, config,
                    reached=reached, log=lambda _m: None, topology=TOPOLOGY,
                    active_controller=lambda: 1002)
    return guided, injector, world


def _rounds(guided: Guided, n: int) -> None:
    for _ in range(n):
        guided.play(guided.next_aim())


def faults(injector: FaultInjector, type_: str = "ok") -> list[tuple[str, list[str], dict]]:
    """The injector's fault lines of one type, as (kind, nodes, detail)."""
    return [(str(line["fault"]), line["nodes"], line["detail"])
            for line in injector.recorder.lines  # type: ignore[attr-defined]
            if line.get("f") == "fault" and line["type"] == type_]


def test_the_first_rounds_aim_at_every_state_once_and_reach_each_in_the_model():
    guided, injector, _ = _guided()
    _rounds(guided, len(COVERAGE_STATES))
    assert sorted(r.aim for r in guided.rounds) == sorted(COVERAGE_STATES)
    assert [r.aim for r in guided.rounds if not r.reached] == []
    assert [r.error for r in guided.rounds if r.error] == []
    # every fault line names the round's aim, its end included
    lines = faults(injector, "invoke") + faults(injector, "ok")
    for kind, _nodes, detail in lines:
        assert detail.get("aim") in COVERAGE_STATES, (kind, detail)
    by_round: dict[int, set[str]] = {}
    for _kind, _nodes, detail in lines:
        by_round.setdefault(detail["guided"], set()).add(detail["aim"])
    assert all(len(aims) == 1 for aims in by_round.values())
    # and every round's faults are ended by its own heal
    assert injector.grudge == {} and injector.down == set() and injector.paused == set()


def test_states_reached_before_are_aimed_at_last():
    left = ("elected-from-elr", "reassign-while-below-min-isr")
    guided, _, _ = _guided(reached=[s for s in COVERAGE_STATES if s not in left])
    _rounds(guided, 3)
    assert sorted(r.aim for r in guided.rounds[:2]) == sorted(left)
    assert guided.reached_before == tuple(s for s in COVERAGE_STATES if s not in left)


def test_one_seed_gives_one_schedule_and_another_seed_another():
    def calls(seed: int) -> list:
        guided, injector, _ = _guided(seed)
        _rounds(guided, 8)
        return [(kind, nodes) for kind, nodes, _ in faults(injector)]

    assert calls(3) == calls(3)
    assert calls(3) != calls(4)


def _drops(injector: FaultInjector) -> list[int]:
    """The rounds that dropped unflushed data (a page-cache loss, a dropping disk fault)."""
    return [d["guided"] for kind, _nodes, d in faults(injector)
            if kind == "page-cache-loss" or (kind == "disk-fault" and d["dropped"])]


def test_a_round_drops_at_most_one_brokers_data_and_only_within_the_budget():
    dropped = []
    for seed in range(12):
        guided, injector, _ = _guided(seed)
        _rounds(guided, 12)
        drops = _drops(injector)
        assert len(drops) == len(set(drops)), drops
        dropped += drops
    assert dropped, "no seed ever dropped data: the budget rule was never exercised"


def test_a_round_that_drops_data_shuts_no_other_broker_down_uncleanly():
    """KIP-966 tolerates min ISR - 1 (here 1) unclean shutdowns, kills included: a
    kill of F2 and L's power lost in one round would be beyond its promise."""
    checked = 0
    for seed in range(16):
        guided, injector, _ = _guided(seed)
        _rounds(guided, 12)
        for number in set(_drops(injector)):
            unclean = [kind for kind, nodes, d in faults(injector) if d["guided"] == number
                       and ((kind in UNCLEAN and nodes[0] in BROKERS)
                            or (kind == "disk-fault" and d["dropped"]))]
            assert len(unclean) <= 1, (number, faults(injector))
            checked += 1
    assert checked


def test_no_data_is_dropped_with_min_isr_1_elr_off_or_no_full_isr_to_start_from():
    for seed in range(8):
        guided, injector, _ = _guided(seed, min_isr=1)
        _rounds(guided, 12)
        assert _drops(injector) == []
        guided, injector, _ = _guided(seed)
        for _ in range(12):  # ELR off (a feature-change round's end turns it back on)
            injector.protection_off = True
            _rounds(guided, 1)
        assert _drops(injector) == []


def test_a_round_without_a_full_isr_to_start_from_does_nothing_but_heal():
    guided, injector, _ = _guided(world=World(isr=[1, 2], stuck=True))
    done = guided.play("elr-not-empty")
    assert done.skipped and not done.reached
    # the round's end: the network's heal, nothing taken away, nothing started
    assert [kind for kind, _, _ in faults(injector)] == ["heal"]
    assert done.waits == [("every ISR full again", False)]


def test_the_schedule_stops_when_a_round_would_not_fit_before_the_deadline():
    guided, injector, _ = _guided(config=replace(FAST, min_round_s=30.0))
    result: dict[str, Any] = {}
    guided.run(time.monotonic() + 20.0, threading.Event(), result)
    assert faults(injector) == [] and result["guided"]["rounds"] == []
    guided, injector, _ = _guided()
    stop = threading.Event()
    stop.set()
    guided.run(time.monotonic() + 600.0, stop, result)
    assert faults(injector) == []


def test_guided_is_a_nemesis_of_its_own_with_every_kinds_needs():
    plan = parse_nemesis("guided")
    assert plan.guided and plan.test_name == "guided" and plan.needs_page_cache_layer
    assert "cluster.log_dirs" in {s.path for s in plan.cluster_settings}


@pytest.mark.parametrize("text", ["guided,kill", "all,guided", "guided+kill"])
def test_guided_is_not_mixed_with_other_nemeses(text):
    from elr_harness.core.errors import BadInput

    with pytest.raises(BadInput):
        parse_nemesis(text)


def test_a_fault_that_fails_ends_its_round_not_the_schedule():
    guided, injector, _ = _guided()
    record = injector.record

    def broken(*_args: Any) -> None:
        raise RuntimeError("the node did not answer")

    def failing(kind, nodes, detail, action, refuse=None):  # noqa: ANN001 - record's own
        """Every fault that takes a broker away fails in its action."""
        return record(kind, nodes, detail,
                      broken if str(kind) in AWAY | {"partition", "isolate-from-controllers",
                                                     "one-way-partition"} else action,
                      refuse)

    injector.record = failing  # type: ignore[method-assign]
    done = guided.play("elr-not-empty")
    assert done.error == "RuntimeError: the node did not answer" and not done.reached
    # the failed fault is an info line; the round still healed everything after it
    info = faults(injector, "info")
    assert len(info) == 1 and info[0][2]["error"] == "the node did not answer"
    lines = injector.recorder.lines  # type: ignore[attr-defined]
    after = lines[lines.index(next(line for line in lines if line["type"] == "info")) + 1:]
    assert after and all(line["detail"]["step"] == "guided-1:end" for line in after)
    assert "elr-not-empty" in guided.pending  # and its aim is tried again later
    injector.record = record  # type: ignore[method-assign]
    assert guided.play(guided.next_aim()).error is None


def test_the_elr_member_to_be_elected_is_never_shut_down_uncleanly():
    """An ELR member that registers after an unclean shutdown leaves the ELR (KIP-966),
    so a round at elected-from-elr that killed F2 could never get there."""
    ways = set()
    for seed in range(24):
        guided, _, _ = _guided(seed)
        done = guided.play("elected-from-elr")
        assert done.reached, done
        ways.add(done.ways["F2"])
    assert ways and not ways & UNCLEAN, ways
