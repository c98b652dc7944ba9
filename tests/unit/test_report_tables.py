"""What the report reads of the checker's tables (report/checked_tables.py), on a
small hand-written history checked by the real checker."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from checker_fixtures import TEST_CONFIG

from elr_harness.checker.check import check_history
from elr_harness.checker.report_tables import report_table_of
from elr_harness.report.checked_tables import Interest, read_checked_tables
from elr_harness.report.plots import downsample

pytestmark = pytest.mark.usefixtures("spark")

MS = 1_000_000


def _send(t_ms: int, process: int, typ: str, value: int, acks: str = "all", p: int = 0,
          **extra) -> dict:
    return {"time": t_ms * MS, "process": process, "type": typ, "f": "send",
            "topic": "t", "partition": p, "acks": acks, "value": value, **extra}


def _observe(t_ms: int, isr: list[int], elr: list[int] | None, hwm: int, **extra) -> dict:
    return {"time": t_ms * MS, "process": -2, "type": "ok", "f": "observe", "topic": "t",
            "partition": 0, "leader": 1, "leader_epoch": 0, "isr": isr, "elr": elr,
            "last_known_elr": [], "high_watermark": hwm, **extra}


RECORDS = [[0, off, 100 + off] for off in range(2000)]
LINES = [
    _send(0, 0, "invoke", 104), _send(5, 1, "invoke", 2, acks="1"),             # 0, 1
    _send(30, 0, "ok", 104, offset=4), _send(35, 1, "fail", 2, acks="1", error="X"),  # 2, 3
    _send(40, 2, "invoke", 3),                                                   # 4: never done
    {"time": 50 * MS, "process": 7, "type": "invoke", "f": "poll", "topic": "t",
     "seek": {"0": 3}},                                                          # 5
    {"time": 62 * MS, "process": 7, "type": "ok", "f": "poll", "topic": "t",
     "records": [[0, 3, 103], [0, 4, 104]], "high_watermark": {"0": 5}},         # 6
    {"time": 70 * MS, "process": -1, "type": "invoke", "f": "fault", "fault": "kill",
     "nodes": ["broker-1"], "detail": {"step": "T2"}},                           # 7
    {"time": 80 * MS, "process": -1, "type": "ok", "f": "fault", "fault": "kill",
     "nodes": ["broker-1"], "detail": {"step": "T2"}},                           # 8
    _observe(1000, [1, 2, 3], [], 5), _observe(1100, [3, 2, 1], [], 5),          # 9, 10
    _observe(1200, [1], [2], 7), _observe(1300, [1], None, 7),                   # 11, 12
    _observe(1400, [1], None, 7, fenced=[1]),                                    # 13
    _observe(1500, [1], None, 6, fenced=[1], min_isr=2, replicas=[1, 2, 3],
             elr_feature=1),                                                     # 14
    {"time": 2000 * MS, "process": 50, "type": "invoke", "f": "poll", "topic": "t",
     "final": True},                                                             # 15
    {"time": 2300 * MS, "process": 50, "type": "ok", "f": "poll", "topic": "t",
     "final": True, "records": RECORDS},                                         # 16
]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    history = tmp_path_factory.mktemp("tables") / "history.jsonl"
    history.write_text("".join(json.dumps({"index": i, **line}) + "\n"
                               for i, line in enumerate(LINES)))
    return history, check_history(history, None, TEST_CONFIG)


def test_latency_pairs_each_completion_with_its_processs_invoke(checked) -> None:
    history, _results = checked
    tables = read_checked_tables(history, {})
    assert tables.problem == ""
    ok = tables.latency[("send acks=all", "ok")]
    assert list(ok.y) == [30.0] and list(ok.x) == [0.03]
    assert list(tables.latency[("send acks=1", "fail")].y) == [30.0]
    assert list(tables.latency[("poll", "ok")].y) == [12.0]
    assert list(tables.latency[("final poll", "ok")].y) == [300.0]
    # the invoke that never completed has no point; nothing else is drawn
    assert sum(len(s.x) for s in tables.latency.values()) == 4
    assert tables.end_time_s == 2.3


def test_throughput_counts_client_completions_per_second(checked) -> None:
    history, _results = checked
    tables = read_checked_tables(history, {})
    assert list(tables.throughput["ok"]) == [2, 0, 1]  # send + poll at 0 s, final at 2 s
    assert list(tables.throughput["fail"]) == [1, 0, 0]
    assert "info" not in tables.throughput


def test_faults_keep_their_step_from_the_report_table(checked) -> None:
    history, _results = checked
    [fault] = read_checked_tables(history, {}).fault_events
    assert (fault.index, fault.kind, fault.nodes, fault.type, fault.step) == \
        (8, "kill", ("broker-1",), "ok", "T2")
    # the report table holds the polls, the faults and the lines with an error only
    table = pd.read_parquet(report_table_of(history), columns=["index"])
    assert sorted(table["index"]) == [3, 5, 6, 7, 8, 15, 16]


def test_observed_state_keeps_changes_only(checked) -> None:
    history, _results = checked
    tables = read_checked_tables(history, {})
    states = tables.states[("t", 0)]
    # [3, 2, 1] is the ISR [1, 2, 3]; a change of `fenced` alone is a state of its own,
    # and so is one of the min ISR or the ELR feature as read (14)
    assert [s.index for s in states] == [9, 11, 12, 13, 14]
    assert [s.isr for s in states] == [(1, 2, 3), (1,), (1,), (1,), (1,)]
    assert [s.elr for s in states] == [(), (2,), None, None, None]
    assert [s.fenced for s in states] == [None, None, None, (1,), (1,)]
    assert [s.min_isr for s in states] == [None, None, None, None, 2]
    assert [s.elr_feature for s in states] == [None, None, None, None, 1]
    hwm = tables.hwm[("t", 0)]
    assert list(hwm.y) == [5.0, 7.0, 6.0] and list(hwm.x) == [1.0, 1.2, 1.5]


def test_only_wanted_ops_are_read_and_polls_cut_to_relevant_records(checked) -> None:
    history, _results = checked
    wanted = {2: Interest(), 3: Interest(), 5: Interest(), 6: Interest(),
              8: Interest(), 13: Interest(), 14: Interest(),
              16: Interest(frozenset({104}), frozenset({(0, 9)}))}
    ops = read_checked_tables(history, wanted).ops
    assert set(ops) == set(wanted)
    assert ops[2] == {"index": 2, "time": 30 * MS, "process": 0, "type": "ok", "f": "send",
                      "topic": "t", "partition": 0, "acks": "all", "value": 104, "offset": 4}
    assert ops[3]["error"] == "X" and "offset" not in ops[3]
    assert ops[5]["seek"] == {"0": 3}
    assert ops[6]["records_total"] == 2 and ops[6]["high_watermark"] == {"0": 5}
    assert ops[8]["detail"] == {"step": "T2"} and ops[8]["nodes"] == ["broker-1"]
    assert ops[14]["fenced"] == [1] and ops[14]["high_watermark"] == 6
    # contract v3's optional observe fields, as the line had them (ints stay ints)
    assert (ops[14]["min_isr"], ops[14]["replicas"], ops[14]["elr_feature"]) == (
        2, [1, 2, 3], 1) and type(ops[14]["min_isr"]) is int
    assert not {"min_isr", "replicas", "elr_feature"} & set(ops[13])
    final = ops[16]
    assert final["final"] is True and "records" not in final
    assert final["records_total"] == 2000
    assert final["records_relevant"] == [[0, 4, 104], [0, 9, 109]]


def test_an_unchecked_history_has_nothing_to_read(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps({"index": 0, **LINES[0]}) + "\n")
    tables = read_checked_tables(history, {})
    assert "missing or older than the history" in tables.problem
    assert not tables.latency and not tables.states and not tables.ops


def test_downsample_keeps_spikes_and_the_bound() -> None:
    x = np.arange(100_000, dtype=float)
    y = np.ones(100_000)
    y[54_321] = 1e6
    y[77_777] = -5
    dx, dy = downsample(x, y, 400)
    assert len(dx) <= 400
    assert 1e6 in dy and -5 in dy
    assert list(dx) == sorted(dx)
    small_x, small_y = downsample([1.0, 2.0], [3.0, 4.0], 400)
    assert list(small_y) == [3.0, 4.0]


def test_the_state_table_and_lanes_show_the_min_isr_and_elr_feature(checked) -> None:
    from elr_harness.report.plots import membership_plot
    from elr_harness.report.timeline import state_table

    history, _results = checked
    states = read_checked_tables(history, {}).states[("t", 0)]
    html = str(state_table(states, [], 100))
    assert "<th>min ISR</th><th>ELR feature</th>" in html
    last_row = html.split("<tr>")[-1]
    # the change the last observation brought is highlighted: min ISR 2, feature 1
    assert '<span class="changed">2</span>' in last_row
    assert '<span class="changed">1</span>' in last_row
    drawn = membership_plot(("t", 0), states, [1, 2, 3], [], 2.3, 10, 50)
    without = membership_plot(("t", 0), states[:-1], [1, 2, 3], [], 2.3, 10, 50)
    assert drawn.startswith("data:image/png") and drawn != without
