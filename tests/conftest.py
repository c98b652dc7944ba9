"""Suite-wide pytest settings.

Under CI (CI=true) a skipped test is a failure, with the skip's reason: every
capability the suite needs (Docker, FUSE, Chromium, java) is installed by
scripts/setup.sh, so a skip there means a test did not run while CI said green.
Locally a skip stays a skip, and scripts/test.sh prints its reason (-rs).

Hypothesis runs under a profile: "ci" when CI=true, derandomized (each test's
examples follow from the test itself, so a failure in CI fails again, the same
way, on any machine) and without the example database (nothing carried over
from earlier runs); "dev" otherwise, random as usual. HYPOTHESIS_PROFILE picks
one by name.

This folder holds no __init__.py: pytest's default (prepend) import mode puts it
on sys.path, so tests/unit and tests/integration import the plain helpers kept
here (reference_checker, history_strategies) by their module names.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if _in_ci() else "dev"))


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
