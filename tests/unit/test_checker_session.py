"""The checker's Spark session helpers (checkers/spark.py)."""

from __future__ import annotations

import time

import pytest
from checker_fixtures import spark  # noqa: F401

from checkers.spark import codegen_shared_with_tasks, computed_meanwhile

pytestmark = pytest.mark.usefixtures("spark")


def test_checks_plan_under_the_local_tasks_class_loader_then_restore_it(spark):  # noqa: F811
    spark.range(10).selectExpr("id % 3 AS k").groupBy("k").count().collect()
    thread = spark.sparkContext._jvm.java.lang.Thread
    before = thread.currentThread().getContextClassLoader()
    task_loaders = {t.getContextClassLoader() for t in thread.getAllStackTraces().keySet()
                    if t.getName().startswith("Executor task")}
    assert task_loaders and before not in task_loaders
    with codegen_shared_with_tasks(spark):
        inside = thread.currentThread().getContextClassLoader()
        # a query compiled under it runs as before
        assert spark.range(5).selectExpr("sum(id * 2)").collect()[0][0] == 20
    assert inside in task_loaders
    assert thread.currentThread().getContextClassLoader() == before


def _cached_partitions(session) -> int:
    return sum(info.numCachedPartitions()
               for info in session.sparkContext._jsc.sc().getRDDStorageInfo())


def test_persisted_frames_are_computed_in_the_background_while_the_block_runs(spark):  # noqa: F811
    from pyspark import StorageLevel

    frame = spark.range(0, 1000, 1, 4).selectExpr("id % 10 AS k").persist(
        StorageLevel.MEMORY_AND_DISK_DESER)
    try:
        with computed_meanwhile(spark, frame):
            # no job of the block's own: only the background one can fill the cache
            deadline = time.monotonic() + 120
            while _cached_partitions(spark) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _cached_partitions(spark) == 4
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
