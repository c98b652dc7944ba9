"""fenced-last-leader's step logic (KAFKA-19522's recipe) against a fake injector
that moves one partition's observed state as 4.0.x's controller would: the
kills in order, SIGSTOP only once the restarted leader has registered, the
leader elected while fenced seen by the F4 wait, and the heal. The scenario on
real Kafka, 4.0.0 and 4.1.1, is tests/integration/test_known_bugs.py's."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ScenarioTimings
from elr_harness.nemesis.scenarios.fenced_last_leader import REGISTERED, FencedLastLeader

FAST = ScenarioTimings(step_timeout_s=0.5, warmup_high_watermark=0, hold_fenced_s=0.2,
                       registration_poll_s=0.01)


class Node:
    def __init__(self, world: World, name: str) -> None:
        self.world, self.name = world, name

    def exec(self, cmd):  # noqa: ANN001 - Node.exec
        assert cmd[:2] == ["grep", "-c"] and cmd[2] == REGISTERED
        count = self.world.registrations.get(self.name, 1)
        return type("Result", (), {"output": f"{count}\n"})()


class World:
    def __init__(self, buggy: bool, late_pause: bool = False) -> None:
        self.buggy = buggy
        self.late_pause = late_pause
        self.state = PartitionState("t", 0, 1, 4, (1, 2, 3), (), (), 0, (1, 2, 3), fenced=())
        self.registrations: dict[str, int] = {}

    def move(self, **changes: Any) -> None:
        self.state = replace(self.state, **changes)


class Cluster:
    def __init__(self, world: World) -> None:
        self.nodes = {f"broker-{i}": Node(world, f"broker-{i}") for i in (1, 2, 3, 4)}

    def broker_by_id(self, broker_id: int):
        return type("B", (), {"spec": type("S", (), {"name": f"broker-{broker_id}"})()})()


class Injector:
    """KRaft as 4.0.x (buggy) or 4.1 (fixed) answers each fault, in the observer."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.cluster = Cluster(world)
        self.calls: list[tuple[str, str | None, str]] = []

    def kill(self, name: str, step: str | None = None) -> None:
        self.calls.append(("kill", step, name))
        broker = int(name.split("-")[1])
        s = self.world.state
        isr = tuple(b for b in s.isr if b != broker)
        self.world.move(isr=isr, leader=isr[0] if isr else -1,
                        fenced=tuple(sorted({*(s.fenced or ()), broker})),
                        elr=(broker,) if not isr else ())

    def start(self, name: str, step: str | None = None) -> None:
        self.calls.append(("start", step, name))
        if step == "F3":  # it registers a little later (unclean: out of the ELR)
            self.world.registrations[name] = 2
            leader = int(name.split("-")[1])
            if self.world.late_pause:  # unfenced before SIGSTOP: rightly elected
                fenced = tuple(b for b in self.world.state.fenced or () if b != leader)
                self.world.move(elr=(), isr=(leader,), leader=leader, fenced=fenced)
                return
            self.world.move(elr=(), last_known_elr=(leader,),
                            leader=leader if self.world.buggy else -1)

    def pause(self, name: str, step: str | None = None) -> None:
        self.calls.append(("pause", step, name))

    def resume(self, name: str, step: str | None = None) -> None:
        self.calls.append(("resume", step, name))
        self.world.move(leader=1, isr=(1, 2, 3), fenced=(), last_known_elr=())


class Observer:
    def __init__(self, world: World) -> None:
        self.world = world

    def latest(self):
        return [self.world.state]

    def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001 - Observer protocol
        return self.latest() if predicate(self.latest()) else None


@pytest.mark.parametrize("buggy", [True, False], ids=["4.0.x", "4.1+"])
def test_the_steps_and_whom_the_controller_elects(buggy):
    world = World(buggy)
    injector = Injector(world)
    run = FencedLastLeader(injector, Observer(world), "t", 0, timings=FAST,  # type: ignore[arg-type]
                           stop=threading.Event(), log=lambda _m: None)
    outcomes = {o.step: o for o in run.run()}
    assert injector.calls == [
        ("kill", "F0", "broker-2"), ("kill", "F1", "broker-3"), ("kill", "F2", "broker-1"),
        ("start", "F3", "broker-1"), ("pause", "F3", "broker-1"),
        ("resume", "F5", "broker-1"), ("start", "F5", "broker-2"), ("start", "F5", "broker-3")]
    assert all(outcomes[s].reached for s in ("setup", "F0", "F1", "F2", "F3", "F5"))
    # the F4 wait is reached only where the controller elected the fenced leader
    assert outcomes["F4"].reached is buggy
    assert outcomes["F4"].observed["leader"] == (1 if buggy else -1)


def test_a_leader_elected_once_unfenced_is_no_fenced_leader():
    """A SIGSTOP that lands after L was unfenced lets 4.1+ elect it, rightly (ISR =
    {L}): F4 waits, as the checker's fenced-leader does, for L leader and fenced in
    one observation, so this run does not read as the bug."""
    world = World(buggy=False, late_pause=True)
    run = FencedLastLeader(Injector(world), Observer(world), "t", 0, timings=FAST,  # type: ignore[arg-type]
                           stop=threading.Event(), log=lambda _m: None)
    outcomes = {o.step: o for o in run.run()}
    assert outcomes["F3"].reached is True
    assert outcomes["F4"].reached is False
    assert outcomes["F4"].observed["leader"] == 1


def test_no_registration_is_recorded_as_such_and_the_scenario_goes_on():
    world = World(buggy=False)
    injector = Injector(world)
    injector.start = lambda name, step=None: injector.calls.append(("start", step, name))
    run = FencedLastLeader(injector, Observer(world), "t", 0, timings=FAST,  # type: ignore[arg-type]
                           stop=threading.Event(), log=lambda _m: None)
    outcomes = {o.step: o for o in run.run()}
    assert outcomes["F3"].reached is False
    assert outcomes["F3"].observed == {"registered": False, "paused": "broker-1"}
    assert ("resume", "F5", "broker-1") in injector.calls


def _configs(tmp_path, *flags):
    from run_flags import run_configs_of

    return run_configs_of(tmp_path, "fenced-last-leader", *flags)


def test_the_recipe_defaults_four_brokers_and_min_isr_one(tmp_path):
    cluster, topic, _workload, run, _checker = _configs(tmp_path)
    assert (cluster.brokers, topic.min_insync_replicas, run.time_limit_s) == (4, 1, 300.0)
    cluster, topic, *_ = _configs(tmp_path, "--brokers", "5")
    assert (cluster.brokers, topic.min_insync_replicas) == (5, 1)


@pytest.mark.parametrize(("flags", "message"), [
    (("--brokers", "3"), "needs a broker that is no replica of the partition"),
    (("--min-insync-replicas", "2"), "needs --min-insync-replicas 1"),
])
def test_a_topology_the_recipe_cannot_use_is_refused(tmp_path, flags, message):
    from elr_harness.core.errors import HarnessError
    from elr_harness.run.spec import RunSpec, validate

    cluster, topic, workload, run, checker = _configs(tmp_path, *flags)
    with pytest.raises(HarnessError, match=message):
        validate(RunSpec(cluster, [topic], workload, run, checker))
