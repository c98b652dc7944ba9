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


#: Each file's seconds in a CI run, by folder/name (CI's --durations, summed per file, rounded; for
#: the unit half at least its slowest tests'). scripts/test.sh runs each half in two
#: workers, a file at a time, in collection order (--no-loadscope-reorder): the
#: longest first, so that no worker is left alone with a long file at the end. A
#: file not here counts as FILE_SECONDS_UNKNOWN (an integration file) or 0 (a unit
#: or browser file: most are short). Only the order depends on these figures.
FILE_SECONDS = {
    # integration (the last whole run's seconds per file, under load)
    "integration/test_run.py": 445,
    "integration/test_soak_real.py": 278,
    "integration/test_ssh.py": 217,
    "integration/test_readme.py": 209,
    "integration/test_known_bugs.py": 199,
    "integration/test_scenario_alone.py": 194,
    "integration/test_schedule_file.py": 148,
    "integration/test_scenario_slow_follower.py": 144,
    "integration/test_scenario_elr_downgrade.py": 117,
    "integration/test_scenario_disk_failure.py": 109,
    "integration/test_scenario_min_isr_drop.py": 104,
    "integration/test_fault_min_isr_feature.py": 75,
    "integration/test_cluster.py": 74,
    "integration/test_txn_workload.py": 62,
    "integration/test_fault_disk.py": 49,
    "integration/test_faults.py": 38,
    "integration/test_soak_owns_its_cluster.py": 37,
    "integration/test_workload_real.py": 34,
    "integration/test_fault_slow_network.py": 33,
    "integration/test_fault_reassign.py": 20,
    "integration/test_transactions.py": 15,
    # unit and browser
    "unit/test_hardening_paths.py": 160,
    "unit/test_checker_cli.py": 130,
    "unit/test_cli_bad_input.py": 110,
    "unit/test_checker_vs_reference.py": 90,
    "unit/test_install.py": 65,
    "unit/test_reference_cases_through_spark.py": 60,
    "unit/test_checker_batch.py": 57,
    "unit/test_soak.py": 55,
    "unit/test_report_build.py": 50,
    "unit/test_hardening_stdout.py": 47,
    "unit/test_checker_load.py": 40,
    "unit/test_checker_cluster.py": 37,
    "unit/test_mutants_build.py": 33,
    "unit/test_checker_spark.py": 31,
    "unit/test_jvm_archive.py": 31,
    "unit/test_checker_contract.py": 30,
    "browser/test_report_browser.py": 26,
    "unit/test_report_txn.py": 12,
}
FILE_SECONDS_UNKNOWN = 100


def pytest_collection_modifyitems(items):
    """The longest file first (the order within a file, and of files alike, kept)."""
    def seconds(item) -> int:
        unknown = FILE_SECONDS_UNKNOWN if "integration" in item.path.parts else 0
        return FILE_SECONDS.get(f"{item.path.parent.name}/{item.path.name}", unknown)
    items.sort(key=lambda item: -seconds(item))
