"""Shared DataFrame shapes of the checks: anomaly rows and small local tables.

Every check returns rows of one schema (ANOMALY_COLUMNS) so that all anomalies
are unioned, counted and sampled in Spark and only counts and a few examples
reach the driver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from elr_harness.checker.events import spark_string as sql_string

#: name, where, what, the op indices, a sentence; `hold` asks the result stage
#: to add the final polls that hold `hold_offsets` (or, holding none of them, the
#: partition's last final poll: see check._examples).
ANOMALY_COLUMNS = ("name", "topic", "partition", "value", "offset", "acks", "ops",
                   "description", "hold", "hold_offsets", "extra", "time", "run", "protocol",
                   "scope")


#: An empty list of broker ids (or offsets) as SQL text: what a null list counts as.
EMPTY_IDS = "CAST(array() AS ARRAY<BIGINT>)"


def local_rows(spark, schema: str, rows: list[tuple]) -> DataFrame:
    """A small DataFrame built in the JVM from literals (no Python worker needed):
    one inline table in one SQL text. Built a Column per cell instead, its py4j
    calls took 100 s for a 1M-operation history's 2,500 fault rows."""
    fields = [part.split() for part in schema.split(",")]
    if not rows:
        return spark.range(0).selectExpr(*[f"CAST(NULL AS {t}) AS {n}" for n, t in fields])
    values = ", ".join(
        "(" + ", ".join(f"CAST({sql_literal(v)} AS {t})"
                        for (_, t), v in zip(fields, row, strict=True)) + ")"
        for row in rows)
    return spark.sql(f"SELECT * FROM VALUES {values} AS t({', '.join(n for n, _ in fields)})")


def sql_literal(value) -> str:
    """A Python value (None, bool, int, str, or a list or tuple of them) as Spark SQL text."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return sql_string(value)
    if isinstance(value, list | tuple):
        return f"array({', '.join(sql_literal(v) for v in value)})"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


# The helpers below build Spark SQL text, not Column objects: every Column
# operation is a round trip to the JVM (about 0.3 ms here), and the checks'
# expressions would take thousands of them; one SQL string is parsed in one.


def exprs(*sql: str) -> list:
    """Columns from SQL expression texts (for groupBy/agg, which take no text)."""
    return [F.expr(e) for e in sql]


def op_list(*exprs: str) -> str:
    """Sorted distinct op indices, nulls dropped."""
    return (f"CAST(array_sort(array_distinct(filter(array({', '.join(exprs)}), "
            f"op -> op IS NOT NULL))) AS ARRAY<BIGINT>)")


def text(expr: str) -> str:
    """An expression as text for descriptions, "none" for null."""
    return f"coalesce(CAST({expr} AS STRING), 'none')"


def tp_name(topic: str = "topic", partition: str = "partition") -> str:
    return f"concat_ws('-', {topic}, CAST({partition} AS STRING))"


def sentence(template: str, *exprs: str) -> str:
    """format_string(template, exprs...) with the template quoted."""
    return f"format_string({', '.join([sql_string(template), *exprs])})"


def struct_of(fields: dict[str, str]) -> str:
    """A struct of the named expressions."""
    return f"named_struct({', '.join(f'{sql_string(k)}, {v}' for k, v in fields.items())})"


def json_of(**fields: str) -> str:
    """A JSON object text of the named expressions (null fields left out)."""
    return f"to_json({struct_of(fields)})"


def anomaly_fields(name: str, *, ops: str, description: str, value: str | None = None,
                   offset: str | None = None, acks: str | None = None,
                   hold: str | None = None, hold_offsets: str | None = None,
                   extra: str | None = None, time: str | None = None,
                   protocol: str | None = None, scope: str | None = None) -> dict[str, str]:
    """The common anomaly schema (ANOMALY_COLUMNS, in order) as SQL expressions over
    a row with topic and partition; the other arguments are SQL expressions."""
    def typed(expr: str | None, kind: str) -> str:
        return f"CAST({'NULL' if expr is None else expr} AS {kind})"

    fields = {
        "name": sql_string(name),
        "topic": "CAST(topic AS STRING)",
        "partition": "CAST(partition AS INT)",
        "value": typed(value, "BIGINT"),
        "offset": typed(offset, "BIGINT"),
        "acks": typed(acks, "STRING"),
        "ops": ops,
        "description": description,
        "hold": hold or "false",
        "hold_offsets": (f"filter(CAST({hold_offsets} AS ARRAY<BIGINT>), o -> o IS NOT NULL)"
                         if hold_offsets else EMPTY_IDS),
        "extra": typed(extra, "STRING"),
        # when it happened (a send's completion, ns), for the report's timelines
        "time": typed(time, "BIGINT"),
        # which history of a batch (check.check_histories) it is of
        "run": "CAST(run AS INT)",
        # contract v4: a transaction's protocol in effect (results.json counts by it),
        # and the partitions that must all be excused for it not to count as bad
        # (txn-torn's partitions lacking a value; null: its own partition)
        "protocol": typed(protocol, "STRING"),
        "scope": typed(scope, "STRING"),
    }
    assert tuple(fields) == ANOMALY_COLUMNS
    return fields


def anomaly(df: DataFrame, name: str, **fields: str | None) -> DataFrame:
    """Project df's rows into the common anomaly schema (see anomaly_fields)."""
    return df.selectExpr(*[f"{sql} AS {column}"
                           for column, sql in anomaly_fields(name, **fields).items()])
