"""The soak's checker: one Spark session, started at the first check and kept
for the soak's lifetime, checks every run the soak recorded.

A soak's runs record with `--no-check`; the soak then checks each run directory
here exactly as `harness run` would have (checkers.check -> results.json, then
reports.build -> report.html and the store's index), without a JVM start per
run. What the check prints goes to the run's log, as the run's own check did.
"""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console

from elr_harness.core.config import CheckerConfig, ReportConfig
from elr_harness.core.errors import EXIT_UNKNOWN, HarnessError


class SoakChecker:
    """Checks run directories in one long-lived Spark session; close() ends it."""

    def __init__(self) -> None:
        #: Spark sessions this checker started (one for a whole soak, unless a plan
        #: entry names another --spark-master)
        self.sessions_started = 0
        self.checks = 0
        self._session = None

    def check(self, run_dir: Path, log_path: Path, spark_master: str | None) -> int:
        """Check run_dir, write its results.json and report.html; the verdict's exit
        code. A failure of the check is `harness: ...` in the log and exit 2; a
        Ctrl-C (or an error it caused in Spark) is KeyboardInterrupt."""
        config = CheckerConfig(spark_master=spark_master or CheckerConfig.spark_master)
        with log_path.open("a") as log, _noting_interrupts() as interrupted:
            out = Console(file=log, width=120, highlight=False, force_terminal=False)
            out.print("── check (in the soak's Spark session)")
            started = time.monotonic()
            try:
                return self._check(run_dir, config, out, started)
            except KeyboardInterrupt:
                out.print("harness: interrupted")
                raise
            except Exception as err:
                if interrupted.is_set():
                    out.print("harness: interrupted")
                    raise KeyboardInterrupt from err
                message = err.message if isinstance(err, HarnessError) else \
                    f"the check failed ({type(err).__name__}: {str(err)[:300]})"
                out.print(f"harness: {message}")
                return EXIT_UNKNOWN

    def _check(self, run_dir: Path, config: CheckerConfig, out: Console,
               started: float) -> int:
        from elr_harness.checker.check import check_path, exit_code
        from elr_harness.report.build import build_report
        from elr_harness.report.summary import summary_table

        session = self._session_for(config)
        results, _ = check_path(run_dir, config)
        self.checks += 1
        out.print(f"checked in {time.monotonic() - started:.1f} s, Spark application "
                  f"{session.sparkContext.applicationId} (check {self.checks} of this "
                  f"soak's checker, {self.sessions_started} session(s) started)")
        report = build_report(run_dir, ReportConfig())
        out.print(summary_table(results, report))
        return exit_code(results)

    def _session_for(self, config: CheckerConfig):
        """The running session for config's master, started once (in a helper thread,
        as check_history does: PySpark then leaves the soak's SIGINT handler alone),
        with the JIT of a long-lived JVM."""
        from elr_harness.checker.spark import get_spark, running_session

        running = running_session()
        if running is not None and running.sparkContext.master == config.spark_master:
            return running
        with ThreadPoolExecutor(1, thread_name_prefix="soak-spark-start") as pool:
            self._session = pool.submit(get_spark, config,
                                        config.quick_jit_below_bytes).result()
        self.sessions_started += 1
        return self._session

    def close(self) -> None:
        """End the session this checker started and its JVM, then remove what a
        check cut short by a Ctrl-C left: its conversion's folders, which the JVM
        could make again until it was gone (as `harness check` does)."""
        if self._session is not None:
            from elr_harness.checker.load import remove_abandoned
            from elr_harness.checker.spark import end_jvm

            self._session = None
            end_jvm(CheckerConfig().cancelled_tasks_wait_s)
            remove_abandoned()


class _noting_interrupts:  # noqa: N801 - used as a context manager, like a function
    """Inside the block, a Ctrl-C raises KeyboardInterrupt as usual and is
    remembered, so an error it caused in Spark or py4j counts as the interrupt."""

    def __enter__(self) -> threading.Event:
        self.event = threading.Event()
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            def on_sigint(signum, frame):
                self.event.set()
                signal.default_int_handler(signum, frame)

            self.previous = signal.signal(signal.SIGINT, on_sigint)
        return self.event

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
