"""The report's phases bar and where its plots start (report/phases.py,
report/plots.py): from test.json's phases, with the check's time from results.json."""

from __future__ import annotations

import re

import pytest
from matplotlib.figure import Figure

from elr_harness.report.phases import phases_bar, recorded_phases, workload_start_s
from elr_harness.report.plots import finish_time_axis

PHASES = [{"name": "setup", "start_s": 0.5, "duration_s": 25.0},
          {"name": "workload + nemesis", "start_s": 25.5, "duration_s": 60.0},
          {"name": "collect", "start_s": 85.5, "duration_s": 10.0}]


def test_the_bar_has_a_segment_per_phase_and_the_check_as_wide_as_its_share():
    page = phases_bar({"phases": PHASES}, {"stats": {"checker_seconds": 5.0}})
    segments = re.findall(r'flex-grow: ([0-9.]+)"[^>]*><span>([^<]+)</span>', page)
    assert segments == [("0.2500", "setup 25 s"), ("0.6000", "workload + nemesis 60 s"),
                        ("0.1000", "collect 10 s"), ("0.0500", "check 5 s")]
    assert "100 s from the run&#x27;s start to its verdict" in page


def test_a_run_not_checked_has_no_check_segment():
    page = phases_bar({"phases": PHASES}, None)
    assert "check" not in re.findall(r"<span>([^<]+)</span>", page)[-1]
    assert "95 s from the run" in page


@pytest.mark.parametrize("phases", [
    {"setup_s": 40.1, "workload_s": 120.3},  # test.json of a run recorded before
    None, [], "setup",
])
def test_a_test_json_without_phase_times_says_so(phases):
    test = {} if phases is None else {"phases": phases}
    assert recorded_phases(test) == []
    assert workload_start_s(test) == 0.0
    assert "Phases: not available" in phases_bar(test, {"stats": {"checker_seconds": 3}})


def test_malformed_phases_are_left_out():
    test = {"phases": [PHASES[0], {"name": "heal"}, {"name": 3, "start_s": 1, "duration_s": 1},
                       {"name": "x", "start_s": 1, "duration_s": -1}, "teardown",
                       {"name": "y", "start_s": True, "duration_s": 1}, PHASES[1]]}
    assert [p.name for p in recorded_phases(test)] == ["setup", "workload + nemesis"]
    assert workload_start_s(test) == 25.5


@pytest.mark.parametrize("start, end, xlim, label", [
    (25.5, 100.0, (25.5, 25.5 + 74.5 * 1.01), "seconds since start (workload from 26 s)"),
    (0.0, 100.0, (0.0, 101.0), "seconds since start"),
    (150.0, 100.0, (0.0, 101.0), "seconds since start"),  # a start past the end: from 0
])
def test_the_time_axis_starts_where_the_workload_did(start, end, xlim, label):
    ax = Figure().subplots()
    finish_time_axis(ax, end, start)
    assert ax.get_xlim() == pytest.approx(xlim)
    assert ax.get_xlabel() == label
