"""The `reassign` fault kind (#33): its seeded draw, the exact tool commands the
injector runs in a node, and how its end is cancelled or left completed.

Unit tests of the logic around the tool: the nodes are fakes that write down
every file and command and answer as Kafka's reassign-partitions tool does.
That Kafka really moves the replicas is tests/integration/test_fault_reassign.py's job.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from cluster import reassignments
from cluster.node import ExecResult, NodeSpec, Role
from cluster.observe import PartitionState
from harness.core.config import NodeTimeouts
from harness.core.history import ENDED_BY, Fault
from nemesis.faults import PACKAGES
from nemesis.faults.base import ASSIGNMENT, NETWORK, PROCESSES
from nemesis.faults.reassign import ADD, REMOVE, REORDER, draw
from nemesis.injector import FaultInjector
from nemesis.schedules import check_overlap, resources_of
from nemesis.targets import Role as Target
from reports.faults import FaultEvent, pair_faults

TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
STARTED = "Successfully started partition reassignment for t-0\n"
CANCELLED = "Successfully cancelled partition reassignment for: t-0\n"
NONE_ACTIVE = ("None of the specified partition reassignments are active.\n"
               "None of the specified partition moves are active.")


def state(replicas: tuple[int, ...], isr: tuple[int, ...] | None = None,
          elr: tuple[int, ...] | None = (), partition: int = 0,
          topic: str = "t") -> PartitionState:
    return PartitionState(topic, partition, replicas[0], 3, replicas if isr is None else isr,
                          elr, (), None, replicas)


# -- the draw -------------------------------------------------------------------------

FOUR = [1, 2, 3, 4]


def draws(states: list[PartitionState], brokers=FOUR, rf: int = 3, role=Target.ANY,
          seeds=range(200)) -> list[Any]:
    return [draw(states, brokers, rf, role, random.Random(s)) for s in seeds]


def test_the_same_seed_draws_the_same_change_whatever_the_observed_order() -> None:
    states = [state((1, 2, 3)), state((2, 3, 4), partition=1), state((3, 4, 1), topic="u")]
    for seed in range(50):
        first = draw(states, FOUR, 3, Target.ANY, random.Random(seed))
        assert first == draw(list(reversed(states)), FOUR, 3, Target.ANY, random.Random(seed))
    assert len({c for c in draws(states)}) > 10, "different seeds, different changes"


def test_each_change_is_what_its_kind_says() -> None:
    seen = set()
    for change in draws([state((1, 2, 3))]):
        seen.add(change.kind)
        assert change.replicas == (1, 2, 3) and (change.topic, change.partition) == ("t", 0)
        if change.kind == ADD:
            assert change.target == (1, 2, 3, 4) and not change.restore
        elif change.kind == REMOVE:
            assert len(change.target) == 2 and set(change.target) < {1, 2, 3}
            assert list(change.target) == [b for b in (1, 2, 3) if b in change.target]
            assert change.restore, "below the replication factor: put back at the end"
        else:
            assert sorted(change.target) == [1, 2, 3] and change.target != (1, 2, 3)
            assert not change.restore
    assert seen == {ADD, REMOVE, REORDER}


def test_with_no_spare_broker_there_is_no_add() -> None:
    kinds = {c.kind for c in draws([state((1, 2, 3))], brokers=[1, 2, 3])}
    assert kinds == {REMOVE, REORDER}


def test_a_partition_above_its_replication_factor_is_never_grown_and_shrinks_for_good() -> None:
    changes = draws([state((1, 2, 3, 4))], brokers=[1, 2, 3, 4, 5])
    assert {c.kind for c in changes} == {REMOVE, REORDER}
    assert all(not c.restore for c in changes), "3 replicas left: nothing to put back"


def test_the_elr_role_removes_or_moves_an_elr_member_of_a_partition_that_has_one() -> None:
    states = [state((1, 2, 3), isr=(1,), elr=(3,)), state((2, 3, 4), partition=1)]
    for change in draws(states, role=Target.ELR):
        assert change.partition == 0
        if change.kind == REMOVE:
            assert change.target == (1, 2)
        elif change.kind == REORDER:
            assert change.target == (3, 1, 2)
    # with no ELR anywhere: any partition, any replica
    assert {c.partition for c in draws([state((1, 2, 3)), state((2, 3, 4), partition=1)],
                                       role=Target.ELR)} == {0, 1}


def test_nothing_to_change_is_none() -> None:
    assert draws([], seeds=range(3)) == [None] * 3
    unknown = PartitionState("t", 0, 1, 3, (1,), (), (), None, ())  # replicas not said
    assert draws([unknown], seeds=range(3)) == [None] * 3
    assert draws([state((1,))], brokers=[1], rf=1, seeds=range(3)) == [None] * 3


# -- the injector: the tool in a node ---------------------------------------------------

class FakeNode:
    """Answers every exec with the next scripted output (the tool's), else ok."""

    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        self.pid: int | None = 100 + spec.node_id
        self.calls: list[tuple[str, Any]] = []
        self.answers: list[ExecResult] = []

    def exec(self, cmd: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        self.calls.append(("exec", (cmd, timeout_s)))
        return self.answers.pop(0) if self.answers else ExecResult(0, "")

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self.calls.append(("write", (path, data.decode())))

    def kafka_pid(self) -> int | None:
        return self.pid

    def signal_kafka(self, signal_name: str) -> bool:
        self.pid = None
        return True

    def wait_kafka_gone(self, timeout_s: float) -> bool:
        return True

    def tool_runs(self) -> list[list[str]]:
        return [cmd for kind, (cmd, _) in self.calls if kind == "exec" and isinstance(cmd, list)
                and TOOL in cmd]


@dataclass
class FakeConfig:
    broker_port: int = 9092
    node_start_timeout_s: float = 30.0
    tool_heap: str = "-Xmx128m"
    timeouts: NodeTimeouts = field(default_factory=NodeTimeouts)


@dataclass
class FakeCluster:
    nodes: dict[str, FakeNode]
    config: FakeConfig = field(default_factory=FakeConfig)
    started: list[str] = field(default_factory=list)

    @property
    def brokers(self) -> list[FakeNode]:
        return [n for n in self.nodes.values() if n.spec.role is Role.BROKER]

    @property
    def controllers(self) -> list[FakeNode]:
        return [n for n in self.nodes.values() if n.spec.role is Role.CONTROLLER]

    @property
    def bootstrap(self) -> list[str]:
        return [f"{n.spec.address}:9092" for n in self.brokers]

    def broker_by_id(self, broker_id: int) -> FakeNode:
        for node in self.brokers:
            if node.spec.node_id == broker_id:
                return node
        raise KeyError(f"no broker with id {broker_id}")

    def restart_kafka(self, node: FakeNode) -> None:
        self.started.append(node.spec.name)
        node.pid = 200 + node.spec.node_id


class ListRecorder:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def record(self, **fields: Any) -> dict[str, Any]:
        self.lines.append(fields)
        return fields


@pytest.fixture
def rig() -> tuple[FaultInjector, ListRecorder, FakeCluster]:
    specs = [NodeSpec("controller-1", Role.CONTROLLER, 1001, "10.0.0.1")]
    specs += [NodeSpec(f"broker-{i}", Role.BROKER, i, f"10.0.0.{10 + i}") for i in (1, 2, 3, 4)]
    cluster = FakeCluster({s.name: FakeNode(s) for s in specs})
    recorder = ListRecorder()
    return FaultInjector(cluster, recorder), recorder, cluster  # type: ignore[arg-type]


BOOTSTRAP = "10.0.0.11:9092,10.0.0.12:9092,10.0.0.13:9092,10.0.0.14:9092"


def command(action: str) -> list[str]:
    return ["java", "-Xmx128m", "-cp", "/opt/kafka/libs/*", TOOL,
            "--bootstrap-server", BOOTSTRAP,
            "--command-config", "/opt/harness/reassignment-admin.properties",
            "--reassignment-json-file", "/opt/harness/reassignment.json", action,
            *(["--preserve-throttles"] if action == "--cancel" else [])]


def plan(replicas: list[int]) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": replicas}]})


#: The controller's answer to heal_all's iptables clean-up (its first command there).
HEALED = ExecResult(0, "")
ADMIN = "request.timeout.ms=15000\ndefault.api.timeout.ms=40000\n"


def test_a_reassignment_runs_exactly_these_tool_commands_and_lines(rig) -> None:
    injector, recorder, cluster = rig
    node = cluster.nodes["controller-1"]
    node.answers = [ExecResult(0, "Current partition replica assignment\n...\n" + STARTED),
                    ExecResult(0, CANCELLED)]
    why = {"mix": "reassign", "role": "any", "change": "add"}
    injector.reassign("t", 0, [1, 2, 3], [1, 2, 3, 4], detail=why)
    assert ("t", 0) in injector.reassignments
    done = injector.end_reassign("t", 0)
    assert node.calls == [
        ("write", ("/opt/harness/reassignment-admin.properties", ADMIN)),
        ("write", ("/opt/harness/reassignment.json", plan([1, 2, 3, 4]))),
        ("exec", (command("--execute"), 60.0)),
        ("write", ("/opt/harness/reassignment-admin.properties", ADMIN)),
        ("write", ("/opt/harness/reassignment.json", plan([1, 2, 3, 4]))),
        ("exec", (command("--cancel"), 60.0))]
    assert all(not n.calls for n in cluster.brokers), "the tool runs on the controller"
    nodes = ["broker-1", "broker-2", "broker-3", "broker-4"]
    start = {"topic": "t", "partition": 0, "from": [1, 2, 3], "to": [1, 2, 3, 4],
             "restore": False, **why}
    end = {"topic": "t", "partition": 0, "from": [1, 2, 3], "to": [1, 2, 3, 4], **why}
    assert [(x["type"], x["fault"], x["nodes"], x["detail"]) for x in recorder.lines] == [
        ("invoke", Fault.REASSIGN, nodes, start), ("ok", Fault.REASSIGN, nodes, start),
        ("invoke", Fault.REASSIGN_END, nodes, end),
        ("ok", Fault.REASSIGN_END, nodes,
         {**end, "outcome": "cancelled", "restored": False})]
    assert done["outcome"] == "cancelled" and not injector.reassignments
    # the report draws it as one band, ended by its reassign-end
    events = [FaultEvent(i, float(i), str(x["fault"]), tuple(x["nodes"]), x["type"],
                         x["detail"]) for i, x in enumerate(recorder.lines)]
    (band,) = pair_faults(events)
    assert (band.kind, band.end_index, band.lasting) == ("reassign", 3, True)
    assert ENDED_BY[Fault.REASSIGN_END] == (Fault.REASSIGN,)


@pytest.mark.parametrize("answer", [
    ExecResult(0, NONE_ACTIVE),
    # listed as active, completed before the cancel reached the controller
    ExecResult(1, "Error cancelling partition reassignment for:\n"
                  "t-0: No partition reassignment is in progress.")])
def test_a_reassignment_no_longer_under_way_is_left_completed(rig, answer) -> None:
    injector, recorder, cluster = rig
    cluster.nodes["controller-1"].answers = [ExecResult(0, STARTED), answer]
    injector.reassign("t", 0, [1, 2, 3], [2, 1, 3])
    assert injector.end_reassign("t", 0)["outcome"] == "completed"
    assert recorder.lines[-1]["detail"]["outcome"] == "completed"
    assert recorder.lines[-1]["type"] == "ok" and not injector.reassignments
    assert len(cluster.nodes["controller-1"].tool_runs()) == 2, "no restore asked for"


def test_a_completed_removal_below_the_replication_factor_is_put_back(rig) -> None:
    injector, recorder, cluster = rig
    node = cluster.nodes["controller-1"]
    node.answers = [ExecResult(0, STARTED), ExecResult(0, NONE_ACTIVE), ExecResult(0, STARTED)]
    injector.reassign("t", 0, [1, 2, 3], [1, 3], restore=True)
    assert recorder.lines[-1]["nodes"] == ["broker-1", "broker-2", "broker-3"]
    done = injector.end_reassign("t", 0)
    assert (done["outcome"], done["restored"]) == ("completed", True)
    plans = [data for kind, (path, data) in [c for c in node.calls if c[0] == "write"]
             if path.endswith(".json")]
    assert plans == [plan([1, 3]), plan([1, 3]), plan([1, 2, 3])]
    assert [run[-1] for run in node.tool_runs()] == ["--execute", "--preserve-throttles",
                                                    "--execute"]


def test_a_put_back_the_tool_refused_is_info_not_fail_and_stays_in_force(rig) -> None:
    """The end found the removal completed (it did something): a refused put-back
    may not record the end as `fail`; heal_all tries it again."""
    injector, recorder, cluster = rig
    node = cluster.nodes["controller-1"]
    node.answers = [ExecResult(0, STARTED), ExecResult(0, NONE_ACTIVE), ExecResult(
        1, "Cannot execute because there is an existing partition assignment.")]
    injector.reassign("t", 0, [1, 2, 3], [1, 3], restore=True)
    with pytest.raises(Exception, match=r"putting \[1, 2, 3\] back"):
        injector.end_reassign("t", 0)
    assert recorder.lines[-1]["type"] == "info" and ("t", 0) in injector.reassignments


def test_a_cancelled_removal_needs_no_putting_back(rig) -> None:
    injector, _, cluster = rig
    node = cluster.nodes["controller-1"]
    node.answers = [ExecResult(0, STARTED), ExecResult(0, CANCELLED)]
    injector.reassign("t", 0, [1, 2, 3], [1, 3], restore=True)
    assert injector.end_reassign("t", 0)["restored"] is False
    assert len(node.tool_runs()) == 2


def test_a_refused_start_is_a_fail_and_nothing_is_in_force(rig) -> None:
    injector, recorder, cluster = rig
    cluster.nodes["controller-1"].answers = [ExecResult(1, (
        "Cannot execute because there is an existing partition assignment.  Use "
        "--additional to override this and create a new partition assignment in addition "
        "to the existing one."))]
    with pytest.raises(Exception, match="refused"):
        injector.reassign("t", 0, [1, 2, 3], [1, 2, 3, 4])
    assert [x["type"] for x in recorder.lines] == ["invoke", "fail"]
    assert not injector.reassignments


def test_a_start_that_may_have_half_happened_is_info_and_ended_at_heal(rig) -> None:
    injector, recorder, cluster = rig
    node = cluster.nodes["controller-1"]
    node.answers = [ExecResult(137, "")]  # killed by its bound
    with pytest.raises(Exception, match="failed"):
        injector.reassign("t", 0, [1, 2, 3], [1, 2, 3, 4])
    assert [x["type"] for x in recorder.lines] == ["invoke", "info"]
    assert ("t", 0) in injector.reassignments
    node.answers = [HEALED, ExecResult(0, CANCELLED)]
    injector.heal_all()
    ends = [x for x in recorder.lines if x["fault"] == Fault.REASSIGN_END]
    assert ends[-1]["detail"]["outcome"] == "cancelled"
    assert ends[-1]["detail"]["step"] == "final-heal" and not injector.reassignments


def test_heal_all_ends_reassignments_before_restarting_what_is_down(rig) -> None:
    """A replica stopped under a reassignment holds it back: cancelled at heal, not
    completed by the replica's return."""
    injector, recorder, cluster = rig
    node = cluster.nodes["controller-1"]
    node.answers = [ExecResult(0, STARTED)]
    injector.stop("broker-3")
    injector.reassign("t", 0, [1, 2, 3], [1, 3], restore=True)
    node.answers = [HEALED, ExecResult(0, CANCELLED)]
    injector.heal_all()
    oks = [(x["fault"], x["nodes"]) for x in recorder.lines if x["type"] == "ok"]
    assert oks[-3:] == [(Fault.HEAL, sorted(cluster.nodes)),
                        (Fault.REASSIGN_END, ["broker-1", "broker-2", "broker-3"]),
                        (Fault.START, ["broker-3"])]
    assert recorder.lines[-3]["detail"]["outcome"] == "cancelled"


def test_an_end_that_fails_before_the_restarts_is_tried_again_after_them(rig) -> None:
    injector, recorder, cluster = rig
    node = cluster.nodes["controller-1"]
    node.answers = [ExecResult(0, STARTED)]
    injector.kill("controller-1", kind=Fault.CONTROLLER_KILL)
    injector.reassign("t", 0, [1, 2, 3], [1, 2, 3, 4])
    node.answers = [HEALED, ExecResult(1, "Error: Timed out waiting for a node assignment."),
                    ExecResult(0, CANCELLED)]
    injector.heal_all()
    ends = [(x["type"], x["detail"].get("outcome")) for x in recorder.lines
            if x["fault"] == Fault.REASSIGN_END]
    assert ends == [("invoke", None), ("info", None), ("invoke", None), ("ok", "cancelled")]
    assert cluster.started == ["controller-1"] and not injector.reassignments


def test_the_tool_runs_in_a_node_that_hears_every_broker(rig) -> None:
    injector, _, cluster = rig
    cluster.nodes["broker-2"].answers = [ExecResult(0, STARTED)]
    injector.grudge = {"controller-1": ["broker-4"], "broker-4": ["controller-1"],
                       "broker-1": ["broker-3"], "broker-3": ["broker-1"]}
    injector.reassign("t", 0, [1, 2, 3], [1, 2, 3, 4])
    assert [n.spec.name for n in cluster.nodes.values() if n.tool_runs()] == ["broker-2"]


def test_the_tools_admin_bounds_come_from_the_config() -> None:
    timeouts = NodeTimeouts(reassign_admin_s=7.5, reassign_request_s=2.0)
    assert reassignments.admin_properties(timeouts) == (
        "request.timeout.ms=2000\ndefault.api.timeout.ms=7500\n")
    with pytest.raises(ValueError):
        reassignments.tool_command("--verify", ["a:9092"], "-Xmx64m")


# -- the package ------------------------------------------------------------------------

def test_the_package_acts_on_the_assignment_alone_and_overlaps_the_others() -> None:
    package = PACKAGES["reassign"]
    assert package.resource == ASSIGNMENT and package.in_all
    assert package.recorded is Fault.REASSIGN and not package.counts_against_budget
    check_overlap([resources_of(["partition"]), resources_of(["kill"]),
                   resources_of(["reassign"])])
    assert resources_of(["reassign", "kill"]) == {ASSIGNMENT, PROCESSES}
    assert NETWORK not in resources_of(["reassign"])
    with pytest.raises(ValueError, match="assignment"):
        check_overlap([resources_of(["reassign"]), resources_of(["reassign", "pause"])])


def test_a_failed_end_is_logged_and_left_to_heal_all_not_raised_into_the_mix() -> None:
    from harness.core.errors import HarnessError
    from nemesis.mix import RandomMix
    from nemesis.targets import Topology

    class Injector:
        def __init__(self) -> None:
            self.started: list[tuple] = []

        def reassign(self, topic, partition, replicas, target, restore=False, step=None,  # noqa: ANN001
                     detail=None) -> None:  # noqa: ANN001
            self.started.append((topic, partition, replicas, target, restore, detail))

        def end_reassign(self, topic, partition, step=None, detail=None) -> None:  # noqa: ANN001
            raise HarnessError("no controller")

    class Observer:
        def latest(self) -> list[PartitionState]:
            return [state((1, 2, 3))]

    logged: list[str] = []
    injector = Injector()
    mix = RandomMix(injector, Observer(), ["reassign"], 5, 0.0, 3, log=logged.append,
                    topology=Topology({"broker-1": 1, "broker-2": 2, "broker-3": 3},
                                      {"controller-1": 1001}),
                    active_controller=lambda: 1001)
    undo = mix.inject("reassign")
    ((topic, partition, replicas, target, restore, detail),) = injector.started
    assert (topic, partition, replicas) == ("t", 0, (1, 2, 3))
    assert restore == (len(target) == 2), "3 brokers, replication factor 3: no spare"
    assert detail["mix"] == "reassign" and detail["change"] in (REMOVE, REORDER)
    undo()
    assert logged == ["reassign: ending t-0 failed: no controller"]
