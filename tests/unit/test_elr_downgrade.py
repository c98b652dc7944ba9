"""elr-downgrade's step logic on faked observed state (issue #53): the variant the
seed picks, the faults of each in order, the waits on the observed state, and what
the second leaderless spell records (the LastKnownELR it saw, whether a broker
other than the last leader was elected).

The injector is the real one over fake nodes (tests/fakes.py), its lines kept in a
list; each fault in force (its `ok` line) moves partition t-0 as a KRaft
controller would. Two controllers are modelled: 4.4.0's PartitionChangeBuilder as
its bytecode reads (at ELR feature level 0 it still elects from the ELR it was
handed and never writes LastKnownELR; with the feature on it sets LastKnownELR
only when it was empty), and a fixed one that removes LastKnownELR on the first
change at level 0, as KIP-966 says. The scenario on real Kafka is
tests/integration/test_scenario_elr_downgrade.py's.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fakes import AnsweringRecorder, FakeAdmin, FakeObserver, cluster_of, specs

from elr_harness.cluster import reassignments
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, ScenarioTimings, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.history import ELR_FEATURE
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.scenarios import SCENARIOS
from elr_harness.nemesis.scenarios.elr_downgrade import (
    DOWNGRADE_FIRST,
    ELECT,
    REASSIGN,
    RESTORE_FIRST,
    ElrDowngrade,
    check,
    variant_of,
)

FAST = ScenarioTimings(step_timeout_s=0.2, warmup_high_watermark=0, hold_t1_s=0.0,
                       hold_level0_s=0.0, hold_offline_s=0.1)
L, A, B, S = 1, 2, 3, 4  # the leader, its followers in ISR order, the spare broker
MIN_ISR = 2


class Controller:
    """Partition t-0 as a KRaft controller keeps it, moved by the faults in force.

    `fixed`: LastKnownELR is removed on the first partition change at level 0
    (KIP-966); else it is left as 4.4.0 leaves it."""

    def __init__(self, fixed: bool = False) -> None:
        self.fixed = fixed
        self.level = 1
        self.leader, self.epoch = L, 1
        self.isr: list[int] = [L, A, B]
        self.elr: list[int] = []
        self.lke: list[int] = []
        self.replicas = [L, A, B]
        self.fenced: set[int] = set()
        self.clean: dict[int, bool] = {}
        self.elections: list[int] = []

    @property
    def state(self) -> PartitionState:
        """A new sample, as the observer's next tick would be."""
        return PartitionState("t", 0, self.leader, self.epoch, tuple(self.isr),
                              tuple(self.elr), tuple(self.lke), 100, tuple(self.replicas),
                              fenced=tuple(sorted(self.fenced)), min_isr=MIN_ISR,
                              elr_feature=self.level)

    # -- the controller's one way to change the partition ----------------------------

    def change(self, isr: list[int] | None = None, unclean: tuple[int, ...] = ()) -> None:
        """PartitionChangeBuilder.build, as far as these steps need it."""
        on = self.level >= 1
        old_isr, old_leader = list(self.isr), self.leader
        target = list(self.isr if isr is None else isr)
        elr = list(self.elr)
        if on:  # maybePopulateTargetElr
            if len(target) >= MIN_ISR:
                elr = []
            else:
                elr = [b for b in dict.fromkeys([*elr, *old_isr])
                       if b not in target and b not in unclean]
        ok = [b for b in self.replicas if b not in self.fenced]
        leader = -1
        if old_leader in target and old_leader in ok:
            leader = old_leader
        elif (pick := [b for b in target if b in ok]):
            leader = pick[0]
        elif not target and (pick := [b for b in elr if b in ok]):  # the ELR, even at 0
            leader, target, elr = pick[0], [pick[0]], [b for b in elr if b != pick[0]]
        elif on and not target and not elr and len(self.lke) == 1 and self.lke[0] in ok:
            leader = self.lke[0]  # the last known leader, an unclean election
            target, elr = [leader], []
        if not on:
            elr = []
            if not target:
                target = old_isr  # an empty ISR is never written at level 0
            if self.fixed:
                self.lke = []
        elif leader == -1 and old_leader >= 0 and not self.lke:
            self.lke = [old_leader]
        elif leader >= 0 and leader != old_leader:
            self.lke = []
        if leader != old_leader:
            self.epoch += 1
            if leader >= 0:
                self.elections.append(leader)
        self.leader, self.isr, self.elr = leader, target, elr

    # -- what each fault does --------------------------------------------------------

    def answer(self, line: dict[str, Any]) -> None:
        kind, detail = line["fault"], line["detail"]
        brokers = [int(n.split("-")[1]) for n in line["nodes"] if n.startswith("broker")]
        if kind in ("kill", "stop"):
            (b,) = brokers
            self.clean[b] = kind == "stop"
            self.fenced.add(b)
            if b in self.isr:
                self.change([x for x in self.isr if x != b])
        elif kind == "start":
            (b,) = brokers
            if not self.clean.get(b, True):
                if self.level >= 1 and (b in self.isr or b in self.elr):
                    # handleBrokerUncleanShutdown: out of the ISR and the ELR
                    self.change([x for x in self.isr if x != b], unclean=(b,))
                elif b in self.isr:  # the legacy path, at level 0: the ISR only
                    self.change([x for x in self.isr if x != b])
            self.fenced.discard(b)
            if self.leader == -1:
                self.change()
        elif kind == "feature-change":
            self.level = detail["to"]
        elif kind == "reassign":
            self.replicas = list(detail["to"])
            self.change()
        elif kind == "reassign-end":
            self.replicas = list(detail["from"])
        self.catch_up()

    def catch_up(self) -> None:
        """A leader's followers that run catch up and join the ISR (AlterPartition)."""
        behind = [b for b in self.replicas if b not in self.isr and b not in self.fenced]
        if self.leader >= 0 and behind:
            self.change([*self.isr, *behind])


def scenario(seed: int, fixed: bool = False) -> tuple[ElrDowngrade, FaultInjector, Controller]:
    kraft = Controller(fixed)
    cluster = cluster_of(specs(controllers=1, brokers=4))
    recorder = AnsweringRecorder(kraft.answer)
    injector = FaultInjector(cluster, recorder, admin=FakeAdmin())  # type: ignore[arg-type]
    run = ElrDowngrade(injector, FakeObserver(lambda: [kraft.state]), "t", 0, elr=True,
                       timings=FAST, stop=threading.Event(), log=lambda _m: None, seed=seed)
    return run, injector, kraft


@pytest.fixture(autouse=True)
def wire(monkeypatch) -> list[tuple[str, Any]]:
    """AlterPartitionReassignments answered as a controller would (no wire)."""
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(reassignments, "execute",
                        lambda addresses, topic, partition, replicas, *a, **k:
                        sent.append(("execute", list(replicas))))
    monkeypatch.setattr(reassignments, "cancel",
                        lambda *a, **k: sent.append(("cancel", None))
                        or reassignments.Outcome.CANCELLED)
    return sent


def faults(injector: FaultInjector) -> list[tuple[str, str, list[str]]]:
    return [(x["fault"], x["detail"].get("step"), x["nodes"])
            for x in injector.recorder.lines  # type: ignore[attr-defined]
            if x["f"] == "fault" and x["type"] == "ok"]


def steps(outcomes) -> dict[str, Any]:  # noqa: ANN001
    return {o.step: o for o in outcomes}


def broker(i: int) -> list[str]:
    return [f"broker-{i}"]


def test_it_is_registered_with_a_fourth_broker_and_the_short_timeouts() -> None:
    package = SCENARIOS["elr-downgrade"]
    assert package.scenario is ElrDowngrade
    paths = {s.path for s in package.cluster_settings}
    assert "cluster.brokers" in paths and "cluster.timings.broker_session_timeout_ms" in paths


def test_the_seed_picks_the_variant() -> None:
    assert [variant_of(s) for s in range(8)] == [ELECT, REASSIGN, DOWNGRADE_FIRST,
                                                 RESTORE_FIRST] * 2


@pytest.mark.parametrize("cluster, topic, why", [
    (ClusterConfig(brokers=3), TopicConfig(), "no replica"),
    (ClusterConfig(brokers=4), TopicConfig(min_insync_replicas=3), "min-insync-replicas 2"),
    (ClusterConfig(brokers=4, elr=False), TopicConfig(), "--elr on"),
])
def test_a_topology_it_cannot_use_is_refused(cluster, topic, why) -> None:
    with pytest.raises(BadInput, match=why):
        check(cluster, [topic])


def test_elect_on_4_4_0_the_stale_last_known_leader_is_elected() -> None:
    run, injector, kraft = scenario(seed=0)
    outcomes = steps(run.run())
    assert faults(injector) == [
        ("kill", "T0", broker(A)), ("kill", "T1", broker(B)), ("kill", "T2", broker(L)),
        ("feature-change", "D", []), ("start", "C", broker(B)), ("start", "C-a", broker(A)),
        ("feature-change", "U", []),
        ("kill", "S1-1", broker(A)), ("kill", "S2", broker(B)),
        ("start", "S3-1", broker(A)), ("start", "S3-2", broker(L)), ("start", "S4", broker(B)),
    ]
    assert all(o.reached for o in outcomes.values()), outcomes
    assert outcomes["setup"].observed["variant"] == ELECT
    t2 = outcomes["T2"].observed
    assert (t2["leader"], t2["isr"], t2["elr"], t2["last_known_elr"]) == (-1, [], [B, L], [L])
    assert outcomes["D"].observed["elr_feature"] == 0
    # B elected from the ELR kept at level 0; the LastKnownELR [L] survives the change
    c = outcomes["C"].observed
    assert (c["leader"], c["elr"], c["last_known_elr"], c["elr_feature"]) == (B, [], [L], 0)
    assert outcomes["C-a"].observed["isr"] == [B, A]
    assert outcomes["U"].observed["elr_feature"] == 1
    spell = outcomes["S2"].observed
    assert (spell["leader"], spell["last_known_elr"]) == (-1, [L])
    assert spell["stale_last_known_elr"] is True
    elected = outcomes["S4"].observed
    assert (elected["leader"], elected["last_leader"], elected["stale_leader_elected"]) == (
        L, B, True)


def test_elect_on_a_fixed_kafka_the_last_leader_is_elected() -> None:
    run, injector, kraft = scenario(seed=4, fixed=True)
    outcomes = steps(run.run())
    assert all(o.reached for o in outcomes.values()), outcomes
    assert outcomes["C"].observed["last_known_elr"] == []
    assert outcomes["S2"].observed["last_known_elr"] == [B]
    assert outcomes["S2"].observed["stale_last_known_elr"] is False
    elected = outcomes["S4"].observed
    assert (elected["leader"], elected["stale_leader_elected"]) == (B, False)


def test_reassign_clears_the_elr_at_level_0_and_watches_the_partition_offline(wire) -> None:
    run, injector, kraft = scenario(seed=1)
    outcomes = steps(run.run())
    assert faults(injector)[:12] == [
        ("kill", "T0", broker(A)), ("kill", "T1", broker(B)), ("kill", "T2", broker(L)),
        ("feature-change", "D", []), ("reassign", "C", sorted(broker(i)[0] for i in
                                                              (L, A, B, S))),
        ("start", "C-a", broker(A)), ("start", "C-b", broker(B)), ("start", "C-l", broker(L)),
        ("feature-change", "U", []), ("stop", "U-l", broker(L)), ("start", "U-l", broker(L)),
        ("reassign-end", "U-end", sorted(broker(i)[0] for i in (L, A, B, S))),
    ]
    assert wire[:2] == [("execute", [L, A, B, S]), ("cancel", None)]
    assert all(o.reached for o in outcomes.values()), outcomes
    c = outcomes["C"].observed
    assert (c["leader"], c["elr"], c["last_known_elr"]) == (-1, [], [L])
    # every replica up and unfenced at level 0, yet no leader; nor once the feature is
    # back, until L's restart runs an election
    hold = outcomes["C-hold"].observed
    assert (hold["elected"], hold["leader"], hold["fenced"]) == (False, -1, [])
    assert outcomes["U-hold"].observed["elected"] is False
    assert outcomes["U-l"].observed["leader"] == L
    assert outcomes["S2"].observed["last_known_elr"] == [L]
    assert outcomes["S4"].observed["stale_leader_elected"] is False


def test_downgrade_first_the_partition_goes_leaderless_at_level_0() -> None:
    run, injector, kraft = scenario(seed=2)
    outcomes = steps(run.run())
    assert [f[:2] for f in faults(injector)[:8]] == [
        ("kill", "T0"), ("kill", "T1"), ("feature-change", "D"), ("kill", "T2"),
        ("start", "C"), ("start", "C-a"), ("start", "C-l"), ("feature-change", "U")]
    assert all(o.reached for o in outcomes.values()), outcomes
    t2 = outcomes["T2"].observed
    # the last ISR member stays in the ISR at level 0, and nothing sets LastKnownELR
    assert (t2["leader"], t2["isr"], t2["elr"], t2["last_known_elr"]) == (-1, [L], [], [])
    assert outcomes["C-hold"].observed["elected"] is False
    assert outcomes["C-l"].observed["leader"] == L
    assert outcomes["S4"].observed["stale_leader_elected"] is False


def test_restore_first_4_4_0_leaves_the_partition_without_a_leader_for_good() -> None:
    """L, the ISR's last member at level 0, restarts uncleanly once the feature is
    back: the controller takes it out of the ISR, and with no LastKnownELR no one
    can be elected (4.4.0's real runs do the same)."""
    run, injector, kraft = scenario(seed=3)
    outcomes = steps(run.run())
    assert [f[:2] for f in faults(injector)] == [
        ("kill", "T0"), ("kill", "T1"), ("feature-change", "D"), ("kill", "T2"),
        ("start", "C"), ("start", "C-a"), ("feature-change", "U"), ("start", "U-l")]
    u = outcomes["U-l"].observed
    assert (u["leader"], u["isr"], u["elr"], u["last_known_elr"], u["fenced"]) == (
        -1, [], [], [], [])
    assert outcomes["U-hold"].reached and outcomes["U-hold"].observed["elected"] is False
    assert not outcomes["S0"].reached and outcomes["S0"].observed["skipped"] == "no leader"
    assert "S1-1" not in outcomes


def test_a_wait_that_runs_out_is_recorded_and_the_scenario_goes_on() -> None:
    run, injector, kraft = scenario(seed=0)
    run.injector.recorder.answer = lambda line: None  # type: ignore[attr-defined]
    outcomes = steps(run.run())  # nothing moves: every wait runs out
    assert [o.reached for o in outcomes.values()][:4] == [True, False, False, False]
    assert [f[1] for f in faults(injector)][:7] == ["T0", "T1", "T2", "D", "C", "C-a", "U"]


def test_a_stop_ends_the_scenario_between_steps() -> None:
    run, injector, _ = scenario(seed=0)
    original = injector.record

    def record(kind, nodes, detail, action, refuse=None):  # noqa: ANN001, ANN202
        done = original(kind, nodes, detail, action, refuse)
        if detail.get("step") == "T1":
            run.stop_event.set()
        return done

    injector.record = record  # type: ignore[method-assign]
    run.run()
    assert [f[1] for f in faults(injector)] == ["T0", "T1"]


def test_the_feature_is_downgraded_from_the_level_read_and_restored_to_it() -> None:
    run, injector, _ = scenario(seed=0)
    injector.admin.levels[ELR_FEATURE] = 2  # type: ignore[attr-defined]
    run.run()
    changes = [x["detail"] for x in injector.recorder.lines  # type: ignore[attr-defined]
               if x["f"] == "fault" and x["type"] == "ok" and x["fault"] == "feature-change"]
    assert [(d["from"], d["to"], d.get("restore", False)) for d in changes] == [
        (2, 0, False), (0, 2, True)]
