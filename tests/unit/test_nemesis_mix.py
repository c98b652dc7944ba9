"""The random mix's schedule logic: target choice by role, seeds, recorded kinds (#13).

Unit tests of the choice and of what the mix asks the injector to record. The
injector here is a fake that only writes down the fault lines it is asked for;
that the faults act on Kafka is tests/integration/test_faults.py's job.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from elr_harness.cluster.admin_tools import ELR_FEATURE
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import DiskFaultConfig, SlowNetworkConfig
from elr_harness.core.history import ENDED_BY, RESTORE, Fault, restores
from elr_harness.nemesis.faults import CONFIG, FAULT_KINDS, PACKAGES
from elr_harness.nemesis.mix import RandomMix
from elr_harness.nemesis.targets import BROKER_ROLES, Role, Topology, all_isr_full, choose_target
from elr_harness.report.faults import FaultEvent, pair_faults

TOPOLOGY = Topology(brokers={"broker-1": 1, "broker-2": 2, "broker-3": 3},
                    controllers={"controller-1": 101, "controller-2": 102, "controller-3": 103})
BROKERS = set(TOPOLOGY.brokers)
CONTROLLERS = set(TOPOLOGY.controllers)
SEEDS = range(60)


def state(partition: int, leader: int, isr: tuple[int, ...], elr: tuple[int, ...] | None = (),
          topic: str = "t") -> PartitionState:
    return PartitionState(topic, partition, leader, 5, isr, elr, (), None, (1, 2, 3))


def targets(role: Role | str, states: list[PartitionState], active: int | None = None,
            seeds=SEEDS) -> set[str]:
    return {choose_target(role, states, TOPOLOGY, random.Random(s), active) for s in seeds}


# -- choose_target: each role picks from its own set --------------------------------

STATES = [state(0, 1, (1, 2), elr=(3,)), state(1, 2, (2, 3), elr=()),
          state(2, -1, (), elr=(1,))]


def test_leader_is_the_leader_of_a_partition_that_has_one() -> None:
    assert targets(Role.LEADER, STATES) == {"broker-1", "broker-2"}
    assert targets("leader", [state(0, -1, ()), state(1, 3, (3,))]) == {"broker-3"}


def test_isr_is_a_member_of_one_partitions_isr() -> None:
    assert targets(Role.ISR, [state(0, 1, (1, 2))]) == {"broker-1", "broker-2"}
    assert targets(Role.ISR, STATES[:2]) == {"broker-1", "broker-2", "broker-3"}


def test_elr_is_a_member_of_one_partitions_elr_else_any_broker() -> None:
    assert targets(Role.ELR, [state(0, 1, (1,), elr=(3,))]) == {"broker-3"}
    # No ELR (empty, or a cluster that cannot say): any broker, never a controller.
    assert targets(Role.ELR, [state(0, 1, (1, 2, 3), elr=None)]) == BROKERS
    assert targets(Role.ELR, [state(0, 1, (1, 2, 3), elr=())]) == BROKERS


def test_any_is_any_broker_and_never_a_controller() -> None:
    assert targets(Role.ANY, STATES) == BROKERS


def test_active_controller_is_the_quorum_leader_else_any_controller() -> None:
    assert targets(Role.ACTIVE_CONTROLLER, STATES, active=102) == {"controller-2"}
    assert targets(Role.ACTIVE_CONTROLLER, STATES, active=None) == CONTROLLERS
    assert targets(Role.ACTIVE_CONTROLLER, STATES, active=2) == CONTROLLERS  # a broker's id


@pytest.mark.parametrize("role", BROKER_ROLES)
def test_an_empty_state_falls_back_to_any_broker(role: Role) -> None:
    assert targets(role, []) == BROKERS


def test_an_id_that_is_no_broker_is_never_a_target() -> None:
    assert targets(Role.ISR, [state(0, 99, (99,))]) == BROKERS
    assert targets(Role.ISR, [state(0, 2, (2, 99))]) == {"broker-2"}


def test_the_same_seed_gives_the_same_targets_whatever_the_observed_order() -> None:
    def sequence(seed: int, states: list[PartitionState]) -> list[str]:
        rng = random.Random(seed)
        return [choose_target(role, states, TOPOLOGY, rng, 101)
                for role in [*BROKER_ROLES, Role.ACTIVE_CONTROLLER] * 10]

    shuffled = list(reversed(STATES))
    assert sequence(7, STATES) == sequence(7, STATES) == sequence(7, shuffled)
    assert len({tuple(sequence(s, STATES)) for s in range(10)}) > 1


def test_all_isr_full_needs_a_full_isr_everywhere_and_something_observed() -> None:
    assert all_isr_full([state(0, 1, (1, 2, 3)), state(1, 2, (2, 3, 1))], 3)
    assert not all_isr_full([state(0, 1, (1, 2, 3)), state(1, 2, (2, 3))], 3)
    assert not all_isr_full([], 3)


def test_a_full_isr_holds_every_replica_the_state_names() -> None:
    """As the checker's budget judges it: a reassignment below the replication
    factor has a full ISR once its replicas are in sync, one with a spare added
    only once the spare joined."""
    from dataclasses import replace

    two = replace(state(0, 1, (1, 2)), replicas=(1, 2))
    four = replace(state(0, 1, (1, 2, 3)), replicas=(1, 2, 3, 4))
    assert all_isr_full([two], 3) and not all_isr_full([four], 3)
    assert all_isr_full([replace(four, isr=(1, 2, 3, 4))], 3)
    assert not all_isr_full([two, four], 3)


def test_topology_of_a_clusters_nodes_splits_them_by_role() -> None:
    from elr_harness.cluster.node import NodeSpec
    from elr_harness.cluster.node import Role as NodeRole

    class Node:
        def __init__(self, spec: NodeSpec) -> None:
            self.spec = spec

    nodes = [Node(NodeSpec("controller-1", NodeRole.CONTROLLER, 101, "10.0.0.2")),
             Node(NodeSpec("broker-1", NodeRole.BROKER, 1, "10.0.0.5"))]
    topology = Topology.of(nodes)
    assert (dict(topology.brokers), dict(topology.controllers)) == ({"broker-1": 1},
                                                                    {"controller-1": 101})
    assert topology.node_names == ["broker-1", "controller-1"]


# -- RandomMix against a fake injector ----------------------------------------------

class FakeObserver:
    def __init__(self, states: list[PartitionState]) -> None:
        self.states = states

    def latest(self) -> list[PartitionState]:
        return self.states

    def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001 - the Observer protocol
        return self.states if predicate(self.states) else None


def begins(line: dict[str, Any]) -> bool:
    """A fault line that begins a fault (not a heal, start, resume or restore)."""
    return not restores(line["fault"], line["detail"]) and (
        line["fault"] not in ENDED_BY or line["fault"] in ENDED_BY[line["fault"]])


class FakeInjector:
    """Writes down the fault lines FaultInjector would record; acts on nothing but
    its own idea of the cluster's min ISRs and feature levels."""

    def __init__(self, stop_after: int | None = None,
                 stop: threading.Event | None = None) -> None:
        self.lines: list[dict[str, Any]] = []
        self.stop_after, self.stop_event = stop_after, stop
        self.min_isrs: dict[str | None, int] = {None: 2, "t": 2, "u": 2}
        self.levels = {ELR_FEATURE: 1}
        self.changed: dict[Any, int] = {}
        self.lost_page_cache: set[str] = set()
        self.page_cache_losses = 0

    @property
    def elr_feature_off(self) -> bool:
        return self.levels[ELR_FEATURE] == 0

    def _line(self, fault: Fault, nodes: list[str], step: str | None,
              detail: dict[str, Any] | None) -> None:
        self.lines.append({"fault": Fault(fault), "nodes": sorted(nodes),
                           "detail": {**({"step": step} if step else {}), **(detail or {})}})
        begun = [x for x in self.lines if begins(x)]
        if self.stop_event is not None and len(begun) == self.stop_after:
            self.stop_event.set()

    def min_isr(self, topic):  # noqa: ANN001, ANN201
        return self.min_isrs.get(topic)

    def min_isr_change(self, topic, to, current, step=None, detail=None):  # noqa: ANN001
        self.changed.setdefault(("min-isr", topic), current)
        self.min_isrs[topic] = to
        self._line(Fault.MIN_ISR_CHANGE, [], step,
                   {"topic": topic, "from": current, "to": to, **(detail or {})})

    def restore_min_isr(self, topic, step=None, detail=None):  # noqa: ANN001
        before = self.changed.pop(("min-isr", topic))
        current, self.min_isrs[topic] = self.min_isrs[topic], before
        self._line(Fault.MIN_ISR_CHANGE, [], step, {"topic": topic, "from": current,
                                                    "to": before, **(detail or {}),
                                                    RESTORE: True})

    def feature_level(self, feature):  # noqa: ANN001, ANN201
        return self.levels.get(feature)

    def feature_change(self, feature, to, current, step=None, detail=None):  # noqa: ANN001
        self.changed.setdefault(("feature", feature), current)
        self.levels[feature] = to
        self._line(Fault.FEATURE_CHANGE, [], step,
                   {"feature": feature, "from": current, "to": to, **(detail or {})})

    def restore_feature(self, feature, step=None, detail=None):  # noqa: ANN001
        before = self.changed.pop(("feature", feature))
        current, self.levels[feature] = self.levels[feature], before
        self._line(Fault.FEATURE_CHANGE, [], step, {"feature": feature, "from": current,
                                                    "to": before, **(detail or {}),
                                                    RESTORE: True})

    def partition(self, grudge, step=None, kind=Fault.PARTITION, detail=None):  # noqa: ANN001
        self._line(kind, list(grudge), step, {"grudge": grudge, **(detail or {})})

    def heal(self, step=None, detail=None):  # noqa: ANN001
        self._line(Fault.HEAL, TOPOLOGY.node_names, step, detail)

    def kill(self, name, step=None, kind=Fault.KILL, detail=None):  # noqa: ANN001
        self._line(kind, [name], step, detail)

    def stop(self, name, step=None, detail=None):  # noqa: ANN001
        self._line(Fault.STOP, [name], step, detail)

    def start(self, name, step=None, detail=None):  # noqa: ANN001
        self.lost_page_cache.discard(name)
        self._line(Fault.START, [name], step, detail)

    def pause(self, name, step=None, kind=Fault.PAUSE, detail=None):  # noqa: ANN001
        self._line(kind, [name], step, detail)

    def resume(self, name, step=None, detail=None):  # noqa: ANN001
        self._line(Fault.RESUME, [name], step, detail)

    def page_cache_loss(self, name, step=None, detail=None):  # noqa: ANN001
        self.page_cache_losses += 1
        self.lost_page_cache.add(name)
        self._line(Fault.PAGE_CACHE_LOSS, [name], step, detail)

    def log_dirs(self):  # noqa: ANN201
        return ["/data/kafka/dir-0", "/data/kafka/dir-1"]

    def disk_fault(self, name, directory, errno_name, operations, drop, step=None,  # noqa: ANN001
                   detail=None):
        self._line(Fault.DISK_FAULT, [name], step,
                   {"dir": directory, "errno": errno_name, "operations": list(operations),
                    "dropped": drop, **(detail or {})})

    def end_disk_fault(self, name, step=None, detail=None):  # noqa: ANN001
        self._line(Fault.START, [name], step, detail)

    def slow_network(self, name, peers, rate_kbit, loss, step=None, detail=None):  # noqa: ANN001
        self._line(Fault.SLOW_NETWORK, [name], step, {
            "target": name, "peers": sorted(peers), "rate_kbit": rate_kbit, "loss": loss,
            **(detail or {})})

    def unthrottle(self, name, step=None, detail=None):  # noqa: ANN001
        self._line(Fault.UNTHROTTLE, [name], step, detail)

    def reassign(self, topic, partition, replicas, target, restore=False, step=None,  # noqa: ANN001
                 detail=None):  # noqa: ANN001
        nodes = sorted(TOPOLOGY.broker_name(b) for b in {*replicas, *target})
        self.reassigning = (topic, partition, nodes)
        self._line(Fault.REASSIGN, nodes, step, {"topic": topic, "partition": partition,
                                                 "from": list(replicas), "to": list(target),
                                                 "restore": restore, **(detail or {})})

    def end_reassign(self, topic, partition, step=None, detail=None):  # noqa: ANN001
        assert self.reassigning[:2] == (topic, partition)
        self._line(Fault.REASSIGN_END, self.reassigning[2], step, detail)


FULL = [state(0, 1, (1, 2, 3), elr=()), state(1, 2, (2, 3, 1), elr=())]
SHRUNK = [state(0, 1, (1, 2), elr=(3,)), state(1, 2, (2, 3, 1), elr=())]


#: disk-fault's draws with a hold short enough for a unit test
QUICK_DISK = DiskFaultConfig(min_hold_s=0.01, max_hold_s=0.02)


def mix(injector: FakeInjector, states: list[PartitionState], kinds=FAULT_KINDS, seed: int = 3,
        stop: threading.Event | None = None, active: int | None = 102) -> RandomMix:
    return RandomMix(injector, FakeObserver(states), kinds, seed, interval_s=0.0,
                     replication_factor=3, stop=stop, log=lambda _m: None,
                     topology=TOPOLOGY, active_controller=lambda: active, bounce_hold_s=0.01,
                     disk_fault=QUICK_DISK,
                     slow_network=SlowNetworkConfig(min_hold_s=0.01, max_hold_s=0.01))


def test_every_kind_of_the_mix_is_recorded_as_a_fault_that_something_ends() -> None:
    assert FAULT_KINDS == tuple(PACKAGES) == (
        "partition", "kill", "stop", "pause", "page-cache-loss", "controller-kill",
        "controller-partition", "isolate-from-controllers", "bounce-leader", "disk-fault",
        "min-isr-change", "feature-change", "slow-network", "reassign")
    lasting = {kind for ended in ENDED_BY.values() for kind in ended}
    for kind in FAULT_KINDS:
        assert isinstance(PACKAGES[kind].recorded, Fault)
        assert PACKAGES[kind].recorded in lasting, kind


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_kind_records_its_own_fault_with_mix_and_role_and_is_ended(kind: str) -> None:
    injector = FakeInjector()
    undo = mix(injector, FULL).inject(kind)
    assert undo is not None
    undo()
    begin, end = injector.lines
    assert begin["fault"] == PACKAGES[kind].recorded
    assert begin["detail"]["mix"] == kind and end["detail"]["mix"] == kind
    assert "role" in begin["detail"]
    assert begin["fault"] in ENDED_BY[end["fault"]]
    assert begins(begin) and not begins(end)
    # The report pairs the two into one band of the fault's own kind, ended.
    events = [FaultEvent(i, float(i), str(x["fault"]), tuple(x["nodes"]), "ok", x["detail"])
              for i, x in enumerate(injector.lines)]
    (band,) = pair_faults(events)
    assert (band.kind, band.end_s) == (str(PACKAGES[kind].recorded), 1.0)


@pytest.mark.parametrize("seed", range(20))
def test_roles_recorded_are_the_ones_the_target_was_chosen_by(seed: int) -> None:
    for kind in FAULT_KINDS:
        injector = FakeInjector()
        mix(injector, SHRUNK + [state(2, 3, (3, 1, 2))], seed=seed).inject(kind)
        if not injector.lines:
            continue  # page-cache-loss skipped (SHRUNK)
        line = injector.lines[0]
        role = line["detail"]["role"]
        if kind in ("controller-kill", "controller-partition"):
            assert role == "active-controller"
        if not PACKAGES[kind].roles:
            assert role is None and line["nodes"] == []  # a topic or the cluster
        elif role == "active-controller":
            assert kind in ("controller-kill", "controller-partition", "slow-network")
            assert "controller-2" in line["nodes"] and (
                kind == "controller-partition" or line["nodes"] == ["controller-2"])
        elif kind == "partition" and line["detail"]["step"] != "mix:isolate":
            assert role is None  # a shape over every node: no target
        else:
            assert role in PACKAGES[kind].roles
            grudge = line["detail"].get("grudge")
            # A cut's target is the one node that lost every peer it lost.
            target = max(grudge, key=lambda n: len(grudge[n])) if grudge else line["nodes"][0]
            assert target in BROKERS


def test_a_controller_kill_is_not_recorded_as_a_kill_and_its_restart_is_a_start() -> None:
    injector = FakeInjector()
    mix(injector, FULL, active=103).inject("controller-kill")()
    assert [(x["fault"], x["nodes"]) for x in injector.lines] == [
        (Fault.CONTROLLER_KILL, ["controller-3"]), (Fault.START, ["controller-3"])]


def test_isolate_from_controllers_cuts_one_broker_from_every_controller_only() -> None:
    injector = FakeInjector()
    mix(injector, FULL).inject("isolate-from-controllers")
    (line,) = injector.lines
    grudge = line["detail"]["grudge"]
    (broker,) = [n for n in grudge if n in BROKERS]
    assert grudge[broker] == sorted(CONTROLLERS)
    assert all(grudge[c] == [broker] for c in CONTROLLERS)


def test_page_cache_loss_is_skipped_unless_every_isr_is_full() -> None:
    for states in (SHRUNK, []):
        injector = FakeInjector()
        assert mix(injector, states, kinds=["page-cache-loss"]).inject("page-cache-loss") is None
        assert injector.lines == []
    injector = FakeInjector()
    assert mix(injector, FULL, kinds=["page-cache-loss"]).inject("page-cache-loss") is not None
    assert injector.lines[0]["fault"] == Fault.PAGE_CACHE_LOSS
    assert injector.lines[0]["detail"]["role"] in ("leader", "isr")


def _run(seed: int, faults: int = 25) -> list[tuple[str, list[str], Any]]:
    stop = threading.Event()
    injector = FakeInjector(stop_after=faults, stop=stop)
    injected = mix(injector, SHRUNK, seed=seed, stop=stop).run(time.monotonic() + 60)
    assert len(injected) == faults
    return [(str(x["fault"]), x["nodes"], x["detail"].get("role")) for x in injector.lines]


def test_the_same_seed_reproduces_kinds_and_targets_not_only_kinds() -> None:
    first = _run(11)
    assert first == _run(11)
    assert first != _run(12)
    # Every fault the run began, it ended before returning.
    injector = FakeInjector(stop_after=25, stop=threading.Event())
    mix(injector, SHRUNK, seed=11, stop=injector.stop_event).run(time.monotonic() + 60)
    assert len(injector.lines) == 2 * len([x for x in injector.lines if begins(x)])


def test_an_unknown_kind_is_refused_before_the_mix_starts() -> None:
    with pytest.raises(ValueError, match="unknown fault kinds"):
        mix(FakeInjector(), FULL, kinds=["kill", "nap"])


def test_every_kind_runs_once_per_round_in_a_seeded_order():
    """`--nemesis all` must exercise each kind: the rotation is each kind once per
    round, shuffled by the seed (the same seed, the same order)."""
    def rounds(seed: int) -> list[str]:
        mix = RandomMix.__new__(RandomMix)
        mix.kinds, mix._round = list(FAULT_KINDS), []
        mix.rng = __import__("random").Random(seed)
        return [mix.next_kind() for _ in range(3 * len(FAULT_KINDS))]

    order = rounds(3)
    for start in range(0, len(order), len(FAULT_KINDS)):
        assert sorted(order[start:start + len(FAULT_KINDS)]) == sorted(FAULT_KINDS)
    assert order == rounds(3) and order != rounds(4)


def test_each_package_is_one_complete_fault_kind():
    """nemesis/faults/<kind>.py: every kind has its recorded name, roles, an
    injector, a colour the report draws it in, and the contract's budget rule."""
    from elr_harness.core.history import BUDGET_FAULTS
    from elr_harness.report.plots import fault_colour

    lasting = {k for ended in ENDED_BY.values() for k in ended}
    # name -> (recorded as, colour, counts against the fault budget), written out
    expected = {
        "partition": ("partition", "#e6550d", False),
        "kill": ("kill", "#de2d26", False),
        "stop": ("stop", "#a50f15", False),
        "pause": ("pause", "#756bb1", False),
        "page-cache-loss": ("page-cache-loss", "#000000", True),
        "controller-kill": ("controller-kill", "#fb6a4a", False),
        "controller-partition": ("controller-partition", "#fd8d3c", False),
        "isolate-from-controllers": ("isolate-from-controllers", "#fdae6b", False),
        # its own kind, drawn in a pause's colour
        "bounce-leader": ("bounce-leader", "#756bb1", False),
        # one of BUDGET_FAULTS: counted when its detail says it dropped data (HISTORY.md)
        "disk-fault": ("disk-fault", "#8c510a", True),
        "min-isr-change": ("min-isr-change", "#1b9e77", False),
        "feature-change": ("feature-change", "#3182bd", False),
        "slow-network": ("slow-network", "#31a354", False),
        "reassign": ("reassign", "#e7298a", False),
    }
    assert {name: (str(p.recorded), p.colour, p.counts_against_budget)
            for name, p in PACKAGES.items()} == expected
    # a disk fault counts only when its detail says it dropped data (the contract's)
    assert {str(f) for f in BUDGET_FAULTS} == {"page-cache-loss", "disk-fault"}
    for name, package in PACKAGES.items():
        assert package.name == name and package.recorded in lasting
        # no role: a config or feature change acts on a topic or the cluster
        assert bool(package.roles) != (package.resource == CONFIG)
        assert callable(package.inject)
        assert fault_colour(str(package.recorded)) == expected[name][1]
    recorded = {p.recorded for p in PACKAGES.values()}
    assert len(recorded) == len(PACKAGES), "each kind recorded under its own name"
    assert len({p.colour for p in PACKAGES.values()}) == len(recorded) - 1, \
        "one colour per recorded kind, but a bounce is drawn as the pause it is"
    assert [p.name for p in PACKAGES.values() if p.counts_against_budget] == [
        "page-cache-loss", "disk-fault"]


def test_a_leader_bounce_is_recorded_as_its_own_kind_and_counted_and_drawn_as_a_pause():
    """bounce-leader's lines carry `bounce-leader` (a report and the checker's
    counts tell it from a plain pause); resume ends it as it ends a pause, it is
    drawn in a pause's colour, and the fault budget ignores it as it does a pause."""
    from elr_harness.checker.budget_faults import page_cache_loss_nodes
    from elr_harness.report.plots import fault_colour

    injector = FakeInjector()
    mix(injector, FULL).inject("bounce-leader")()
    begin, end = injector.lines
    assert (begin["fault"], end["fault"]) == (Fault.BOUNCE_LEADER, Fault.RESUME)
    assert begin["nodes"] == end["nodes"] and begin["detail"]["role"] == "leader"
    assert begin["detail"]["hold_s"] == 0.01 and "hold_s" not in end["detail"]
    assert Fault.BOUNCE_LEADER in ENDED_BY[Fault.RESUME] and Fault.PAUSE in ENDED_BY[Fault.RESUME]
    events = [FaultEvent(i, float(i), str(x["fault"]), tuple(x["nodes"]), "ok", x["detail"])
              for i, x in enumerate(injector.lines)]
    (band,) = pair_faults(events)
    assert (band.kind, band.lasting, band.end_s) == ("bounce-leader", True, 1.0)
    assert fault_colour("bounce-leader") == fault_colour("pause") != fault_colour("kill")
    lines = [{"index": i, "process": -1, "type": t, "fault": str(x["fault"]),
              "nodes": x["nodes"]} for i, x in enumerate(injector.lines) for t in ("invoke", "ok")]
    assert page_cache_loss_nodes(lines) == []
    assert not PACKAGES["bounce-leader"].counts_against_budget
