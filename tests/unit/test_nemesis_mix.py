"""The random mix's schedule logic: target choice by role, seeds, recorded kinds (#13).

Unit tests of the choice and of what the mix's kinds record. The injector is the
real one over fake nodes that answer every command (tests/fakes.py); that the
faults act on Kafka is tests/integration/test_faults.py's job.
"""

from __future__ import annotations

import random
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from fakes import FakeAdmin, FakeObserver, FakePageCache, ListRecorder, cluster_of

from elr_harness.cluster.node import NodeSpec
from elr_harness.cluster.node import Role as NodeRole
from elr_harness.cluster.observe import PartitionState
from elr_harness.cluster.wire_codec import compact_string
from elr_harness.core.config import KafkaTimings
from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import Fault, restores
from elr_harness.nemesis.faults import COLOURS, CONFIG, FAULT_KINDS, PACKAGES
from elr_harness.nemesis.faults.bounce_leader import BounceLeaderSettings
from elr_harness.nemesis.faults.disk_fault import DiskFaultSettings
from elr_harness.nemesis.faults.slow_network import SlowNetworkSettings
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.mix import RandomMix
from elr_harness.nemesis.targets import BROKER_ROLES, Role, Topology, all_isr_full, choose_target
from elr_harness.report.faults import FaultEvent, coloured, fault_colours, pair_faults
from elr_harness.report.plots import fault_colour

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
    two = replace(state(0, 1, (1, 2)), replicas=(1, 2))
    four = replace(state(0, 1, (1, 2, 3)), replicas=(1, 2, 3, 4))
    assert all_isr_full([two], 3) and not all_isr_full([four], 3)
    assert all_isr_full([replace(four, isr=(1, 2, 3, 4))], 3)
    assert not all_isr_full([two, four], 3)


def test_topology_of_a_clusters_nodes_splits_them_by_role() -> None:
    class Node:
        def __init__(self, spec: NodeSpec) -> None:
            self.spec = spec

    nodes = [Node(NodeSpec("controller-1", NodeRole.CONTROLLER, 101, "10.0.0.2")),
             Node(NodeSpec("broker-1", NodeRole.BROKER, 1, "10.0.0.5"))]
    topology = Topology.of(nodes)
    assert (dict(topology.brokers), dict(topology.controllers)) == ({"broker-1": 1},
                                                                    {"controller-1": 101})
    assert topology.node_names == ["broker-1", "controller-1"]


# -- RandomMix over a real injector -------------------------------------------------
#
# Each kind's module builds its fault on the injector's primitives, so the mix runs
# over a real FaultInjector: fake nodes (tests/fakes.py) answer its commands, and
# the recorder keeps its lines. A line of `done` is a fault in force (its `ok`).

#: The cluster's nodes as TOPOLOGY names them (controller-N at 10.0.0.N).
SPECS = [*(NodeSpec(name, NodeRole.CONTROLLER, node_id, f"10.0.0.{node_id - 100}")
           for name, node_id in TOPOLOGY.controllers.items()),
         *(NodeSpec(name, NodeRole.BROKER, node_id, f"10.0.0.{10 + node_id}")
           for name, node_id in TOPOLOGY.brokers.items())]


def begins(line: dict[str, Any]) -> bool:
    """A fault line that begins a fault (not a heal, start, resume or restore)."""
    return not restores(line["fault"], line["detail"]) and (
        line["fault"] not in ENDED_BY or line["fault"] in ENDED_BY[line["fault"]])


class Lines(ListRecorder):
    """The injector's lines; sets `stop` once `stop_after` faults have begun."""

    def __init__(self, stop_after: int | None = None,
                 stop: threading.Event | None = None) -> None:
        super().__init__()
        self.stop_after, self.stop_event = stop_after, stop

    def record(self, **fields: Any) -> dict[str, Any]:
        line = super().record(**fields)
        if self.stop_event is not None and len(
                [x for x in self.done if begins(x)]) == self.stop_after:
            self.stop_event.set()
        return line

    @property
    def done(self) -> list[dict[str, Any]]:
        """The `ok` lines: one per fault begun or ended."""
        return [x for x in self.lines if x["type"] == "ok"]


class Controller:
    """AlterPartitionReassignments answered as a controller takes it: every request
    of every broker (a reassignment starts; a cancel finds it still under way)."""

    def __call__(self, address: str, timeout_s: float) -> Controller:
        return self

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def request(self, build: Callable[[int], bytes]) -> bytes:
        body = build(1)[4 + 22:]  # size, request header v2 ("elr-harness" its client)
        size = body[5] - 1
        topic = body[6:6 + size].decode()
        (partition,) = struct.unpack(">i", body[7 + size:11 + size])
        return (struct.pack(">i", 1) + b"\x00" + struct.pack(">ih", 0, 0) + b"\x00"
                + b"\x02" + compact_string(topic) + b"\x02" + struct.pack(">ih", partition, 0)
                + b"\x00" + b"\x00\x00\x00")


def rig(stop_after: int | None = None,
        stop: threading.Event | None = None) -> tuple[FaultInjector, Lines]:
    """A real injector over fake nodes at min ISR 2 (each topic's and the cluster
    default), ELR on, a session timeout of 10 ms; its recorder."""
    cluster = cluster_of(SPECS)
    cluster.config.timings = replace(KafkaTimings(), broker_session_timeout_ms=10)
    recorder = Lines(stop_after, stop)
    admin = FakeAdmin(min_isrs={None: 2, "t": 2, "u": 2})
    return FaultInjector(cluster, recorder, FakePageCache(), admin, Controller()), recorder  # type: ignore[arg-type]


FULL = [state(0, 1, (1, 2, 3), elr=()), state(1, 2, (2, 3, 1), elr=())]
SHRUNK = [state(0, 1, (1, 2), elr=(3,)), state(1, 2, (2, 3, 1), elr=())]


#: the kinds' settings with holds short enough for a unit test (a bounce holds the
#: session timeout, 10 ms, plus its margin)
QUICK = {"bounce-leader": BounceLeaderSettings(hold_margin_s=0.01),
         "disk-fault": DiskFaultSettings(min_hold_s=0.01, max_hold_s=0.02),
         "slow-network": SlowNetworkSettings(min_hold_s=0.01, max_hold_s=0.01)}


def mix(injector: FaultInjector, states: list[PartitionState], kinds=FAULT_KINDS,
        seed: int = 3, stop: threading.Event | None = None,
        active: int | None = 102) -> RandomMix:
    return RandomMix(injector, FakeObserver(states), kinds, seed, interval_s=0.0,
                     replication_factor=3, stop=stop, log=lambda _m: None,
                     topology=TOPOLOGY, active_controller=lambda: active, faults=QUICK)


def test_every_kind_of_the_mix_is_recorded_as_a_fault_that_something_ends() -> None:
    assert FAULT_KINDS == tuple(PACKAGES) == (
        "partition", "kill", "stop", "pause", "page-cache-loss", "controller-kill",
        "controller-partition", "isolate-from-controllers", "bounce-leader", "disk-fault",
        "min-isr-change", "feature-change", "slow-network", "reassign", "one-way-partition")
    lasting = {kind for ended in ENDED_BY.values() for kind in ended}
    for kind in FAULT_KINDS:
        assert isinstance(PACKAGES[kind].recorded, Fault)
        assert PACKAGES[kind].recorded in lasting, kind


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_kind_records_its_own_fault_with_mix_and_role_and_is_ended(kind: str) -> None:
    injector, recorder = rig()
    undo = mix(injector, FULL).inject(kind)
    assert undo is not None
    undo()
    assert [x["type"] for x in recorder.lines] == ["invoke", "ok", "invoke", "ok"]
    begin, end = recorder.done
    assert begin["fault"] == PACKAGES[kind].recorded
    assert begin["detail"]["mix"] == kind and end["detail"]["mix"] == kind
    assert "role" in begin["detail"]
    assert begin["fault"] in ENDED_BY[end["fault"]]
    assert begins(begin) and not begins(end)
    # The report pairs the two into one band of the fault's own kind, ended, drawn in
    # the colour the run writes into test.json.
    events = [FaultEvent(i, float(i), str(x["fault"]), tuple(x["nodes"]), "ok", x["detail"])
              for i, x in enumerate(recorder.done)]
    (band,) = coloured(pair_faults(events), fault_colours({"fault_colours": dict(COLOURS)}))
    assert (band.kind, band.end_s) == (str(PACKAGES[kind].recorded), 1.0)
    assert fault_colour(band) == PACKAGES[kind].colour


@pytest.mark.parametrize("seed", range(20))
def test_roles_recorded_are_the_ones_the_target_was_chosen_by(seed: int) -> None:
    for kind in FAULT_KINDS:
        injector, recorder = rig()
        mix(injector, SHRUNK + [state(2, 3, (3, 1, 2))], seed=seed).inject(kind)
        if not recorder.lines:
            continue  # page-cache-loss, or a disk fault that may drop data, skipped (SHRUNK)
        line = recorder.done[0]
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
    injector, recorder = rig()
    mix(injector, FULL, active=103).inject("controller-kill")()
    assert [(x["fault"], x["nodes"]) for x in recorder.done] == [
        (Fault.CONTROLLER_KILL, ["controller-3"]), (Fault.START, ["controller-3"])]


def test_isolate_from_controllers_cuts_one_broker_from_every_controller_only() -> None:
    injector, recorder = rig()
    mix(injector, FULL).inject("isolate-from-controllers")
    (line,) = recorder.done
    grudge = line["detail"]["grudge"]
    (broker,) = [n for n in grudge if n in BROKERS]
    assert grudge[broker] == sorted(CONTROLLERS)
    assert all(grudge[c] == [broker] for c in CONTROLLERS)


def test_page_cache_loss_is_skipped_unless_every_isr_is_full() -> None:
    for states in (SHRUNK, []):
        injector, recorder = rig()
        assert mix(injector, states, kinds=["page-cache-loss"]).inject("page-cache-loss") is None
        assert recorder.lines == []
    injector, recorder = rig()
    assert mix(injector, FULL, kinds=["page-cache-loss"]).inject("page-cache-loss") is not None
    assert recorder.done[0]["fault"] == Fault.PAGE_CACHE_LOSS
    assert recorder.done[0]["detail"]["role"] in ("leader", "isr")


def _run(seed: int, faults: int = 25) -> list[tuple[str, list[str], Any]]:
    stop = threading.Event()
    injector, recorder = rig(stop_after=faults, stop=stop)
    injected = mix(injector, SHRUNK, seed=seed, stop=stop).run(time.monotonic() + 60)
    assert len(injected) == faults
    return [(str(x["fault"]), x["nodes"], x["detail"].get("role")) for x in recorder.done]


def test_the_same_seed_reproduces_kinds_and_targets_not_only_kinds() -> None:
    first = _run(11)
    assert first == _run(11)
    assert first != _run(12)
    # Every fault the run began, it ended before returning.
    stop = threading.Event()
    injector, recorder = rig(stop_after=25, stop=stop)
    mix(injector, SHRUNK, seed=11, stop=stop).run(time.monotonic() + 60)
    assert len(recorder.done) == 2 * len([x for x in recorder.done if begins(x)])
    assert not (injector.down or injector.paused or injector.grudge)


def test_an_unknown_kind_is_refused_before_the_mix_starts() -> None:
    with pytest.raises(ValueError, match="unknown fault kinds"):
        mix(rig()[0], FULL, kinds=["kill", "nap"])


def test_every_kind_runs_once_per_round_in_a_seeded_order():
    """`--nemesis all` must exercise each kind: the rotation is each kind once per
    round, shuffled by the seed (the same seed, the same order)."""
    def rounds(seed: int) -> list[str]:
        mix = RandomMix.__new__(RandomMix)
        mix.kinds, mix._round, mix.rounds_begun = list(FAULT_KINDS), [], 0
        mix.rng = __import__("random").Random(seed)
        order = [mix.next_kind() for _ in range(3 * len(FAULT_KINDS))]
        assert mix.rounds_begun == 3
        return order

    order = rounds(3)
    for start in range(0, len(order), len(FAULT_KINDS)):
        assert sorted(order[start:start + len(FAULT_KINDS)]) == sorted(FAULT_KINDS)
    assert order == rounds(3) and order != rounds(4)


@pytest.mark.parametrize("rounds", [1, 2])
def test_rounds_bound_a_mix_to_whole_rounds_of_its_rotation(rounds: int) -> None:
    """--rounds N: each kind of the mix exactly N times (a whole rotation each), every
    fault ended, and the mix returns long before its deadline."""
    injector, recorder = rig()
    kinds = ["partition", "kill", "pause", "stop"]
    started = time.monotonic()
    played = mix(injector, FULL, kinds=kinds)
    played.max_rounds = rounds
    injected = played.run(started + 3600.0)
    assert time.monotonic() - started < 60
    for start in range(0, len(injected), len(kinds)):
        assert sorted(injected[start:start + len(kinds)]) == sorted(kinds)
    assert len(injected) == rounds * len(kinds)
    assert len(recorder.done) == 2 * len([x for x in recorder.done if begins(x)])
    assert not (injector.down or injector.paused or injector.grudge)


def test_a_rounds_last_kind_skipped_for_the_budget_is_tried_again_not_dropped() -> None:
    """With --rounds a round holds every kind: a page-cache loss skipped while an ISR
    is short, even as its round's last kind, is injected once every ISR is full."""
    injector, recorder = rig()
    short = iter([SHRUNK, SHRUNK])  # the first two looks: an ISR short; then all full
    played = RandomMix(injector, FakeObserver(lambda: next(short, FULL)), ["page-cache-loss"],
                       3, interval_s=0.0, replication_factor=3, log=lambda _m: None,
                       topology=TOPOLOGY, active_controller=lambda: 102, faults=QUICK,
                       rounds=1)
    assert played.run(time.monotonic() + 60) == ["page-cache-loss"]
    assert [x["fault"] for x in recorder.done if begins(x)] == [Fault.PAGE_CACHE_LOSS]


def test_each_package_is_one_complete_fault_kind():
    """nemesis/faults/<kind>.py: every kind has its recorded name, roles, an
    injector, a colour the report draws it in, and the contract's budget rule."""
    from elr_harness.core.fault_meanings import BUDGET_FAULTS

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
        "one-way-partition": ("one-way-partition", "#fdd0a2", False),
    }
    assert {name: (str(p.recorded), p.colour, p.counts_against_budget)
            for name, p in PACKAGES.items()} == expected
    # a disk fault counts only when its detail says it dropped data (the contract's)
    assert {str(f) for f in BUDGET_FAULTS} == {"page-cache-loss", "disk-fault"}
    # the colours the run writes into test.json, as the report reads them back
    colours = fault_colours({"fault_colours": dict(COLOURS)})
    for name, package in PACKAGES.items():
        assert package.name == name and package.recorded in lasting
        # no role: a config or feature change acts on a topic or the cluster
        assert bool(package.roles) != (package.resource == CONFIG)
        assert callable(package.inject)
        assert colours[str(package.recorded)] == expected[name][1]
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

    injector, recorder = rig()
    mix(injector, FULL).inject("bounce-leader")()
    begin, end = recorder.done
    assert (begin["fault"], end["fault"]) == (Fault.BOUNCE_LEADER, Fault.RESUME)
    assert begin["nodes"] == end["nodes"] and begin["detail"]["role"] == "leader"
    # held the session timeout (10 ms) plus the settings' margin (10 ms)
    assert begin["detail"]["hold_s"] == 0.02 and "hold_s" not in end["detail"]
    assert Fault.BOUNCE_LEADER in ENDED_BY[Fault.RESUME] and Fault.PAUSE in ENDED_BY[Fault.RESUME]
    events = [FaultEvent(i, float(i), str(x["fault"]), tuple(x["nodes"]), "ok", x["detail"])
              for i, x in enumerate(recorder.done)]
    colours = fault_colours({"fault_colours": dict(COLOURS)})
    (band,) = coloured(pair_faults(events), colours)
    assert (band.kind, band.lasting, band.end_s) == ("bounce-leader", True, 1.0)
    assert fault_colour(band) == colours["pause"] != colours["kill"]
    lines = [{"index": i, **x} for i, x in enumerate(recorder.lines)]
    assert page_cache_loss_nodes(lines) == []
    assert not PACKAGES["bounce-leader"].counts_against_budget
