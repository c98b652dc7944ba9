"""KIP-966 state coverage (docs/CHECKING.md), one short history per state: each
reaches its state a known number of times beside near misses that must not
count, and both checkers must say so (the reference's count and example, and
the Spark checker's whole `coverage` equal to the reference's)."""

from __future__ import annotations

import pytest
from batched_checks import BatchedChecks
from checker_fixtures import TEST_CONFIG
from reference_checker import reference_check
from test_reference_checker import TEST, History, _test

from elr_harness.core.history import COVERAGE_STATES

ELR = "eligible.leader.replicas.version"


def _fault(h: History, kind: str, nodes: list[str], outcome: str | None = "ok",
           **detail) -> int:
    """An invoke and its completion; returns the index of the line the fault sits at
    (its completion, else its invoke): a coverage example's."""
    extra = {"detail": detail} if detail else {}
    at = h.add(process=-1, type="invoke", f="fault", fault=kind, nodes=nodes, **extra)
    if outcome is not None:
        at = h.add(process=-1, type=outcome, f="fault", fault=kind, nodes=nodes, **extra)
    return at


def _at(h: History) -> int:
    """The index the next line gets."""
    return len(h.ops)


def below_min_isr(h: History) -> list[int]:
    h.observe(isr=[1, 2, 3])
    first = _at(h)
    h.observe(isr=[1])
    h.observe(isr=None)  # the cluster could not say: not below
    h.observe(isr=[1], min_isr=1)  # its own min ISR is 1
    second = _at(h)
    h.observe(isr=[1, 2], min_isr=3)
    return [first, second]


def elr_not_empty(h: History) -> list[int]:
    h.observe(isr=[1], elr=[])
    h.observe(isr=[1], elr=None)
    first = _at(h)
    h.observe(isr=[1], elr=[2])
    return [first]


def leaderless_with_elr(h: History) -> list[int]:
    h.observe(isr=[1], elr=[2])  # a leader
    h.observe(leader=-1, isr=[], elr=[])  # no ELR
    first = _at(h)
    h.observe(leader=-1, isr=[], elr=[2, 3])
    return [first]


def elected_from_elr(h: History) -> list[int]:
    h.observe(leader=-1, isr=[], elr=[2])
    h.observe(partition=1, leader=3, isr=[3])  # another partition between
    first = _at(h)
    h.observe(leader=2, isr=[2])
    h.observe(leader=-1, isr=None, elr=[3])  # an ISR the cluster could not say
    h.observe(leader=3, isr=[3])
    h.observe(leader=-1, isr=[1], elr=[3])  # an ISR not empty
    h.observe(leader=3, isr=[3])
    return [first]


def last_known_elr_not_empty(h: History) -> list[int]:
    h.observe(leader=-1, isr=[], elr=[], lkelr=None)
    first = _at(h)
    h.observe(leader=-1, isr=[], elr=[], lkelr=[1])
    return [first]


def unclean_shutdown_of_elr_member(h: History) -> list[int]:
    h.observe(isr=[1], elr=[2])
    first = _fault(h, "kill", ["broker-2"])  # in the ELR at the fault
    _fault(h, "start", ["broker-2"])
    h.observe(isr=[1], elr=[])
    _fault(h, "stop", ["broker-1"])  # clean
    h.observe(leader=-1, isr=[], elr=[1])
    _fault(h, "start", ["broker-1"])
    h.observe(isr=[3], elr=[])
    second = _fault(h, "page-cache-loss", ["broker-3"])  # moved into the ELR after it
    h.observe(leader=-1, isr=[], elr=[3])
    _fault(h, "start", ["broker-3"])
    _fault(h, "kill", ["broker-1"], outcome="fail")  # did not happen
    _fault(h, "kill", ["broker-2"])
    _fault(h, "start", ["broker-2"])
    h.observe(leader=-1, isr=[], elr=[2])  # after its restart: not from the kill
    # one fault, two brokers: each broker's own next start bounds it (broker 2's
    # restart does not end broker 1's wait; drawn histories found the two checkers
    # reading this apart)
    third = _fault(h, "kill", ["broker-2", "broker-1"])
    _fault(h, "start", ["broker-2"])
    h.observe(isr=[3], elr=[1])
    return [first, second, third]


def leaderless_with_unclean_replica_unfenced(h: History) -> list[int]:
    h.observe(isr=[1], elr=[2])
    _fault(h, "page-cache-loss", ["broker-1"])
    h.observe(leader=-1, isr=[], elr=[1, 2], fenced=[1, 2])
    _fault(h, "start", ["broker-1"])
    first = _at(h)
    h.observe(leader=-1, isr=[], elr=[2], fenced=[2])
    h.observe(leader=-1, isr=[], elr=[2], fenced=[])  # broker 2 is back
    h.observe(leader=-1, isr=[], elr=[2])  # fenced unknown
    h.observe(leader=-1, isr=[], elr=[2], fenced=[2], replicas=[2, 3, 4])  # 1 no replica
    second = _at(h)
    h.observe(leader=-1, isr=[], elr=[], fenced=[2, 3])
    h.observe(leader=1, isr=[1])  # back in the ISR: eligible again
    h.observe(leader=-1, isr=[], elr=[2], fenced=[2])
    _fault(h, "stop", ["broker-3"])
    _fault(h, "start", ["broker-3"])  # a clean restart
    h.observe(partition=1, leader=-1, isr=[], elr=[1], fenced=[1])
    return [first, second]


def min_isr_change_with_elr(h: History) -> list[int]:
    h.observe(isr=[1], elr=[2])
    first = _fault(h, "min-isr-change", ["controller-1"], topic="t", **{"from": 2, "to": 1})
    _fault(h, "min-isr-change", ["controller-1"], topic="other", **{"from": 2, "to": 1})
    second = _fault(h, "min-isr-change", ["controller-1"], topic=None, **{"from": 2, "to": 1})
    _fault(h, "min-isr-change", ["controller-1"], outcome="fail", topic="t",
           **{"from": 2, "to": 1})
    # KIP-966 removes the ELR only when "the new min ISR <= current ISR": a change to
    # more than the ISR's size (a raise, or the min ISR it had) cannot show a
    # controller that keeps the ELR
    _fault(h, "min-isr-change", ["controller-1"], topic="t", **{"from": 2, "to": 3})
    _fault(h, "min-isr-change", ["controller-1"], topic="t", **{"from": 2, "to": 2})
    h.observe(isr=[1, 2, 3], elr=[])
    _fault(h, "min-isr-change", ["controller-1"], topic="t", restore=True,
           **{"from": 1, "to": 2})
    return [first, second]


def controller_failover_with_elr(h: History) -> list[int]:
    _fault(h, "controller-kill", ["controller-1"])  # nothing observed yet
    h.observe(isr=[1], elr=[2])
    first = _fault(h, "controller-kill", ["controller-1"], outcome="info")
    h.observe(isr=[1, 2, 3], elr=[])
    _fault(h, "controller-partition", ["controller-1"])
    h.observe(partition=1, isr=[1], elr=[3])
    second = _fault(h, "controller-partition", ["controller-1"], outcome=None)
    _fault(h, "kill", ["controller-1"])  # a controller's is no broker kill
    return [first, second]


def reassign_while_below_min_isr(h: History) -> list[int]:
    h.observe(isr=[1])
    h.observe(partition=1, isr=[1, 2, 3])
    first = _fault(h, "reassign", ["controller-1"], topic="t", partition=0,
                   replicas=[1, 2, 4])
    _fault(h, "reassign", ["controller-1"], topic="t", partition=1, replicas=[1, 2, 4])
    _fault(h, "reassign-end", ["controller-1"], topic="t", partition=0)
    # the contract's detail names the partition on every reassign line (HISTORY.md)
    second = _fault(h, "reassign", ["controller-1"], topic="t", partition=0,
                    replicas=[1, 2, 3])
    return [first, second]


def disk_fault_of_isr_or_elr_member(h: History) -> list[int]:
    h.observe(isr=[1], elr=[2])
    first = _fault(h, "disk-fault", ["broker-2"], error="EIO", dropped=True)
    _fault(h, "disk-fault", ["broker-3"], error="EIO", dropped=True)
    second = _fault(h, "disk-fault", ["broker-1"], error="EIO", dropped=False)
    return [first, second]


def elr_feature_change_with_elr(h: History) -> list[int]:
    _fault(h, "feature-change", ["controller-1"], feature=ELR, **{"from": 1, "to": 0})
    h.observe(isr=[1], elr=[2])
    first = _fault(h, "feature-change", ["controller-1"], feature=ELR, **{"from": 1, "to": 0})
    _fault(h, "feature-change", ["controller-1"], feature="metadata.version",
           **{"from": 20, "to": 21})
    return [first]


def elr_feature_change_while_leaderless(h: History) -> list[int]:
    _fault(h, "feature-change", ["controller-1"], feature=ELR, **{"from": 1, "to": 0})
    h.observe(isr=[1, 2, 3])  # a leader
    _fault(h, "feature-change", ["controller-1"], feature=ELR, **{"from": 1, "to": 0})
    h.observe(leader=-1, isr=[], elr=[2], lkelr=[1])
    first = _fault(h, "feature-change", ["controller-1"], feature=ELR, **{"from": 1, "to": 0})
    _fault(h, "feature-change", ["controller-1"], feature="metadata.version",
           **{"from": 20, "to": 21})
    _fault(h, "feature-change", ["controller-1"], outcome="fail", feature=ELR,
           **{"from": 0, "to": 1})
    h.observe(leader=2, isr=[2])
    h.observe(partition=1, leader=-1, isr=[3], elr=[])  # another partition, no ELR
    second = _fault(h, "feature-change", ["controller-1"], outcome="info", feature=ELR,
                    restore=True, **{"from": 0, "to": 1})
    return [first, second]


CASES = {
    "isr-below-min-isr": below_min_isr,
    "elr-not-empty": elr_not_empty,
    "leaderless-with-elr": leaderless_with_elr,
    "elected-from-elr": elected_from_elr,
    "last-known-elr-not-empty": last_known_elr_not_empty,
    "unclean-shutdown-of-elr-member": unclean_shutdown_of_elr_member,
    "leaderless-with-unclean-replica-unfenced": leaderless_with_unclean_replica_unfenced,
    "min-isr-change-with-elr": min_isr_change_with_elr,
    "controller-failover-with-elr": controller_failover_with_elr,
    "reassign-while-below-min-isr": reassign_while_below_min_isr,
    "disk-fault-of-isr-or-elr-member": disk_fault_of_isr_or_elr_member,
    "elr-feature-change-with-elr": elr_feature_change_with_elr,
    "elr-feature-change-while-leaderless": elr_feature_change_while_leaderless,
}


CHECKS = BatchedChecks()
check_history = CHECKS.check_history


#: the tests' histories judged in one Spark batch first (batched_checks.py)
_checked_together = CHECKS.fixture("check_history")


def test_every_state_has_its_case():
    assert tuple(CASES) == COVERAGE_STATES


def _history(build) -> tuple[History, list[int]]:
    h = History()
    h.send(0, 0, 0)
    reached = build(h)
    h.final([[0, 0, 0]], seek={0: 0, 1: 0}, hwm={0: 1, 1: 0})
    return h, reached


@pytest.mark.usefixtures("_checked_together")
@pytest.mark.parametrize("state", COVERAGE_STATES)
def test_the_state_is_counted_where_reached_and_only_there(tmp_path, state):
    h, reached = _history(CASES[state])
    path = tmp_path / "history.jsonl"
    path.write_text(h.text())
    test = _test(partitions=2)
    ref = reference_check(path, test).coverage
    first = h.ops[reached[0]]
    assert ref[state] == {"count": len(reached), "first_time": first["time"],
                          "example": reached[0]}
    assert check_history(path, test, TEST_CONFIG)["coverage"] == ref


@pytest.mark.usefixtures("_checked_together")
def test_a_run_that_reached_nothing_lists_every_state_at_zero(tmp_path):
    h, _ = _history(lambda h: h.observe(isr=[1, 2, 3]) or [])
    path = tmp_path / "history.jsonl"
    path.write_text(h.text())
    zero = {state: {"count": 0, "first_time": None, "example": None}
            for state in COVERAGE_STATES}
    assert reference_check(path, TEST).coverage == zero
    results = check_history(path, TEST, TEST_CONFIG)
    assert results["coverage"] == zero
    assert list(results["coverage"]) == list(COVERAGE_STATES)
