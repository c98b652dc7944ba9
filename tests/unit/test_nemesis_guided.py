"""`--nemesis guided` (nemesis/guided/search.py) against a small model of one partition's
KIP-966 state: the faults each round makes, the state it aims at in every fault
line's detail, the order of its aims (states reached before come last), the fault
budget (at most one broker's unflushed data a round, only from a full ISR, min
ISR >= 2 and ELR on), its deadline, and that one seed gives one schedule.

The faults go through the real FaultInjector and the kinds' own modules, over
fake nodes (tests/fakes.py) and a fake wire for reassignments; the model moves on
each fault's `ok` line, as the observer would see a cluster move."""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from fakes import AnsweringRecorder, FakeAdmin, FakeObserver, FakePageCache, cluster_of, specs

from elr_harness.cluster.observe import PartitionState
from elr_harness.cluster.wire_codec import compact_string
from elr_harness.core.config import GuidedConfig
from elr_harness.core.history import COVERAGE_STATES
from elr_harness.nemesis.faults.disk_fault import DiskFaultSettings
from elr_harness.nemesis.faults.slow_network import SlowNetworkSettings
from elr_harness.nemesis.guided.search import Guided
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.registry import parse_nemesis
from elr_harness.nemesis.targets import Topology

BROKERS = {f"broker-{i}": i for i in (1, 2, 3)}
#: Each broker's address as a reassignment reaches it (the fake cluster's bootstrap).
ADDRESSES = {f"{s.address}:9092": s.node_id for s in specs() if s.name in BROKERS}
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
            # KRaft elects an ELR member at once if one is registered and unfenced (a
            # slowed broker stays so): no leaderless spell then
            electable = [b for b in self.elr if b not in self.fenced and b != broker]
            if electable:
                self.leader, self.isr = electable[0], [electable[0]]
                self.elr.remove(electable[0])

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


#: The controller's answer to an AlterPartitionReassignments request for t-0: no
#: error (a start is accepted, an end finds it under way and cancels it).
ACCEPTED = (struct.pack(">i", 1) + b"\x00" + struct.pack(">ih", 0, 0) + b"\x00"
            + b"\x02" + compact_string("t") + b"\x02" + struct.pack(">ih", 0, 0)
            + b"\x00\x00\x00\x00")


@dataclass
class Wire:
    """The connections a reassignment opens from the host (cluster.reassignments; its
    requests byte for byte are test_fault_reassign's): every one answered ACCEPTED.
    Keeps, for each request, the broker it went to and whether the model had that
    broker fenced then (a fenced broker cannot forward it to the controller)."""

    world: World
    sent: list[tuple[int, bool]] = field(default_factory=list)

    def __call__(self, address: str, timeout_s: float) -> WireConnection:
        return WireConnection(self, ADDRESSES[address])


@dataclass
class WireConnection:
    wire: Wire
    broker: int

    def connect(self) -> None:
        pass

    def request(self, build: Callable[[int], bytes]) -> bytes:
        build(1)
        self.wire.sent.append((self.broker, self.broker in self.wire.world.fenced))
        return ACCEPTED

    def close(self) -> None:
        pass


def _guided(seed: int = 7, reached=(), world: World | None = None, min_isr: int = 2,
            config: GuidedConfig = FAST, others: Sequence[PartitionState] = (),
            faults: dict[str, Any] | None = None) -> tuple[Guided, FaultInjector, World]:
    """A guided schedule over the model's partition t-0 (and `others`, observed as they
    are), its faults through a real FaultInjector over fake nodes."""
    world = world or World(min_isr=min_isr)
    cluster = cluster_of()
    cluster.leader = 1002
    recorder = AnsweringRecorder(world.answer)
    injector = FaultInjector(cluster, recorder, page_cache=FakePageCache(),  # type: ignore[arg-type]
                             admin=FakeAdmin(min_isrs={None: min_isr}),  # type: ignore[arg-type]
                             connect=Wire(world))
    world.injector = injector
    observer = FakeObserver(lambda: [world.state(), *others])
    guided = Guided(injector, observer, [("t", 1)], seed, 3, min_isr, config,
                    reached=reached, faults=faults, log=lambda _m: None, topology=TOPOLOGY,
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


@pytest.mark.parametrize("aim", COVERAGE_STATES)
def test_each_states_recipe_reaches_it_in_the_model_whatever_the_seed_draws(aim):
    """Every way a round may draw (the kinds by capability, the roles, the fallbacks
    within the budget) gets to its state: F2 is never cut when F1's end heals every
    cut, never shut down uncleanly when it is to be elected, ..."""
    for seed in range(24):
        guided, injector, _ = _guided(seed)
        done = guided.play(aim)
        assert done.reached and done.error is None and done.skipped is None, (seed, done)
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
        # the round's own record of its budget says the same as its lines
        assert sorted(drops) == [r.number for r in guided.rounds if r.dropped_data]
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


def _short(isr: tuple[int, ...]) -> PartitionState:
    """Another observed partition (no round aims at it), with this ISR."""
    return PartitionState("u", 0, isr[0], 1, isr, (), (), 10, replicas=(1, 2, 3),
                          fenced=(), min_isr=2, elr_feature=1)


def test_no_data_is_dropped_with_min_isr_1_elr_off_or_no_full_isr_to_start_from():
    """Not even tried: the kinds that drop data refuse while ELR is off, and a
    round that tried one anyway would fail (an error) instead of falling back."""
    controls = []
    for seed in range(8):
        guided, injector, _ = _guided(seed, min_isr=1)
        _rounds(guided, 12)
        assert _drops(injector) == []
        guided, injector, _ = _guided(seed)
        for _ in range(12):  # ELR off (a feature-change round's end turns it back on)
            injector.protection_off = True
            _rounds(guided, 1)
        assert _drops(injector) == []
        assert [r.error for r in guided.rounds if r.error] == []
        # another observed partition short of a full ISR: not a full ISR everywhere
        guided, injector, _ = _guided(seed, others=[_short((1, 2))])
        _rounds(guided, 12)
        assert _drops(injector) == [] and not any(r.dropped_data for r in guided.rounds)
        # the control: the same seed, that partition's ISR full
        guided, injector, _ = _guided(seed, others=[_short((1, 2, 3))])
        _rounds(guided, 12)
        controls += _drops(injector)
    assert controls, "no seed dropped data even from a full ISR: the cases above say nothing"


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


def test_rounds_bound_the_schedule_however_far_its_deadline():
    """--rounds N: N rounds, each healed, then the schedule returns (the run's
    workload ends with it), the deadline an hour away."""
    guided, injector, _ = _guided()
    guided.max_rounds = 2
    result: dict[str, Any] = {}
    started = time.monotonic()
    guided.run(started + 3600.0, threading.Event(), result)
    assert [r["number"] for r in result["guided"]["rounds"]] == [1, 2]
    assert time.monotonic() - started < 60
    assert faults(injector) and not (injector.down or injector.paused or injector.grudge)


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


def test_each_follower_meets_the_kind_its_round_names_on_its_own_broker():
    """The faults a round makes: F1 then F2 taken away, each by the kind the round
    names for it (Round.ways, drawn by capability), on that role's broker."""
    kinds = set()
    for seed in range(12):
        guided, injector, _ = _guided(seed)
        done = guided.play("elr-not-empty")
        assert done.reached and done.error is None, done
        assert set(done.ways) == {"F1", "F2"}
        away = [(kind, nodes, d["step"]) for kind, nodes, d in faults(injector, "invoke")
                if d["step"].endswith(" away")]
        assert [(kind, step) for kind, _, step in away] == [
            (done.ways["F1"], "guided-1:F1 away"), (done.ways["F2"], "guided-1:F2 away")]
        assert done.roles["F1"] in away[0][1] and done.roles["F2"] in away[1][1], away
        kinds |= set(done.ways.values())
    assert len(kinds) >= 4, kinds  # the draws are not stuck on one kind


def test_a_reassignment_is_asked_of_a_broker_that_hears_the_controllers():
    """A round below min ISR reassigns while F1 and F2 are away: its requests (the
    start, and the cancel at the round's end) go to a broker the model has
    unfenced, passing over broker-1 (the first asked, a follower here) when it is
    away."""
    passed_over = 0
    for seed in range(12):
        guided, injector, _ = _guided(seed, world=World(leader=3))
        done = guided.play("reassign-while-below-min-isr")
        assert done.reached and done.error is None, done
        assert [kind for kind, _, _ in faults(injector) if kind.startswith("reassign")] \
            == ["reassign", "reassign-end"]
        sent = injector.connect.sent  # type: ignore[attr-defined]
        assert len(sent) == 2 and not any(fenced for _, fenced in sent), sent
        passed_over += any(broker != 1 for broker, _ in sent)
    assert passed_over


def test_each_kinds_settings_reach_its_use():
    """Guided(faults=...): a kind's settings are the ones it acts with; a kind not
    named acts with its defaults."""
    slow = SlowNetworkSettings(away_rate_kbit=8, away_loss=0.5)
    disk = DiskFaultSettings(drop_on_failed_fsync=False)
    default = SlowNetworkSettings()
    for chosen, rate, loss, may_drop in ((None, default.away_rate_kbit, default.away_loss, True),
                                         ({"slow-network": slow, "disk-fault": disk}, 8, 0.5,
                                          False)):
        slowed, disk_faults = [], []
        for seed in range(12):
            guided, injector, _ = _guided(seed, faults=chosen)
            _rounds(guided, 12)
            slowed += [(d["rate_kbit"], d["loss"]) for kind, _, d in faults(injector)
                       if kind == "slow-network"]
            disk_faults += [d["dropped"] for kind, _, d in faults(injector)
                            if kind == "disk-fault"]
        assert slowed and set(slowed) == {(rate, loss)}
        assert disk_faults and any(disk_faults) is may_drop, disk_faults


def test_no_round_fails_on_the_injectors_own_rules():
    """A round draws only what the kinds let it do together (F1 and F2 overlap: two
    slow networks at once are refused, so F2 never draws F1's)."""
    failed = []
    for seed in range(40):
        guided, _, _ = _guided(seed)
        _rounds(guided, 12)
        failed += [(seed, r.number, r.ways, r.error) for r in guided.rounds if r.error]
    assert failed == []


@dataclass
class ForgetfulWorld(World):
    """A buggy Kafka: a broker that leaves the ISR never joins the ELR."""

    def leave(self, broker: int, fenced: bool = True) -> None:
        super().leave(broker, fenced)
        self.elr.clear()


@pytest.mark.parametrize(("aim", "then"), [
    ("elr-feature-change-with-elr", "feature-change"),
    ("min-isr-change-with-elr", "min-isr-change"),
    ("controller-failover-with-elr", None),
])
def test_a_wait_that_never_sees_its_state_does_not_end_the_round(aim, then):
    """A state a correct Kafka reaches and this one never does is often the bug
    itself: the round still makes its change, and says what it saw instead."""
    for seed in range(6):
        guided, injector, _ = _guided(seed, world=ForgetfulWorld())
        done = guided.play(aim)
        assert not done.reached and done.error is None and done.skipped is None
        assert "ELR []" in done.saw["ELR not empty"], done.saw
        kinds = [kind for kind, _nodes, d in faults(injector) if d.get("guided") == 1]
        step = then or done.ways["controller"]
        assert step in kinds, (seed, kinds)
        assert injector.grudge == {} and injector.down == set() and injector.paused == set()


def test_the_elr_member_is_shut_down_uncleanly_even_when_it_never_joined_the_elr():
    shut = 0
    for seed in range(12):
        guided, injector, _ = _guided(seed, world=ForgetfulWorld())
        done = guided.play("unclean-shutdown-of-elr-member")
        assert not done.reached and done.error is None
        if ("F2 in the ELR", False) not in done.waits:
            continue  # the other branch: L shut down uncleanly
        downs = [nodes for _kind, nodes, d in faults(injector, "invoke")
                 if d["step"].endswith("F2 down")]
        assert downs and all(n == [done.roles["F2"]] for n in downs), (seed, downs)
        shut += 1
    assert shut, "no seed drew the branch that shuts F2 down"


def test_the_leader_restarts_alone_with_both_followers_kept_fenced():
    """KIP-966 must refuse to elect an uncleanly restarted L while every other ELR
    member is away: F1 too is taken away in a way that keeps it fenced (never a
    slowed link: a registered broker is elected as soon as L is down), and neither
    follower comes back before L has restarted."""
    from elr_harness.nemesis.guided.round import FENCED_AWAY

    fenced_kinds = {p.name for p in FENCED_AWAY}
    for seed in range(24):
        guided, injector, world = _guided(seed)
        restarted_with: list[set[int]] = []
        answer = world.answer

        def watch(line: dict[str, Any], answer=answer, world=world,
                  restarted_with=restarted_with) -> None:
            if line["fault"] == "start" and line["detail"]["step"].endswith("L restarts"):
                restarted_with.append(set(world.fenced))
            answer(line)

        injector.recorder.answer = watch  # type: ignore[attr-defined]
        done = guided.play("leaderless-with-unclean-replica-unfenced")
        assert done.reached, (seed, done)
        assert done.ways["F1"] in fenced_kinds and done.ways["F2"] in fenced_kinds
        f1, f2 = (BROKERS[done.roles[r]] for r in ("F1", "F2"))
        assert restarted_with and {f1, f2} <= restarted_with[0], (seed, restarted_with)


def test_a_min_isr_change_with_elr_lowers_it_to_at_most_the_isrs_size():
    """KIP-966: "if the new min ISR <= current ISR, the ELR will be removed": the
    round's change is one of those, made while the ELR is held (a raise, which a
    round could draw before, shows nothing of a controller that keeps the ELR)."""
    for seed in range(12):
        guided, injector, world = _guided(seed)
        seen: list[tuple[int, list[int], list[int]]] = []
        answer = world.answer

        def watch(line: dict[str, Any], answer=answer, world=world, seen=seen) -> None:
            if line["fault"] == "min-isr-change" and line["type"] == "ok" \
                    and not line["detail"].get("restore"):
                seen.append((line["detail"]["to"], list(world.isr), list(world.elr)))
            answer(line)

        injector.recorder.answer = watch  # type: ignore[attr-defined]
        done = guided.play("min-isr-change-with-elr")
        assert done.error is None and done.skipped is None, (seed, done)
        assert seen, (seed, "no min ISR change made")
        for to, isr, elr in seen:
            assert elr and 1 <= to <= len(isr), (seed, to, isr, elr)
