"""The checker's Spark session helpers (checkers/spark.py)."""

from __future__ import annotations

import pytest
from checker_fixtures import spark  # noqa: F401

from checkers.spark import codegen_shared_with_tasks

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
