"""fenced-last-leader's steps (KAFKA-19522's recipe; its shipped file, played as
`--nemesis fenced-last-leader` plays it) against the real
injector over fake nodes (tests/fakes.py), each fault in force (its `ok` line)
moving one partition's observed state as 4.0.x's controller would: the kills in
order, SIGSTOP only once the restarted leader has registered, the leader elected
while fenced seen by the F4 wait, and the heal. The scenario on real Kafka, 4.0.0
and 4.1.1, is tests/integration/test_known_bugs.py's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from fakes import AnsweringRecorder, FakeCluster, FakeNode, FakeObserver, specs
from shipped_play import play_scenario, scenario_player

from elr_harness.cluster import kraft
from elr_harness.cluster.node import ExecResult, NodeSpec
from elr_harness.cluster.observe import PartitionState
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.schedule.played import Played

NAME = "fenced-last-leader"
#: How the scenario counts a broker's registrations in its server log.
GREP = ["grep", "-c", kraft.REGISTERED_LINE, kraft.SERVER_LOG]


class World:
    """KRaft as 4.0.x (buggy) or 4.1 (fixed) answers each fault in force, in the
    observer; `registrations` are what each broker's server log says."""

    def __init__(self, buggy: bool, late_pause: bool = False) -> None:
        self.buggy = buggy
        self.late_pause = late_pause
        self.state = PartitionState("t", 0, 1, 4, (1, 2, 3), (), (), 0, (1, 2, 3), fenced=())
        self.registrations: dict[str, int] = {}

    def move(self, **changes: Any) -> None:
        self.state = replace(self.state, **changes)

    def answer(self, line: dict[str, Any]) -> None:
        (name,) = line["nodes"]
        {"kill": self.kill, "start": self.start, "pause": lambda _n, _s: None,
         "resume": self.resume}[line["fault"]](name, line["detail"]["step"])

    def kill(self, name: str, step: str) -> None:
        broker = int(name.split("-")[1])
        s = self.state
        isr = tuple(b for b in s.isr if b != broker)
        self.move(isr=isr, leader=isr[0] if isr else -1,
                  fenced=tuple(sorted({*(s.fenced or ()), broker})),
                  elr=(broker,) if not isr else ())

    def start(self, name: str, step: str) -> None:
        if step == "F3":  # it registers a little later (unclean: out of the ELR)
            self.registrations[name] = 2
            leader = int(name.split("-")[1])
            if self.late_pause:  # unfenced before SIGSTOP: rightly elected
                fenced = tuple(b for b in self.state.fenced or () if b != leader)
                self.move(elr=(), isr=(leader,), leader=leader, fenced=fenced)
                return
            self.move(elr=(), last_known_elr=(leader,), leader=leader if self.buggy else -1)

    def resume(self, name: str, step: str) -> None:
        self.move(leader=1, isr=(1, 2, 3), fenced=(), last_known_elr=())


class Broker(FakeNode):
    """A fake node whose server log holds the registrations the world gave it."""

    def __init__(self, spec: NodeSpec, world: World) -> None:
        super().__init__(spec)
        self.world = world

    def exec(self, cmd: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        if cmd == GREP:
            self.commands.append(" ".join(cmd))
            return ExecResult(0, f"{self.world.registrations.get(self.spec.name, 1)}\n")
        return super().exec(cmd, timeout_s)


def scenario(world: World) -> tuple[Played, FaultInjector]:
    """Four brokers (broker-4 is no replica of t-0) and the scenario's file on them."""
    cluster = FakeCluster({s.name: Broker(s, world) for s in specs(controllers=0, brokers=4)})
    recorder = AnsweringRecorder(lambda line: world.answer(line))
    injector = FaultInjector(cluster, recorder)  # type: ignore[arg-type]
    # each sample a new one, as the observer takes them
    played = scenario_player(NAME, injector, FakeObserver(lambda: [replace(world.state)]),
                             min_isr=1, within_s=0.5)
    return played, injector


def faults(injector: FaultInjector) -> list[tuple[str, str, list[str]]]:
    """Each fault in force, as (kind, step, nodes)."""
    return [(x["fault"], x["detail"]["step"], x["nodes"])
            for x in injector.recorder.lines  # type: ignore[attr-defined]
            if x["type"] == "ok"]


@pytest.mark.parametrize("buggy", [True, False], ids=["4.0.x", "4.1+"])
def test_the_steps_and_whom_the_controller_elects(buggy):
    played, injector = scenario(World(buggy))
    outcomes = {o.step: o for o in play_scenario(played)}
    a, b = played.names["A"], played.names["B"]
    assert {a, b} == {"broker-2", "broker-3"}
    assert faults(injector) == [
        ("kill", "F0", [a]), ("kill", "F1", [b]), ("kill", "F2", ["broker-1"]),
        ("start", "F3", ["broker-1"]), ("pause", "F3-pause", ["broker-1"]),
        ("resume", "F5", ["broker-1"]), ("start", "F5-a", [a]), ("start", "F5-b", [b])]
    # L was killed, started (a new process), frozen once registered, then thawed
    leader = injector.cluster.nodes["broker-1"]
    assert leader.signals == ["KILL", "STOP", "CONT"] and leader.pid == 201
    assert set(leader.commands) == {" ".join(GREP)}
    assert injector.cluster.started == ["broker-1", a, b]
    assert not injector.down and not injector.paused
    assert all(outcomes[s].reached for s in ("setup", "F0", "F1", "F2", "F3", "F3-pause",
                                             "F5", "F5-a", "F5-b"))
    # the F4 wait is reached only where the controller elected the fenced leader
    assert outcomes["F4"].reached is buggy
    assert outcomes["F4"].observed["leader"] == (1 if buggy else -1)


def test_a_leader_elected_once_unfenced_is_no_fenced_leader():
    """A SIGSTOP that lands after L was unfenced lets 4.1+ elect it, rightly (ISR =
    {L}): F4 waits, as the checker's fenced-leader does, for L leader and fenced in
    one observation, so this run does not read as the bug."""
    played, _ = scenario(World(buggy=False, late_pause=True))
    outcomes = {o.step: o for o in play_scenario(played)}
    assert outcomes["F3"].reached is True
    assert outcomes["F4"].reached is False
    assert outcomes["F4"].observed["leader"] == 1


def test_no_registration_is_recorded_as_such_and_the_scenario_goes_on():
    world = World(buggy=False)
    world.start = lambda name, step: None  # type: ignore[method-assign] # never registers
    played, injector = scenario(world)
    outcomes = {o.step: o for o in play_scenario(played)}
    assert outcomes["F3"].reached is False
    f3 = next(s for s in played.played if s["step"] == "F3")
    assert f3["saw"] == "L not registered again"
    assert ("pause", "F3-pause", ["broker-1"]) in faults(injector)
    assert ("resume", "F5", ["broker-1"]) in faults(injector)


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


def test_a_registration_the_wait_saw_stays_recorded_when_a_later_grep_fails():
    """CI (4.1.1, a busy host): the wait saw L register and the scenario froze it,
    but a second grep that failed recorded F3 as not registered. The wait's answer
    is what F3 records."""
    world = World(buggy=False)
    played, injector = scenario(world)
    broker = injector.cluster.nodes["broker-1"]
    seen = []

    def exec_once_then_fail(cmd, timeout_s: float = 60.0):
        if cmd == GREP:
            seen.append(1)
            if len(seen) > 2:  # before, then the one that sees it: then `exec` fails
                return ExecResult(1, "Error response from daemon: busy\n")
        return Broker.exec(broker, cmd, timeout_s)

    broker.exec = exec_once_then_fail  # type: ignore[method-assign]
    outcomes = {o.step: o for o in play_scenario(played)}
    assert outcomes["F3"].reached is True
    assert ("pause", "F3-pause", ["broker-1"]) in faults(injector)
