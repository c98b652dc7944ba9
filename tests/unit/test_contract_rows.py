"""Every row of shared/HISTORY.md's anomaly table, and its malformed values, tested
from the row's own words: for each clause a small history that breaks exactly
that sentence, and one that nearly does and must pass.

The cases are written from the contract's text, not from either checker's code;
each names the words it tests. The reference checker (tests/reference_checker.py)
judges them here; tests/unit/test_reference_cases_through_spark.py runs every
one through the Spark checker too, which must agree on every count. No Spark
here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from reference_checker import ANOMALIES, MalformedLine, Reference, reference_check
from test_reference_checker import TEST, History, _log


@pytest.fixture
def check(tmp_path):
    """The reference's word on a history (one file per call)."""
    calls = iter(range(1000))

    def run(h: History | str | bytes, test: dict | None = TEST) -> Reference:
        path = tmp_path / f"h{next(calls)}" / "history.jsonl"
        path.parent.mkdir()
        if isinstance(h, bytes):  # a file that need not be UTF-8
            path.write_bytes(h)
        else:
            path.write_text(h if isinstance(h, str) else h.text())
        return reference_check(path, test)
    return run


@dataclass(frozen=True)
class Case:
    """A history (built by `build`), its test.json, the counts the contract gives
    (every other anomaly 0) and its verdict."""

    build: Callable[[], History]
    counts: dict[str, int] = field(default_factory=dict)
    valid: bool | str = True
    test: dict | None = None


def _judge(check, case: Case) -> Reference:
    r = check(case.build(), TEST if case.test is None else case.test)
    want = dict.fromkeys(ANOMALIES, 0) | case.counts
    assert r.counts == want, {k: (r.counts[k], v) for k, v in want.items() if r.counts[k] != v}
    assert r.valid == case.valid
    return r


def _cases(table: dict[str, Case]) -> list:
    return [pytest.param(case, id=name) for name, case in table.items()]


def _with(**changes) -> dict:
    """TEST with topic t's or the run's settings changed."""
    test = copy.deepcopy(TEST)
    for key, value in changes.items():
        if key in ("min_insync_replicas", "unclean_leader_election"):
            test["topics"]["t"][key] = value
        else:
            test[key] = value
    return test


def _read_back(*observations: dict, faults: tuple = (), after: tuple = ()) -> Callable:
    """Value 0 acked at offset 0 and read back whole; the observations of t-0 in
    between (a dict's keys go to History.observe; `fault` entries, a tuple of
    (kind, node, outcome), are faults at that point), then `after`'s faults."""
    def build() -> History:
        h = History()
        h.send(0, 0, 0)
        for step in (*faults, *observations):
            _step(h, step)
        for step in after:
            _step(h, step)
        h.final([[0, 0, 0]], seek={0: 0}, hwm={0: 1})
        return h
    return build


def _step(h: History, step) -> None:
    if isinstance(step, dict):
        h.observe(**step)
        return
    kind, node, outcome, *detail = step
    said = {"detail": detail[0]} if detail else {}
    h.add(process=-1, type="invoke", f="fault", fault=kind, nodes=[node] if node else [],
          **said)
    if outcome is not None:
        h.add(process=-1, type=outcome, f="fault", fault=kind,
              nodes=[node] if node else [], **said)


# -- durability and log linearizability ----------------------------------------------


def _lost(acks: str = "all", kept: bool = False, losses: int = 0) -> Callable:
    def build() -> History:
        h = History()
        h.observe(isr=[1, 2, 3])
        h.send(0, 0, None if acks == "0" else 0, acks=acks)
        for broker in (2, 3)[:losses]:
            _step(h, ("page-cache-loss", f"broker-{broker}", "ok"))
        h.final(_log([0]) if kept else [], seek={0: 0}, hwm={0: 1 if kept else 0})
        return h
    return build


LOST_WRITE = {
    # "an ok send whose value is absent from the final log of its partition";
    # "acks=all: yes, unless the partition went beyond the fault budget"
    "acks-all-absent": Case(_lost(), {"lost-write": 1}, False),
    "acks-all-present": Case(_lost(kept=True)),
    # "acks 0/1: reported, not bad by itself"
    "acks-1-absent": Case(_lost("1"), {"lost-write": 1}, True),
    "acks-0-absent": Case(_lost("0"), {"lost-write": 1}, True),
    # budget min ISR - 1 = 1: one loss within it (bad), two beyond it (expected)
    "within-budget": Case(_lost(losses=1), {"lost-write": 1}, False),
    "beyond-budget": Case(_lost(losses=2), {"lost-write": 1}, True),
}


@pytest.mark.parametrize("case", _cases(LOST_WRITE))
def test_row_lost_write(check, case):
    _judge(check, case)


def _read_then_final(read_at: int, final: list, acks: str = "1") -> Callable:
    def build() -> History:
        h = History()
        h.send(0, 5, 0, acks=acks)
        h.poll(1, [[0, read_at, 5]])
        h.final(final, seek={0: 0}, hwm={0: len(final)})
        return h
    return build


LOST_COMMITTED_READ = {
    # "a value that a non-final poll returned is absent from the final log" (its
    # acks=1 send is then a lost-write too, reported, not bad)
    "absent": Case(_read_then_final(0, []), {"lost-committed-read": 1, "lost-write": 1},
                   False),
    # "or sits at another offset there"
    "moved": Case(_read_then_final(0, [[0, 0, 6], [0, 1, 5]]),
                  {"lost-committed-read": 1, "inconsistent-offset": 1}, False),
    "kept": Case(_read_then_final(0, [[0, 0, 5]])),
}


@pytest.mark.parametrize("case", _cases(LOST_COMMITTED_READ))
def test_row_lost_committed_read(check, case):
    _judge(check, case)


def _two_sends(second_offset: int) -> Callable:
    """Sends 0 and 1 in flight together (neither ok before the other's invoke)."""
    def build() -> History:
        h = History()
        h.invoke_send(0, 0)
        h.invoke_send(1, 1)
        h.end_send(0, 0, 0)
        h.end_send(1, 1, second_offset)
        h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
        return h
    return build


INCONSISTENT_OFFSET = {
    # "one (partition, offset) holds two different values across acked sends and polls"
    "two-acked-at-one-offset": Case(_two_sends(0), {"inconsistent-offset": 1}, False),
    "each-its-own": Case(_two_sends(1)),
}


@pytest.mark.parametrize("case", _cases(INCONSISTENT_OFFSET))
def test_row_inconsistent_offset(check, case):
    _judge(check, case)


def _doubled(twice: bool) -> Callable:
    def build() -> History:
        h = History()
        h.send(0, 0, 0)
        h.final(_log([0, 0] if twice else [0]), seek={0: 0}, hwm={0: 2 if twice else 1})
        return h
    return build


DUPLICATE = {
    # "one value at more than one offset of the final log": "yes with idempotent
    # producers; else reported"
    "idempotent": Case(_doubled(True), {"duplicate": 1}, False, _with(idempotent_producers=True)),
    "not-idempotent": Case(_doubled(True), {"duplicate": 1}, True),
    "once": Case(_doubled(False), {}, True, _with(idempotent_producers=True)),
}


@pytest.mark.parametrize("case", _cases(DUPLICATE))
def test_row_duplicate(check, case):
    _judge(check, case)


def _read_failed(outcome: str) -> Callable:
    def build() -> History:
        h = History()
        h.invoke_send(0, 5)
        h.add(process=0, type=outcome, f="send", topic="t", partition=0, acks="all", value=5,
              error="NOT_ENOUGH_REPLICAS")
        h.poll(1, [[0, 0, 5]])
        h.final(_log([5]), seek={0: 0}, hwm={0: 1})
        return h
    return build


ABORTED_READ = {
    # "a poll returned a value whose send ended in fail"
    "send-failed": Case(_read_failed("fail"), {"aborted-read": 1}, False),
    # info: it may have happened; reading it is no anomaly
    "send-info": Case(_read_failed("info")),
}


@pytest.mark.parametrize("case", _cases(ABORTED_READ))
def test_row_aborted_read(check, case):
    _judge(check, case)


def _ordered(b_after_a: bool) -> Callable:
    """A acked at offset 1, B at offset 0: B invoked after A's ok, or before it."""
    def build() -> History:
        h = History()
        if b_after_a:
            h.send(0, 10, 1)
            h.send(1, 20, 0)
        else:
            h.invoke_send(0, 10)
            h.invoke_send(1, 20)
            h.end_send(0, 10, 1)
            h.end_send(1, 20, 0)
        h.final(_log([20, 10]), seek={0: 0}, hwm={0: 2})
        return h
    return build


REALTIME_ORDER = {
    # "sends A and B to one partition, A ok before B was invoked, both in the final
    # log, but B's offset is lower"
    "b-invoked-after-a-ok": Case(_ordered(True), {"realtime-order": 1}, False),
    "concurrent": Case(_ordered(False)),
}


@pytest.mark.parametrize("case", _cases(REALTIME_ORDER))
def test_row_realtime_order(check, case):
    _judge(check, case)


def _polls(first: list, second: list, seek: dict | None = None,
           final: tuple = (0, 1, 2)) -> Callable:
    def build() -> History:
        h = History()
        for v in final:
            h.send(0, v, v)
        h.poll(1, first)
        h.poll(1, second, seek=seek)
        h.final(_log(list(final)), seek={0: 0}, hwm={0: len(final)})
        return h
    return build


NONMONOTONIC_POLL = {
    # "a process's poll (no seek) returns an offset <= the last offset its previous
    # poll returned"
    "went-back": Case(_polls([[0, 1, 1]], [[0, 1, 1]]), {"nonmonotonic-poll": 1}, False),
    "sought-back": Case(_polls([[0, 1, 1]], [[0, 1, 1]], seek={0: 1})),
}


@pytest.mark.parametrize("case", _cases(NONMONOTONIC_POLL))
def test_row_nonmonotonic_poll(check, case):
    _judge(check, case)


POLL_SKIP = {
    # "a process's poll (no seek) jumps over offsets that the final log holds"
    "jumped": Case(_polls([[0, 0, 0]], [[0, 2, 2]]), {"poll-skip": 1}, False),
    # a seek positions the process: the next record should be the sought offset
    "sought-ahead": Case(_polls([[0, 0, 0]], [[0, 2, 2]], seek={0: 2})),
    "next": Case(_polls([[0, 0, 0]], [[0, 1, 1]])),
}


@pytest.mark.parametrize("case", _cases(POLL_SKIP))
def test_row_poll_skip(check, case):
    _judge(check, case)


def _garbage(value) -> Callable:
    def build() -> History:
        h = History()
        h.send(0, 0, 0)
        h.poll(1, [[0, 0, value]])
        h.final(_log([0]), seek={0: 0}, hwm={0: 1})
        return h
    return build


GARBAGE_READ = {
    # "a polled record whose value is null (not written by this run)"; a polled
    # record at an offset whose final value differs is also an inconsistent offset
    # (a null value claims none)
    "null-value": Case(_garbage(None), {"garbage-read": 1}, False),
    "its-value": Case(_garbage(0)),
}


@pytest.mark.parametrize("case", _cases(GARBAGE_READ))
def test_row_garbage_read(check, case):
    _judge(check, case)


HWM_REGRESSION = {
    # "a partition's observed high watermark goes down over time"
    "down": Case(_read_back({"high_watermark": 5}, {"high_watermark": 3}),
                 {"hwm-regression": 1}, False),
    "up": Case(_read_back({"high_watermark": 3}, {"high_watermark": 5})),
    # another partition's lower mark is no regression of this one
    "other-partition": Case(_read_back({"high_watermark": 5},
                                       {"high_watermark": 3, "partition": 1})),
}


@pytest.mark.parametrize("case", _cases(HWM_REGRESSION))
def test_row_hwm_regression(check, case):
    _judge(check, case)


# -- KIP-966 invariants of one observation ---------------------------------------------


ELR_INVARIANT = {
    # "ELR and ISR overlap"
    "overlap": Case(_read_back({"isr": [1], "elr": [1]}), {"elr-invariant": 1}, False),
    "apart": Case(_read_back({"isr": [1], "elr": [2]})),
    # "ELR ... not empty while the ISR has >= min ISR members"
    "elr-with-full-isr": Case(_read_back({"isr": [1, 2], "elr": [3]}), {"elr-invariant": 1},
                              False),
    "elr-below-min-isr": Case(_read_back({"isr": [1], "elr": [3]})),
    # "... or LastKnownELR not empty while the ISR has >= min ISR members"
    "lkelr-with-full-isr": Case(_read_back({"isr": [1, 2, 3], "lkelr": [2]}),
                                {"elr-invariant": 1}, False),
    "lkelr-at-min-isr": Case(_read_back({"isr": [1, 3], "lkelr": [2]}),
                             {"elr-invariant": 1}, False),
    "lkelr-below-min-isr": Case(_read_back({"isr": [], "leader": -1, "lkelr": [2]})),
    # null (the cluster cannot say) is not empty: it breaks nothing, the other list
    # is still judged
    "elr-null-lkelr-kept": Case(_read_back({"isr": [1, 2, 3], "elr": None, "lkelr": [2]}),
                                {"elr-invariant": 1}, False),
    "both-null": Case(_read_back({"isr": [1, 2, 3], "elr": None, "lkelr": None})),
    "both-empty": Case(_read_back({"isr": [1, 2, 3], "elr": [], "lkelr": []})),
    # "the observation's min_isr when present, else test.json's"
    "line-min-isr-higher": Case(_read_back({"isr": [1, 2], "lkelr": [3], "min_isr": 3})),
    "line-min-isr-lower": Case(_read_back({"isr": [1], "elr": [2], "min_isr": 1}),
                               {"elr-invariant": 1}, False),
    "test-json-min-isr": Case(_read_back({"isr": [1, 2], "lkelr": [3]}),
                              {"elr-invariant": 1}, False),
    "test-json-min-isr-3": Case(_read_back({"isr": [1, 2], "lkelr": [3]}), {}, True,
                                _with(min_insync_replicas=3)),
}


@pytest.mark.parametrize("case", _cases(ELR_INVARIANT))
def test_row_elr_invariant(check, case):
    _judge(check, case)


ELR_OUTSIDE_REPLICAS = {
    # "elr or last_known_elr holds a broker that is not in its replicas"
    "elr": Case(_read_back({"isr": [1], "elr": [4], "replicas": [1, 2, 3]}),
                {"elr-outside-replicas": 1}, False),
    "lkelr": Case(_read_back({"isr": [], "leader": -1, "elr": [2], "lkelr": [4],
                              "replicas": [1, 2, 3]}),
                  {"elr-outside-replicas": 1}, False),
    "inside": Case(_read_back({"isr": [1], "elr": [2], "lkelr": [3], "replicas": [1, 2, 3]})),
    # "only where replicas is present"
    "no-replicas": Case(_read_back({"isr": [1], "elr": [4]})),
}


@pytest.mark.parametrize("case", _cases(ELR_OUTSIDE_REPLICAS))
def test_row_elr_outside_replicas(check, case):
    _judge(check, case)


_L1_B2 = {"isr": [1], "elr": [2]}  # leader 1 alone in the ISR, broker 2 in ELR
_GONE = {"isr": [1], "elr": []}  # broker 2 in neither


ELR_MEMBER_DROPPED = {
    # "a broker in the first's ISR or ELR is in neither of the second's, the
    # second's ISR + ELR is below the min ISR in effect, and that broker's most
    # recent shutdown before the second observation was not unclean"
    "from-elr": Case(_read_back(_L1_B2, _GONE), {"elr-member-dropped": 1}, False),
    "from-isr": Case(_read_back({"isr": [1, 2]}, _GONE), {"elr-member-dropped": 1}, False),
    "into-elr": Case(_read_back({"isr": [1, 2]}, _L1_B2)),
    "not-below": Case(_read_back({"isr": [1, 2], "elr": []}, {"isr": [1, 3], "elr": []})),
    # counted per (observation, broker that left)
    "two-left": Case(_read_back({"isr": [1, 2, 3]}, _GONE), {"elr-member-dropped": 2}, False),
    # "or there is none" / a stop: not unclean
    "after-stop": Case(_read_back(_L1_B2, ("stop", "broker-2", "ok"), _GONE),
                       {"elr-member-dropped": 1}, False),
    "kill-then-stop": Case(_read_back(_L1_B2, ("kill", "broker-2", "ok"),
                                      ("stop", "broker-2", "ok"), _GONE),
                           {"elr-member-dropped": 1}, False),
    # the excuse: "the last of the kill, page-cache-loss, disk-fault and stop faults
    # that name its node, ended ok or info before the second observation", unclean
    "after-kill": Case(_read_back(_L1_B2, ("kill", "broker-2", "ok"), _GONE)),
    "after-kill-info": Case(_read_back(_L1_B2, ("kill", "broker-2", "info"), _GONE)),
    "after-page-cache-loss": Case(_read_back(_L1_B2, ("page-cache-loss", "broker-2", "ok"),
                                             _GONE)),
    "after-disk-fault": Case(_read_back(_L1_B2, ("disk-fault", "broker-2", "ok",
                                                 {"dropped": False}), _GONE)),
    "stop-then-kill": Case(_read_back(_L1_B2, ("stop", "broker-2", "ok"),
                                      ("kill", "broker-2", "ok"), _GONE)),
    "kill-failed": Case(_read_back(_L1_B2, ("kill", "broker-2", "fail"), _GONE),
                        {"elr-member-dropped": 1}, False),
    "kill-of-another": Case(_read_back(_L1_B2, ("kill", "broker-3", "ok"), _GONE),
                            {"elr-member-dropped": 1}, False),
    "kill-after-second": Case(_read_back(_L1_B2, _GONE,
                                         after=(("kill", "broker-2", "ok"),)),
                              {"elr-member-dropped": 1}, False),
    # "no min-isr-change, feature-change or reassign fault between them"
    "min-isr-change-between": Case(_read_back(_L1_B2, (
        "min-isr-change", None, "ok", {"topic": "t", "from": 2, "to": 2}), _GONE)),
    "feature-change-between": Case(_read_back(_L1_B2, (
        "feature-change", None, "ok",
        {"feature": "eligible.leader.replicas.version", "from": 1, "to": 1}), _GONE)),
    "reassign-between": Case(_read_back(_L1_B2, (
        "reassign", None, "ok", {"topic": "t", "partition": 0}), _GONE)),
    "min-isr-change-before": Case(_read_back(("min-isr-change", None, "ok", {
        "topic": "t", "from": 2, "to": 2}), _L1_B2, _GONE), {"elr-member-dropped": 1}, False),
    # "Judged only where both observations have elr_feature >= 1 (or test.json says
    # ELR on and neither says otherwise)"
    "elr-off-in-test-json": Case(_read_back(_L1_B2, _GONE), {}, True,
                                 _with(elr_enabled=False)),
    "elr-on-in-lines": Case(_read_back({**_L1_B2, "elr_feature": 1},
                                       {**_GONE, "elr_feature": 1}),
                            {"elr-member-dropped": 1}, False, _with(elr_enabled=False)),
    "elr-feature-0": Case(_read_back({**_L1_B2, "elr_feature": 1},
                                     {**_GONE, "elr_feature": 0})),
    # "the same min ISR in effect"
    "min-isr-differs": Case(_read_back({**_L1_B2, "min_isr": 2}, {**_GONE, "min_isr": 3})),
    "min-isr-same": Case(_read_back({**_L1_B2, "min_isr": 2}, _GONE),
                         {"elr-member-dropped": 1}, False),
    # "the same replicas (where present)"
    "replicas-differ": Case(_read_back({**_L1_B2, "replicas": [1, 2, 3]},
                                       {**_GONE, "replicas": [1, 3, 4]})),
    "replicas-same-set": Case(_read_back({**_L1_B2, "replicas": [1, 2, 3]},
                                         {**_GONE, "replicas": [3, 2, 1]}),
                              {"elr-member-dropped": 1}, False),
    # the topic's unclean leader election: an unclean election clears the ELR
    # (docs/CHECKING.md, where we depart)
    "unclean-election-on": Case(_read_back(_L1_B2, _GONE), {}, True,
                                _with(unclean_leader_election=True)),
    # a null ISR or ELR: the cluster could not say, nothing is judged
    "elr-null": Case(_read_back(_L1_B2, {"isr": [1], "elr": None, "lkelr": None})),
    # consecutive observations of a partition: another partition's in between counts not
    "other-partition-between": Case(_read_back(_L1_B2, {"partition": 1}, _GONE),
                                    {"elr-member-dropped": 1}, False),
}


@pytest.mark.parametrize("case", _cases(ELR_MEMBER_DROPPED))
def test_row_elr_member_dropped(check, case):
    r = _judge(check, case)
    # a pair found was a pair judged
    assert r.judged["elr-member-dropped"] >= min(1, r.counts["elr-member-dropped"])


def _election(leader: int, elr=(2,), epoch_step: int = 1, *faults, isr=(),
              after_elr=None) -> Callable:
    """Leaderless t-0 with an empty ISR and ELR `elr` (epoch 5), then `leader` elected
    (epoch 5 + epoch_step) with ISR [leader]; `faults` in between. The second keeps
    the old ELR but the leader (`after_elr`), so ISR + ELR stays at min ISR."""
    rest = [b for b in elr if b != leader] if after_elr is None else list(after_elr)
    first = {"leader": -1, "isr": None if isr is None else list(isr), "elr": list(elr),
             "lkelr": [1], "leader_epoch": 5}
    second = {"leader": leader, "isr": [leader], "elr": rest, "leader_epoch": 5 + epoch_step}
    return _read_back(first, *faults, second)


ELECTION_OUTSIDE_ELR = {
    # "An observation whose leader is >= 0 follows an observation of the same
    # partition with leader -1, an empty ISR and a non-empty ELR; the new leader
    # was in neither"
    "outside": Case(_election(1), {"election-outside-elr": 1}, False),
    "from-elr": Case(_election(2)),
    "from-elr-of-two": Case(_election(3, (2, 3))),
    # "not every member of that ELR had its most recent shutdown unclean before the
    # second observation"
    "member-unclean": Case(_election(1, (2,), 1, ("kill", "broker-2", "ok"))),
    "member-page-cache-loss": Case(_election(1, (2,), 1,
                                             ("page-cache-loss", "broker-2", "ok"))),
    "member-stopped": Case(_election(1, (2,), 1, ("stop", "broker-2", "ok")),
                           {"election-outside-elr": 1}, False),
    "one-of-two-unclean": Case(_election(1, (2, 3), 1, ("kill", "broker-3", "ok")),
                               {"election-outside-elr": 1}, False),
    "both-unclean": Case(_election(1, (2, 3), 1, ("kill", "broker-2", "ok"),
                                   ("kill", "broker-3", "ok"))),
    # "the topic's unclean leader election is off (test.json)"
    "unclean-election-on": Case(_election(1), {}, True, _with(unclean_leader_election=True)),
    # "the same ELR-on, min ISR, replicas and no-admin-fault conditions"
    "elr-off": Case(_election(1), {}, True, _with(elr_enabled=False)),
    "min-isr-change-between": Case(_election(1, (2,), 1, (
        "min-isr-change", None, "info", {"topic": "t", "from": 2, "to": 1}))),
    # not leaderless before, or an ISR that is not empty (null: cannot say)
    "isr-null": Case(_election(1, isr=None)),
    # one election: a leader epoch that moved by more means the observer missed a
    # leader in between (docs/CHECKING.md, where we depart)
    "epoch-jumped": Case(_election(1, (2,), 2)),
}


@pytest.mark.parametrize("case", _cases(ELECTION_OUTSIDE_ELR))
def test_row_election_outside_elr(check, case):
    r = _judge(check, case)
    assert r.judged["election-outside-elr"] >= r.counts["election-outside-elr"]


#: test.json's `observer` (contract v4): the fenced list read first, by the broker
#: that then read the partition
_READS = {"fenced_first": True, "same_broker": True}
_OBSERVED = _with(observer=_READS)
_IN_ELR = {"isr": [1], "elr": [2], "fenced": []}  # broker 2 in the ELR, unfenced
_FENCED = {"isr": [1], "elr": [2], "fenced": [2]}
_KILL, _START = ("kill", "broker-2", "ok"), ("start", "broker-2", "ok")


def _restarted(*steps, shutdown=_KILL, start=_START, test=_OBSERVED, found: int = 1) -> Case:
    """Broker 2 in the ELR, shut down, listed fenced, started, then `steps` (the
    first listing it unfenced, by default still in the ELR)."""
    steps = steps or (_IN_ELR,)
    return Case(_read_back(_IN_ELR, shutdown, _FENCED, *((start,) if start else ()),
                           *steps), {"elr-member-unclean": found} if found else {},
                not found, test)


ELR_MEMBER_UNCLEAN = {
    # "an observe with ELR on whose elr holds broker b, where b's most recent
    # shutdown was unclean (... a kill or page-cache-loss that ended ok); a start of
    # that node ended ok after it; an earlier observation after the shutdown listed
    # b in fenced; and this is the first later observation that lists b as unfenced"
    "after-kill": _restarted(),
    "after-page-cache-loss": _restarted(shutdown=("page-cache-loss", "broker-2", "ok")),
    "removed": _restarted({"isr": [1], "elr": [], "fenced": []}, found=0),
    "removed-then-back-in-the-isr": _restarted(
        {"isr": [1], "elr": [], "fenced": []}, {"isr": [1, 2], "elr": [], "fenced": []},
        {"isr": [1], "elr": [2], "fenced": []}, found=0),
    # the last shutdown a stop, a kill that did not end ok, a disk fault (its detail
    # never says the process exited)
    "after-stop": _restarted(shutdown=("stop", "broker-2", "ok"), found=0),
    "kill-then-stop": Case(_read_back(_IN_ELR, _KILL, ("stop", "broker-2", "ok"), _FENCED,
                                      _START, _IN_ELR), {}, True, _OBSERVED),
    "kill-info": _restarted(shutdown=("kill", "broker-2", "info"), found=0),
    "after-disk-fault": _restarted(shutdown=("disk-fault", "broker-2", "ok",
                                             {"dropped": True}), found=0),
    "kill-of-another": _restarted(shutdown=("kill", "broker-3", "ok"),
                                  start=("start", "broker-3", "ok"), found=0),
    # "a start of that node ended ok after it"
    "no-start": _restarted(start=None, found=0),
    "start-info": _restarted(start=("start", "broker-2", "info"), found=0),
    "start-of-another": _restarted(start=("start", "broker-3", "ok"), found=0),
    # "an earlier observation after the shutdown listed b in fenced"
    "never-listed-fenced": Case(_read_back(_IN_ELR, _KILL, _START, _IN_ELR), {}, True,
                                _OBSERVED),
    "listed-fenced-before-the-shutdown": Case(_read_back(_FENCED, _KILL, _START, _IN_ELR),
                                              {}, True, _OBSERVED),
    # "the first later observation that lists b as unfenced": an observation without
    # a fenced list lists nothing
    "not-the-first": _restarted({"isr": [1], "elr": [], "fenced": []}, _IN_ELR, found=0),
    "no-list-then-unfenced": _restarted({"isr": [1], "elr": [2]}, _IN_ELR),
    # "with no observation in between showing b in the ISR"
    "in-the-isr-between": _restarted({"isr": [1, 2], "elr": [], "fenced": [2]}, _IN_ELR,
                                     found=0),
    # "Judged only where test.json's observer says fenced_first and same_broker"
    "no-observer": _restarted(test=TEST, found=0),
    "not-the-same-broker": _restarted(test=_with(observer={**_READS, "same_broker": False}),
                                      found=0),
    "not-read-first": _restarted(test=_with(observer={**_READS, "fenced_first": False}),
                                 found=0),
    # "and no feature-change lies between that start and the observation"
    "feature-change-after-the-start": _restarted(
        ("feature-change", None, "ok",
         {"feature": "eligible.leader.replicas.version", "from": 1, "to": 1}),
        _IN_ELR, found=0),
    "feature-change-before-the-kill": Case(_read_back(
        ("feature-change", None, "ok",
         {"feature": "eligible.leader.replicas.version", "from": 1, "to": 1}),
        _IN_ELR, _KILL, _FENCED, _START, _IN_ELR),
        {"elr-member-unclean": 1}, False, _OBSERVED),
    # "with ELR on"
    "elr-feature-0": _restarted({**_IN_ELR, "elr_feature": 0}, found=0),
    "elr-off-in-test-json": _restarted(test=_with(observer=_READS, elr_enabled=False),
                                       found=0),
}


@pytest.mark.parametrize("case", _cases(ELR_MEMBER_UNCLEAN))
def test_row_elr_member_unclean(check, case):
    r = _judge(check, case)
    assert r.judged["elr-member-unclean"] >= r.counts["elr-member-unclean"]


_LEVEL_0 = {"isr": [1], "elr": [2], "elr_feature": 0}

ELR_WHILE_DISABLED = {
    # "elr_feature is 0 and elr or last_known_elr is not empty, once the partition
    # has changed at level 0"
    "leader-changed": Case(_read_back(_LEVEL_0, {**_LEVEL_0, "leader": 3}),
                           {"elr-while-disabled": 1}, False),
    "epoch-changed": Case(_read_back(_LEVEL_0, {**_LEVEL_0, "leader_epoch": 2}),
                          {"elr-while-disabled": 1}, False),
    "isr-changed-lkelr-kept": Case(_read_back(
        _LEVEL_0, {"isr": [1, 3], "elr": [], "lkelr": [2], "elr_feature": 0, "min_isr": 3}),
        {"elr-while-disabled": 1}, False),
    "replicas-changed": Case(_read_back({**_LEVEL_0, "replicas": [1, 2, 3]},
                                        {**_LEVEL_0, "replicas": [1, 2, 4]}),
                             {"elr-while-disabled": 1}, False),
    # before the next partition change a kept ELR is no anomaly
    "no-change-yet": Case(_read_back(_LEVEL_0, _LEVEL_0)),
    "changed-and-cleared": Case(_read_back(_LEVEL_0, {"isr": [1], "elr": [], "lkelr": [],
                                                      "elr_feature": 0, "leader": 3})),
}


@pytest.mark.parametrize("case", _cases(ELR_WHILE_DISABLED))
def test_row_elr_while_disabled(check, case):
    _judge(check, case)


FENCED_LEADER = {
    # "an observe names as leader a broker that the same observation lists in fenced"
    "leader-fenced": Case(_read_back({"leader": 2, "isr": [2, 3], "fenced": [2]}),
                          {"fenced-leader": 1}, False),
    "other-fenced": Case(_read_back({"leader": 2, "isr": [2, 3], "fenced": [1]})),
    "fenced-unknown": Case(_read_back({"leader": 2, "isr": [2, 3]})),
}


@pytest.mark.parametrize("case", _cases(FENCED_LEADER))
def test_row_fenced_leader(check, case):
    _judge(check, case)


_NO_LEADER = {"leader": -1, "isr": [], "elr": []}

LAST_KNOWN_ELR_INVALID = {
    # "no leader and empty ISR and ELR whose last_known_elr holds -1 or an id that is
    # no broker of test.json's nodes"
    "minus-one": Case(_read_back({**_NO_LEADER, "lkelr": [-1]}),
                      {"last-known-elr-invalid": 1}, False),
    "no-broker": Case(_read_back({**_NO_LEADER, "lkelr": [7]}),
                      {"last-known-elr-invalid": 1}, False),
    "a-broker": Case(_read_back({**_NO_LEADER, "lkelr": [3]})),
    "with-a-leader": Case(_read_back({"leader": 1, "isr": [1], "elr": [], "lkelr": [-1]})),
}


@pytest.mark.parametrize("case", _cases(LAST_KNOWN_ELR_INVALID))
def test_row_last_known_elr_invalid(check, case):
    _judge(check, case)


def _replicas(second: list, hwm: int = 2) -> Callable:
    def build() -> History:
        h = History()
        h.send(0, 0, 0)
        h.send(0, 1, 1)
        h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
        h.replica(1, [[0, 0, 1], [1, 1, 1], [2, 9, 1]], hwm)
        h.replica(2, second, hwm)
        return h
    return build


REPLICA_DIVERGENCE = {
    # "two replica lines of one partition hold different values at the same offset
    # below the lower of the final high watermarks"
    "differs-below": Case(_replicas([[0, 0, 1], [1, 7, 1]]), {"replica-divergence": 1}, False),
    # "or one replica lacks an offset below that watermark that another holds"
    "lacks-below": Case(_replicas([[0, 0, 1]]), {"replica-divergence": 1}, False),
    "differs-above": Case(_replicas([[0, 0, 1], [1, 1, 1], [2, 8, 1]])),
}


@pytest.mark.parametrize("case", _cases(REPLICA_DIVERGENCE))
def test_row_replica_divergence(check, case):
    _judge(check, case)


def _incomplete(acks: str, reach: bool) -> Callable:
    """Values 0 and 1 acked; the final read stops at offset 0 of a high watermark 2
    (incomplete), or reads both (complete)."""
    def build() -> History:
        h = History()
        h.send(0, 0, 0)
        h.send(0, 1, None if acks == "0" else 1, acks=acks)
        h.final(_log([0, 1] if reach else [0]), seek={0: 0}, hwm={0: 2})
        return h
    return build


UNSEEN = {
    # "an ok send absent from the final log of a partition whose final read is
    # incomplete": "makes the verdict unknown if acks=all"
    "acks-all": Case(_incomplete("all", False), {"unseen": 1}, "unknown"),
    # acks 0: no offset, so never a lost-write of an incomplete log
    "acks-0": Case(_incomplete("0", False), {"unseen": 1}, "unknown"),
    "complete": Case(_incomplete("all", True)),
}


@pytest.mark.parametrize("case", _cases(UNSEEN))
def test_row_unseen(check, case):
    _judge(check, case)


def test_every_row_of_the_table_has_its_cases():
    """The 19 rows of HISTORY.md's anomaly table, each broken and nearly broken, and
    version 4's: elr-member-unclean here, the transactions' five in
    tests/unit/test_contract_rows_v4.py."""
    import test_contract_rows_v4 as v4

    tables = (LOST_WRITE, LOST_COMMITTED_READ, INCONSISTENT_OFFSET, DUPLICATE, ABORTED_READ,
              REALTIME_ORDER, NONMONOTONIC_POLL, POLL_SKIP, GARBAGE_READ, HWM_REGRESSION,
              ELR_INVARIANT, ELR_OUTSIDE_REPLICAS, ELR_MEMBER_DROPPED, ELECTION_OUTSIDE_ELR,
              ELR_MEMBER_UNCLEAN, ELR_WHILE_DISABLED, FENCED_LEADER, LAST_KNOWN_ELR_INVALID,
              REPLICA_DIVERGENCE, UNSEEN, v4.TXN_ABORTED_READ, v4.TXN_LOST_WRITE, v4.TXN_TORN,
              v4.TXN_PRECOMMITTED_READ, v4.HANGING_TXN)
    assert len(tables) == len(ANOMALIES) == 25
    broken = {name for table in tables for case in table.values() for name in case.counts}
    assert broken == set(ANOMALIES)
    for table in tables:
        assert any(not case.counts for case in table.values()), table


# -- HISTORY.md's first section: values no cluster can report ----------------------------


def _one_line(**line) -> Callable:
    """A clean history with `line` (its fields over a base line of its kind) second."""
    def build() -> History:
        h = History()
        h.send(0, 0, 0)
        h.add(**line)
        h.final([[0, 0, 0]], seek={0: 0}, hwm={0: 1})
        return h
    return build


_OBS = {"process": -2, "type": "ok", "f": "observe", "topic": "t", "partition": 0,
        "leader": 1, "leader_epoch": 1, "isr": [1], "elr": [2], "last_known_elr": []}
_LEADERLESS = {**_OBS, "leader": -1, "isr": [], "elr": []}
_SEND = {"process": 5, "type": "ok", "f": "send", "topic": "t", "partition": 0,
         "acks": "all", "value": 9, "offset": 1}
_POLL = {"process": 6, "type": "ok", "f": "poll", "topic": "t", "records": [[0, 0, 0]]}
_REPLICA = {"process": -3, "type": "ok", "f": "replica", "topic": "t", "partition": 0,
            "node": "broker-1", "broker": 1, "log_end_offset": 1, "records": [[0, 0, 1]],
            "high_watermark": 1}
_ELR = "eligible.leader.replicas.version"


def _fault(kind: str, **detail) -> dict:
    line = {"process": -1, "type": "invoke", "f": "fault", "fault": kind, "nodes": []}
    return line if detail.get("absent") else {**line, "detail": detail}


MALFORMED = {
    # "a negative offset, high watermark or log end offset"
    "send-offset": {**_SEND, "offset": -1},
    "acks-0-offset": {**_SEND, "acks": "0", "offset": -1},
    "poll-record-offset": {**_POLL, "records": [[0, -1, 0]]},
    "poll-high-watermark": {**_POLL, "high_watermark": {"0": -1}},
    "seek-offset": {"process": 6, "type": "invoke", "f": "poll", "topic": "t",
                    "seek": {"0": -2}},
    "observe-high-watermark": {**_OBS, "high_watermark": -1},
    "replica-log-end-offset": {**_REPLICA, "log_end_offset": -1},
    "replica-record-offset": {**_REPLICA, "records": [[-1, 0, 1]]},
    # "a min_isr below 1; an elr_feature below 0"
    "min-isr-0": {**_OBS, "min_isr": 0},
    "min-isr-negative": {**_OBS, "min_isr": -5},
    "elr-feature-negative": {**_OBS, "elr_feature": -1},
    # "a broker id below -1 (only leader and last_known_elr may hold -1)"
    "leader-minus-two": {**_OBS, "leader": -2},
    "lkelr-minus-two": {**_LEADERLESS, "last_known_elr": [-2]},
    "isr-minus-one": {**_OBS, "isr": [-1]},
    "elr-minus-one": {**_OBS, "elr": [-1]},
    "fenced-minus-one": {**_OBS, "fenced": [-1]},
    "replicas-minus-one": {**_OBS, "replicas": [1, -1]},
    "replica-broker-minus-one": {**_REPLICA, "broker": -1},
    # "A fault line whose kind has a documented detail ... with that detail missing
    # or of the wrong type"
    "min-isr-change-no-detail": _fault("min-isr-change", absent=True),
    "min-isr-change-to-text": _fault("min-isr-change", topic="t", **{"from": 2}, to="1"),
    "min-isr-change-to-0": _fault("min-isr-change", topic="t", **{"from": 2}, to=0),
    "min-isr-change-topic-int": _fault("min-isr-change", topic=3, **{"from": 2}, to=1),
    "feature-change-no-feature": _fault("feature-change", **{"from": 1}, to=0),
    "feature-change-to-negative": _fault("feature-change", feature=_ELR, **{"from": 1},
                                         to=-1),
    "disk-fault-dropped-text": _fault("disk-fault", dropped="true"),
    "disk-fault-no-dropped": _fault("disk-fault", error="EIO"),
    "reassign-no-partition": _fault("reassign", topic="t"),
    "one-way-partition-from-ints": _fault("one-way-partition", **{"from": [1, 2]}),
}

#: Lines beside them that a cluster can report, and the verdict of the clean history
#: with each (a lone acks 0 ok send absent from the log is a lost write, reported).
WELL_FORMED = {
    "acks-0-offset-null": ({**_SEND, "acks": "0", "offset": None}, True),
    "poll-record-offset-0": (_POLL, True),
    "leader-minus-one": (_LEADERLESS, True),
    "lkelr-minus-one": ({**_LEADERLESS, "last_known_elr": [-1]}, False),
    "min-isr-1": ({**_OBS, "min_isr": 1, "elr": []}, True),
    "elr-feature-0": ({**_OBS, "elr_feature": 0}, True),
    "min-isr-change": (_fault("min-isr-change", topic=None, **{"from": 2}, to=1), True),
    "feature-change": (_fault("feature-change", feature=_ELR, **{"from": 1}, to=0), True),
    "disk-fault": (_fault("disk-fault", dropped=False, error="EIO"), True),
    "reassign": (_fault("reassign", topic="t", partition=0, to=[1, 2, 4]), True),
    "one-way-partition": (_fault("one-way-partition", **{"from": ["broker-2"]}), True),
    "other-kind-no-detail": (_fault("kill", absent=True), True),
}


@pytest.mark.parametrize("line", [pytest.param(line, id=name)
                                  for name, line in MALFORMED.items()])
def test_a_value_no_cluster_can_report_is_malformed(check, line):
    with pytest.raises(MalformedLine) as err:
        check(_one_line(**line)())
    assert err.value.line == 3  # the history's line numbers count from 1


@pytest.mark.parametrize("line, valid", [pytest.param(line, valid, id=name)
                                         for name, (line, valid) in WELL_FORMED.items()])
def test_the_values_beside_them_are_well_formed(check, line, valid):
    assert check(_one_line(**line)()).valid is valid


# -- HISTORY.md: "history.jsonl is UTF-8" --------------------------------------------


def _bytes_of_line(line: int, change) -> bytes:
    """A clean valid history (an acked send, a failed send whose error is "E", the
    final read) as bytes, with `change` applied to line `line`'s (1-based)."""
    h = History()
    h.send(0, 0, 0)
    h.send(1, 1, None, outcome="fail")
    h.ops[-1]["error"] = "E"
    h.final([[0, 0, 0]], seek={0: 0}, hwm={0: 1})
    lines = h.text().encode().split(b"\n")
    lines[line - 1] = change(lines[line - 1])
    return b"\n".join(lines)


def _in_error(raw: bytes):
    return lambda line: line.replace(b'"E"', b'"E' + raw + b'"')


NOT_UTF8 = {
    # a byte no UTF-8 text holds, inside a string and after the object
    "byte-ff-in-a-string": (4, _in_error(b"\xff"), 4),
    "byte-ff-after-the-object": (4, lambda line: line + b"\xff", 4),
    # an overlong '/', an encoded surrogate, a code point above U+10FFFF
    "overlong-form": (4, _in_error(b"\xc0\xaf"), 4),
    "encoded-surrogate": (4, _in_error(b"\xed\xa0\x80"), 4),
    "above-u10ffff": (4, _in_error(b"\xf4\x90\x80\x80"), 4),
    "a-character-cut-short-inside": (4, _in_error(b"\xe2\x82"), 4),
    # the last line: not JSON text at all, so cut short (a crash can cut a character)
    "last-line-cut-inside-a-character": (6, lambda line: line[:-30] + b"\xe2\x82", "cut"),
    "last-line-with-a-bad-byte": (6, lambda line: line.replace(b'"f"', b'"\xff"'), "cut"),
    # beside them: UTF-8 beyond ASCII, of two, three and four bytes
    "non-ascii-utf8": (4, _in_error("\u00e9\u20ac\U0001f600".encode()), True),
}


@pytest.mark.parametrize("line, change, said", [pytest.param(*case, id=name)
                                                for name, case in NOT_UTF8.items()])
def test_a_line_that_is_not_utf8_is_malformed_or_cut_short(check, line, change, said):
    raw = _bytes_of_line(line, change)
    if said is True:
        r = check(raw)
        assert r.valid is True and r.truncated_lines == 0
    elif said == "cut":
        assert check(raw).truncated_lines == 1
    else:
        with pytest.raises(MalformedLine) as err:
            check(raw)
        assert err.value.line == said
