"""The reference checker (tests/reference_checker.py) on small hand-written
histories: one or more per rule of shared/HISTORY.md and docs/CHECKING.md, each
with the exact counts and verdict the rule gives. No Spark here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reference_checker import ANOMALIES, MalformedLine, Reference, reference_check

from elr_harness.core.errors import HistoryError

NODES = {f"broker-{i}": {"role": "broker", "id": i} for i in (1, 2, 3)}
NODES["controller-1"] = {"role": "controller", "id": 1000}


def _test(partitions: int = 1, min_isr: int = 2, idempotent: bool = False,
          topics: tuple[str, ...] = ("t",)) -> dict:
    return {"topics": {t: {"partitions": partitions, "replication_factor": 3,
                           "min_insync_replicas": min_isr, "unclean_leader_election": False}
                       for t in topics},
            "elr_enabled": True, "idempotent_producers": idempotent, "nodes": NODES,
            "seed": 1, "kafka_version": "4.1.1"}


TEST = _test()


class History:
    """A history built line by line, index and time filled in."""

    def __init__(self) -> None:
        self.ops: list[dict] = []

    def add(self, **op) -> int:
        self.ops.append({"index": len(self.ops), "time": 1000 * (len(self.ops) + 1), **op})
        return len(self.ops) - 1

    def invoke_send(self, process: int, value: int, acks: str = "all", partition: int = 0,
                    topic: str = "t") -> None:
        self.add(process=process, type="invoke", f="send", topic=topic, partition=partition,
                 acks=acks, value=value)

    def end_send(self, process: int, value: int, offset: int | None, acks: str = "all",
                 outcome: str = "ok", partition: int = 0, topic: str = "t") -> None:
        done = {"offset": offset} if outcome == "ok" else {"error": "NOT_ENOUGH_REPLICAS"}
        self.add(process=process, type=outcome, f="send", topic=topic, partition=partition,
                 acks=acks, value=value, **done)

    def send(self, process: int, value: int, offset: int | None, acks: str = "all",
             outcome: str = "ok", partition: int = 0, topic: str = "t") -> None:
        self.invoke_send(process, value, acks, partition, topic)
        self.end_send(process, value, offset, acks, outcome, partition, topic)

    def poll(self, process: int, records: list, final: bool = False, seek: dict | None = None,
             hwm: dict | None = None, outcome: str = "ok", topic: str = "t") -> None:
        extra = {"final": True} if final else {}
        invoke: dict = {}
        if seek is not None:
            invoke["seek"] = {str(p): o for p, o in seek.items()}
        self.add(process=process, type="invoke", f="poll", topic=topic, **extra, **invoke)
        if outcome is None:
            return
        done: dict = {"records": records} if outcome == "ok" else {"error": "BROKER_GONE"}
        if hwm is not None:
            done["high_watermark"] = {str(p): o for p, o in hwm.items()}
        self.add(process=process, type=outcome, f="poll", topic=topic, **extra, **done)

    def final(self, records: list, seek: dict | None = None, hwm: dict | None = None,
              process: int = 90, **kw) -> None:
        self.poll(process, records, final=True, seek=seek, hwm=hwm, **kw)

    def observe(self, partition: int = 0, leader: int = 1, isr=(1, 2, 3), elr=(),
                lkelr=(), topic: str = "t", leader_epoch: int = 1, **extra) -> None:
        self.add(process=-2, type="ok", f="observe", topic=topic, partition=partition,
                 leader=leader, leader_epoch=leader_epoch,
                 isr=None if isr is None else list(isr),
                 elr=None if elr is None else list(elr),
                 last_known_elr=None if lkelr is None else list(lkelr), **extra)

    def fault(self, fault: str, nodes: list[str], outcome: str | None = "ok") -> None:
        self.add(process=-1, type="invoke", f="fault", fault=fault, nodes=nodes)
        if outcome is not None:
            self.add(process=-1, type=outcome, f="fault", fault=fault, nodes=nodes)

    def replica(self, broker: int, records: list, hwm: int | None, partition: int = 0) -> None:
        extra = {} if hwm is None else {"high_watermark": hwm}
        self.add(process=-3, type="ok", f="replica", topic="t", partition=partition,
                 node=f"broker-{broker}", broker=broker, log_end_offset=len(records),
                 records=records, **extra)

    def text(self) -> str:
        return "".join(json.dumps(op) + "\n" for op in self.ops)


def _log(values, partition: int = 0) -> list[list]:
    """Final records [partition, offset, value] for values at offsets 0, 1, ..."""
    return [[partition, o, v] for o, v in enumerate(values)]


def _sent(n: int, acks: str = "all") -> History:
    """Values 0..n-1 acked at offsets 0..n-1 of t-0."""
    h = History()
    for v in range(n):
        h.send(0, v, None if acks == "0" else v, acks=acks)
    return h


@pytest.fixture
def check(tmp_path):
    def run(h: History | str, test: dict | None = TEST) -> Reference:
        path = tmp_path / "history.jsonl"
        path.write_text(h if isinstance(h, str) else h.text())
        return reference_check(path, test)
    return run


def _only(r: Reference, **expected: int) -> None:
    """Every anomaly's count: the given ones, 0 for the rest."""
    want = dict.fromkeys(ANOMALIES, 0)
    want.update({k.replace("_", "-"): v for k, v in expected.items()})
    assert r.counts == want


def _bad_line(check, text: str) -> MalformedLine:
    with pytest.raises(MalformedLine) as err:
        check(text)
    return err.value


# -- lines ---------------------------------------------------------------------------


def _clean() -> History:
    h = _sent(2)
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
    return h


def test_a_clean_history_is_valid(check):
    r = check(_clean())
    _only(r)
    assert r.valid is True and r.bad == set() and r.incomplete_partitions == set()
    assert r.checked == {"sends": 2, "polled_records": 0, "final_records": 2,
                         "observations": 0, "replica_records": 0}


def test_blank_lines_are_ignored_and_counted_in_line_numbers(check):
    lines = _clean().text().splitlines()
    text = "\n".join(["", lines[0], "   ", lines[1], "\t", *lines[2:4], "[]",
                      *lines[4:]]) + "\n"
    err = _bad_line(check, text)
    assert err.line == 8 and "not an object" in str(err) and isinstance(err, HistoryError)
    r = check("\n".join(["", lines[0], "   ", *lines[1:], "", ""]) + "\n")
    assert r.valid is True and r.truncated_lines == 0


@pytest.mark.parametrize("bad", ["[]", "3", '"x"', "null"])
def test_json_that_is_not_an_object_is_malformed(check, bad):
    lines = _clean().text().splitlines(keepends=True)
    err = _bad_line(check, lines[0] + bad + "\n" + "".join(lines[1:]))
    assert err.line == 2 and "not an object" in err.reason


def test_a_last_line_that_is_json_but_not_an_object_is_malformed_not_cut_short(check):
    err = _bad_line(check, _clean().text() + "\n[]\n\n")
    assert err.line == len(_clean().ops) + 2


def test_an_int_beyond_64_bits_is_malformed_and_the_message_says_so(check):
    lines = _clean().text().splitlines(keepends=True)
    op = dict(_clean().ops[1])
    big = json.dumps(op).replace('"value": 0', '"value": 9223372036854775808')
    err = _bad_line(check, lines[0] + big + "\n" + "".join(lines[2:]))
    assert err.line == 2 and "64-bit" in err.reason
    # the largest and the smallest signed 64-bit ints are fine
    for fine in (9223372036854775807, -9223372036854775808):
        h = History()
        h.send(0, fine, 0)
        h.final(_log([fine]), seek={0: 0}, hwm={0: 1})
        r = check(h)
        _only(r)
        assert r.valid is True
    huge = json.dumps(op).replace('"offset": 0', '"offset": ' + "9" * 5000)
    assert "64-bit" in _bad_line(check, lines[0] + huge + "\n" + "".join(lines[2:])).reason


@pytest.mark.parametrize("field, text, words", [
    ("time", "3.5", "must be an int"),
    ("time", "1e3", "must be an int"),
    ("time", "3.0", "must be an int"),
    ("time", '"3"', "must be an int"),
    ("process", "true", "must be an int"),
    ("time", "NaN", "not JSON"),
    ("type", '"done"', "none of"),
    ("f", "7", "must be a string"),
])
def test_a_common_field_of_the_wrong_type_is_malformed(check, field, text, words):
    lines = _clean().text().splitlines(keepends=True)
    op = json.loads(lines[1])
    op[field] = "@@"
    line = json.dumps(op).replace('"@@"', text)
    err = _bad_line(check, lines[0] + line + "\n" + "".join(lines[2:]))
    assert err.line == 2 and words in err.reason


@pytest.mark.parametrize("missing", ["index", "time", "process", "type", "f"])
def test_a_missing_or_null_common_field_is_malformed(check, missing):
    lines = _clean().text().splitlines(keepends=True)
    for absent in (True, False):
        op = json.loads(lines[2])
        if absent:
            del op[missing]
        else:
            op[missing] = None
        err = _bad_line(check, "".join(lines[:2]) + json.dumps(op) + "\n" + "".join(lines[3:]))
        assert err.line == 3 and repr(missing) in err.reason


@pytest.mark.parametrize("change", [
    {"records": [[0, 0]]},
    {"records": [[0, 0, 1.5]]},
    {"records": [[0, None, 1]]},
    {"records": [[None, 0, 1]]},
    {"records": "[]"},
    {"high_watermark": {"zero": 2}},
    {"high_watermark": {"0": "2"}},
    {"high_watermark": 2},
    {"final": "yes"},
    {"topic": 5},
])
def test_a_poll_field_of_the_wrong_type_is_malformed(check, change):
    h = _clean()
    h.ops[-1].update(change)
    with pytest.raises(MalformedLine) as err:
        check(h)
    assert err.value.line == len(h.ops)


@pytest.mark.parametrize("line, words", [
    ({"type": "invoke", "f": "poll", "topic": "t", "seek": {"0.5": 1}}, "key"),
    ({"type": "invoke", "f": "send", "topic": "t", "partition": 0, "acks": "2", "value": 9},
     "acks"),
    ({"type": "invoke", "f": "send", "topic": "t", "partition": 0, "acks": "1"}, "'value'"),
    ({"type": "ok", "f": "send", "topic": "t", "partition": 0, "acks": "1", "value": 9},
     "'offset'"),
    ({"type": "fail", "f": "send", "topic": "t", "partition": 0, "acks": "1", "value": 9},
     "'error'"),
    ({"type": "ok", "f": "poll", "topic": "t"}, "'records'"),
    ({"type": "ok", "f": "observe", "topic": "t", "partition": 0, "leader": 1,
      "isr": [1]}, "'leader_epoch'"),
    ({"type": "invoke", "f": "observe", "topic": "t", "partition": 0, "leader": 1,
      "leader_epoch": 1}, "always ok"),
    ({"type": "ok", "f": "observe", "topic": "t", "partition": 0, "leader": 1,
      "leader_epoch": 1, "isr": [1.0]}, "'isr'"),
    ({"type": "ok", "f": "fault", "fault": "kill"}, "'nodes'"),
    ({"type": "ok", "f": "fault", "fault": "kill", "nodes": [1]}, "'nodes'"),
    ({"type": "ok", "f": "replica", "topic": "t", "partition": 0, "node": "broker-1",
      "broker": 1, "log_end_offset": 1, "records": [[0, 1, None]]}, "'records'"),
])
def test_a_field_of_its_kind_missing_or_mistyped_is_malformed(check, line, words):
    """docs/CHECKING.md: a field the contract lists for the line's kind and type
    without "optional" must be there, and each field of its kind has its type."""
    h = _clean()
    h.ops.insert(1, {"index": 1, "time": 1, "process": 5, **line})
    err = _bad_line(check, h.text())
    assert err.line == 2 and words in err.reason


def test_unknown_fields_and_kinds_of_line_are_ignored(check):
    h = _clean()
    for op in h.ops:
        op["retries"] = [1, "x", None]
    h.ops.insert(1, {"index": 1, "time": 1, "process": 5, "type": "ok", "f": "metrics",
                     "value": "not an int", "records": 7})
    h.ops[1]["value"] = "ignored on a line of an unknown kind"
    r = check(h)
    _only(r)
    assert r.valid is True and r.checked["sends"] == 2


def test_an_acks_0_ok_send_has_no_offset_whatever_it_says(check):
    h = History()
    h.send(0, 7, 5, acks="0")
    h.send(1, 8, 0, acks="all")
    h.final(_log([8, 7]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r)
    assert r.valid is True


def test_a_cut_short_last_line_is_ignored_counted_and_makes_the_verdict_unknown(check):
    text = _clean().text() + '{"index": 5, "time": 9000, "proc'
    r = check(text)
    assert r.truncated_lines == 1 and r.valid == "unknown"
    _only(r)
    # blank lines after it change nothing
    assert check(text + "\n\n  \n").truncated_lines == 1
    # not JSON but not the last line: an error naming it
    err = _bad_line(check, text + "\n" + json.dumps(_clean().ops[0]) + "\n")
    assert err.line == len(_clean().ops) + 1 and "not JSON" in err.reason


def test_a_cut_short_last_line_does_not_hide_a_bad_anomaly(check):
    h = _sent(2)
    h.final(_log([0]), seek={0: 0}, hwm={0: 1})
    r = check(h.text() + '{"index": 9, "ti')
    assert r.truncated_lines == 1 and r.valid is False and r.bad == {"lost-write"}


def test_the_first_malformed_line_is_named(check):
    lines = _clean().text().splitlines(keepends=True)
    err = _bad_line(check, lines[0] + "{oops\n" + lines[1] + "[]\n" + "".join(lines[2:]))
    assert err.line == 2


def test_an_empty_history_is_unknown(check):
    r = check("\n\n")
    assert r.valid == "unknown" and r.incomplete_partitions == {"t-0"}
    r = check("", None)
    assert r.valid == "unknown" and r.incomplete_partitions == set()


# -- final reads -----------------------------------------------------------------------


def test_no_final_poll_is_unknown(check):
    h = _sent(2)
    h.poll(1, _log([0, 1]))
    r = check(h)
    assert r.valid == "unknown" and r.incomplete_partitions == {"t-0"}
    _only(r, unseen=2)
    assert r.by_acks["unseen"] == {"all": 2, "1": 0, "0": 0}


def test_a_history_that_names_no_partition_is_unknown(check):
    h = History()
    h.observe()
    h.add(process=90, type="invoke", f="poll", topic="t", final=True)
    h.add(process=90, type="ok", f="poll", topic="t", final=True, records=[])
    r = check(h, None)
    assert r.valid == "unknown" and r.incomplete_partitions == set()
    # the same with test.json's partition: the final poll covered nothing, so t-0
    # is incomplete by rule (a)
    r = check(h)
    assert r.valid == "unknown" and r.incomplete_partitions == {"t-0"}


def test_completeness_from_records_only(check):
    h = _sent(2)
    h.final(_log([0, 1]))
    r = check(h)
    assert r.valid is True and r.incomplete_partitions == set()


def test_completeness_from_a_seek_only(check):
    """A final poll that sought t-0 and returned nothing covered it: complete, and the
    two acked values are lost."""
    h = _sent(2)
    h.final([], seek={0: 0})
    r = check(h)
    assert r.incomplete_partitions == set() and r.valid is False
    _only(r, lost_write=2)
    assert r.by_acks["lost-write"] == {"all": 2, "1": 0, "0": 0}


def test_completeness_from_a_high_watermark_only(check):
    h = History()
    h.final([], hwm={0: 0})
    r = check(h)
    assert r.valid is True and r.incomplete_partitions == set()
    h = History()
    h.final([], hwm={0: 1})  # (b): the records reach 0, short of 1
    r = check(h)
    assert r.valid == "unknown" and r.incomplete_partitions == {"t-0"}


def test_final_records_short_of_the_highest_reported_high_watermark(check):
    h = _sent(3)
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 3}, process=91)
    r = check(h)
    assert r.incomplete_partitions == {"t-0"} and r.valid == "unknown"
    _only(r, unseen=1)


def test_a_null_value_record_counts_for_the_reach_of_the_final_read(check):
    h = _sent(2)
    h.final([[0, 0, 0], [0, 1, 1], [0, 2, None]], seek={0: 0}, hwm={0: 3})
    r = check(h)
    assert r.incomplete_partitions == set() and r.valid is False
    _only(r, garbage_read=1)


def test_a_failed_then_retried_final_poll_does_not_make_the_read_incomplete(check):
    h = _sent(2)
    h.final([], seek={0: 0}, outcome="fail")
    h.final([], seek={0: 0}, outcome="info")
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2}, process=91)
    r = check(h)
    assert r.valid is True and r.incomplete_partitions == set()


def test_a_failed_final_poll_alone_covers_nothing(check):
    h = _sent(2)
    h.final([], seek={0: 0}, outcome="fail")
    r = check(h)
    assert r.valid == "unknown" and r.incomplete_partitions == {"t-0"}
    _only(r, unseen=2)


def test_an_open_final_invoke_makes_its_seek_incomplete(check):
    h = _sent(2, acks="1")
    h.send(0, 5, 0, partition=1)
    h.final(_log([0, 1]) + _log([5], 1), seek={0: 0, 1: 0}, hwm={0: 2, 1: 1})
    h.final([], seek={1: 0}, process=91, outcome=None)
    r = check(h, _test(partitions=2))
    assert r.incomplete_partitions == {"t-1"} and r.valid == "unknown"
    _only(r)


def test_an_open_final_invoke_without_seek_covers_what_its_process_read_before(check):
    h = _sent(1)
    h.send(0, 5, 0, partition=1)
    h.final(_log([0]), seek={0: 0}, hwm={0: 1})
    h.final(_log([5], 1), hwm={1: 1}, process=91)
    h.final([], process=90, outcome=None)  # goes on reading t-0
    r = check(h, _test(partitions=2))
    assert r.incomplete_partitions == {"t-0"} and r.valid == "unknown"
    _only(r)


def test_an_open_final_invoke_with_nothing_before_covers_its_whole_topic(check):
    h = _sent(1)
    h.send(0, 5, 0, partition=1)
    h.send(0, 6, 0, topic="u")
    h.final(_log([0]) + _log([5], 1), seek={0: 0, 1: 0}, hwm={0: 1, 1: 1})
    h.final(_log([6]), seek={0: 0}, hwm={0: 1, 1: 0}, topic="u", process=92)
    h.final([], process=91, outcome=None)
    r = check(h, _test(partitions=2, topics=("t", "u")))
    assert r.incomplete_partitions == {"t-0", "t-1"} and r.valid == "unknown"


def test_on_an_incomplete_partition_a_loss_the_read_got_past_is_a_lost_write(check):
    """Acked at 0-5; the final read stopped at 3 of a high watermark of 6 without
    values 1 (acks=all: lost) and 2 (acks=0: unseen, no offset); 4 and 5 unseen."""
    h = History()
    for v in range(6):
        h.send(0, v, None if v == 2 else v, acks="0" if v == 2 else "all")
    h.final([[0, 0, 0], [0, 3, 3]], seek={0: 0}, hwm={0: 6})
    r = check(h)
    assert r.incomplete_partitions == {"t-0"}
    _only(r, lost_write=1, unseen=3)
    assert r.by_acks == {"lost-write": {"all": 1, "1": 0, "0": 0},
                         "unseen": {"all": 2, "1": 0, "0": 1}}
    assert r.valid is False and r.bad == {"lost-write"}


def test_an_acks_0_send_is_lost_when_absent_from_a_complete_log(check):
    h = _sent(2, acks="0")
    h.final(_log([1]), seek={0: 0}, hwm={0: 1})
    r = check(h)
    _only(r, lost_write=1)
    assert r.by_acks["lost-write"] == {"all": 0, "1": 0, "0": 1}
    assert r.valid is True and r.bad == set()


def test_a_partition_of_test_json_never_read_is_incomplete(check):
    r = check(_clean(), _test(partitions=2))
    assert r.valid == "unknown" and r.incomplete_partitions == {"t-1"}


def test_a_final_ok_completion_of_a_final_invoke_is_final_whatever_it_says(check):
    h = _sent(2)
    h.add(process=90, type="invoke", f="poll", topic="t", final=True, seek={"0": 0})
    h.add(process=90, type="ok", f="poll", topic="t", records=_log([0, 1]))
    r = check(h)
    assert r.valid is True and r.checked["final_records"] == 2


# -- durability anomalies --------------------------------------------------------------


def test_an_acks_all_lost_write_is_bad(check):
    h = _sent(3)
    h.final(_log([0, 2]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    # value 2 sits at offset 1, its ack said 2; and offset 1 also claims value 1
    _only(r, lost_write=1, inconsistent_offset=1)
    assert r.valid is False and r.bad == {"lost-write", "inconsistent-offset"}


def test_an_acks_1_lost_write_is_reported_not_bad_and_its_offset_reused_is_no_anomaly(check):
    h = History()
    h.send(0, 1, 0, acks="1")
    h.send(0, 2, 1, acks="1")
    h.send(0, 3, 1, acks="all")  # the leader that lost 2 gave its offset to 3
    h.final(_log([1, 3]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r, lost_write=1)
    assert r.by_acks["lost-write"] == {"all": 0, "1": 1, "0": 0}
    assert r.valid is True and r.bad == set()


def test_a_lost_acks_1_write_read_at_its_offset_still_claims_it(check):
    h = History()
    h.send(0, 1, 0, acks="1")
    h.send(0, 2, 1, acks="1")
    h.poll(5, _log([1, 2]))
    h.send(0, 3, 1, acks="all")
    h.final(_log([1, 3]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r, lost_write=1, lost_committed_read=1, inconsistent_offset=1)
    assert r.valid is False


def test_a_value_read_then_gone_or_moved_is_a_lost_committed_read(check):
    h = History()
    h.send(0, 7, 0, acks="1")
    h.send(0, 8, 1, acks="1")
    h.poll(1, _log([7, 8]))
    h.final(_log([8]), seek={0: 0}, hwm={0: 1})
    r = check(h)
    # 7 gone, 8 moved from offset 1 to 0 (and offset 0 claimed by 7 and 8)
    _only(r, lost_committed_read=2, lost_write=1, inconsistent_offset=1)
    assert r.valid is False


def test_a_value_at_three_final_offsets_read_at_the_middle_one_is_not_lost(check):
    h = History()
    h.send(0, 7, 0, acks="1")
    h.poll(1, [[0, 1, 7]])
    h.final([[0, 0, 7], [0, 1, 7], [0, 2, 7]], seek={0: 0}, hwm={0: 3})
    r = check(h)
    _only(r, duplicate=1)
    assert r.valid is True
    h = History()
    h.send(0, 7, 0, acks="1")
    h.poll(1, [[0, 3, 7]])  # between and beyond the copies: lost
    h.final([[0, 0, 7], [0, 1, 7], [0, 2, 7]], seek={0: 0}, hwm={0: 3})
    r = check(h)
    _only(r, duplicate=1, lost_committed_read=1)
    assert r.valid is False


def test_lost_committed_read_is_judged_on_complete_partitions_only(check):
    h = History()
    h.send(0, 7, 0, acks="1")
    h.poll(1, _log([7]))
    h.final([], seek={0: 0}, hwm={0: 1})
    r = check(h)
    _only(r, unseen=1)
    assert r.valid == "unknown"


def test_a_null_value_read_is_a_garbage_read_not_a_lost_committed_read(check):
    h = _sent(2)
    h.poll(1, [[0, 0, 0], [0, 1, None]])
    h.final(_log([0, 1]) + [[0, 2, None]], seek={0: 0}, hwm={0: 3})
    r = check(h)
    _only(r, garbage_read=2)
    assert r.valid is False and r.bad == {"garbage-read"}


def test_two_acks_all_sends_at_one_offset_are_one_inconsistent_offset(check):
    h = History()
    h.send(0, 1, 0)
    h.send(1, 2, 0)
    h.send(2, 3, 0)
    h.final([[0, 0, 1], [0, 1, 2], [0, 2, 3]], seek={0: 0}, hwm={0: 3})
    r = check(h)
    _only(r, inconsistent_offset=1)
    assert r.valid is False


def test_two_polls_disagreeing_on_an_offset_are_an_inconsistent_offset(check):
    h = _sent(2, acks="0")
    h.poll(1, [[0, 0, 0]])
    h.poll(2, [[0, 0, 1]])
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r, inconsistent_offset=1, lost_committed_read=1)


def test_duplicates_are_reported_and_bad_only_with_idempotent_producers(check):
    h = History()
    h.send(0, 1, 0, acks="1")
    h.send(0, 2, 1, acks="1")
    h.final(_log([1, 2, 1, 2, 2]), seek={0: 0}, hwm={0: 5})
    r = check(h)
    _only(r, duplicate=2)
    assert r.valid is True and r.bad == set()
    r = check(h, _test(idempotent=True))
    assert r.valid is False and r.bad == {"duplicate"}


def test_a_value_nobody_sent_twice_in_the_final_log_is_a_duplicate(check):
    h = History()
    h.final(_log([9, 9]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r, duplicate=1)


def test_an_aborted_read(check):
    h = History()
    h.send(0, 1, None, outcome="fail")
    h.send(0, 2, 0, acks="1")
    h.poll(1, _log([1, 2]))
    h.final(_log([1, 2]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    # 2's ack said offset 0, where the polls found 1: one inconsistent offset, and 2
    # read at offset 1 is in the final log there
    _only(r, aborted_read=1, inconsistent_offset=1)
    assert r.valid is False


def test_a_failed_send_read_only_by_the_final_poll_is_an_aborted_read(check):
    h = History()
    h.send(0, 1, None, outcome="fail")
    h.final(_log([1]), seek={0: 0}, hwm={0: 1})
    r = check(h)
    _only(r, aborted_read=1)


def test_a_failed_send_read_from_another_partition_is_not_an_aborted_read(check):
    h = History()
    h.send(0, 1, None, outcome="fail")
    h.final(_log([1], 1), seek={0: 0, 1: 0}, hwm={0: 0, 1: 1})
    r = check(h, _test(partitions=2))
    _only(r)
    assert r.valid is True


def test_an_info_send_in_the_log_is_no_anomaly(check):
    h = History()
    h.send(0, 1, None, outcome="info")
    h.invoke_send(1, 2)  # never completed: info
    h.final(_log([1, 2]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r)
    assert r.valid is True


def test_a_sends_topic_partition_acks_and_value_are_its_invokes(check):
    """docs/CHECKING.md: "A send's value is the invoke's" (a completion that says
    otherwise does not make another send)."""
    h = History()
    h.invoke_send(0, 1)
    h.end_send(0, 2, 0, acks="1", partition=1)
    h.final(_log([1]), seek={0: 0, 1: 0}, hwm={0: 1, 1: 0})
    r = check(h, _test(partitions=2))
    _only(r)
    assert r.valid is True and r.checked["sends"] == 1


def test_realtime_order(check):
    h = History()
    h.send(0, 1, 1)  # acked before 2 was invoked ...
    h.send(1, 2, 0)  # ... yet 2 sits below it
    h.final(_log([2, 1]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r, realtime_order=1)
    assert r.valid is False and r.bad == {"realtime-order"}


def test_concurrent_sends_may_land_in_any_order(check):
    h = History()
    h.invoke_send(0, 1)
    h.invoke_send(1, 2)
    h.end_send(0, 1, 1)
    h.end_send(1, 2, 0)
    h.final(_log([2, 1]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r)
    assert r.valid is True


def test_an_ok_and_an_invoke_at_one_time_are_not_ordered(check):
    h = History()
    h.send(0, 1, 1)
    h.invoke_send(1, 2)
    h.ops[-1]["time"] = h.ops[-2]["time"]
    h.end_send(1, 2, 0)
    h.final(_log([2, 1]), seek={0: 0}, hwm={0: 2})
    _only(check(h))


def test_realtime_order_counts_each_later_value_once_and_any_send_as_b(check):
    h = History()
    h.send(0, 1, 2)
    h.send(1, 2, None, outcome="info")
    h.send(2, 3, 0, acks="1")
    h.final(_log([3, 2, 1]), seek={0: 0}, hwm={0: 3})
    r = check(h)
    _only(r, realtime_order=2)  # 2 (an info send) and 3 both below 1


def test_realtime_order_takes_each_values_lowest_final_offset(check):
    h = History()
    h.send(0, 1, 0, acks="1")
    h.send(1, 2, 1, acks="1")
    h.final(_log([1, 2, 1]), seek={0: 0}, hwm={0: 3})
    r = check(h)
    _only(r, duplicate=1)  # 1 at 0 is below 2 at 1: in order


def test_an_acks_0_send_is_never_the_earlier_write_of_a_realtime_order(check):
    """docs/CHECKING.md, "Where we depart": its example history."""
    h = History()
    h.send(0, 1, None, acks="0")
    h.send(1, 2, 0)
    h.final(_log([2, 1]), seek={0: 0}, hwm={0: 2})
    r = check(h)
    _only(r)
    assert r.valid is True
    h = History()  # acks=0 is B: counted
    h.send(0, 1, 1, acks="1")
    h.send(1, 2, None, acks="0")
    h.final(_log([2, 1]), seek={0: 0}, hwm={0: 2})
    _only(check(h), realtime_order=1)


# -- consumer order ----------------------------------------------------------------------


def _two_partitions(n: int = 4) -> History:
    h = History()
    for p in (0, 1):
        for o in range(n):
            h.send(0, 10 * p + o, o, partition=p)
    return h


def _final_two(h: History, n: int = 4) -> None:
    h.final([[p, o, 10 * p + o] for p in (0, 1) for o in range(n)], seek={0: 0, 1: 0},
            hwm={0: n, 1: n})


def test_a_poll_going_back_on_two_partitions_is_one_nonmonotonic_poll(check):
    h = _two_partitions()
    h.poll(1, [[0, 0, 0], [0, 1, 1], [1, 0, 10], [1, 1, 11]])
    h.poll(1, [[0, 1, 1], [1, 0, 10]])
    _final_two(h)
    r = check(h, _test(partitions=2))
    _only(r, nonmonotonic_poll=1)
    assert r.valid is False and r.bad == {"nonmonotonic-poll"}


def test_going_back_within_one_poll_is_nonmonotonic(check):
    h = _two_partitions()
    h.poll(1, [[0, 0, 0], [0, 1, 1], [0, 1, 1], [0, 2, 2]])
    _final_two(h)
    _only(check(h, _test(partitions=2)), nonmonotonic_poll=1)


def test_a_seek_allows_going_back_on_the_partition_it_names_only(check):
    h = _two_partitions()
    h.poll(1, [[0, 0, 0], [0, 1, 1], [1, 0, 10], [1, 1, 11]])
    h.poll(1, [[0, 0, 0], [1, 2, 12]], seek={0: 0})
    h.poll(1, [[0, 1, 1], [1, 2, 12]], seek={0: 1})  # t-1 goes back
    _final_two(h)
    _only(check(h, _test(partitions=2)), nonmonotonic_poll=1)


def test_a_poll_skipping_on_two_partitions_is_one_poll_skip(check):
    h = _two_partitions()
    h.poll(1, [[0, 0, 0], [1, 0, 10]])
    h.poll(1, [[0, 2, 2], [1, 3, 13]])
    _final_two(h)
    r = check(h, _test(partitions=2))
    _only(r, poll_skip=1)
    assert r.valid is False


def test_a_jump_over_offsets_the_final_log_does_not_hold_is_no_skip(check):
    h = History()
    h.send(0, 1, 0)
    h.send(0, 2, 3)
    h.poll(1, [[0, 0, 1]])
    h.poll(1, [[0, 3, 2]])
    h.final([[0, 0, 1], [0, 3, 2]], seek={0: 0}, hwm={0: 4})
    r = check(h)
    _only(r)
    assert r.valid is True


def test_records_beyond_a_sought_offset_are_a_skip(check):
    h = _sent(4)
    h.poll(1, [[0, 2, 2]], seek={0: 1})
    h.poll(2, [[0, 1, 1]], seek={0: 1})  # at the sought offset: fine
    h.poll(3, [[0, 3, 3]])  # a first poll without seek: nothing to compare
    h.final(_log([0, 1, 2, 3]), seek={0: 0}, hwm={0: 4})
    r = check(h)
    _only(r, poll_skip=1)


def test_the_seek_of_a_failed_poll_still_positions_the_process(check):
    h = _sent(4)
    h.poll(1, _log([0, 1, 2, 3]))
    h.poll(1, [], seek={0: 1}, outcome="fail")
    h.poll(1, [[0, 1, 1]])  # reads from the sought offset: no anomaly
    h.final(_log([0, 1, 2, 3]), seek={0: 0}, hwm={0: 4})
    _only(check(h))


def test_final_polls_are_in_the_order_checks(check):
    h = _sent(3)
    h.final([[0, 0, 0], [0, 2, 2]], seek={0: 0})
    h.final(_log([0, 1, 2]), seek={0: 0}, hwm={0: 3}, process=91)
    _only(check(h), poll_skip=1)


def test_each_process_and_topic_is_followed_on_its_own(check):
    h = _sent(3)
    h.send(0, 9, 0, topic="u")
    h.poll(1, _log([0, 1, 2]))
    h.poll(2, [[0, 0, 0]])
    h.poll(1, [[0, 0, 9]], topic="u")
    h.final(_log([0, 1, 2]), seek={0: 0}, hwm={0: 3})
    h.final(_log([9]), seek={0: 0}, hwm={0: 1}, topic="u", process=91)
    r = check(h, _test(topics=("t", "u")))
    _only(r)
    assert r.valid is True


def test_garbage_reads_are_counted_per_record(check):
    h = _sent(2)
    h.poll(1, [[0, 0, None], [0, 1, None]])
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
    _only(check(h), garbage_read=2)


# -- observations ----------------------------------------------------------------------


def _observed(*observations: dict) -> History:
    h = _sent(1)
    for obs in observations:
        h.observe(**obs)
    h.final(_log([0]), seek={0: 0}, hwm={0: 1})
    return h


def test_hwm_regression_is_one_per_drop_below_the_previous_observation(check):
    h = _observed({"high_watermark": 5}, {"high_watermark": 3}, {}, {"high_watermark": 4},
                  {"high_watermark": 2}, {"partition": 1, "high_watermark": 1})
    r = check(h, _test(partitions=2))
    _only(r, hwm_regression=2)
    assert r.valid is False


def test_a_poll_high_watermark_going_down_is_no_regression(check):
    h = _sent(2)
    h.poll(1, [], hwm={0: 2})
    h.poll(1, [], hwm={0: 1})
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
    _only(check(h))


def test_elr_invariant(check):
    h = _observed({"isr": [1, 2], "elr": [2]},  # overlap
                  {"isr": [1, 2], "elr": [3]},  # ELR while the ISR has min ISR members
                  {"isr": [1, 2, 3], "elr": [1]},  # both: one
                  {"isr": [1], "elr": [2, 3]},  # fine
                  {"isr": [1, 2], "elr": None},  # unknown ELR: not checked
                  {"isr": None, "elr": [2]},  # no ISR: fine
                  {"isr": None, "elr": [2], "leader": -1})
    r = check(h)
    _only(r, elr_invariant=3)
    assert r.valid is False
    r = check(h, _test(min_isr=3))
    _only(r, elr_invariant=2)  # the two overlaps only
    h = _observed({"isr": [1, 2], "elr": [3]})
    _only(check(h, None), elr_invariant=1)  # without test.json: min ISR 2


def test_fenced_leader(check):
    # ELR not said (null): the leaders alone
    h = _observed({"leader": 2, "isr": [2], "fenced": [2, 3], "elr": None},
                  {"leader": 1, "isr": [1], "fenced": [2], "elr": None},
                  {"leader": -1, "isr": [], "fenced": [], "elr": None},
                  {"leader": 2, "isr": [2], "elr": None})
    r = check(h)
    _only(r, fenced_leader=1)
    assert r.valid is False


def test_last_known_elr_invalid(check):
    no_leader = {"leader": -1, "isr": [], "elr": []}
    h = _observed({**no_leader, "lkelr": [-1]},
                  {**no_leader, "lkelr": [3, 7]},  # 7 is no broker of test.json
                  {**no_leader, "lkelr": [1000]},  # a controller's id is no broker
                  {**no_leader, "lkelr": [3]},  # fine
                  {**no_leader, "lkelr": None},
                  {"leader": -1, "isr": [], "elr": None, "lkelr": [-1]},  # ELR unknown
                  {"leader": -1, "isr": None, "elr": [], "lkelr": [-1]},  # null ISR: empty
                  {"leader": 1, "isr": [], "elr": [], "lkelr": [-1]},  # a leader
                  {"leader": -1, "isr": [2], "elr": [], "lkelr": [-1]})  # an ISR
    r = check(h)
    _only(r, last_known_elr_invalid=4)
    assert r.valid is False
    # without test.json's nodes only -1 is invalid
    _only(check(h, None), last_known_elr_invalid=2)
    _only(check(h, {**TEST, "nodes": {}}), last_known_elr_invalid=2)


# -- replicas ------------------------------------------------------------------------


def test_replica_divergence(check):
    h = _sent(4)
    h.final(_log([0, 1, 2, 3]), seek={0: 0}, hwm={0: 4})
    h.replica(1, [[0, 0, 1], [1, 1, 1], [2, 2, 1], [3, 3, 2]], 4)
    h.replica(2, [[0, 0, 1], [2, 9, 1], [3, 3, 2], [4, 8, 2]], 3)  # misses 1, 2 differs
    h.replica(3, [[0, 5, 1]], None)  # no high watermark: not compared
    r = check(h)
    _only(r, replica_divergence=2)
    assert r.valid is False and r.checked["replica_records"] == 9


def test_replica_divergence_judges_the_last_line_of_each_broker(check):
    h = _sent(2)
    h.final(_log([0, 1]), seek={0: 0}, hwm={0: 2})
    h.replica(1, [[0, 0, 1], [1, 1, 1]], 2)
    h.replica(2, [[0, 0, 1], [1, 7, 1]], 2)
    h.replica(2, [[0, 0, 1], [1, 1, 1]], 2)
    h.replica(3, [[0, 0, 1], [1, None, 1]], 2)
    h.replica(1, [[0, 0, 1], [1, None, 1], [2, 5, 1]], 2, partition=1)
    h.replica(2, [[0, 0, 1], [1, None, 2]], 3, partition=1)
    r = check(h, _test(partitions=2))
    # t-0 offset 1: 1, 1 and null; t-1 below 2: the same value, two nulls (leader
    # epochs are not compared), and offset 2 is not below both watermarks
    _only(r, replica_divergence=1)
    assert r.valid is False


# -- the fault budget ------------------------------------------------------------------


def _lossy(*steps) -> History:
    """Value 0 acked at offset 0 of t-0, then the steps, then a final read without it."""
    h = History()
    h.observe(isr=[1, 2, 3])
    h.send(0, 0, 0)
    for step in steps:
        step(h)
    h.final([], seek={0: 0}, hwm={0: 0})
    return h


def _loss(node: str, outcome: str | None = "ok"):
    return lambda h: h.fault("page-cache-loss", [node], outcome)


def _isr(*members: int):
    return lambda h: h.observe(isr=list(members))


def test_within_the_fault_budget_an_acks_all_loss_is_bad(check):
    r = check(_lossy(_loss("broker-2")))
    _only(r, lost_write=1)
    assert r.page_cache_losses == {"t-0": 1} and r.beyond_budget == set()
    assert r.valid is False and r.bad == {"lost-write"}


def test_beyond_the_fault_budget_an_acks_all_loss_is_expected(check):
    r = check(_lossy(_loss("broker-2"), _isr(1, 3), _loss("broker-3", "info")))
    _only(r, lost_write=1)
    assert r.page_cache_losses == {"t-0": 2} and r.beyond_budget == {"t-0"}
    assert r.valid is True and r.bad == set()
    # with min ISR 3 the budget is 2
    r = check(_lossy(_loss("broker-2"), _loss("broker-3")), _test(min_isr=3))
    assert r.beyond_budget == set() and r.valid is False


def test_a_full_isr_between_two_losses_closes_the_window(check):
    r = check(_lossy(_loss("broker-2"), _isr(1, 2, 3), _loss("broker-3")))
    assert r.page_cache_losses == {"t-0": 1} and r.valid is False
    # a two-member ISR is not full for a replication factor of 3
    r = check(_lossy(_loss("broker-2"), _isr(1, 2), _loss("broker-3")))
    assert r.page_cache_losses == {"t-0": 2} and r.valid is True


def test_a_loss_that_never_completed_counts_and_a_failed_one_does_not(check):
    r = check(_lossy(_loss("broker-2"), _loss("broker-3", None)))
    assert r.page_cache_losses == {"t-0": 2} and r.valid is True
    r = check(_lossy(_loss("broker-2"), _loss("broker-3", "fail")))
    assert r.page_cache_losses == {"t-0": 1} and r.valid is False


def test_only_losses_on_the_partitions_replicas_count(check):
    def elsewhere(h):
        h.observe(partition=1, isr=[4, 5, 6])

    # broker-4 was only ever seen as a replica of t-1; controller-1 is no broker
    r = check(_lossy(_loss("broker-2"), _loss("broker-4"), elsewhere, _loss("controller-1")),
              _test(partitions=2))
    assert r.page_cache_losses == {"t-0": 1, "t-1": 1} and r.valid is False
    # a loss naming two replicas counts twice
    r = check(_lossy(lambda h: h.fault("page-cache-loss", ["broker-2", "broker-3"])))
    assert r.page_cache_losses == {"t-0": 2} and r.valid is True


def test_every_broker_is_a_replica_of_a_partition_never_observed(check):
    h = History()
    h.send(0, 0, 0)
    h.fault("page-cache-loss", ["broker-2"])
    h.fault("page-cache-loss", ["broker-7"])  # a broker by its name
    h.final([], seek={0: 0}, hwm={0: 0})
    r = check(h)
    assert r.page_cache_losses == {"t-0": 2} and r.valid is True


def test_node_names_map_to_broker_ids_by_test_json(check):
    test = {**TEST, "nodes": {"kafka-a": {"role": "broker", "id": 1},
                              "kafka-b": {"role": "broker", "id": 2},
                              "broker-3": {"role": "controller", "id": 3}}}
    r = check(_lossy(_loss("kafka-a"), _loss("broker-3")), test)
    assert r.page_cache_losses == {"t-0": 1} and r.valid is False
    r = check(_lossy(_loss("kafka-a"), _loss("kafka-b")), test)
    assert r.page_cache_losses == {"t-0": 2} and r.valid is True


def test_other_faults_do_not_count(check):
    r = check(_lossy(lambda h: h.fault("kill", ["broker-2"]),
                     lambda h: h.fault("partition", ["broker-3"])))
    assert r.page_cache_losses == {"t-0": 0} and r.valid is False


def test_the_budget_spares_only_acks_all_losses(check):
    h = _lossy(_loss("broker-2"), _loss("broker-3"))
    h.ops.insert(2, {"index": 2, "time": 2500, "process": 0, "type": "invoke", "f": "poll",
                     "topic": "t"})
    h.ops.insert(3, {"index": 3, "time": 2600, "process": 0, "type": "ok", "f": "poll",
                     "topic": "t", "records": [[0, 0, 0]]})
    r = check(h)
    _only(r, lost_write=1, lost_committed_read=1)
    assert r.beyond_budget == {"t-0"} and r.valid is False
    assert r.bad == {"lost-committed-read"}


def test_without_test_json_the_defaults_apply(check):
    # replication factor 3: a two-member ISR closes no window; min ISR 2: budget 1
    r = check(_lossy(_loss("broker-2"), _isr(1, 3), _loss("broker-3")), None)
    assert r.page_cache_losses == {"t-0": 2} and r.valid is True
    h = _observed({"isr": [1, 2], "elr": [3]})
    h.send(0, 5, 1)
    h.final([[0, 0, 0], [0, 1, 5], [0, 2, 5]], seek={0: 0}, hwm={0: 3}, process=91)
    r = check(h, None)
    _only(r, elr_invariant=1, duplicate=1)
    assert r.bad == {"elr-invariant"}


def test_the_checked_counts(check):
    h = _sent(3)
    h.send(0, 9, None, outcome="fail")
    h.invoke_send(1, 10)
    h.poll(1, _log([0, 1]))
    h.poll(1, [], outcome="fail")
    h.observe()
    h.observe(high_watermark=3)
    h.final(_log([0, 1, 2]), seek={0: 0}, hwm={0: 3})
    h.replica(1, [[0, 0, 1]], None)
    r = check(h)
    assert r.checked == {"sends": 4, "polled_records": 2, "final_records": 3,
                         "observations": 2, "replica_records": 1}
    _only(r)
    assert r.valid is True


def test_the_verdict_is_false_whatever_else_holds(check):
    h = _sent(2)
    h.poll(1, [[0, 0, None]])
    h.final(_log([0]), seek={0: 0}, hwm={0: 2})  # incomplete: unseen
    r = check(h.text() + "{cut")
    assert r.valid is False and r.bad == {"garbage-read"} and r.truncated_lines == 1
    _only(r, garbage_read=1, unseen=1)


def test_reference_reads_the_file_it_is_given(tmp_path):
    path = tmp_path / "elsewhere.jsonl"
    path.write_text(_clean().text())
    assert reference_check(Path(path), TEST).valid is True
