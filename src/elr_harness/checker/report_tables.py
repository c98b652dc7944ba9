"""The one table the report draws that the checks do not read, written by the
conversion (checker/load.py) beside events/ and side/.

The cache's events and side tables hold what the checks need. The report also
draws poll latencies and client throughput (the times of non-final polls, which
neither table holds), labels each fault by its step (a fault's `detail`) and
shows an example op's error and a poll's high watermarks. The conversion keeps
those columns of the poll lines, the fault lines and the lines carrying an error
in history.parquet/report/, from the same parsed rows as the other tables (no
second read of the history), so it goes with the cache when the history changes.

report/checked_tables.py reads it with pandas. Only the checker reads the
history; the report reads what the checker wrote.
"""

from __future__ import annotations

from pathlib import Path

from elr_harness.checker.parquet_cache import parquet_location

#: The report table's folder inside the cache folder.
REPORT = "report"
#: Its columns (detail and a poll's high_watermark: the object's JSON text).
REPORT_DDL = ("index BIGINT, time BIGINT, process BIGINT, type STRING, f STRING, "
              "topic STRING, final BOOLEAN, error STRING, fault STRING, "
              "nodes ARRAY<STRING>, detail STRING, high_watermark STRING")
REPORT_COLUMNS = tuple(part.split()[0] for part in REPORT_DDL.split(", "))
#: Which lines it holds: the polls (all of them), the faults, any line with an error.
REPORT_WHERE = "f IN ('poll', 'fault') OR error IS NOT NULL"
#: Spark's mark of a finished write: a folder without it is not the table.
DONE = "_SUCCESS"


def report_table_of(history: Path) -> Path:
    """Where the report table of a history lives (inside its Parquet cache)."""
    return parquet_location(history) / REPORT


def report_rows(valid):
    """The report table's rows of the conversion's valid lines (a DataFrame with
    the contract's fields and `detail`, the fault detail's JSON text)."""
    return valid.filter(REPORT_WHERE).select(*REPORT_COLUMNS)
