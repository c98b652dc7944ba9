"""The `reassign` fault kind (#33): its seeded draw, the exact requests the
injector sends, and how its end is cancelled or left completed.

Unit tests of the logic around Kafka: connections are fakes that write down
every request and answer as a controller does. That Kafka really moves the
replicas is tests/integration/test_fault_reassign.py's job.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fakes import FakeCluster, FakeObserver, ListRecorder, cluster_of, injector_rig, specs

from elr_harness.cluster import reassignments
from elr_harness.cluster.kafka_wire import WireError
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import Fault
from elr_harness.nemesis.faults import PACKAGES, kill, pause, reassign, stop
from elr_harness.nemesis.faults.base import ASSIGNMENT, NETWORK, PROCESSES
from elr_harness.nemesis.faults.reassign import ADD, REMOVE, REORDER, draw, in_force
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.schedule.compose import check_overlap, resources_of
from elr_harness.nemesis.targets import Role as Target
from elr_harness.report.faults import FaultEvent, pair_faults


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


# -- the wire: AlterPartitionReassignments v0 ------------------------------------------

def test_the_request_is_alter_partition_reassignments_v0_byte_for_byte() -> None:
    header = struct.pack(">hhih", 45, 0, 7, 11) + b"elr-harness" + b"\x00"
    topic = b"\x02" + b"\x02t"  # one topic, "t"
    move = (struct.pack(">i", 10_000) + topic + b"\x02" + struct.pack(">i", 0)
            + b"\x05" + struct.pack(">iiii", 1, 2, 3, 4) + b"\x00\x00\x00")
    assert reassignments.encode_request(7, "elr-harness", "t", 0, [1, 2, 3, 4], 10_000) == (
        struct.pack(">i", len(header) + len(move)) + header + move)
    cancel = (struct.pack(">i", 10_000) + topic + b"\x02" + struct.pack(">i", 0)
              + b"\x00" + b"\x00\x00\x00")  # replicas null: cancel
    assert reassignments.encode_request(7, "elr-harness", "t", 0, None, 10_000) == (
        struct.pack(">i", len(header) + len(cancel)) + header + cancel)


def _nullable(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    return bytes([len(text) + 1]) + text.encode()


def response(correlation: int, code: int = 0, message: str | None = None, top: int = 0,
             topic: str = "t", partition: int = 0) -> bytes:
    """A controller's answer (after the size prefix), encoded by hand."""
    return (struct.pack(">i", correlation) + b"\x00" + struct.pack(">ih", 0, top)
            + _nullable(None) + b"\x02" + _nullable(topic) + b"\x02"
            + struct.pack(">ih", partition, code) + _nullable(message) + b"\x00\x00\x00")


def test_the_answer_is_read_per_partition() -> None:
    assert reassignments.decode_response(response(3, 85, "No partition reassignment is in "
                                                  "progress.", partition=2)) == (
        3, 0, None, {("t", 2): (85, "No partition reassignment is in progress.")})


def request_fields(request: bytes) -> tuple[int, str, int, list[int] | None, int]:
    """(api key, topic, partition, replicas or None, timeout ms) of a request."""
    key = struct.unpack(">h", request[4:6])[0]
    body = request[4 + 8 + 2 + 11 + 1:]
    timeout = struct.unpack(">i", body[:4])[0]
    size = body[5] - 1
    topic = body[6:6 + size].decode()
    at = 6 + size + 1
    partition = struct.unpack(">i", body[at:at + 4])[0]
    count = body[at + 4]
    replicas = (None if count == 0 else
                list(struct.unpack(f">{count - 1}i", body[at + 5:at + 5 + 4 * (count - 1)])))
    return key, topic, partition, replicas, timeout


# -- the injector ----------------------------------------------------------------------

@dataclass
class Wire:
    """Every connection the injector opens: the requests sent, scripted answers
    (an int is an error code, a WireError is a lost answer), brokers that refuse."""

    answers: list[Any] = field(default_factory=list)
    refusing: set[str] = field(default_factory=set)
    sent: list[tuple[str, tuple]] = field(default_factory=list)
    timeouts: set[float] = field(default_factory=set)

    def __call__(self, address: str, timeout_s: float) -> Connection:
        self.timeouts.add(timeout_s)
        return Connection(self, address)


@dataclass
class Connection:
    wire: Wire
    address: str

    def connect(self) -> None:
        if self.address in self.wire.refusing:
            raise WireError(f"{self.address}: connection refused")

    def request(self, build: Callable[[int], bytes]) -> bytes:
        request = build(1)
        _, topic, partition, replicas, timeout = request_fields(request)
        self.wire.sent.append((self.address, (topic, partition, replicas, timeout)))
        answer = self.wire.answers.pop(0) if self.wire.answers else 0
        if isinstance(answer, Exception):
            raise answer
        return response(1, answer, None if answer == 0 else f"error {answer}",
                        topic=topic, partition=partition)

    def close(self) -> None:
        pass


@pytest.fixture
def rig() -> tuple[FaultInjector, ListRecorder, FakeCluster, Wire]:
    """controller-1 (10.0.0.1) and broker-1..4 (ids 1..4, 10.0.0.11..14)."""
    cluster, wire = cluster_of(specs(controllers=1, brokers=4)), Wire()
    injector, recorder = injector_rig(cluster, connect=wire)
    return injector, recorder, cluster, wire


B1, B2, B3 = "10.0.0.11:9092", "10.0.0.12:9092", "10.0.0.13:9092"


def test_a_reassignment_sends_exactly_these_requests_and_records_these_lines(rig) -> None:
    injector, recorder, _, wire = rig
    why = {"mix": "reassign", "role": "any", "change": "add"}
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 2, 3, 4], detail=why)
    assert ("t", 0) in in_force(injector)
    done = reassign.end(injector, "t", 0)
    assert wire.sent == [(B1, ("t", 0, [1, 2, 3, 4], 10_000)), (B1, ("t", 0, None, 10_000))]
    assert wire.timeouts == {15.0}
    nodes = ["broker-1", "broker-2", "broker-3", "broker-4"]
    start = {"topic": "t", "partition": 0, "from": [1, 2, 3], "to": [1, 2, 3, 4],
             "restore": False, **why}
    end = {"topic": "t", "partition": 0, "from": [1, 2, 3], "to": [1, 2, 3, 4], **why}
    assert [(x["type"], x["fault"], x["nodes"], x["detail"]) for x in recorder.lines] == [
        ("invoke", Fault.REASSIGN, nodes, start), ("ok", Fault.REASSIGN, nodes, start),
        ("invoke", Fault.REASSIGN_END, nodes, end),
        ("ok", Fault.REASSIGN_END, nodes,
         {**end, "outcome": "cancelled", "restored": False})]
    assert done["outcome"] == "cancelled" and not in_force(injector)
    # the report draws it as one band, ended by its reassign-end
    events = [FaultEvent(i, float(i), str(x["fault"]), tuple(x["nodes"]), x["type"],
                         x["detail"]) for i, x in enumerate(recorder.lines)]
    (band,) = pair_faults(events)
    assert (band.kind, band.end_index, band.lasting) == ("reassign", 3, True)
    assert ENDED_BY[Fault.REASSIGN_END] == (Fault.REASSIGN,)


def test_a_reassignment_no_longer_under_way_is_left_completed(rig) -> None:
    injector, recorder, _, wire = rig
    wire.answers = [0, reassignments.NO_REASSIGNMENT_IN_PROGRESS]
    reassign.start(injector, "t", 0, [1, 2, 3], [2, 1, 3])
    assert reassign.end(injector, "t", 0)["outcome"] == "completed"
    assert recorder.lines[-1]["detail"]["outcome"] == "completed"
    assert recorder.lines[-1]["type"] == "ok" and not in_force(injector)
    assert len(wire.sent) == 2, "no restore asked for"


def test_a_completed_removal_below_the_replication_factor_is_put_back(rig) -> None:
    injector, recorder, _, wire = rig
    wire.answers = [0, reassignments.NO_REASSIGNMENT_IN_PROGRESS, 0]
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 3], restore=True)
    assert recorder.lines[-1]["nodes"] == ["broker-1", "broker-2", "broker-3"]
    done = reassign.end(injector, "t", 0)
    assert (done["outcome"], done["restored"]) == ("completed", True)
    assert [replicas for _, (_, _, replicas, _) in wire.sent] == [[1, 3], None, [1, 2, 3]]


def test_a_put_back_kafka_refused_is_info_not_fail_and_stays_in_force(rig) -> None:
    """The end found the removal completed (it did something): a refused put-back
    may not record the end as `fail`; heal_all tries it again."""
    injector, recorder, _, wire = rig
    wire.answers = [0, reassignments.NO_REASSIGNMENT_IN_PROGRESS, 39]
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 3], restore=True)
    with pytest.raises(Exception, match=r"putting \[1, 2, 3\] back"):
        reassign.end(injector, "t", 0)
    assert recorder.lines[-1]["type"] == "info" and ("t", 0) in in_force(injector)


def test_a_cancelled_removal_needs_no_putting_back(rig) -> None:
    injector, _, _, wire = rig
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 3], restore=True)
    assert reassign.end(injector, "t", 0)["restored"] is False
    assert len(wire.sent) == 2


@pytest.mark.parametrize("code", [39, 3])  # INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC
def test_a_start_the_controller_refused_is_a_fail_and_nothing_is_in_force(rig, code) -> None:
    injector, recorder, _, wire = rig
    wire.answers = [code]
    with pytest.raises(Exception, match=f"Kafka error {code}"):
        reassign.start(injector, "t", 0, [1, 2, 3], [1, 2, 3, 4])
    assert [x["type"] for x in recorder.lines] == ["invoke", "fail"]
    assert not in_force(injector)
    # a broker id the cluster has not: refused before anything is sent or recorded
    with pytest.raises(Exception, match="no broker with id 9"):
        reassign.start(injector, "t", 0, [1, 2, 3], [1, 2, 3, 9])
    assert len(recorder.lines) == 2 and len(wire.sent) == 1


def test_no_broker_to_ask_is_a_fail_and_a_refusing_one_is_skipped(rig) -> None:
    injector, recorder, cluster, wire = rig
    wire.refusing = {B1}
    pause.pause(injector, "broker-2")
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 2, 3, 4])
    assert [address for address, _ in wire.sent] == [B3], "broker-1 refused, broker-2 paused"
    wire.refusing = set(cluster.bootstrap)
    with pytest.raises(Exception, match="no broker"):
        reassign.start(injector, "t", 1, [1, 2, 3], [1, 2, 3, 4])
    assert recorder.lines[-1]["type"] == "fail" and ("t", 1) not in in_force(injector)


@pytest.mark.parametrize("lost", [WireError("timed out"), 7])  # no answer; REQUEST_TIMED_OUT
def test_a_start_that_may_have_half_happened_is_info_and_ended_at_heal(rig, lost) -> None:
    injector, recorder, _, wire = rig
    wire.answers = [lost]
    with pytest.raises(Exception, match="timed out|Kafka error 7"):
        reassign.start(injector, "t", 0, [1, 2, 3], [1, 2, 3, 4])
    assert [x["type"] for x in recorder.lines] == ["invoke", "info"]
    assert ("t", 0) in in_force(injector)
    injector.heal_all()
    ends = [x for x in recorder.lines if x["fault"] == Fault.REASSIGN_END]
    assert ends[-1]["detail"]["outcome"] == "cancelled"
    assert ends[-1]["detail"]["step"] == "final-heal" and not in_force(injector)


def test_heal_all_ends_reassignments_before_restarting_what_is_down(rig) -> None:
    """A replica stopped under a reassignment holds it back: cancelled at heal, not
    completed by the replica's return; the stopped broker is not asked."""
    injector, recorder, _, wire = rig
    stop.stop(injector, "broker-1")
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 3], restore=True)
    injector.heal_all()
    oks = [(x["fault"], x["nodes"]) for x in recorder.lines if x["type"] == "ok"]
    assert oks[-3:] == [(Fault.HEAL, sorted(injector.cluster.nodes)),
                        (Fault.REASSIGN_END, ["broker-1", "broker-2", "broker-3"]),
                        (Fault.START, ["broker-1"])]
    assert recorder.lines[-3]["detail"]["outcome"] == "cancelled"
    assert {address for address, _ in wire.sent} == {B2}


def test_an_end_that_fails_before_the_restarts_is_tried_again_after_them(rig) -> None:
    injector, recorder, cluster, wire = rig
    kill.kill(injector, "controller-1", kind=Fault.CONTROLLER_KILL)
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 2, 3, 4])
    wire.answers = [WireError("timed out")]  # no controller to forward to
    injector.heal_all()
    ends = [(x["type"], x["detail"].get("outcome")) for x in recorder.lines
            if x["fault"] == Fault.REASSIGN_END]
    assert ends == [("invoke", None), ("info", None), ("invoke", None), ("ok", "cancelled")]
    assert cluster.started == ["controller-1"] and not in_force(injector)


def test_a_broker_cut_off_from_the_controllers_is_not_asked(rig) -> None:
    injector, _, _, wire = rig
    injector.grudge = {"broker-1": ["controller-1"], "controller-1": ["broker-1"]}
    reassign.start(injector, "t", 0, [1, 2, 3], [1, 2, 3, 4])
    assert [address for address, _ in wire.sent] == [B2]


# -- the package ------------------------------------------------------------------------

def test_the_package_acts_on_the_assignment_alone_and_overlaps_the_others() -> None:
    package = PACKAGES["reassign"]
    # in `all`: the checker's budget reads the observed replicas (a full ISR holds
    # every replica an observation names)
    assert package.resource == ASSIGNMENT and package.in_all
    assert package.recorded is Fault.REASSIGN and not package.counts_against_budget
    check_overlap([resources_of(["partition"]), resources_of(["kill"]),
                   resources_of(["reassign"])])
    assert resources_of(["reassign", "kill"]) == {ASSIGNMENT, PROCESSES}
    assert NETWORK not in resources_of(["reassign"])
    with pytest.raises(ValueError, match="assignment"):
        check_overlap([resources_of(["reassign"]), resources_of(["reassign", "pause"])])


def test_a_failed_end_is_logged_and_left_to_heal_all_not_raised_into_the_mix() -> None:
    from elr_harness.nemesis.mix import RandomMix
    from elr_harness.nemesis.targets import Topology

    wire = Wire()
    injector, recorder = injector_rig(cluster_of(specs(controllers=1, brokers=3)),
                                      connect=wire)
    logged: list[str] = []
    mix = RandomMix(injector, FakeObserver([state((1, 2, 3))]), ["reassign"], 5, 0.0, 3,
                    log=logged.append,
                    topology=Topology({"broker-1": 1, "broker-2": 2, "broker-3": 3},
                                      {"controller-1": 1001}),
                    active_controller=lambda: 1001)
    undo = mix.inject("reassign")
    assert undo is not None
    (started,) = [x for x in recorder.lines if x["type"] == "ok"]
    detail = started["detail"]
    assert (started["fault"], detail["topic"], detail["partition"], detail["from"]) == (
        Fault.REASSIGN, "t", 0, [1, 2, 3])
    assert detail["restore"] == (len(detail["to"]) == 2), (
        "3 brokers, replication factor 3: no spare")
    assert detail["mix"] == "reassign" and detail["change"] in (REMOVE, REORDER)
    assert wire.sent == [(B1, ("t", 0, detail["to"], 10_000))]
    wire.answers = [WireError("no controller")]  # the cancel gets no answer
    undo()
    assert logged == ["reassign: ending t-0 failed: t-0: no answer from 10.0.0.11:9092: "
                      "no controller"]
    assert recorder.lines[-1]["type"] == "info" and ("t", 0) in in_force(injector)
    # heal_all ends it
    injector.heal_all()
    assert recorder.lines[-1]["fault"] == Fault.REASSIGN_END
    assert recorder.lines[-1]["detail"]["outcome"] == "cancelled" and not in_force(injector)
