"""The suite-cost probe's pytest half (benchmarks/suite_cost.py loads it with
`-p suite_cost_plugin`): one JSON line per test (its node id, outcome, and its
setup, call and teardown seconds) and one per session, in $SUITE_COST_EVENTS."""

from __future__ import annotations

import os
import time

import pytest

_tests: dict[str, dict] = {}
_started = time.time()
#: In an xdist worker: its reports reach the controller's hooks too, so only the
#: controller (or a run without workers) notes tests and the session, once each.
_worker = False


def _note(kind: str, **fields) -> None:
    try:
        from sitecustomize import note
    except ImportError:  # the probe's other half is not loaded: nothing to note
        return
    note(kind, **fields)


def pytest_configure(config: pytest.Config) -> None:
    global _worker
    _worker = hasattr(config, "workerinput")
    # the integration half names tests/integration; the other half only --ignore's it
    named = [str(a) for a in config.invocation_params.args if not str(a).startswith("-")]
    integration = any(a.rstrip("/").startswith("tests/integration") for a in named)
    os.environ["SUITE_COST_HALF"] = "integration" if integration else "unit"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _worker:
        return
    entry = _tests.setdefault(report.nodeid, {"outcome": "passed"})
    entry[report.when] = report.duration
    if report.outcome != "passed" and entry["outcome"] == "passed":
        entry["outcome"] = report.outcome
    if report.when == "teardown":
        _note("test", nodeid=report.nodeid, **_tests.pop(report.nodeid))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _worker:
        return
    _note("session", secs=time.time() - _started, exitstatus=int(exitstatus),
          collected=session.testscollected)
