"""Suite-wide pytest settings.

Under CI (CI=true) a skipped test is a failure, with the skip's reason: every
capability the suite needs (Docker, FUSE, Chromium, java) is installed by
scripts/setup.sh, so a skip there means a test did not run while CI said green.
Locally a skip stays a skip, and scripts/test.sh prints its reason (-rs).
"""

from __future__ import annotations

import os

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _in_ci() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which must run every test: {reason}"


def pytest_sessionfinish(session, exitstatus):
    """A whole module skipped at collection (pytest.skip(allow_module_level=True))
    is not a test report: under CI it fails the session here."""
    if not _in_ci():
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        for report in skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            reporter.write_line(f"SKIPPED under CI=true (a failure): {report.nodeid}: {reason}",
                                red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
