"""A check that cannot run says why in words a user can act on (#52): a Spark
failure by its cause, not by the py4j call it surfaced in; a second check of one
history waits for the first instead of both writing one cache."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from elr_harness.checker.failures import one_check_at_a_time, refuse_overlong_line, spark_failure
from elr_harness.core.config import CheckerConfig
from elr_harness.core.errors import BadInput

PY4J_DISK_FULL = """An error occurred while calling o303.parquet.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 2.0 failed
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2898)
Caused by: java.io.IOException: No space left on device
\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)
"""

PY4J_OTHER = """An error occurred while calling o88.collectToPython.
: java.io.FileNotFoundException: File file:/x/history.parquet/part-0.parquet does not exist
\tat org.apache.hadoop.fs.RawLocalFileSystem.deprecatedGetFileStatus(RawLocalFileSystem.java:779)
"""


def test_a_full_disk_is_named_not_the_py4j_call() -> None:
    said = spark_failure(RuntimeError(PY4J_DISK_FULL))
    assert "disk is full" in said and "No space left on device" in said
    assert "o303" not in said and "\n" not in said


def test_memory_is_named_with_the_setting_that_gives_more() -> None:
    said = spark_failure(RuntimeError("An error occurred while calling o9.count.\n"
                                      ": java.lang.OutOfMemoryError: Java heap space"))
    assert "out of memory" in said and "driver_memory" in said


def test_another_cause_is_the_java_exception_under_the_call() -> None:
    said = spark_failure(RuntimeError(PY4J_OTHER))
    assert said == ("the Spark job failed: : java.io.FileNotFoundException: File "
                    "file:/x/history.parquet/part-0.parquet does not exist")


def test_an_error_without_a_java_stack_keeps_its_first_line() -> None:
    assert spark_failure(RuntimeError("boom\nmore")) == "the Spark job failed: boom"


def test_a_second_check_of_one_history_waits_for_the_first_and_says_so(tmp_path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text("{}\n")
    before = history.read_bytes(), history.stat().st_mtime_ns
    order: list[str] = []
    said: list[str] = []
    first_holds = threading.Event()

    def first() -> None:
        with one_check_at_a_time(history):
            first_holds.set()
            time.sleep(0.5)
            order.append("first done")

    thread = threading.Thread(target=first)
    thread.start()
    first_holds.wait(5)
    with one_check_at_a_time(history, say=said.append):
        order.append("second runs")
    thread.join()
    assert order == ["first done", "second runs"]
    assert said == [f"another check of {history} is running; waiting for it"]
    assert (history.read_bytes(), history.stat().st_mtime_ns) == before
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["history.jsonl"]


def test_a_check_alone_says_nothing(tmp_path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text("{}\n")
    said: list[str] = []
    with one_check_at_a_time(history, say=said.append):
        pass
    assert said == []


def _history(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_bytes(data)
    return path


def test_a_line_longer_than_the_bound_is_refused_by_its_number(tmp_path) -> None:
    """A file of NUL bytes is one long line: refused before Spark tries to hold it
    (a 1 GiB one ended the JVM after 26 s), with its line number and the setting."""
    path = _history(tmp_path, b'{"a":1}\n{"b":2}\n' + b"\0" * 25 + b"\n{}\n")
    with pytest.raises(BadInput, match=r"line 3 is longer than 10 bytes \(checker"):
        refuse_overlong_line(path, 10)
    with pytest.raises(BadInput, match="line 1 is longer"):
        refuse_overlong_line(_history(tmp_path, b"\0" * 31), 10)


@pytest.mark.parametrize("data", [
    b"0123456789\n" * 5,            # every line exactly at the bound
    b"0123456789\n0123456789",      # the last one without its newline
    b"\n" * 40,
    b"short\n",                     # no longer than the bound: not read at all
])
def test_lines_within_the_bound_pass(tmp_path, data) -> None:
    refuse_overlong_line(_history(tmp_path, data), 10)


def test_the_bound_is_a_checker_setting() -> None:
    assert CheckerConfig().max_line_bytes == 64 * 1024 * 1024
