"""`--nemesis guided` with transactions (nemesis/guided/txn_recipes.py): the recipe of each
of the four transaction states against a small model of the cluster (a data
partition, the `__transaction_state` partition of the run's transactional.id, and
the data partition's LSO, held below its high watermark while C's markers cannot
reach L), the steps each plays and the waits it makes; that a run without
transactions aims at exactly the KIP-966 states, drawing as before; and that a run
with transactions aims at all seventeen.

The faults go through the real FaultInjector over the fakes test_nemesis_guided
uses; its World moves each partition, here electing an ISR member when the leader
leaves with others in the ISR (Kafka's ordinary failover)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from fakes import AnsweringRecorder, FakeAdmin, FakeObserver, FakePageCache, cluster_of
from test_nemesis_guided import BROKERS, FAST, TOPOLOGY, Wire, World, faults

from elr_harness.cluster.kraft import TRANSACTION_STATE_TOPIC
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import WorkloadConfig
from elr_harness.core.history import COVERAGE_STATES, TXN_COVERAGE_STATES
from elr_harness.nemesis.guided.recipes import RECIPES
from elr_harness.nemesis.guided.search import Guided
from elr_harness.nemesis.guided.txn_recipes import (
    LEADER_AWAY,
    MARKERS_HELD,
    TXN_RECIPES,
    Transactions,
)
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.schedule.conditions import parse_condition
from elr_harness.nemesis.schedule.file import parse_schedule
from elr_harness.nemesis.schedule.writer import recorded_toml
from elr_harness.nemesis.targets import transaction_partition
from elr_harness.run.nemesis_thread import guided_transactions

TXN_ID = "elr-txn-java-0"
#: The `__transaction_state` partitions the model shows (Kafka has 50; three will do).
TXN_PARTITIONS = 3
COORDINATOR_PARTITION = transaction_partition(TXN_ID, TXN_PARTITIONS)
#: A transaction timeout the tests wait out (recipe 4 holds past it).
TXN = Transactions((TXN_ID,), timeout_ms=20)
QUICK = replace(FAST, leader_move_s=0.0, marker_lag_s=0.0, txn_timeout_margin_s=0.01)
HWM, STUCK_LSO = 10, 5
NAMES = {i: n for n, i in BROKERS.items()}


@dataclass
class Moving(World):
    """One partition of the model: a World by its own name that, like Kafka, elects
    another ISR member when its leader leaves and others are left in the ISR."""

    topic: str = "t"
    number: int = 0
    #: the leader it returns to once every broker is back (Kafka's preferred leader)
    preferred: int = -1

    def __post_init__(self) -> None:
        self.preferred = self.leader if self.preferred < 0 else self.preferred

    def back(self, broker: int) -> None:
        super().back(broker)
        if not self.away and not self.stuck:
            self.leader = self.preferred

    def state(self) -> PartitionState:
        return replace(super().state(), topic=self.topic, partition=self.number)

    def leave(self, broker: int, fenced: bool = True) -> None:
        others = [b for b in self.isr if b != broker and b not in self.fenced]
        if broker != self.leader or not others:
            super().leave(broker, fenced)
            return
        self.away.add(broker)
        if fenced:
            self.fenced.add(broker)
        self.isr.remove(broker)
        self.leader = others[0]


def _full(topic: str, number: int, leader: int) -> PartitionState:
    """A partition no round touches, its ISR full."""
    return PartitionState(topic, number, leader, 1, (1, 2, 3), (), (), 10,
                          replicas=(1, 2, 3), fenced=(), min_isr=2, elr_feature=1)


@dataclass
class TxnWorld:
    """The data partitions and the coordinator's `__transaction_state` partition, each
    moving on the injector's lines; a data partition's LSO stays below its high
    watermark while its leader and the coordinator are cut apart (the marker held
    back), unless `markers_land` (a Kafka that finds another way)."""

    data: list[Moving] = field(default_factory=lambda: [Moving()])
    coordinator: Moving = field(default_factory=lambda: Moving(
        leader=2, topic=TRANSACTION_STATE_TOPIC, number=COORDINATOR_PARTITION))
    markers_land: bool = False
    injector: Any = None

    def parts(self) -> list[Moving]:
        return [*self.data, self.coordinator]

    def answer(self, line: dict[str, Any]) -> None:
        for part in self.parts():
            part.answer(line)

    def held(self, part: Moving) -> bool:
        grudge = self.injector.grudge
        here, there = NAMES.get(part.leader), NAMES.get(self.coordinator.leader)
        return not self.markers_land and (there in grudge.get(here, ())
                                          or here in grudge.get(there, ()))

    def states(self) -> list[PartitionState]:
        data = [replace(p.state(), high_watermark=HWM,
                        last_stable_offset=STUCK_LSO if self.held(p) else HWM)
                for p in self.data]
        internal = [self.coordinator.state() if n == COORDINATOR_PARTITION
                    else _full(TRANSACTION_STATE_TOPIC, n, 3) for n in range(TXN_PARTITIONS)]
        return [*data, *internal]


def _guided(seed: int = 7, world: TxnWorld | None = None, transactions: Transactions |
            None = TXN, config=QUICK, reached: Sequence[str] = ()
            ) -> tuple[Guided, FaultInjector, TxnWorld]:
    """A guided schedule over the model, its faults through a real FaultInjector over
    fake nodes (as test_nemesis_guided's)."""
    world = world or TxnWorld()
    cluster = cluster_of()
    cluster.leader = 1002
    injector = FaultInjector(cluster, AnsweringRecorder(world.answer),  # type: ignore[arg-type]
                             page_cache=FakePageCache(),  # type: ignore[arg-type]
                             admin=FakeAdmin(min_isrs={None: 2}),  # type: ignore[arg-type]
                             connect=Wire(world.data[0]))
    world.injector = injector
    for part in world.parts():
        part.injector = injector
    guided = Guided(injector, FakeObserver(world.states),
                    [("t", len(world.data))], seed, 3, 2, config,
                    reached=reached, log=lambda _m: None, topology=TOPOLOGY,
                    active_controller=lambda: 1002, transactions=transactions)
    return guided, injector, world


def _healed(injector: FaultInjector) -> bool:
    return injector.grudge == {} and injector.down == set() and injector.paused == set()


def _steps(guided: Guided) -> list[dict[str, Any]]:
    return guided.drawn.tables


def _invokes(injector: FaultInjector) -> list[tuple[str, list[str], str]]:
    """The round's faults as made: (kind, nodes, step)."""
    return [(kind, nodes, d["step"]) for kind, nodes, d in faults(injector, "invoke")
            if not d["step"].endswith(":end")]


# -- each recipe ------------------------------------------------------------------


def test_coordinator_failover_takes_c_away_and_waits_for_another_leader_of_its_partition():
    kinds = set()
    where = f"{TRANSACTION_STATE_TOPIC}-{COORDINATOR_PARTITION}"
    for seed in range(16):
        guided, injector, world = _guided(seed)
        done = guided.play("txn-coordinator-failover-with-open-txn")
        assert done.reached and done.error is None and done.skipped is None, (seed, done)
        assert done.partition == where and done.roles["C"] == "broker-2" == done.roles["L"]
        # one fault: C taken away, in a kind that keeps it fenced and drops nothing
        (made,) = _invokes(injector)
        assert made[0] == done.ways["C"] and made[2] == "guided-1:C down"
        assert made[1] == ["broker-2"] or "broker-2" in made[1]
        assert made[0] in {p.name for p in LEADER_AWAY}
        assert not {"page-cache-loss", "disk-fault"} & {k for k, _, _ in faults(injector)}
        # its wait: another replica of C's partition leads, bounded by leader_move_s
        wait = next(s for s in _steps(guided) if s.get("until", "").endswith("leads"))
        assert wait["partition"] == where and wait["played"]["seen"]
        assert wait["until"] == " or ".join(f"{done.roles[r]} leads" for r in ("F1", "F2"))
        assert done.waits[0] == ("another replica leads C's partition", True)
        assert _healed(injector)
        kinds.add(done.ways["C"])
    assert len(kinds) >= 3, kinds


def test_internal_topic_with_elr_plays_elr_not_empty_on_the_coordinators_partition():
    where = f"{TRANSACTION_STATE_TOPIC}-{COORDINATOR_PARTITION}"
    for seed in range(12):
        guided, injector, world = _guided(seed)
        done = guided.play("internal-topic-with-elr")
        assert done.reached and done.error is None, (seed, done)
        assert done.partition == where and done.roles["C"] == "broker-2"
        assert [step for _, _, step in _invokes(injector)] == [
            "guided-1:F1 away", "guided-1:F2 away"]
        f1, f2 = done.roles["F1"], done.roles["F2"]
        assert "broker-2" not in (f1, f2)
        assert [(s["until"], s["partition"]) for s in _steps(guided) if "until" in s][:3] == [
            (f"{f1} not in isr", where), ("isr below min-isr", where),
            ("elr not empty", where)]
        # the data partition was never acted on
        assert all(s["partition"] == where for s in _steps(guided))
        assert _healed(injector)


def test_leader_change_between_commit_and_marker_holds_the_markers_then_stops_l():
    for seed in range(12):
        guided, injector, world = _guided(seed)
        done = guided.play("leader-change-between-commit-and-marker")
        assert done.reached and done.error is None, (seed, done)
        assert done.partition == "t-0" and done.roles == {**done.roles, "L": "broker-1",
                                                           "C": "broker-2"}
        # the cut: L stops hearing C, recorded exactly (schedule.toml's `cut`)
        made = _invokes(injector)
        assert [step for _, _, step in made] == ["guided-1:markers held", "guided-1:L down"]
        assert made[0][0] == done.ways["L-C"] in {p.name for p in MARKERS_HELD}
        cut = next(s for s in _steps(guided) if s.get("fault") == done.ways["L-C"])
        assert cut["cut"] == {"broker-1": ["broker-2"]} and "target" not in cut
        # L shut down cleanly (its leadership handed over at once)
        assert made[1][:2] == ("stop", ["broker-1"]) and done.ways["L"] == "stop"
        untils = [s["until"] for s in _steps(guided) if "until" in s]
        assert untils[0] == "lso below high-watermark"
        assert untils[1] == " or ".join(f"{done.roles[r]} leads" for r in ("F1", "F2"))
        assert done.waits[:2] == [("a marker held back: LSO below the HWM", True),
                                  ("another leader while the marker is held back", True)]
        assert _healed(injector)


def test_lso_below_hwm_holds_the_markers_past_the_transaction_timeout():
    guided, injector, world = _guided()
    done = guided.play("lso-below-hwm-beyond-txn-timeout")
    assert done.reached and done.error is None, done
    assert [kind for kind, _, _ in _invokes(injector)] == [done.ways["L-C"]]
    steps = _steps(guided)
    cut = steps[0]
    assert cut["cut"] == {"broker-1": ["broker-2"]} and cut["partition"] == "t-0"
    # held past the transaction timeout and its margin, on the wait that saw the LSO
    # below the HWM; then the check that it stayed there
    held = sum(s.get("hold_s", 0.0) for s in steps)
    wanted = TXN.timeout_ms / 1000 + QUICK.txn_timeout_margin_s
    assert held == pytest.approx(round(wanted, 1), abs=0.11)
    assert [s["until"] for s in steps if "until" in s][:2] == [
        "lso below high-watermark", "lso below high-watermark"]
    assert done.waits[:2] == [("a marker held back: LSO below the HWM", True),
                              ("LSO held below the HWM past the transaction timeout", True)]
    # the round's end healed the cut: the marker lands
    assert _healed(injector)
    assert world.states()[0].last_stable_offset == HWM


def test_the_hold_outlasts_the_configured_transaction_timeout(monkeypatch):
    """The hold is the run's transaction_timeout_ms and the margin, as configured."""
    waited: list[float] = []
    guided, _, _ = _guided(transactions=Transactions((TXN_ID,), timeout_ms=12000),
                           config=replace(QUICK, txn_timeout_margin_s=4.0))
    monkeypatch.setattr(guided.stop_event, "wait", lambda s=None: waited.append(s) or False)
    done = guided.play("lso-below-hwm-beyond-txn-timeout")
    assert done.reached
    assert 16.0 in waited


def test_a_marker_that_lands_all_the_same_is_not_reached_and_says_what_it_saw():
    guided, injector, _ = _guided(world=TxnWorld(markers_land=True))
    done = guided.play("lso-below-hwm-beyond-txn-timeout")
    assert not done.reached and done.error is None and done.skipped is None
    assert done.waits[0] == ("a marker held back: LSO below the HWM", False)
    assert "LSO 10" in done.saw["LSO held below the HWM past the transaction timeout"]
    assert _healed(injector)
    # the leader change goes on all the same (a wait that sees nothing ends no round)
    guided, injector, _ = _guided(world=TxnWorld(markers_land=True))
    done = guided.play("leader-change-between-commit-and-marker")
    assert ("stop", ["broker-1"]) in [(k, n) for k, n, _ in _invokes(injector)]


def test_a_data_partition_c_leads_is_passed_over_for_one_it_does_not():
    """C's markers to itself never cross the network: the round plays on a partition
    another broker leads, or is skipped when C leads them all."""
    for aim in ("leader-change-between-commit-and-marker", "lso-below-hwm-beyond-txn-timeout"):
        for seed in range(8):
            world = TxnWorld(data=[Moving(leader=2, number=0), Moving(leader=3, number=1)])
            guided, injector, _ = _guided(seed, world)
            done = guided.play(aim)
            assert done.partition == "t-1" and done.roles["L"] == "broker-3", (seed, done)
            assert done.reached, done
        world = TxnWorld(data=[Moving(leader=2, number=0), Moving(leader=2, number=1)])
        guided, injector, _ = _guided(world=world)
        done = guided.play(aim)
        assert done.skipped and "leads every data partition" in done.skipped
        assert [kind for kind, _, _ in faults(injector)] == ["heal"]


def test_no_transaction_recipe_drops_data():
    for seed in range(16):
        guided, injector, _ = _guided(seed)
        for aim in TXN_COVERAGE_STATES:
            guided.play(aim)
        assert not any(r.dropped_data for r in guided.rounds)
        kinds = {kind for kind, _, _ in faults(injector)}
        assert not kinds & {"page-cache-loss", "disk-fault"}, kinds


def test_every_transaction_state_has_its_recipe_and_every_wait_is_a_condition():
    assert set(TXN_RECIPES) == set(TXN_COVERAGE_STATES)
    assert not set(TXN_RECIPES) & set(RECIPES)
    guided, _, _ = _guided()
    for aim in TXN_COVERAGE_STATES:
        guided.play(aim)
    for step in _steps(guided):
        if "until" in step:
            parse_condition(step["until"])


def test_the_rounds_schedule_toml_plays_again():
    """schedule.toml of a guided run with transactions reads back (the cut, the
    coordinator's partition, `lso below high-watermark`), and needs the txn workload."""
    guided, _, _ = _guided()
    for aim in TXN_COVERAGE_STATES:
        guided.play(aim)
    record = guided.played()
    assert record["needs"]["workloads"] == ["txn"]
    schedule = parse_schedule(recorded_toml(record), "schedule.toml")
    assert len(schedule.steps) == len(record["steps"])
    assert {s.partition for s in schedule.steps} >= {
        ("t", 0), (TRANSACTION_STATE_TOPIC, COORDINATOR_PARTITION)}
    assert any(s.cut == {"broker-1": ["broker-2"]} for s in schedule.steps)


# -- what a run aims at -------------------------------------------------------------


def _shuffled(seed: int, states: Sequence[str]) -> tuple[list[str], random.Random]:
    rng = random.Random(seed)
    pending = list(states)
    rng.shuffle(pending)
    return pending, rng


@pytest.mark.parametrize("seed", [0, 3, 7, 11])
def test_a_run_without_transactions_aims_at_the_kip966_states_drawing_as_before(seed):
    guided, injector, _ = _guided(seed, transactions=None)
    pending, rng = _shuffled(seed, COVERAGE_STATES)
    assert guided.states == COVERAGE_STATES and guided.pending == pending
    assert guided.rng.getstate() == rng.getstate()
    # every state, then drawn ones: never a transaction state
    aims = [guided.play(guided.next_aim()).aim for _ in range(len(COVERAGE_STATES) + 6)]
    assert set(aims) <= set(COVERAGE_STATES) and set(aims[:13]) == set(COVERAGE_STATES)
    assert "workloads" not in guided.played()["needs"]
    # a reached transaction state (from a soak with transactions) is no aim either
    guided, _, _ = _guided(seed, transactions=None, reached=TXN_COVERAGE_STATES[:2])
    assert guided.reached_before == () and guided.pending == pending


def test_a_run_without_transactions_plays_what_it_played_before():
    """The same rounds, faults and steps as a guided run built the way it was before
    transactions (no `transactions` argument)."""
    def played(transactions: Transactions | None, passed: bool) -> list[Any]:
        world = TxnWorld()
        guided, injector, _ = _guided(5, world, transactions=transactions)
        if not passed:
            guided = Guided(injector, guided.observer, [("t", 1)], 5, 3, 2, QUICK,
                            log=lambda _m: None, topology=TOPOLOGY,
                            active_controller=lambda: 1002)
        for _ in range(16):
            guided.play(guided.next_aim())
        return [r.aim for r in guided.rounds] + [
            (k, n) for k, n, _ in faults(injector)] + [guided.drawn.tables]

    assert played(None, True) == played(None, False)


def test_a_run_with_transactions_aims_at_all_seventeen():
    for seed in range(6):
        guided, injector, _ = _guided(seed)
        assert guided.states == (*COVERAGE_STATES, *TXN_COVERAGE_STATES)
        assert len(guided.states) == 17
        aims = [guided.play(guided.next_aim()) for _ in range(17)]
        assert sorted(r.aim for r in aims) == sorted(guided.states)
        # (a KIP-966 round may be skipped by the fault budget after a data loss: its own)
        assert [r.aim for r in aims if r.error] == []
        assert [r.aim for r in aims if r.skipped and r.aim in TXN_COVERAGE_STATES] == []
        assert {r.aim for r in aims if r.reached} >= set(TXN_COVERAGE_STATES), seed
        assert _healed(injector)
        for _kind, _nodes, detail in faults(injector, "invoke"):
            assert detail["aim"] in guided.states


def test_states_reached_before_are_aimed_at_last_with_transactions_too():
    left = ("internal-topic-with-elr", "elected-from-elr")
    reached = [s for s in (*COVERAGE_STATES, *TXN_COVERAGE_STATES) if s not in left]
    guided, _, _ = _guided(reached=reached)
    assert sorted(guided.pending) == sorted(left)
    assert guided.reached_before == tuple(reached)


def test_the_run_passes_its_transactions_to_guided():
    assert guided_transactions(WorkloadConfig()) is None
    assert guided_transactions(WorkloadConfig(workloads=("plain", "txn"), txn_producers=0)) \
        is None
    chosen = guided_transactions(WorkloadConfig(workloads=("plain", "txn"), txn_producers=2,
                                                txn_timeout_ms=7000))
    assert chosen == Transactions(("elr-txn-java-0", "elr-txn-java-1"), 7000)


def test_lso_below_high_watermark_is_a_condition_of_what_the_leader_answered():
    condition = parse_condition("lso below high-watermark")
    base = _full("t", 0, 1)

    def holds(lso: int | None, hwm: int | None) -> bool:
        state = replace(base, last_stable_offset=lso, high_watermark=hwm)
        return condition.holds(state, lambda _n: -2, 3, 2)

    assert holds(5, 10) and not holds(10, 10)
    assert not holds(None, 10) and not holds(5, None)  # not asked, or no answer
