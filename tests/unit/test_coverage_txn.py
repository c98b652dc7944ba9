"""The transaction states of coverage (docs/CHECKING.md, "Transaction states"),
from their words: for each state a history that reaches it a known number of
times beside near misses that must not count. Both checkers must say so: the
reference's count and example, and the Spark checker's whole `coverage` equal to
the reference's (its histories judged in one batch, batched_checks.py). A run
without a txn invoke lists none of them.

Times: each line is one second apart (History's 1000 per line, scaled to
nanoseconds), and the runs' transaction timeout is one second, so an LSO held
across two lines' gap is held past it.
"""

from __future__ import annotations

import copy
import json

import pytest
from batched_checks import BatchedChecks
from checker_fixtures import TEST_CONFIG
from reference_checker import reference_check
from test_contract_rows_v4 import TXN_TEST, txn
from test_reference_checker import TEST, History

from elr_harness.core.history import COVERAGE_STATES, TXN_COVERAGE_STATES

TS = "__transaction_state"
SCALE = 1_000_000  # History's 1000 per line -> one second per line, in nanoseconds


def _scaled(h: History) -> str:
    """The history's text, every time and end_time one second per line."""
    lines = []
    for op in h.ops:
        op = dict(op)
        op["time"] *= SCALE
        if op.get("end_time") is not None:
            op["end_time"] *= SCALE
        lines.append(json.dumps(op) + "\n")
    return "".join(lines)


def _final(h: History) -> None:
    h.final([], seek={0: 0, 1: 0}, hwm={0: 0, 1: 0})


# -- each state: (history builder, the indices of the lines that reach it) ----------


def failover_with_open_txn(h: History) -> list[int]:
    h.observe(topic=TS, leader=1)
    h.observe(topic=TS, leader=2)  # no transaction open yet
    txn(h, [(0, 100)], outcome=None, process=5)  # open until its completion below
    h.observe(topic=TS, partition=1, leader=3)  # a first observation: no change
    first = len(h.ops)
    h.observe(topic=TS, leader=3)
    h.observe(leader=2)  # a data partition's change: another state's business
    lost = len(h.ops)
    h.observe(topic=TS, leader=-1)  # the coordinator gone: a change too
    h.observe(topic=TS, leader=1)  # from no leader: no failover
    third = len(h.ops)
    h.observe(topic=TS, leader=2)
    h.add(process=5, type="ok", f="txn", txn_id="tx-5", offsets=[None],
          end_time=1000 * (len(h.ops) + 1) - 1)
    h.observe(topic=TS, leader=3)  # nothing open any more
    return [first, lost, third]


def change_between_commit_and_marker(h: History) -> list[int]:
    h.observe(leader=1, last_stable_offset=0, high_watermark=1)
    txn(h, [(0, 100), (1, 101)], offsets=[0, 0])  # commit called, then ended ok
    first = len(h.ops)
    h.observe(leader=2, last_stable_offset=0, high_watermark=1)  # LSO had not passed 0
    h.observe(leader=2, last_stable_offset=2, high_watermark=2)  # no change: the marker in
    h.observe(leader=1, last_stable_offset=2, high_watermark=2)  # LSO 2 > 0 before it
    h.observe(partition=1, leader=1, high_watermark=2)
    h.observe(partition=1, leader=2, high_watermark=2)  # no LSO before: not judged
    txn(h, [(1, 102)], outcome="fail", offsets=[2], process=6)  # aborted: never a commit
    h.observe(partition=1, leader=3, last_stable_offset=2, high_watermark=3)
    h.observe(partition=1, leader=1, last_stable_offset=2, high_watermark=3)
    # a commit that timed out (info) with its offset: judged as any other
    h.observe(leader=1, last_stable_offset=2, high_watermark=2)
    txn(h, [(0, 103)], outcome="info", offsets=[2], process=7)
    second = len(h.ops)
    h.observe(leader=2, last_stable_offset=2, high_watermark=3)
    return [first, second]


def internal_topic_with_elr(h: History) -> list[int]:
    txn(h, [(0, 100)], offsets=[0])
    h.observe(elr=[2])  # a data partition: elr-not-empty's
    h.observe(topic=TS, elr=[])
    h.observe(topic=TS, elr=None)
    first = len(h.ops)
    h.observe(topic=TS, isr=[1], elr=[2])
    second = len(h.ops)
    h.observe(topic="__consumer_offsets", isr=[1], elr=[2, 3])
    return [first, second]


def lso_beyond_txn_timeout(h: History) -> list[int]:
    txn(h, [(0, 100)], offsets=[0])
    h.observe(last_stable_offset=4, high_watermark=6)
    h.observe(last_stable_offset=4, high_watermark=6)  # one second: not more than it
    h.observe(last_stable_offset=5, high_watermark=6)  # another value: a new stretch
    h.observe(last_stable_offset=5)  # says nothing: neither extends nor breaks
    first = len(h.ops)
    h.observe(last_stable_offset=5, high_watermark=7)  # 2 s after the stretch began
    h.observe(last_stable_offset=5, high_watermark=7)  # the same stretch: counted once
    h.observe(last_stable_offset=7, high_watermark=7)  # caught up: the stretch ends
    h.observe(partition=1, last_stable_offset=1, high_watermark=3)
    h.observe(partition=1, last_stable_offset=3, high_watermark=3)
    h.observe(partition=1, last_stable_offset=1, high_watermark=3)  # a new stretch
    h.observe(partition=1, last_stable_offset=1, high_watermark=3)
    second = len(h.ops)
    h.observe(partition=1, last_stable_offset=1, high_watermark=3)
    return [first, second]


CASES = {
    "txn-coordinator-failover-with-open-txn": failover_with_open_txn,
    "leader-change-between-commit-and-marker": change_between_commit_and_marker,
    "internal-topic-with-elr": internal_topic_with_elr,
    "lso-below-hwm-beyond-txn-timeout": lso_beyond_txn_timeout,
}

CHECKS = BatchedChecks()
check_history = CHECKS.check_history


#: the tests' histories judged in one Spark batch first (batched_checks.py)
_checked_together = CHECKS.fixture("check_history")


def test_every_txn_state_has_its_case():
    assert tuple(CASES) == TXN_COVERAGE_STATES


def _history(build) -> tuple[History, list[int]]:
    h = History()
    reached = build(h)
    _final(h)
    return h, reached


@pytest.mark.usefixtures("_checked_together")
@pytest.mark.parametrize("state", TXN_COVERAGE_STATES)
def test_the_txn_state_is_counted_where_reached_and_only_there(tmp_path, state):
    h, reached = _history(CASES[state])
    path = tmp_path / "history.jsonl"
    path.write_text(_scaled(h))
    ref = reference_check(path, TXN_TEST).coverage
    assert list(ref) == [*COVERAGE_STATES, *TXN_COVERAGE_STATES]
    first = h.ops[reached[0]]
    assert ref[state] == {"count": len(reached), "first_time": first["time"] * SCALE,
                          "example": reached[0]}
    assert check_history(path, TXN_TEST, TEST_CONFIG)["coverage"] == ref


@pytest.mark.usefixtures("_checked_together")
def test_without_the_transaction_timeout_an_lso_held_is_not_judged(tmp_path):
    h, _ = _history(lso_beyond_txn_timeout)
    path = tmp_path / "history.jsonl"
    path.write_text(_scaled(h))
    test = copy.deepcopy(TXN_TEST)
    del test["transactions"]["transaction_timeout_ms"]
    ref = reference_check(path, test).coverage
    assert ref["lso-below-hwm-beyond-txn-timeout"]["count"] == 0
    assert check_history(path, test, TEST_CONFIG)["coverage"] == ref


@pytest.mark.usefixtures("_checked_together")
def test_a_run_without_a_txn_invoke_lists_no_txn_state(tmp_path):
    """The same observations with no transaction: the KIP-966 states alone, as a
    history of contract v3 gets them."""
    h, _ = _history(internal_topic_with_elr)
    h.ops = [op for op in h.ops if op["f"] != "txn"]
    for number, op in enumerate(h.ops):
        op["index"] = number
    path = tmp_path / "history.jsonl"
    path.write_text(_scaled(h))
    ref = reference_check(path, TEST).coverage
    assert list(ref) == list(COVERAGE_STATES)
    results = check_history(path, TEST, TEST_CONFIG)
    assert results["coverage"] == ref
