"""The checker's Spark session helpers (checker/spark.py)."""

from __future__ import annotations

import time

import pytest

from elr_harness.checker.spark import computed_meanwhile

pytestmark = pytest.mark.usefixtures("spark")


def _newest_job(session) -> int:
    """The id of a job run now, outside any job group: every later job's id is
    higher (job ids count up in a session)."""
    session.range(1).count()
    return max(session.sparkContext.statusTracker().getJobIdsForGroup())


def _finished_after(session, newest: int) -> int:
    """Jobs after `newest` that succeeded (public API). Counted from the session's
    newest job, not from id 0: a session shared by many tests is past id 1000, and
    the tracker forgets its oldest jobs."""
    tracker = session.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(i) for i in range(newest + 1, newest + 100)]
    return sum(1 for job in jobs if job is not None and job.status == "SUCCEEDED")


def test_persisted_frames_are_computed_in_the_background_while_the_block_runs(spark):  # noqa: F811
    from pyspark import StorageLevel

    frame = spark.range(0, 1000, 1, 4).selectExpr("id % 10 AS k").persist(
        StorageLevel.MEMORY_AND_DISK_DESER)
    newest = _newest_job(spark)
    try:
        with computed_meanwhile(spark, frame):
            # no job of the block's own: only the background one can run one
            deadline = time.monotonic() + 120
            while _finished_after(spark, newest) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _finished_after(spark, newest) == 1
        assert frame.count() == 1000
    finally:
        frame.unpersist(blocking=True)


def test_a_failing_block_cancels_the_background_job_and_raises(spark):  # noqa: F811
    from pyspark import StorageLevel

    # an hour of work in a thousand tasks; the filter keeps the cache empty
    slow = spark.range(0, 10**12, 1, 1000).selectExpr("id % 7 AS k").filter("k < 0") \
        .persist(StorageLevel.MEMORY_AND_DISK_DESER)
    started = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match="the block failed"), \
                computed_meanwhile(spark, slow):
            while not spark.sparkContext.statusTracker().getActiveJobsIds():
                time.sleep(0.05)
            raise RuntimeError("the block failed")
        assert time.monotonic() - started < 60
        assert not spark.sparkContext.statusTracker().getActiveJobsIds()
    finally:
        slow.unpersist(blocking=True)


def _running_tasks(session) -> int:
    return sum(e.numRunningTasks for e in
               session.sparkContext.statusTracker().getExecutorInfos())


def test_stop_running_tasks_returns_only_when_no_task_writes_any_more(spark):  # noqa: F811
    """A Ctrl-C ends the Python call, not the JVM's tasks (PySpark's JVM ignores
    SIGINT): a failed conversion removes its files only once they have stopped."""
    import threading

    from elr_harness.checker.spark import stop_running_tasks

    # two tasks that each sleep 0.2 s per row for 100 rows: 20 s unless cancelled
    slow = spark.range(0, 200, 1, 2).selectExpr(
        "reflect('java.lang.Thread', 'sleep', CAST(200 AS BIGINT)) AS slept")
    outcome: list[str] = []

    def run() -> None:
        try:
            slow.collect()
            outcome.append("finished")
        except Exception as err:  # the cancelled job's error, whatever PySpark names it
            outcome.append(type(err).__name__)

    job = threading.Thread(target=run, daemon=True)
    asked = time.monotonic()
    job.start()
    while _running_tasks(spark) == 0:
        assert time.monotonic() - asked < 60, "the slow job never started"
        time.sleep(0.02)
    # timed from the tasks' start: a cold JVM took 9-15 s to start the first job
    running = time.monotonic()
    stop_running_tasks(spark, timeout_s=30)
    assert _running_tasks(spark) == 0
    assert time.monotonic() - running < 10, "the tasks ran to their end, not cancelled"
    job.join(30)
    assert outcome and outcome != ["finished"], outcome


def test_a_new_context_keeps_the_handler_that_remembers_a_ctrl_c():
    """SparkContext puts its own SIGINT handler in place of the CLI's: a Ctrl-C
    must still cancel the jobs and still reach the CLI's handler (which notes
    the interrupt so that the py4j error it causes is reported as one)."""
    import signal

    from elr_harness.checker.spark import _chain_sigint

    calls: list[str] = []

    class Context:
        def cancelAllJobs(self):  # noqa: N802 - PySpark's name
            calls.append("cancelled")

    def cli_handler(signum, frame):
        calls.append("noted")
        raise KeyboardInterrupt

    def spark_handler(signum, frame):
        raise AssertionError("Spark's own handler is replaced, not called")

    previous = signal.signal(signal.SIGINT, spark_handler)  # as SparkContext leaves it
    try:
        _chain_sigint(cli_handler, Context())
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            time.sleep(1)
        assert calls == ["cancelled", "noted"]
    finally:
        signal.signal(signal.SIGINT, previous)
