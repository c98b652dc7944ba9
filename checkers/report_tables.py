"""The one table the report draws that the checks do not read: written at check time.

The cache's events and side tables hold what the checks need. The report also
draws poll latencies and client throughput (the times of non-final polls, which
neither table holds), labels each fault by its step (a fault's `detail`) and
shows an example op's error and a poll's high watermarks. One narrow Spark read
of history.jsonl takes those columns of the poll lines, the fault lines and the
lines carrying an error into history.parquet/report/: inside the cache folder,
so it goes with the cache when the history changes and the cache is rebuilt,
and a recheck of a cached history finds it there and reads nothing.

reports/checked_tables.py reads it with pandas. Only the checker reads the
history; the report reads what the checker wrote.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from checkers.parquet_cache import parquet_location, temporary_name
from checkers.staging import Staging, writable_by_spark

#: The report table's folder inside the cache folder.
REPORT = "report"
#: Its columns, as Spark's JSON reader takes them (detail and a poll's high_watermark:
#: the object's JSON text).
REPORT_DDL = ("index BIGINT, time BIGINT, process BIGINT, type STRING, f STRING, "
              "topic STRING, final BOOLEAN, error STRING, fault STRING, "
              "nodes ARRAY<STRING>, detail STRING, high_watermark STRING")
REPORT_COLUMNS = tuple(part.split()[0] for part in REPORT_DDL.split(", "))
#: Which lines it holds: the polls (all of them), the faults, any line with an error.
REPORT_WHERE = ("index IS NOT NULL AND time IS NOT NULL AND process IS NOT NULL "
                "AND type IS NOT NULL AND (f IN ('poll', 'fault') OR error IS NOT NULL)")
#: Spark's mark of a finished write: a folder without it is not the table.
DONE = "_SUCCESS"


def report_table_of(history: Path) -> Path:
    """Where the report table of a history lives (inside its Parquet cache)."""
    return parquet_location(history) / REPORT


def write_report_tables(spark, loaded, stage: Staging) -> None:
    """Write the report table of a loaded history (checkers/load.LoadedHistory)
    unless its cache already holds it; stage is the check's staging folder (Spark
    reads the history only through its plain names)."""
    target = report_table_of(loaded.history)
    if (target / DONE).is_file():
        return
    seen = stage.link(loaded.history, "history-report")
    # a cut-short last line parses to nulls and is dropped by REPORT_WHERE (a history
    # with any other bad line never gets this far: read_overview refuses it)
    rows = (spark.read.schema(REPORT_DDL).json(str(seen))
            .filter(REPORT_WHERE)
            .selectExpr(*(c if c != "final" else "coalesce(final, false) AS final"
                          for c in REPORT_COLUMNS)))
    tmp = temporary_name(target)
    real = writable_by_spark(tmp)
    try:
        if real is not None:
            rows.write.mode("overwrite").parquet(str(real))
        else:  # written in the staging folder, then moved into place by Python
            out = stage.folder("report-out")
            rows.write.mode("overwrite").parquet(str(out))
            shutil.move(out, tmp)
        if os.path.lexists(target):  # a half table of a check killed mid-way
            shutil.rmtree(target, ignore_errors=True)
        tmp.replace(target)
    except OSError:
        # another check of the same history installed it first: theirs stands
        if not (target / DONE).is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
