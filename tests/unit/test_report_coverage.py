"""The report's KIP-966 states section: results.json's `coverage` as the checker
counted it, every state a row in the contract's order, the states never reached
highlighted, and each example linked to the row of the timeline that shows it
(an observation's row in its partition's table, a fault's in the faults table),
never to a row the report does not draw."""

from __future__ import annotations

import re
from pathlib import Path

from elr_harness.core.config import ReportConfig
from elr_harness.core.history import COVERAGE_STATES
from elr_harness.report.checked_tables import CheckedTables, ObservedState
from elr_harness.report.coverage import coverage_section
from elr_harness.report.faults import FaultBand
from elr_harness.report.lost_writes import LostWrites
from elr_harness.report.report_inputs import ReportInputs
from elr_harness.report.rundir import MetadataLog, RunFiles
from elr_harness.report.timeline import faults_section, partitions_section

DEFAULTS = ReportConfig()


def _inputs(coverage, states=None, bands=(), config=DEFAULTS) -> ReportInputs:
    results = {"valid": True, "anomalies": {}, "coverage": coverage}
    run = RunFiles(Path("/nowhere"), {}, results, None, None, MetadataLog(None, []))
    tables = CheckedTables(states=states or {})
    return ReportInputs(run, tables, list(bands), LostWrites({}, {}, {}, {}, [], True), config)


def _zero() -> dict:
    return {s: {"count": 0, "first_time": None, "example": None} for s in COVERAGE_STATES}


def _state(index: int, time_s: float) -> ObservedState:
    return ObservedState(time_s, index, -1, 2, (), (2,), (), fenced=(2,))


def _band(start: int, end: int | None) -> FaultBand:
    return FaultBand("kill", ("broker-1",), 1.0, 2.0, None, False, start, end_index=end)


def _rows(html: str) -> list[tuple[str, list[str]]]:
    """(the row's class, its cells) of each body row."""
    return [(cls, re.findall(r"<td>(.*?)</td>", body)) for cls, body in
            re.findall(r'<tr(?: class="([^"]*)")?>(.*?)</tr>', html) if "<td>" in body]


def test_every_state_is_a_row_and_the_unreached_ones_are_highlighted():
    coverage = _zero()
    coverage["elr-not-empty"] = {"count": 7, "first_time": 2_500_000_000, "example": 4}
    html = str(coverage_section(_inputs(coverage, {("t", 0): [_state(4, 2.5)]})))
    rows = _rows(html)
    assert [cells[0] for _, cells in rows] == list(COVERAGE_STATES)
    assert f"1 of {len(COVERAGE_STATES)} KIP-966 states reached" in html
    reached = [(cls, cells) for cls, cells in rows if cls != "unreached"]
    assert reached == [("", ["elr-not-empty", "ELR not empty", "7", "2.500",
                             '<a href="#op-4">op 4</a>'])]


def test_a_link_points_at_a_row_the_report_draws():
    coverage = _zero()
    coverage["elr-not-empty"] = {"count": 1, "first_time": 1, "example": 4}
    coverage["leaderless-with-elr"] = {"count": 1, "first_time": 1, "example": 9}
    coverage["unclean-shutdown-of-elr-member"] = {"count": 2, "first_time": 1, "example": 6}
    coverage["min-isr-change-with-elr"] = {"count": 1, "first_time": 1, "example": 12}
    inputs = _inputs(coverage, {("t", 0): [_state(4, 1.0)]}, [_band(6, None), _band(10, 12)])
    cells = {c[0]: c[4] for _, c in _rows(str(coverage_section(inputs)))}
    assert cells["elr-not-empty"] == '<a href="#op-4">op 4</a>'
    assert cells["leaderless-with-elr"] == "9"  # no row shows observation 9
    assert cells["unclean-shutdown-of-elr-member"] == '<a href="#op-6">op 6</a>'
    # a fault that ends another (a restore) is drawn on the row of the one it ends
    assert cells["min-isr-change-with-elr"] == '<a href="#op-10">op 12</a>'
    # and the rows the links name carry those ids
    assert 'id="op-4"' in str(partitions_section(inputs))
    assert 'id="op-6"' in str(faults_section(inputs)) and 'id="op-10"' in str(
        faults_section(inputs))


def test_an_observation_beyond_the_rows_drawn_is_not_linked():
    coverage = _zero()
    coverage["elr-not-empty"] = {"count": 1, "first_time": 1, "example": 8}
    states = {("t", 0): [_state(i, float(i)) for i in (2, 5, 8)]}
    inputs = _inputs(coverage, states, config=ReportConfig(max_state_rows=2))
    cells = {c[0]: c[4] for _, c in _rows(str(coverage_section(inputs)))}
    assert cells["elr-not-empty"] == "8"


def test_results_without_coverage_say_so():
    inputs = _inputs(None)
    assert "results.json has no coverage" in str(coverage_section(inputs))


def test_a_guided_runs_rounds_are_counted_per_state_they_aimed_at():
    from elr_harness.report.faults import FaultEvent

    coverage = _zero()
    coverage["elr-not-empty"] = {"count": 2, "first_time": 1, "example": 4}
    inputs = _inputs(coverage)
    events = [FaultEvent(i, 1.0, "kill", ("broker-1",), "ok", {"aim": aim, "guided": n})
              for i, (aim, n) in enumerate([("elr-not-empty", 1), ("elr-not-empty", 1),
                                            ("elected-from-elr", 2), ("elr-not-empty", 3)])]
    inputs.tables.fault_events.extend(events)
    html = str(coverage_section(inputs))
    cells = {c[0]: c[5] for _, c in _rows(html)}
    assert cells["elr-not-empty"] == "2" and cells["elected-from-elr"] == "1"
    assert cells["isr-below-min-isr"] == "0"
    assert "rounds aimed at it" in html


def test_the_pair_rules_say_how_much_they_judged():
    """results.json's `judged`: each rule over pairs of observations with the pairs
    it judged and what it found; one that judged nothing is highlighted."""
    inputs = _inputs(_zero())
    inputs.run.results["judged"] = {"elr-member-dropped": {"pairs": 12, "found": 1},
                                    "election-outside-elr": {"pairs": 0, "found": 0}}
    rows = _rows(str(coverage_section(inputs)))[len(COVERAGE_STATES):]
    assert [(cls, cells[0], cells[2], cells[3]) for cls, cells in rows] == [
        ("unreached", "election-outside-elr", "0", "0"),
        ("", "elr-member-dropped", "12", "1")]


def test_an_older_checkers_results_without_judged_show_no_such_table():
    html = str(coverage_section(_inputs(_zero())))
    assert "pairs of observations" not in html
