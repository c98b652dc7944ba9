"""A run's schedule.toml read back from its fault lines (#55): what each kind of a
random mix made, as the real FaultInjector recorded it, is a schedule file that
makes the same fault on the same nodes again (the cut a partition drew, the rate
a slow network drew, the min ISR a change chose), each fault ended where the mix
ended it, each step holding until the next began; a scripted scenario's lines
pair as the history's contract pairs them."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest
from fakes import FakeObserver
from test_nemesis_mix import FULL, QUICK, TOPOLOGY, Lines, mix, rig

from elr_harness.nemesis.faults import FAULT_KINDS, PACKAGES
from elr_harness.nemesis.schedule.file import parse_schedule
from elr_harness.nemesis.schedule.played import Played
from elr_harness.nemesis.schedule.recorded import recorded_schedule
from elr_harness.nemesis.schedule.writer import recorded_toml
from elr_harness.nemesis.targets import Topology

#: What of a fault's line the replay must make again, by kind (besides its nodes).
SAME = {"partition": ("grudge",), "one-way-partition": ("from",),
        "slow-network": ("target", "rate_kbit", "loss"), "disk-fault": ("errno", "operations"),
        "min-isr-change": ("topic", "to"), "feature-change": ("to",)}


class Timed(Lines):
    """The injector's lines with the index and time a history gives them."""

    def __init__(self) -> None:
        super().__init__()
        self.count, self.origin = itertools.count(), time.monotonic_ns()

    def record(self, **fields: Any) -> dict[str, Any]:
        return super().record(**fields, index=next(self.count),
                              time=time.monotonic_ns() - self.origin)


def _schedule_of(lines: list[dict[str, Any]]) -> Any:
    began = lines[0]["time"] - 200_000_000 if lines else 0  # 0.2 s before the first
    record = recorded_schedule(lines, TOPOLOGY, QUICK, "a mix", began)
    return parse_schedule(recorded_toml(record), "schedule.toml")


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_kind_a_mix_made_is_made_again_by_its_step(kind: str) -> None:
    injector, _ = rig()
    injector.recorder = Timed()
    undo = mix(injector, FULL, kinds=[kind]).inject(kind)
    assert undo is not None
    undo()
    schedule = _schedule_of(injector.lines)
    quiet, made, ended = schedule.steps
    assert (quiet.until.text, quiet.hold_s) == ("isr full", 0.2)
    assert made.fault == kind and ended.end == made.name
    # played on a cluster of the same nodes, the step makes the same fault again
    again, _ = rig()
    played = Played(schedule, again, FakeObserver(FULL), "t", 7, 3, 2, faults=QUICK,
                    log=lambda _m: None, topology=TOPOLOGY, active_controller=lambda: 102)
    result: dict[str, Any] = {}
    played.run(time.monotonic() + 60, threading.Event(), result)
    assert all("error" not in s and "skipped" not in s for s in result["schedule"]["steps"])
    first = next(x for x in injector.lines if x["type"] == "ok" and x["fault"] ==
                 PACKAGES[kind].recorded)
    second = next(x for x in again.lines if x["type"] == "ok" and x["fault"] ==
                  PACKAGES[kind].recorded)
    if kind != "reassign":  # a reassignment's replicas are drawn again, by its role
        assert second["nodes"] == first["nodes"], kind
    for key in SAME.get(kind, ()):
        assert second["detail"][key] == first["detail"][key], (kind, key)
    assert [x["fault"] for x in again.lines if x["type"] == "ok"] == \
        [x["fault"] for x in injector.lines if x["type"] == "ok"]


def test_a_whole_mix_is_one_step_per_fault_and_end_holding_until_the_next_began() -> None:
    stop = threading.Event()
    injector, _ = rig()
    injector.recorder = Timed()
    kinds = ("partition", "kill", "pause", "min-isr-change", "slow-network")
    randomized = mix(injector, FULL, kinds=kinds, stop=stop)
    randomized.interval_s = 0.3
    randomized.run(time.monotonic() + 3.0)
    schedule = _schedule_of(injector.lines)
    faults = [s for s in schedule.steps if s.fault]
    ok = [x for x in injector.lines if x["type"] == "ok"]
    assert len(faults) >= 2 and [s.fault for s in faults] == randomized.injected
    assert len(schedule.steps) == 1 + 2 * len(faults) == 1 + len(ok)
    # every fault ended by the next step of its entry; each step held the mix's quiet
    for made, ended in zip(schedule.steps[1::2], schedule.steps[2::2], strict=True):
        assert ended.end == made.name
        assert made.hold_s >= 0.2


def test_an_end_with_nothing_in_force_is_part_of_the_next_fault_and_a_failed_one_no_step():
    """A kill of a paused broker resumes it first (the injector's thaw), under the
    kill's entry: no step of its own. A fault that ended `info` may or may not have
    happened: no step either, and the entry's next fault is a fault, not an end."""
    def line(i: int, kind: str, op: str, nodes: list[str], entry: str) -> dict[str, Any]:
        return {"index": i, "time": i * 1_000_000_000, "type": op, "f": "fault",
                "fault": kind, "nodes": nodes, "detail": {"mix": entry, "role": "leader"}}

    lines = [line(0, "resume", "invoke", ["broker-1"], "kill"),
             line(1, "resume", "ok", ["broker-1"], "kill"),
             line(2, "kill", "invoke", ["broker-1"], "kill"),
             line(3, "kill", "ok", ["broker-1"], "kill"),
             line(4, "start", "invoke", ["broker-1"], "kill"),
             line(5, "start", "ok", ["broker-1"], "kill"),
             line(6, "stop", "invoke", ["broker-2"], "stop"),
             line(7, "stop", "info", ["broker-2"], "stop"),
             line(9, "stop", "invoke", ["broker-3"], "stop"),
             line(10, "stop", "ok", ["broker-3"], "stop")]
    steps = _schedule_of(lines).steps
    assert [(s.fault, s.target, s.end) for s in steps[1:]] == [
        ("kill", "broker-1", None), (None, None, "s1-kill"), ("stop", "broker-3", None)]
    # the kill held from its ok (3 s) to its end's invoke (4 s); the start until the
    # stop that made a step began (9 s)
    assert [s.hold_s for s in steps[1:]] == [1.0, 4.0, 0.0]


def test_a_scenarios_lines_pair_as_the_history_pairs_them():
    """Without a mix entry, a heal ends every cut, a start the kill or power loss of
    its node, a restore the change of its own topic; the final heal is no step."""
    def line(i: int, kind: str, nodes: list[str], **detail: Any) -> dict[str, Any]:
        return {"index": i, "time": i * 1_000_000_000, "type": "ok", "f": "fault",
                "fault": kind, "nodes": nodes, "detail": detail}

    every = sorted(TOPOLOGY.node_names)
    cut_a = {"broker-2": [n for n in every if n != "broker-2"],
             **{n: ["broker-2"] for n in every if n != "broker-2"}}
    lines = [line(1, "partition", every, step="T0", grudge=cut_a),
             line(2, "min-isr-change", [], step="M", topic="t", **{"from": 2, "to": 1}),
             line(3, "min-isr-change", [], step="N", topic=None, **{"from": 2, "to": 3}),
             line(4, "page-cache-loss", ["broker-1"], step="T2"),
             line(5, "min-isr-change", [], step="M", topic="t", restore=True,
                  **{"from": 1, "to": 2}),
             line(6, "heal", every, step="T3"),
             line(7, "start", ["broker-1"], step="T4"),
             line(8, "heal", every, step="final-heal"),
             line(9, "min-isr-change", [], step="final-heal", topic=None, restore=True)]
    steps = _schedule_of(lines).steps[1:]
    assert [(s.name, s.fault, s.end) for s in steps] == [
        ("s1-partition", "partition", None), ("s2-min-isr-change", "min-isr-change", None),
        ("s3-min-isr-change", "min-isr-change", None),
        ("s4-page-cache-loss", "page-cache-loss", None), ("s5-min-isr-change", None,
                                                          "s2-min-isr-change"),
        ("s6-heal", None, "s1-partition"), ("s7-start", None, "s4-page-cache-loss")]
    assert steps[0].cut == cut_a and steps[3].target == "broker-1"
    assert (steps[1].to, steps[1].partition, steps[1].scope) == (1, ("t", 0), None)
    assert (steps[2].to, steps[2].partition, steps[2].scope) == (3, None, "cluster")


def test_a_scripted_scenarios_run_played_from_its_recorded_schedule_makes_its_faults_again():
    """unclean-last-replica (its file, as `--nemesis` plays it) on the scenario tests'
    model: its lines, read back as a schedule (as a scenario still in Python has its
    lines read) and played on a fresh model, make the same cuts, the same power loss
    and the same restart (a heal per cut it ends: the heal is idempotent)."""
    from shipped_play import play_scenario
    from test_nemesis_scenario import World, injector_of, scenario

    first = World(leader=2, isr=(2, 3, 1))
    run, injector = scenario(first)
    play_scenario(run)
    for i, line in enumerate(injector.lines):  # the index and time a history gives
        line.update(index=i, time=i * 100_000_000)
    topology = Topology.of(injector.cluster.nodes.values())
    record = recorded_schedule(injector.lines, topology, {}, "the scenario", 0)
    schedule = parse_schedule(recorded_toml(record), "schedule.toml")
    assert [(s.fault, s.end) for s in schedule.steps[1:]] == [
        ("partition", None), ("partition", None), ("page-cache-loss", None),
        (None, "s1-partition"), (None, "s2-partition"), (None, "s3-page-cache-loss")]
    world = World(leader=2, isr=(2, 3, 1))
    again = injector_of(world)
    played = Played(schedule, again, FakeObserver(lambda: [world.state]), "t", 7, 3, 2,
                    log=lambda _m: None, topology=topology, active_controller=lambda: 101)
    result: dict[str, Any] = {}
    played.run(time.monotonic() + 60, threading.Event(), result)

    def made(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(x["fault"], x["nodes"], x["detail"].get("grudge")) for x in lines
                if x["f"] == "fault" and x["type"] == "ok"]

    assert made(again.lines) == [*made(injector.lines)[:4], made(injector.lines)[3],
                                 made(injector.lines)[4]]
    assert world.state.leader == first.state.leader == 1  # B, the ELR member, elected


def test_the_placement_a_recorded_schedule_keeps_is_the_partitions_at_the_start():
    from elr_harness.run.nemesis_thread import placement_of

    injector, _ = rig()
    injector.cluster.leader = 102  # type: ignore[attr-defined]
    assert placement_of(FakeObserver(FULL), injector, "t", 0.1) == {
        "leader": "broker-1", "replicas": ["broker-1", "broker-2", "broker-3"],
        "controller": "controller-2"}
    leaderless = [FULL[0].__class__("t", 0, -1, 5, (), (2,), (), None, (1, 2, 3))]
    assert placement_of(FakeObserver(leaderless), injector, "t", 0.1) is None
    assert placement_of(FakeObserver(FULL), injector, "other", 0.1) is None
    # a lookup that fails is said, not swallowed
    said: list[str] = []

    class Broken:
        def wait_for(self, condition, within_s):
            raise ConnectionError("observer gone")

    assert placement_of(Broken(), injector, "t", 0.1, said.append) is None
    assert said == ["[yellow]no placement for schedule.toml: the lookup failed: "
                    "ConnectionError: observer gone[/yellow]"]
