"""The JSONL -> Parquet conversion (checker/load.py): Spark's reader writes
every valid line's events and side rows once, judges every line by the
contract, and names the first bad one by its exact number (blank lines
counted), as the reference checker (tests/reference_checker.py) does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reference_checker import MalformedLine, reference_check
from synthetic import Injection, SyntheticSpec, write_run_dir

from elr_harness.checker.events import (
    EVENTS_COLUMNS,
    FINAL_RECORD,
    READ_RECORD,
    REPLICA_RECORD,
    SEEK,
    bucket_of,
)
from elr_harness.checker.load import _convert, load_history, read_overview, release
from elr_harness.checker.parquet_cache import EVENTS, LAYOUT, OVERVIEW, SIDE, SIDE_COLUMNS
from elr_harness.checker.report_tables import REPORT
from elr_harness.core.config import CheckerConfig
from elr_harness.core.errors import HistoryError

pytestmark = pytest.mark.usefixtures("spark")


def _tables(session, history: Path, parquet: Path) -> dict[str, list[tuple]]:
    _convert(session, history, parquet)
    out = {}
    for table, columns in [(EVENTS, EVENTS_COLUMNS), (SIDE, SIDE_COLUMNS)]:
        df = session.read.parquet(str(parquet / table))
        out[table] = sorted(tuple(json.dumps(v, sort_keys=True, default=str)
                                  for v in r.asDict().values())
                            for r in df.select(*columns).collect())
    out["layout"] = json.loads((parquet / LAYOUT).read_text())
    out["overview"] = json.loads((parquet / OVERVIEW).read_text())
    _assert_bucketed(session, parquet / EVENTS, out["layout"]["buckets"])
    return out


def _assert_bucketed(session, events: Path, buckets: int) -> None:
    """Each events file holds only keys of the bucket its name ends with."""
    files = sorted(events.glob("*.parquet"))
    assert files
    for f in files:
        bucket = int(f.name.split(".")[0].rsplit("_", 1)[1])
        keys = {r["tp"] for r in session.read.parquet(str(f)).select("tp").distinct().collect()}
        assert keys and {bucket_of(k, buckets) for k in keys} == {bucket}, f.name


def _expected_event_counts(history: Path) -> dict[int, int]:
    """Rows per event kind, counted from the JSON lines themselves."""
    counts = {"send": 0, FINAL_RECORD: 0, READ_RECORD: 0, SEEK: 0, REPLICA_RECORD: 0}
    for line in history.read_text().splitlines():
        if not line.strip():
            continue
        op = json.loads(line)
        if op["f"] == "send":
            counts["send"] += 1
        elif op["f"] == "poll" and op["type"] == "ok" and op.get("records") is not None:
            counts[FINAL_RECORD if op.get("final") else READ_RECORD] += len(op["records"])
        elif op["f"] == "poll" and op["type"] == "invoke" and op.get("seek") is not None:
            counts[SEEK] += len(op["seek"])
        elif op["f"] == "replica":
            counts[REPLICA_RECORD] += len(op["records"])
    return counts


def test_the_converter_writes_every_line_once(spark, tmp_path):  # noqa: F811
    spec = SyntheticSpec(lines=3000, seed=5, injections=(
        Injection("garbage-read", at=0.3), Injection("hwm-regression", at=0.5),
        Injection("elr-invariant", at=0.7)))
    generated = write_run_dir(tmp_path, spec)
    history = tmp_path / "history.jsonl"
    with history.open("a") as f:  # fields the synthetic generator does not write, twice
        for _ in range(2):
            f.write(json.dumps({"index": 99999, "time": 1, "process": -1, "type": "info",
                                "f": "fault", "fault": "partition", "nodes": ["b1", "c2"],
                                "extra": {"ignored": [1.5, "x"]}}) + "\n")
        for broker in (1, 2):  # the collector's replica lines
            f.write(json.dumps({"index": 100000 + broker, "time": 2, "process": -3,
                                "type": "ok", "f": "replica", "topic": spec.topic,
                                "partition": 0, "node": f"broker-{broker}", "broker": broker,
                                "high_watermark": 3, "log_end_offset": 3,
                                "records": [[0, 5, 1], [1, None, 1], [2, 7, 2]]}) + "\n")
    fast = _tables(spark, history, tmp_path / "out.parquet")
    assert fast["overview"]["first_bad"] is None
    # the overview counts every line, by kind, and the records ok polls carry
    overview = fast["overview"]["rows"]
    assert not any(r["_bad"] or r["_blank"] for r in overview)
    assert sum(r["count"] for r in overview) == generated.lines + 4
    ops = [json.loads(line) for line in history.read_text().splitlines()]
    assert sum(r["records"] for r in overview if r["f"] == "replica") == 6
    assert sum(r["count"] for r in overview if (r["f"], r["type"]) == ("poll", "ok")) == \
        sum(1 for op in ops if (op["f"], op["type"]) == ("poll", "ok")) > 0
    for final in (False, True):
        assert sum(r["records"] for r in overview if r["f"] == "poll" and r["final"] == final) \
            == sum(len(op["records"]) for op in ops if op["f"] == "poll" and op["type"] == "ok"
                   and bool(op.get("final")) == final) > 0
    # the side lines, all of them (a line written twice is kept twice) and nothing else:
    # faults, observations and final polls, without their records
    f_column, index_column = SIDE_COLUMNS.index("f"), SIDE_COLUMNS.index("index")
    side = [json.loads(r[f_column]) for r in fast[SIDE]]
    assert side.count("fault") == sum(op["f"] == "fault" for op in ops) > 1
    assert side.count("observe") == sum(op["f"] == "observe" for op in ops) > 0
    assert side.count("poll") == sum(op["f"] == "poll" and bool(op.get("final"))
                                     for op in ops) > 0
    assert side.count("replica") == 2
    assert [json.loads(r[index_column]) for r in fast[SIDE]].count(99999) == 2
    # every send line, polled record and seek is one event, of its kind
    kinds = [json.loads(row[EVENTS_COLUMNS.index("kind")]) for row in fast[EVENTS]]
    expected = _expected_event_counts(history)
    assert sum(k < FINAL_RECORD for k in kinds) == expected.pop("send") > 0
    for kind, n in expected.items():
        assert kinds.count(kind) == n > 0, kind


#: A valid send completion, which the cases below change one field of.
_SEND = ('{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send", "topic": "t", '
         '"partition": 0, "acks": "all", "value": 1, "offset": 0}')
_GOOD = ('{"index": 0, "time": 1, "process": 0, "type": "invoke", "f": "send", "topic": "t", '
         '"partition": 0, "acks": "all", "value": 1}')


#: Lines each judged between two valid ones, by Spark's rules and the reference's.
_LINES = [
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send", "partition": "1"}',
    '{"index": 1, "time": 2.5, "process": 0, "type": "ok", "f": "send"}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send", "offset": 1e3}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send", "value": true}',
    '{"index": 1, "time": 2, "process": -2, "type": "ok", "f": "observe", "leader": {}}',
    '{"index": 1, "time": 2, "process": -2, "type": "ok", "f": "observe", "leader": [1]}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", "records": [[1, 2, "5"]]}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", "records": [[1, 2]]}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", "records": [null]}',
    '{"index": 1, "time": 2, "process": 0, "type": "invoke", "f": "poll", "seek": {"0": "5"}}',
    '{"index": 1, "time": 2, "process": -2, "type": "ok", "f": "observe", "isr": [1.0, 2]}',
    '{"index": 1, "time": 2, "process": 0, "type": "done", "f": "send"}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok"}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send"',
    '[]',
    '[{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send"}]',
    '3',
    'null',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send", '
    '"value": 99999999999999999999}',
    '{"index": 1, "time": 2, "process": -2, "type": "ok", "f": "observe", '
    '"high_watermark": {"0": 5}}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", "high_watermark": 5}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", '
    '"high_watermark": {"a": 5}}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", '
    '"high_watermark": {"0": 5.5}}',
    '{"index": 1, "time": 2, "process": 0, "type": "invoke", "f": "poll", "seek": {"x": 5}}',
    '{"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", "topic": "t", '
    '"records": [[0, null, 5]]}',
    '{"index": 1, "time": 2, "process": -3, "type": "ok", "f": "replica", "topic": "t", '
    '"partition": 0, "node": "b1", "broker": 1, "log_end_offset": 1, "records": [[0, 5, null]]}',
    # a text field's value that is not a string, however the JSON spells its key
    # (the converter reads such lines twice: checker/lines.py spark_needs_shape)
    *(_SEND.replace(a, b, 1) for a, b in (
        ("", ""),
        ('"topic": "t"', '"topic": 5'),
        ('"topic": "t"', '"topic" :\t 5'),
        ('"topic": "t", ', '"topic":5,'),
        ('"acks": "all"', '"acks": 1'),
        ('"acks": "all"', '"acks": "1"'),
        ('"acks": "all"', '"acks": null'),
        ('"topic": "t"', '"topic": NaN'),
        ('"topic": "t"', '"to\\u0070ic": 5'),
        ('"topic": "t"', '"t\\u006fpic": "t"'),
        ('"type": "ok"', '"typ\\u0065": "ok"'),
        ('"f": "send"', '"\\u0066": 5'),
        ('"f": "send"', '"f": ["send"]'),
        ('"type": "ok"', '"type": 1'),
        ('"value": 1', '"value": 1, "error": {"x": 1}'),
        ('"value": 1', '"value": 1, "error": "a \\"topic\\": 5"'),
        ('"value": 1', '"value": 1, "fault": true'),
        ('"value": 1', '"value": 1, "node": -1'),
        ('"value": 1', '"value": 1, "x": {"topic": 5}'),
        ('"value": 1', '"value": 1, "topic": 5'),
        ('"value": 1', '"value": 1, "detail": {"topic": 5}'),
        ('"value": 1', '"value": 1, "detail": 5'),
        ('"value": 1', '"value": 1, "nodes": [1]'),
        ('"f": "send"', '"f": "newer"'),
        ('"f": "send"', '"f": "newer", "partition": "x"'),
        ('"f": "send"', "'f': 'send'"),
        ('"topic": "t"', "'topic': 5"),
    )),
    '{"index": 1, "time": 2, "process": -1, "type": "ok", "f": "fault", "fault": "kill", '
    '"nodes": ["b1"], "detail": {"topic": 5, "f": 1}}',
    '{"index": 1, "time": 2, "process": -1, "type": "ok", "f": "fault", "fault": "kill", '
    '"nodes": [1]}',
    '{"index": 1, "time": 2, "process": -1, "type": "ok", "f": "fault", "fault": "kill", '
    '"nodes": ["b1"], "detail": "x"}',
]


@pytest.fixture(scope="module")
def judged_lines(spark, tmp_path_factory):  # noqa: F811
    """Each line of _LINES between two valid ones, a history of its own; all of them
    converted in one batch (load_batch: the conversion's Spark jobs once, not once a
    line; each history is still judged apart, its lines numbered from its own first).
    The same conversion as load_history's, each run's lines judged by the same
    rules: test_checker_batch holds a batch to each history's check alone, and
    test_bad_and_blank_lines_are_named_as_the_reference_names_them below converts
    one history at a time."""
    from elr_harness.checker.load import load_batch
    from elr_harness.checker.staging import Staging

    root = tmp_path_factory.mktemp("lines")
    histories = []
    for run, line in enumerate(_LINES):
        history = root / f"line-{run}" / "history.jsonl"
        history.parent.mkdir()
        history.write_text(f"{_GOOD}\n{line}\n{_GOOD}\n")
        histories.append(history)
    with Staging() as stage:
        loaded = load_batch(spark, histories, CheckerConfig(), stage)
        try:
            yield loaded, histories
        finally:
            release(spark, loaded)


@pytest.mark.parametrize("run", range(len(_LINES)), ids=_LINES)
def test_every_line_is_judged_as_the_reference_judges_it(judged_lines, run):
    """A line between two valid ones: bad by Spark's rules exactly when the
    reference says so, named by its number (2)."""
    loaded, histories = judged_lines
    try:
        reference_check(histories[run], None)
        expected = None
    except MalformedLine as err:
        expected = err.line
    if expected is None:
        assert read_overview(loaded, run).history_lines == 3
    else:
        with pytest.raises(HistoryError, match=f": line {expected} is not a valid"):
            read_overview(loaded, run)


_DEEP = "[" * 70 + "]" * 70
#: (lines, the line named, or None when valid, and the cut-short lines). Whitespace
#: JSON does not take (\x0b, \x0c) makes a line malformed, never blank; blank lines
#: count in the numbering.
_LINE_CASES = {
    "vertical-tab": ([_GOOD, "\x0b", _GOOD], 2, 0),
    "form-feed": ([_GOOD, " \x0c ", _GOOD], 2, 0),
    "vertical-tab-last": ([_GOOD, "\x0b"], None, 1),
    "blank-lines": (["", _GOOD, "  \t", "\r", _GOOD, "", "[]", _GOOD], 7, 0),
    "cut-short-last": ([_GOOD, "", _GOOD, _GOOD[:30], "", " "], None, 1),
    "cut-short-not-last": ([_GOOD, _GOOD[:30], _GOOD], 2, 0),
    "two-cut-short": ([_GOOD, _GOOD[:30], _GOOD[:20]], 2, 0),
    "empty-list-last": ([_GOOD, "[]"], 2, 0),
    "deep-last": ([_GOOD, _DEEP], 2, 0),
    "deep-cut-short-last": ([_GOOD, "[" * 1000], 2, 0),
    "wrong-type-after-blanks": (["", "", _GOOD.replace('"value": 1', '"value": "1"')], 3, 0),
    "malformed": ([_GOOD, "", "{nope}", _GOOD], 3, 0),
}


@pytest.mark.parametrize("case", sorted(_LINE_CASES))
def test_bad_and_blank_lines_are_named_as_the_reference_names_them(spark, tmp_path, case):  # noqa: F811
    lines, named, truncated = _LINE_CASES[case]
    history = tmp_path / "history.jsonl"
    history.write_bytes(("\n".join(lines) + "\n").encode())
    if case.startswith("deep"):  # beyond the reference's recursive parser
        reason = "JSON nested deeper than 64 levels"
    elif named is None:
        assert reference_check(history, None).truncated_lines == truncated
    else:
        with pytest.raises(MalformedLine) as ref_err:
            reference_check(history, None)
        assert ref_err.value.line == named
        reason = ref_err.value.reason
    loaded = load_history(spark, history, CheckerConfig())
    try:
        if named is None:
            overview = read_overview(loaded)
            assert (overview.history_lines, overview.truncated_lines) == (
                sum(1 for x in lines if x.strip(" \t\r\n")), truncated)
        else:
            with pytest.raises(HistoryError) as err:
                read_overview(loaded)
            assert f": line {named} is not a valid history line: " in str(err.value)
            assert reason in str(err.value)
    finally:
        release(spark, loaded)


def test_nulls_and_garbage_values_are_valid(spark, tmp_path):  # noqa: F811
    history = tmp_path / "history.jsonl"
    history.write_text(
        '{"index": 0, "time": 1, "process": 0, "type": "ok", "f": "send", "offset": null,'
        ' "topic": "t", "partition": 0, "acks": "0", "value": 7}\n'
        '{"index": 1, "time": 2, "process": 3, "type": "ok", "f": "poll", "topic": "t",'
        ' "records": [[0, 4, null]], "high_watermark": {"0": 5}}\n'
        '\n   \n'
        '{"index": 2, "time": 3, "process": -3, "type": "ok", "f": "replica", "topic": "t",'
        ' "partition": 0, "node": "broker-1", "broker": 1, "log_end_offset": 5,'
        ' "records": [[4, null, 2]], "high_watermark": 5}\n')
    loaded = load_history(spark, history, CheckerConfig())
    try:
        assert read_overview(loaded).history_lines == 3
    finally:
        release(spark, loaded)


def test_a_cache_is_reused_while_whole_and_rebuilt_when_a_side_file_is_gone(spark, tmp_path):  # noqa: F811
    write_run_dir(tmp_path, SyntheticSpec(lines=200, seed=1))
    history, parquet = tmp_path / "history.jsonl", tmp_path / "history.parquet"

    def load() -> None:
        release(spark, load_history(spark, history, CheckerConfig()))

    load()
    overview = (parquet / OVERVIEW).read_text()
    built = (parquet / LAYOUT).stat().st_mtime_ns
    load()
    assert (parquet / LAYOUT).stat().st_mtime_ns == built  # reused as it is
    (parquet / OVERVIEW).unlink()
    load()
    assert (parquet / OVERVIEW).read_text() == overview
    assert (parquet / LAYOUT).stat().st_mtime_ns != built  # converted again
    # nothing but the tables and their side files
    assert sorted(p.name for p in parquet.iterdir()) == sorted(
        [EVENTS, SIDE, REPORT, LAYOUT, OVERVIEW, "_elr_source.json"])


def test_a_cache_counting_bad_lines_without_saying_where_is_a_clear_error(tmp_path):
    """The converter writes where the first bad line is whenever it counts one; a
    cache with one and not the other was tampered with."""
    from elr_harness.checker.events import TopicKeys
    from elr_harness.checker.load import LoadedHistory

    row = {"_blk": 0, "_bad": True, "_blank": False, "count": 1, "first": 0, "last": 0,
           "records": 0}
    loaded = LoadedHistory(history=tmp_path / "history.jsonl", events=None,
                           side=None, keys=TopicKeys(()), events_table="t",
                           overview_rows=[row], first_bad=None)
    with pytest.raises(HistoryError, match="delete history.parquet"):
        read_overview(loaded)


def test_the_jit_stops_at_c1_only_for_small_histories(monkeypatch):
    from elr_harness.checker.spark import jvm_options

    monkeypatch.delenv("ELR_CHECKER_JVM_OPTIONS", raising=False)
    config = CheckerConfig()
    small = jvm_options(config, config.quick_jit_below_bytes - 1)
    large = jvm_options(config, config.quick_jit_below_bytes)
    assert "-XX:TieredStopAtLevel=1" in small and config.jvm_options in small
    assert "TieredStopAtLevel" not in large and large == config.jvm_options
    monkeypatch.setenv("ELR_CHECKER_JVM_OPTIONS", "-Xint")
    assert jvm_options(config, 1) == "-Xint"


def test_a_history_with_a_current_cache_keeps_c1_up_to_its_own_bound(monkeypatch):
    from elr_harness.checker.spark import jvm_options

    monkeypatch.delenv("ELR_CHECKER_JVM_OPTIONS", raising=False)
    config = CheckerConfig(quick_jit_below_bytes=100, quick_jit_cached_below_bytes=1000)
    assert "TieredStopAtLevel" not in jvm_options(config, 500)
    assert "-XX:TieredStopAtLevel=1" in jvm_options(config, 500, cached=True)
    assert "TieredStopAtLevel" not in jvm_options(config, 1000, cached=True)


def test_check_history_tells_get_spark_whether_the_cache_is_current(tmp_path, monkeypatch):
    """The JIT is chosen before the JVM starts: by whether a conversion is ahead."""
    from elr_harness.checker import check, parquet_cache

    history = tmp_path / "history.jsonl"
    history.write_text("")
    seen = []

    class Stop(Exception):
        pass

    def fake_get_spark(config, history_bytes, cached=False):
        seen.append(cached)
        raise Stop

    monkeypatch.setattr("elr_harness.checker.spark.get_spark", fake_get_spark)
    with pytest.raises(Stop):
        check.check_history(history, None, CheckerConfig())
    # a cache installed as the converter installs one (its marker written by install)
    parquet = parquet_cache.parquet_location(history)
    tmp = parquet_cache.temporary_name(parquet)
    tmp.mkdir()
    (tmp / parquet_cache.LAYOUT).write_text("{}")
    (tmp / parquet_cache.OVERVIEW).write_text("{}")
    parquet_cache.install(tmp, parquet, parquet_cache.source_marker(history))
    with pytest.raises(Stop):
        check.check_history(history, None, CheckerConfig())
    assert seen == [False, True]
    with pytest.raises(Stop):
        check.check_history(history, None, CheckerConfig(parquet_cache=False))
    assert seen == [False, True, False]


@pytest.mark.parametrize("in_memory", [True, False])
def test_a_ctrl_c_at_the_conversions_first_spark_call_leaves_no_table(
        spark, tmp_path, monkeypatch, in_memory):  # noqa: F811
    """The folder is made, then the parsed lines are kept (persist, or written as
    Parquet): a Ctrl-C while that first py4j call runs, a long one on a loaded
    machine, must remove the folder too (CI once found it left)."""
    write_run_dir(tmp_path, SyntheticSpec(lines=200, seed=2))
    out = tmp_path / "history.parquet.tmp-test"

    def interrupted(*args, **kwargs):
        assert out.is_dir()  # the window: after the folder exists
        raise KeyboardInterrupt

    frame = spark.range(1)  # the session's own classes (classic, not Connect)
    if in_memory:
        monkeypatch.setattr(type(frame), "persist", interrupted)
    else:
        monkeypatch.setattr(type(frame.write), "parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _convert(spark, tmp_path / "history.jsonl", out,
                 history_bytes=100, parsed_in_memory_below=1000 if in_memory else 10,
                 cancelled_wait_s=5, cancelled_settle_s=0.1)
    assert not out.exists()
