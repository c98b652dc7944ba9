"""The contract's meaning of each fault kind is one table (core.fault_meanings, #66):
every kind has its row, the tables derived from it are what the contract says, and
a new kind is a row the checker reads by its properties, with no checker edit."""

from __future__ import annotations

import pytest

from elr_harness.checker import budget_faults, coverage, transitions
from elr_harness.checker.budget_faults import FaultOp
from elr_harness.core import fault_meanings
from elr_harness.core.fault_meanings import (
    ALWAYS,
    BUDGET_FAULTS,
    ENDED_BY,
    MEANINGS,
    REPLICAS,
    UNCLEAN,
    Meaning,
    kinds_where,
    meaning_of,
)
from elr_harness.core.history import DROPPED, Fault


def test_every_kind_of_the_contract_has_its_row():
    assert set(MEANINGS) == set(Fault)


def test_which_fault_ends_which_is_the_contracts():
    """HISTORY.md's pairing, as core.history held it before the table."""
    assert ENDED_BY == {
        Fault.HEAL: (Fault.PARTITION, Fault.CONTROLLER_PARTITION,
                     Fault.ISOLATE_FROM_CONTROLLERS, Fault.ONE_WAY_PARTITION),
        Fault.START: (Fault.KILL, Fault.CONTROLLER_KILL, Fault.STOP, Fault.PAGE_CACHE_LOSS,
                      Fault.DISK_FAULT),
        Fault.RESUME: (Fault.PAUSE, Fault.BOUNCE_LEADER),
        Fault.MIN_ISR_CHANGE: (Fault.MIN_ISR_CHANGE,),
        Fault.FEATURE_CHANGE: (Fault.FEATURE_CHANGE,),
        Fault.UNTHROTTLE: (Fault.SLOW_NETWORK,),
        Fault.REASSIGN_END: (Fault.REASSIGN,),
    }
    assert set(kinds_where(lambda m: m.only_ends)) == {
        k for k in ENDED_BY if k not in ENDED_BY[k]}


def test_the_rules_read_the_kinds_the_contract_names():
    """elr-member-dropped's unclean shutdowns (kill, page-cache-loss, disk-fault)
    and its clean one (stop); coverage's unclean shutdown of an ELR member (kill,
    page-cache-loss); the admin faults no pair is judged across; the budget's."""
    assert kinds_where(lambda m: m.shutdown == UNCLEAN) == (
        Fault.KILL, Fault.PAGE_CACHE_LOSS, Fault.DISK_FAULT)
    assert kinds_where(lambda m: m.shutdown == "clean") == (Fault.STOP,)
    assert kinds_where(lambda m: m.crash) == (Fault.KILL, Fault.PAGE_CACHE_LOSS)
    assert kinds_where(lambda m: m.admin_change is not None) == (
        Fault.MIN_ISR_CHANGE, Fault.FEATURE_CHANGE, Fault.REASSIGN, Fault.REASSIGN_END)
    assert kinds_where(lambda m: m.controller_failover) == (
        Fault.CONTROLLER_PARTITION, Fault.CONTROLLER_KILL)
    assert BUDGET_FAULTS == (Fault.PAGE_CACHE_LOSS, Fault.DISK_FAULT)
    assert fault_meanings.drops_unflushed(Fault.DISK_FAULT, {DROPPED: True})
    assert not fault_meanings.drops_unflushed(Fault.DISK_FAULT, {DROPPED: False})
    assert not fault_meanings.drops_unflushed(Fault.DISK_FAULT, {})
    assert meaning_of("no-such-kind") == Meaning()


def _broker(node: str) -> int | None:
    return int(node.split("-")[1]) if node.startswith("broker-") else None


def _what_the_checker_reads(kind: str, detail: dict | None = None) -> dict:
    """Every reading of the checker's Python side of one fault of `kind` on
    broker-1 (index 10), started again at 20 and stopped cleanly at 30."""
    faults = [FaultOp(10, kind, "ok", ("broker-1",), detail or {}, 5, place=9),
              FaultOp(20, Fault.START, "ok", ("broker-1",), {}, 6, place=19),
              FaultOp(30, Fault.STOP, "ok", ("broker-1",), {}, 7, place=29)]
    return {
        "losses": budget_faults.loss_hits(faults),
        "unprotected": budget_faults.unprotected_hits(
            [FaultOp(1, Fault.FEATURE_CHANGE, "ok", (), {
                "feature": "eligible.leader.replicas.version", "from": 1, "to": 0}), *faults]),
        "probes": [p.state for p in coverage.probes(faults, _broker)],
        "until_started": coverage.until_started(faults, _broker),
        "restarted_uncleanly": coverage.restarted_uncleanly(faults, _broker),
        "admin_spans": transitions.admin_spans(faults),
        "unclean_stretches": transitions.unclean_stretches(faults, _broker),
    }


@pytest.mark.parametrize("made_up, like, detail", [
    # a power cut: an unclean crash that drops unflushed data, ended by a start
    (Meaning(shutdown=UNCLEAN, crash=True, drops_unflushed=ALWAYS, ended_by=(Fault.START,)),
     Fault.PAGE_CACHE_LOSS, None),
    # a disk that fails and says whether it dropped what was unflushed
    (Meaning(shutdown=UNCLEAN, disk_failure=True, drops_unflushed=DROPPED,
             ended_by=(Fault.START,)), Fault.DISK_FAULT, {DROPPED: True}),
    # a change of the replicas
    (Meaning(admin_change=REPLICAS, ended_by=(Fault.REASSIGN_END,)), Fault.REASSIGN,
     {"topic": "t", "partition": 0}),
    # a controller's failover
    (Meaning(controller_failover=True, ended_by=(Fault.HEAL,)), Fault.CONTROLLER_PARTITION,
     None),
], ids=["power-cut", "disk-gone", "replicas-change", "controller-away"])
def test_a_made_up_kind_is_read_by_its_properties(monkeypatch, made_up, like, detail):
    """A kind no checker file names, given the properties of an existing one in
    the table alone, is read as that one is by every rule of the checker's
    Python side (the budget, coverage's probes and intervals, the transitions'
    spans)."""
    assert MEANINGS[like] == made_up, "the made-up row is the existing kind's"
    monkeypatch.setitem(MEANINGS, "made-up", made_up)
    assert _what_the_checker_reads("made-up", detail) == _what_the_checker_reads(like, detail)
    monkeypatch.delitem(MEANINGS, "made-up")
    unknown = _what_the_checker_reads("made-up", detail)
    assert unknown != _what_the_checker_reads(like, detail), "the test bites: no row, no reading"

