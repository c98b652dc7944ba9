"""Contract version 4's rows (shared/HISTORY.md, "Transactions (v4)"), tested from
their own words as test_contract_rows.py tests version 3's: for each clause a
small history that breaks exactly that sentence, and one that nearly does and
must pass; and version 4's malformed lines. The reference checker
(tests/reference_checker.py, tests/reference_txn.py) judges them here;
tests/unit/test_reference_cases_through_spark.py runs every one through the Spark
checker too, which must agree on every count. No Spark here.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

import pytest
from reference_checker import MalformedLine, Reference, reference_check
from test_contract_rows import Case, _cases, _judge, _step
from test_reference_checker import TEST, History

#: A run with transactions: t has two partitions; hanging-txn's T is 1 + 1 + 1 s.
TXN_TEST = {**copy.deepcopy(TEST), "transactions": {
    "enabled": True, "client": "java", "transaction_version": 2,
    "transaction_timeout_ms": 1000, "abort_check_interval_ms": 1000, "hang_margin_ms": 1000,
    "producers": 1}}
TXN_TEST["topics"]["t"]["partitions"] = 2


def _with(**changes) -> dict:
    test = copy.deepcopy(TXN_TEST)
    for key, value in changes.items():
        if key == "unclean_leader_election":
            test["topics"]["t"][key] = value
        elif key in ("transaction_version", "client"):
            test["transactions"][key] = value
        else:
            test[key] = value
    return test


@pytest.fixture
def check(tmp_path):
    calls = iter(range(1000))

    def run(h: History | str, test: dict | None = TXN_TEST) -> Reference:
        path = tmp_path / f"h{next(calls)}" / "history.jsonl"
        path.parent.mkdir()
        path.write_text(h if isinstance(h, str) else h.text())
        return reference_check(path, test)
    return run


# -- building blocks ------------------------------------------------------------------


def txn(h: History, sends: list[tuple[int, int]], outcome: str | None = "ok", *,
        abort: bool = False, offsets: list | None = None, end_time: int | None = -1,
        process: int = 5, client: str = "java") -> None:
    """A transaction of (partition, value) sends to t. end_time -1: the completion's
    own time less one (its commit was called just before it ended); None: none."""
    invoke = {"sends": [["t", p, v] for p, v in sends], "client": client}
    if abort:
        invoke["abort"] = True
    h.add(process=process, type="invoke", f="txn", txn_id=f"tx-{process}", **invoke)
    if outcome is None:
        return
    done: dict = {} if outcome == "ok" else {"error": "REQUEST_TIMED_OUT"}
    if offsets is not None:
        done["offsets"] = offsets
    if end_time is not None:
        done["end_time"] = 1000 * (len(h.ops) + 1) - 1 if end_time == -1 else end_time
    h.add(process=process, type=outcome, f="txn", txn_id=f"tx-{process}", **done)


def rc_poll(h: History, records: list, *, final: bool = False, process: int = 7,
            position: dict | None = None, lso: dict | None = None,
            seek: dict | None = None) -> None:
    """A read_committed poll of t (records [partition, offset, value])."""
    extra = {"final": True} if final else {}
    invoke = {"isolation": "read_committed", **extra}
    if seek is not None:
        invoke["seek"] = {str(p): o for p, o in seek.items()}
    h.add(process=process, type="invoke", f="poll", topic="t", **invoke)
    done: dict = {"records": records, **extra}
    if position is not None:
        done["position"] = {str(p): o for p, o in position.items()}
    if lso is not None:
        done["last_stable_offset"] = {str(p): o for p, o in lso.items()}
    h.add(process=process, type="ok", f="poll", topic="t", **done)


def finals(h: History, ru: list, rc: list | None, *, ends: dict[int, int],
           rc_ends: dict[int, int] | None = None) -> None:
    """The final reads of t-0 and t-1: read_uncommitted records `ru` to the ends
    `ends` (high watermarks and positions), read_committed records `rc` to the LSOs
    `rc_ends` (the same ends when None); no read_committed final read when rc is None."""
    h.final(ru, seek={p: 0 for p in ends}, hwm=ends)
    h.ops[-1]["position"] = {str(p): o for p, o in ends.items()}
    if rc is not None:
        lsos = ends if rc_ends is None else rc_ends
        rc_poll(h, rc, final=True, process=91, seek={p: 0 for p in lsos}, position=lsos,
                lso=lsos)


def _committed_pair(**kw) -> Callable:
    """Values 100 (t-0) and 101 (t-1) committed at offset 0 of each, markers at 1."""
    def build() -> History:
        h = History()
        h.observe(isr=[1, 2, 3])
        txn(h, [(0, 100), (1, 101)], offsets=[0, 0])
        finals(h, [[0, 0, 100], [1, 0, 101]], [[0, 0, 100], [1, 0, 101]], ends={0: 2, 1: 2})
        return h
    return build


# -- txn-aborted-read ------------------------------------------------------------------


def _aborted(outcome: str = "ok", read_by: str | None = "rc") -> Callable:
    def build() -> History:
        h = History()
        txn(h, [(0, 100), (1, 101)], outcome, abort=outcome == "ok", offsets=[0, 0])
        if read_by == "rc":
            rc_poll(h, [[0, 0, 100]])
        elif read_by == "ru":
            h.poll(8, [[0, 0, 100]])
        finals(h, [[0, 0, 100], [1, 0, 101]], [], ends={0: 2, 1: 2})
        return h
    return build


TXN_ABORTED_READ = {
    # "a read_committed poll (final or not) returned a value of an aborted transaction"
    "aborted-on-purpose-read-committed": Case(_aborted(), {"txn-aborted-read": 1}, False,
                                              TXN_TEST),
    # aborted: "ok with abort: true, or fail"
    "failed-read-committed": Case(_aborted("fail"), {"txn-aborted-read": 1}, False, TXN_TEST),
    # "A value of an aborted transaction in the read_uncommitted log is no anomaly"
    "aborted-read-uncommitted": Case(_aborted(read_by="ru"), {}, True, TXN_TEST),
    "aborted-not-read": Case(_aborted(read_by=None), {}, True, TXN_TEST),
}


@pytest.mark.parametrize("case", _cases(TXN_ABORTED_READ))
def test_row_txn_aborted_read(check, case):
    _judge(check, case)


# -- txn-lost-write ---------------------------------------------------------------------


def _lost(where: str = "gone", losses: int = 0, ru_complete: bool = True) -> Callable:
    """A committed value 100 of t-0 that is `gone` from the log, `hidden` (in the
    read_uncommitted log below the final LSO, not in the read_committed one), `above`
    the final LSO, or `kept`; 101 of t-1 kept."""
    def build() -> History:
        h = History()
        h.observe(isr=[1, 2, 3])
        h.observe(isr=[1, 2, 3], partition=1)
        txn(h, [(0, 100), (1, 101)], offsets=[0, 0])
        for broker in (2, 3)[:losses]:
            _step(h, ("page-cache-loss", f"broker-{broker}", "ok"))
        ru = [[1, 0, 101]] + ([] if where == "gone" else [[0, 0, 100]])
        rc = [[1, 0, 101]] + ([[0, 0, 100]] if where == "kept" else [])
        ends = {0: 2 if where != "gone" else 0, 1: 2}
        lsos = {0: 0 if where == "above" else ends[0], 1: 2}
        if not ru_complete:
            ends = {0: 5, 1: 2}
        finals(h, ru, rc, ends=ends, rc_ends=lsos)
        if not ru_complete:
            h.ops[-3]["position"] = {"0": 0, "1": 2}  # the read stopped short of 5
        return h
    return build


TXN_LOST_WRITE = {
    # "a value of a committed transaction that is absent from its partition's complete
    # read_uncommitted final read (the record is gone)"
    "gone": Case(_lost(), {"txn-lost-write": 1}, False, TXN_TEST),
    # "or that sits there below the final LSO but is absent from the complete
    # read_committed final read (committed, yet readers see it aborted)"
    "hidden-from-read-committed": Case(_lost("hidden"), {"txn-lost-write": 1}, False, TXN_TEST),
    # "Values at or above a partition's final LSO are judged by hanging-txn alone"
    "above-the-final-lso": Case(_lost("above"), {}, True, TXN_TEST),
    "kept": Case(_lost("kept"), {}, True, TXN_TEST),
    # "yes, unless the partition went beyond the fault budget (a txn send counts as
    # acks=all)": min ISR 2, one loss within, two beyond
    "gone-within-budget": Case(_lost(losses=1), {"txn-lost-write": 1}, False, TXN_TEST),
    "gone-beyond-budget": Case(_lost(losses=2), {"txn-lost-write": 1}, True, TXN_TEST),
    # "or the topic has unclean leader election on"
    "gone-unclean-election": Case(_lost(), {"txn-lost-write": 1}, True,
                                  _with(unclean_leader_election=True)),
    # an incomplete read_uncommitted read: nothing is gone for certain (unknown)
    "read-incomplete": Case(_lost(ru_complete=False), {}, "unknown", TXN_TEST),
}


@pytest.mark.parametrize("case", _cases(TXN_LOST_WRITE))
def test_row_txn_lost_write(check, case):
    _judge(check, case)


# -- txn-torn ---------------------------------------------------------------------------


def _torn(rest: str = "gone", outcome: str | None = "info", losses: int = 0,
          rc_complete: bool = True) -> Callable:
    """An unknown transaction: value 100 (t-0) read committed; value 101 (t-1)
    `gone`, `in` the read_committed read too, `above` the final LSO, or `both-gone`."""
    def build() -> History:
        h = History()
        h.observe(isr=[1, 2, 3])
        h.observe(isr=[1, 2, 3], partition=1)
        txn(h, [(0, 100), (1, 101)], outcome, offsets=[0, 0])
        for broker in (2, 3)[:losses]:
            _step(h, ("page-cache-loss", f"broker-{broker}", "ok"))
        first = [] if rest == "both-gone" else [[0, 0, 100]]
        ru = first + ([[1, 0, 101]] if rest in ("in", "above") else [])
        rc = first + ([[1, 0, 101]] if rest == "in" else [])
        ends = {0: 2 if first else 0, 1: 2 if rest in ("in", "above") else 0}
        lsos = {0: ends[0], 1: 0 if rest == "above" else ends[1]}
        finals(h, ru, rc, ends=ends, rc_ends=lsos)
        if not rc_complete:
            h.ops[-1]["position"] = {"0": ends[0], "1": 0}
            h.ops[-1]["last_stable_offset"] = {"0": ends[0], "1": 7}
        return h
    return build


TXN_TORN = {
    # "an unknown transaction some of whose values are in the complete read_committed
    # final reads and some are not"
    "half-committed": Case(_torn(), {"txn-torn": 1}, False, TXN_TEST),
    "unknown-never-completed": Case(_torn(outcome=None), {"txn-torn": 1}, False, TXN_TEST),
    # "An unknown transaction's values may be all present or all absent"
    "all-in": Case(_torn("in"), {}, True, TXN_TEST),
    "all-gone": Case(_torn("both-gone"), {}, True, TXN_TEST),
    # "values at or above a final LSO left aside"
    "rest-above-the-final-lso": Case(_torn("above"), {}, True, TXN_TEST),
    # "judged only when every partition it wrote has a complete read_committed final read"
    "rc-read-incomplete": Case(_torn(rc_complete=False), {}, "unknown", TXN_TEST),
    # "yes, unless a partition that lacks a value went beyond the fault budget or has
    # unclean leader election on"
    "lacking-beyond-budget": Case(_torn(losses=2), {"txn-torn": 1}, True, TXN_TEST),
    "lacking-unclean": Case(_torn(), {"txn-torn": 1}, True, _with(unclean_leader_election=True)),
}


@pytest.mark.parametrize("case", _cases(TXN_TORN))
def test_row_txn_torn(check, case):
    _judge(check, case)


# -- txn-precommitted-read -----------------------------------------------------------------


def _early(read: str = "before", outcome: str = "ok", abort: bool = False,
           end_time: bool = True) -> Callable:
    """A transaction of value 100 (t-0); a read_committed poll returns it `before` or
    `after` the transaction's end_time (or, without one, at all)."""
    def build() -> History:
        h = History()
        h.add(process=5, type="invoke", f="txn", txn_id="tx-5", client="java",
              sends=[["t", 0, 100]], **({"abort": True} if abort else {}))
        if read == "before":
            rc_poll(h, [[0, 0, 100]])
        done = {"offsets": [0]} if outcome == "ok" else {"error": "REQUEST_TIMED_OUT"}
        if end_time:
            done["end_time"] = 1000 * (len(h.ops) + 1) - 1  # commit called just now
        h.add(process=5, type=outcome, f="txn", txn_id="tx-5", **done)
        if read == "after":
            rc_poll(h, [[0, 0, 100]])
        committed = outcome == "ok" and not abort
        finals(h, [[0, 0, 100]], [[0, 0, 100]] if committed else [], ends={0: 2, 1: 0})
        return h
    return build


TXN_PRECOMMITTED_READ = {
    # "a read_committed poll that completed before its transaction's end_time returned
    # a value of that transaction"
    "read-before-commit-was-called": Case(_early(), {"txn-precommitted-read": 1}, False,
                                          TXN_TEST),
    "read-after-commit-was-called": Case(_early("after"), {}, True, TXN_TEST),
    # "for a transaction whose completion lacks end_time (commit never called), any
    # read_committed poll that returned its value" (an unknown one: it may commit later)
    "read-without-end-time": Case(_early("after", "info", end_time=False),
                                  {"txn-precommitted-read": 1}, False, TXN_TEST),
    # "Not judged for a value already counted as txn-aborted-read"
    "aborted-and-read-early": Case(_early(abort=True), {"txn-aborted-read": 1}, False,
                                   TXN_TEST),
}


@pytest.mark.parametrize("case", _cases(TXN_PRECOMMITTED_READ))
def test_row_txn_precommitted_read(check, case):
    _judge(check, case)


# -- hanging-txn -----------------------------------------------------------------------------


def _hang(lso: list[int], *, hwm: int = 5, seconds: float = 4.0, open_offsets: bool = False,
          before_last_txn: bool = False) -> Callable:
    """Observations of t-0, after the last transaction and fault, each `seconds`
    apart, with these LSOs below a high watermark of `hwm` (or with open_txn_offsets
    holding offset 3 instead); T is 3 s."""
    def build() -> History:
        h = History()
        h.observe(isr=[1, 2, 3])
        if not before_last_txn:
            txn(h, [(0, 100), (1, 101)], offsets=[0, 0])
        at = h.ops[-1]["time"]
        for i, value in enumerate(lso):
            extra = ({"open_txn_offsets": [3]} if open_offsets
                     else {"last_stable_offset": value})
            h.observe(isr=[1, 2, 3], high_watermark=hwm, **extra)
            h.ops[-1]["time"] = at + int((i + 1) * seconds * 1e9)
        if before_last_txn:
            txn(h, [(0, 100), (1, 101)], offsets=[0, 0])
            h.ops[-2]["time"] = h.ops[-1]["time"] = h.ops[-3]["time"] + 1
        end = h.ops[-1]["time"]
        finals(h, [[0, 0, 100], [1, 0, 101]], [[0, 0, 100], [1, 0, 101]], ends={0: 2, 1: 2})
        for i, op in enumerate(h.ops[-4:]):
            op["time"] = end + i + 1
        return h
    return build


HANGING_TXN = {
    # "a partition's LSO keeps one value below its high watermark across final
    # observations that span more than T"
    "lso-stuck-past-t": Case(_hang([3, 3]), {"hanging-txn": 1}, False, TXN_TEST),
    "lso-stuck-within-t": Case(_hang([3, 3], seconds=2.0), {}, True, TXN_TEST),
    "lso-moving": Case(_hang([2, 3, 4]), {}, True, TXN_TEST),
    "lso-at-the-high-watermark": Case(_hang([5, 5], hwm=5), {}, True, TXN_TEST),
    # "or one offset stays in its open_txn_offsets across such a span"
    "open-offset-stays": Case(_hang([0, 0], open_offsets=True), {"hanging-txn": 1}, False,
                              TXN_TEST),
    # "after the later of the final heal and the last txn invoke"
    "stuck-before-the-last-txn": Case(_hang([3, 3], before_last_txn=True), {}, True, TXN_TEST),
    # "yes, unless the topic has unclean leader election on (KAFKA-20716)"
    "stuck-with-unclean-election": Case(_hang([3, 3]), {"hanging-txn": 1}, True,
                                        _with(unclean_leader_election=True)),
}


@pytest.mark.parametrize("case", _cases(HANGING_TXN))
def test_row_hanging_txn(check, case):
    _judge(check, case)


def test_hanging_txn_needs_the_timeouts_of_test_json(check):
    """T is transaction_timeout_ms + abort_check_interval_ms + hang_margin_ms: a run
    whose test.json does not give them is not judged for it."""
    test = copy.deepcopy(TXN_TEST)
    del test["transactions"]
    r = check(_hang([3, 3])(), test)
    assert r.counts["hanging-txn"] == 0 and r.valid is True


def test_a_hang_needs_no_txn_line(check):
    """hanging-txn reads the observations and test.json's timeouts alone: a partition
    held below its high watermark past T hangs in a history whose transactional
    producers recorded nothing (the Spark checker once judged no run without a txn
    line; the property tests found it)."""
    h = History()
    h.observe(isr=[1, 2, 3])
    at = h.ops[-1]["time"]
    for i in range(2):
        h.observe(isr=[1, 2, 3], high_watermark=5, last_stable_offset=3)
        h.ops[-1]["time"] = at + int((i + 1) * 4e9)
    r = check(h, TXN_TEST)
    assert r.counts["hanging-txn"] == 1 and r.valid is False


# -- the polls and final reads of version 4 ---------------------------------------------------


def _rc_jump(over: str) -> Callable:
    """A read_committed consumer reads offset 0 then 3 of t-0: over an aborted
    transaction's record and its marker (offsets 1, 2: in the read_uncommitted log
    alone), or over a committed record at 1 that the read_committed final read holds."""
    def build() -> History:
        h = History()
        txn(h, [(0, 100)], offsets=[0])
        txn(h, [(0, 101)], abort=over == "aborted", offsets=[1], process=6)
        txn(h, [(0, 102)], offsets=[3], process=8)
        rc_poll(h, [[0, 0, 100]])
        rc_poll(h, [[0, 3, 102]])
        kept = [[0, 0, 100], [0, 1, 101], [0, 3, 102]]
        committed = kept if over != "aborted" else [[0, 0, 100], [0, 3, 102]]
        finals(h, kept, committed, ends={0: 5, 1: 0})
        return h
    return build


POLLS_V4 = {
    # "A read_committed poll legitimately skips the offsets of aborted transactions'
    # records and of control records: poll-skip and nonmonotonic-poll judge a
    # read_committed poll against the read_committed final read"
    "rc-poll-over-aborted-records": Case(_rc_jump("aborted"), {}, True, TXN_TEST),
    "rc-poll-over-a-committed-record": Case(_rc_jump("committed"), {"poll-skip": 1}, False,
                                            TXN_TEST),
    # "Completeness reads max(largest offset + 1, position)": a trailing marker
    "a-trailing-marker-is-read-past": Case(_committed_pair(), {}, True, TXN_TEST),
}


@pytest.mark.parametrize("case", _cases(POLLS_V4))
def test_v4_polls_and_final_reads(check, case):
    _judge(check, case)


def test_a_committed_pair_without_positions_leaves_the_read_incomplete(check):
    """The same two values without `position`: records reach offset 1 of 2 (the
    marker's), so both final reads stop short of the high watermark: unknown."""
    h = _committed_pair()()
    for op in h.ops:
        op.pop("position", None)
    r = check(h, TXN_TEST)
    assert r.valid == "unknown" and r.incomplete_partitions == {"t-0", "t-1"}


def test_results_count_txn_anomalies_by_protocol(check):
    """results.json counts every txn anomaly per protocol in effect: Java at
    transaction.version 2 (KIP-890), or the older one (librdkafka, or version 1)."""
    for client, version, protocol in (("java", 2, "kip-890"), ("java", 1, "pre-kip-890"),
                                      ("librdkafka", 2, "pre-kip-890")):
        h = _aborted()()
        for op in h.ops:
            if op["f"] == "txn" and op["type"] == "invoke":
                op["client"] = client
        r = check(h, _with(transaction_version=version))
        assert r.by_protocol["txn-aborted-read"] == {
            "kip-890": 1 if protocol == "kip-890" else 0,
            "pre-kip-890": 1 if protocol == "pre-kip-890" else 0}
        assert r.transactions == [{"client": client, "transaction_version": version,
                                   "protocol": protocol, "committed": 0,
                                   "aborted_on_purpose": 1, "failed": 0, "unknown": 0}]


def test_every_v4_row_has_its_cases():
    tables = {"txn-aborted-read": TXN_ABORTED_READ, "txn-lost-write": TXN_LOST_WRITE,
              "txn-torn": TXN_TORN, "txn-precommitted-read": TXN_PRECOMMITTED_READ,
              "hanging-txn": HANGING_TXN}
    for name, table in tables.items():
        counts = [case.counts.get(name, 0) for case in table.values()]
        assert any(counts) and not all(counts), \
            f"{name}: a case that breaks it and one that does not"


# -- malformed lines of version 4 ------------------------------------------------------------

_INVOKE = {"index": 0, "time": 1, "process": 5, "type": "invoke", "f": "txn", "txn_id": "a",
           "sends": [["t", 0, 1]]}
_OK = {"index": 0, "time": 1, "process": 5, "type": "ok", "f": "txn", "txn_id": "a",
       "offsets": [0], "end_time": 0}
_POLL = {"index": 0, "time": 1, "process": 7, "type": "ok", "f": "poll", "topic": "t",
         "records": [], "position": {"0": 1}, "last_stable_offset": {"0": 1}}
_OBSERVE = {"index": 0, "time": 1, "process": -2, "type": "ok", "f": "observe", "topic": "t",
            "partition": 0, "leader": 1, "leader_epoch": 1, "last_stable_offset": 1,
            "open_txn_offsets": [0], "group_offsets": {"g": {"t/0": 1}}}

MALFORMED_V4 = {
    "txn-without-txn-id": {**_INVOKE, "txn_id": None},
    "txn-id-int": {**_INVOKE, "txn_id": 5},
    "invoke-without-sends": {**_INVOKE, "sends": None},
    "sends-not-a-list": {**_INVOKE, "sends": "t"},
    "sends-topic-int": {**_INVOKE, "sends": [[5, 0, 1]]},
    "sends-value-text": {**_INVOKE, "sends": [["t", 0, "1"]]},
    "sends-short": {**_INVOKE, "sends": [["t", 0]]},
    "abort-text": {**_INVOKE, "abort": "yes"},
    "inputs-misaligned": {**_INVOKE, "inputs": [["in", 0, 0, 1], ["in", 0, 1, 2]]},
    "inputs-offset-negative": {**_INVOKE, "inputs": [["in", 0, -1, 1]]},
    "commit-offsets-fraction": {**_INVOKE, "commit_offsets": {"t/0": 1.5}},
    "client-int": {**_INVOKE, "client": 2},
    "offsets-text": {**_OK, "offsets": ["x"]},
    "offsets-negative": {**_OK, "offsets": [-1]},
    "end-time-text": {**_OK, "end_time": "1"},
    "fail-without-error": {**_OK, "type": "fail"},
    "isolation-unknown": {**_POLL, "type": "invoke", "records": None, "isolation": "dirty"},
    "position-negative": {**_POLL, "position": {"0": -1}},
    "position-key-text": {**_POLL, "position": {"x": 1}},
    "poll-lso-int": {**_POLL, "last_stable_offset": 1},
    "observe-lso-object": {**_OBSERVE, "last_stable_offset": {"0": 1}},
    "observe-lso-negative": {**_OBSERVE, "last_stable_offset": -1},
    "open-txn-offsets-text": {**_OBSERVE, "open_txn_offsets": ["1"]},
    "group-offsets-text": {**_OBSERVE, "group_offsets": {"g": {"t/0": "1"}}},
    "sends-on-a-send-line": {"index": 0, "time": 1, "process": 0, "type": "invoke", "f": "send",
                             "topic": "t", "partition": 0, "acks": "all", "value": 1,
                             "sends": 3},
}
WELL_FORMED_V4 = {
    "invoke": _INVOKE, "ok": _OK, "poll": _POLL, "observe": _OBSERVE,
    "invoke-with-everything": {**_INVOKE, "abort": True, "inputs": [["in", 0, 3, 9]],
                               "group": "g", "commit_offsets": {"in/0": 4}, "client": "java"},
    "ok-with-a-null-offset": {**_OK, "offsets": [None]},
    "info": {**_OK, "type": "info", "error": "X", "offsets": []},
    "poll-invoke-committed": {**_POLL, "type": "invoke", "records": None,
                              "isolation": "read_committed", "group": "g"},
}


def _one_line(op: dict) -> str:
    return json.dumps({k: v for k, v in op.items() if v is not None}) + "\n"


@pytest.mark.parametrize("name", sorted(MALFORMED_V4))
def test_a_v4_line_of_the_wrong_shape_is_malformed(check, name):
    with pytest.raises(MalformedLine) as err:
        check(_one_line(MALFORMED_V4[name]))
    assert err.value.line == 1


@pytest.mark.parametrize("name", sorted(WELL_FORMED_V4))
def test_a_v4_line_of_the_right_shape_is_well_formed(check, name):
    check(_one_line(WELL_FORMED_V4[name]))
