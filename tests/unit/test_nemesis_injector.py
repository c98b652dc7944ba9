"""FaultInjector's primitives, recording and bookkeeping, and the kinds built on
them, whatever kind a fault is recorded as (#13, #51).

A unit test of the logic around the faults: the nodes are fakes that answer
every command (tests/fakes.py), and the recorder keeps lines in a list. That
iptables, SIGKILL and restarts act on real Kafka is
tests/integration/test_faults.py's job.
"""

from __future__ import annotations

import pytest
from fakes import FakeCluster, FakeNode, ListRecorder, injector_rig, specs

from elr_harness.cluster.node import ExecResult, NodeSpec
from elr_harness.core.errors import HarnessError
from elr_harness.core.history import NEMESIS_PROCESS, Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults import (
    bounce_leader,
    controller_kill,
    kill,
    partition,
    pause,
    stop,
)
from elr_harness.nemesis.injector import FaultInjector, heal_plan


@pytest.fixture
def rig() -> tuple[FaultInjector, ListRecorder]:
    return injector_rig()


def test_a_controller_kill_is_recorded_as_such_and_tracked_down_until_started(rig) -> None:
    injector, recorder = rig
    why = {"mix": "controller-kill", "role": "active-controller"}
    kill.kill(injector, "controller-2", kind=controller_kill.PACKAGE.recorded, detail=why)
    assert "controller-2" in injector.down
    injector.start("controller-2", detail=why)
    assert not injector.down
    assert [(x["type"], x["fault"], x["nodes"]) for x in recorder.lines] == [
        ("invoke", "controller-kill", ["controller-2"]),
        ("ok", "controller-kill", ["controller-2"]),
        ("invoke", "start", ["controller-2"]), ("ok", "start", ["controller-2"])]
    assert all(x["process"] == NEMESIS_PROCESS and x["f"] == "fault" for x in recorder.lines)
    assert recorder.lines[1]["detail"] == {**why, "pid": 1102}  # the pid it had
    assert set(injector.latencies) == {"controller-kill", "start"}


def test_partitions_keep_their_kind_and_the_grudge_and_stale_brokers_follow(rig) -> None:
    injector, recorder = rig
    controllers = ["controller-1", "controller-2", "controller-3"]
    grudge = grudges.from_controllers(["broker-3"], controllers)
    partition.cut(injector, grudge, step="mix:isolate-from-controllers",
                  kind=Fault.ISOLATE_FROM_CONTROLLERS,
                  detail={"mix": "isolate-from-controllers", "role": "isr"})
    ok = recorder.lines[-1]
    assert (ok["fault"], ok["detail"]["role"], ok["detail"]["step"]) == (
        "isolate-from-controllers", "isr", "mix:isolate-from-controllers")
    assert injector.grudge["broker-3"] == controllers
    assert injector.stale_brokers() == {"10.0.0.13:9092"}

    def drop(address: str) -> str:
        return (f"iptables -A INPUT -s {address} -m comment --comment elr-harness -j DROP"
                f" && iptables -A OUTPUT -d {address} -m comment --comment elr-harness -j DROP")

    commands = {name: node.commands for name, node in injector.cluster.nodes.items()}
    assert commands == {
        "broker-3": [" && ".join(drop(f"10.0.0.{i}") for i in (1, 2, 3))],
        "controller-1": [drop("10.0.0.13")], "controller-2": [drop("10.0.0.13")],
        "controller-3": [drop("10.0.0.13")], "broker-1": [], "broker-2": []}
    for node in injector.cluster.nodes.values():
        node.commands.clear()
    injector.heal_all()
    remove = ("iptables -S | grep -E -- '--comment elr-harness''( |$)' | sed 's/^-A /-D /' | "
              "while read -r rule; do iptables $rule || exit 1; done")
    assert {name: node.commands for name, node in injector.cluster.nodes.items()} == {
        name: [remove] for name in injector.cluster.nodes}
    assert injector.grudge == {} and injector.stale_brokers() == set()
    assert recorder.lines[-1]["fault"] == "heal"


def test_a_controller_partition_is_ended_by_heal_all(rig) -> None:
    injector, recorder = rig
    nodes = sorted(injector.cluster.nodes)
    partition.cut(injector, grudges.isolate("controller-1", nodes),
                  kind="controller-partition")
    assert recorder.lines[-1]["fault"] == "controller-partition"
    injector.heal_all()
    assert injector.grudge == {}


def test_heal_all_asks_every_kind_of_the_registry_in_phase_order(rig) -> None:
    """heal_all names no kind: the registry's kinds end themselves, phase by phase,
    a step two kinds share (the network's heal, a restart) once."""
    plan = heal_plan()
    assert [h.phase for h in plan] == sorted(h.phase for h in plan)
    assert len({(h.phase, h.end) for h in plan}) == len(plan)
    injector, recorder = rig
    injector.heal_all()
    assert [x["fault"] for x in recorder.lines if x["type"] == "ok"] == ["heal"]


def test_a_leader_bounce_is_a_pause_recorded_as_its_own_kind_and_ended_by_resume(rig) -> None:
    injector, recorder = rig
    why = {"mix": "bounce-leader", "role": "leader"}
    pause.pause(injector, "broker-2", kind=bounce_leader.PACKAGE.recorded,
                detail={**why, "hold_s": 8.0})
    assert injector.paused == {"broker-2"}
    assert injector.stale_brokers() == {"10.0.0.12:9092"}
    injector.heal_all()
    assert not injector.paused
    assert [(x["type"], x["fault"]) for x in recorder.lines if x["fault"] != "heal"] == [
        ("invoke", "bounce-leader"), ("ok", "bounce-leader"),
        ("invoke", "resume"), ("ok", "resume")]
    assert recorder.lines[1]["detail"] == {**why, "hold_s": 8.0}


@pytest.mark.parametrize("shutdown", [kill.kill, stop.stop])
def test_a_paused_broker_shut_down_is_resumed_on_the_record_first(rig, shutdown) -> None:
    """A kill or stop ends no pause in the history's reading (HISTORY.md's ENDED_BY:
    only a resume does), so a shutdown of a paused broker records the resume that
    thaws it before its own lines; else the pause reads as in force to the end (CI's
    guided run: 'pause:broker-1' unhealed after a round paused, then shut down F1)."""
    injector, recorder = rig
    pause.pause(injector, "broker-1", step="guided-1:F1", detail={"aim": "x"})
    shutdown(injector, "broker-1", step="guided-1:L")
    assert not injector.paused and injector.down == {"broker-1"}
    assert [(x["type"], x["fault"]) for x in recorder.lines] == [
        ("invoke", "pause"), ("ok", "pause"), ("invoke", "resume"), ("ok", "resume"),
        ("invoke", shutdown.__name__), ("ok", shutdown.__name__)]
    assert recorder.lines[2]["detail"]["step"] == "guided-1:L"


def test_taking_down_a_paused_broker_without_its_resume_is_refused(rig) -> None:
    injector, _ = rig
    pause.pause(injector, "broker-1")
    with pytest.raises(HarnessError, match="paused"):
        injector.take_down("broker-1", "KILL")


def test_heal_all_starts_a_killed_controller_again(rig) -> None:
    injector, recorder = rig
    kill.kill(injector, "controller-1", kind=Fault.CONTROLLER_KILL)
    injector.heal_all()
    starts = [x["nodes"] for x in recorder.lines if x["fault"] == "start" and x["type"] == "ok"]
    assert starts == [["controller-1"]] and not injector.down


def test_heal_all_starts_an_untracked_node_only_when_it_looks_dead_every_time(rig) -> None:
    """One empty pgrep is no proof: a node whose Kafka answers on the second look
    is left alone; one with no Kafka on every look (it died on its own) is started."""
    injector, recorder = rig
    flaky, dead = injector.cluster.nodes["controller-1"], injector.cluster.nodes["broker-2"]
    answers = iter([None, flaky.pid])
    flaky.kafka_pid = lambda: next(answers, 1101)  # type: ignore[method-assign]
    dead.pid = None
    injector.heal_all()
    starts = [x["nodes"] for x in recorder.lines if x["fault"] == "start" and x["type"] == "ok"]
    assert starts == [["broker-2"]]


class BarrierNode(FakeNode):
    """Waits at a barrier that every node's command must reach: applied one node
    after another, the first command would wait until the barrier times out."""

    def __init__(self, spec: NodeSpec, barrier, failing: bool = False) -> None:
        super().__init__(spec)
        self.barrier, self.failing = barrier, failing

    def exec(self, cmd: str, timeout_s: float = 60.0) -> ExecResult:
        self.barrier.wait()
        self.commands.append(cmd)
        return ExecResult(1 if self.failing else 0, "iptables: failed" if self.failing else "")


def _barrier_rig(failing: str | None = None):
    import threading

    brokers = specs(controllers=0)
    barrier = threading.Barrier(len(brokers), timeout=10)
    cluster = FakeCluster({s.name: BarrierNode(s, barrier, s.name == failing) for s in brokers})
    return FaultInjector(cluster, ListRecorder()), cluster  # type: ignore[arg-type]


def test_a_partition_and_a_heal_act_on_every_node_at_once() -> None:
    injector, cluster = _barrier_rig()
    nodes = sorted(cluster.nodes)
    partition.cut(injector, grudges.isolate("broker-2", nodes))
    assert injector.grudge == {"broker-1": ["broker-2"], "broker-2": ["broker-1", "broker-3"],
                               "broker-3": ["broker-2"]}
    injector.heal()
    assert injector.grudge == {}
    assert all(len(n.commands) == 2 for n in cluster.nodes.values())


def test_a_node_whose_rules_fail_is_named_and_the_others_keep_their_grudge() -> None:
    injector, cluster = _barrier_rig(failing="broker-3")
    nodes = sorted(cluster.nodes)
    with pytest.raises(Exception, match="iptables on broker-3 failed"):
        partition.cut(injector, grudges.isolate("broker-2", nodes))
    # the rules that did go in are remembered, so a heal knows to remove them
    assert injector.grudge == {"broker-1": ["broker-2"], "broker-2": ["broker-1", "broker-3"]}
