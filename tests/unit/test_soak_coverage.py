"""A soak's KIP-966 state coverage: each run's record keeps the counts its checker
wrote (results.json's `coverage`), the soak aggregates them (soak.json), and
junit.xml and index.html show which runs reached each state and which states no
run reached."""

from __future__ import annotations

import json
import re

from junitparser import JUnitXml
from test_soak import _record, _run_dir, _state

from elr_harness.core.history import COVERAGE_STATES
from elr_harness.report.soak_index import render_soak_index
from elr_harness.soak.junit import write_junit
from elr_harness.soak.results import soak_coverage


def _with_coverage(run_dir, counts: dict) -> None:
    results = json.loads((run_dir / "results.json").read_text())
    results["coverage"] = {s: {"count": counts.get(s, 0), "first_time": None, "example": None}
                           for s in COVERAGE_STATES}
    (run_dir / "results.json").write_text(json.dumps(results))


def test_a_run_record_keeps_its_checkers_counts(tmp_path):
    run_dir = _run_dir(tmp_path, valid=True)
    _with_coverage(run_dir, {"elr-not-empty": 12, "elected-from-elr": 1})
    record = _record(tmp_path, run_dir, 0)
    assert record["coverage"] == {s: {"elr-not-empty": 12, "elected-from-elr": 1}.get(s, 0)
                                  for s in COVERAGE_STATES}


def _soak() -> dict:
    state = _state(["valid", "invalid", "error", "valid"])
    runs = state["runs"]
    runs[0]["coverage"] = {"elr-not-empty": 3, "isr-below-min-isr": 5}
    runs[1]["coverage"] = {"elr-not-empty": 1, "elected-from-elr": 0}
    # runs[2] was never checked: no coverage
    runs[3]["coverage"] = {"isr-below-min-isr": 2, "disk-fault-of-isr-or-elr-member": 1}
    state["coverage"] = soak_coverage(runs)
    return state


def test_the_soak_aggregates_the_runs_that_reached_each_state():
    coverage = _soak()["coverage"]
    assert coverage["checked_runs"] == 3
    assert list(coverage["states"]) == list(COVERAGE_STATES)
    assert coverage["states"]["elr-not-empty"] == {"runs": [0, 1], "count": 4}
    assert coverage["states"]["isr-below-min-isr"] == {"runs": [0, 3], "count": 7}
    assert coverage["states"]["elected-from-elr"] == {"runs": [], "count": 0}
    assert coverage["unreached"] == [s for s in COVERAGE_STATES if s not in (
        "elr-not-empty", "isr-below-min-isr", "disk-fault-of-isr-or-elr-member")]


def test_junit_xml_says_per_state_which_runs_reached_it(tmp_path):
    write_junit(_soak(), tmp_path / "junit.xml")
    [suite] = list(JUnitXml.fromfile(str(tmp_path / "junit.xml")))
    props = {p.name: p.value for p in suite.properties()}
    assert props["coverage.checked_runs"] == "3"
    assert props["coverage.elr-not-empty"] == "2 runs (1, 2)"
    assert props["coverage.elected-from-elr"] == "0 runs"
    assert props["coverage.unreached"].split(", ")[0] == "leaderless-with-elr"
    assert "elr-not-empty" not in props["coverage.unreached"].split(", ")


def test_the_index_highlights_the_states_no_run_reached(tmp_path):
    page = render_soak_index(_soak(), tmp_path)
    assert f"3 of {len(COVERAGE_STATES)} KIP-966 states reached by the 3 checked runs" in page
    rows = {name: cls for cls, name in re.findall(r'<tr(?: class="(\w+)")?><td>([a-z-]+)</td>',
                                                   page)}
    assert rows.get("elr-not-empty") == "" and rows.get("elected-from-elr") == "unreached"
