"""Shared DataFrame shapes of the checks: polled records and anomaly rows.

Every check returns rows of one schema (ANOMALY_COLUMNS) so that all anomalies
are unioned, counted and sampled in Spark and only counts and a few examples
reach the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

#: name, where, what, the op indices, a sentence; `hold` asks the result stage
#: to add the final poll that should hold `hold_offset` (see results.py).
ANOMALY_COLUMNS = ("name", "topic", "partition", "value", "offset", "acks", "ops",
                   "description", "hold", "hold_offset", "extra")


def poll_records(ops: DataFrame) -> DataFrame:
    """One row per record of every ok poll: process, index, final, tp, offset, value, pos."""
    polls = ops.filter((F.col("f") == "poll") & (F.col("type") == "ok")
                       & F.col("records").isNotNull())
    exploded = polls.select("process", "index", "final", "topic",
                            F.posexplode("records").alias("pos", "r"))
    return exploded.select(
        "process", "index", "final", "topic", "pos",
        F.col("r")[0].cast("int").alias("partition"),
        F.col("r")[1].alias("offset"),
        F.col("r")[2].alias("value"),
    )


_LOW32 = 0xFFFFFFFF
#: Set in a key whose partition is null (a history off the contract; kept apart).
_NO_PARTITION = 1 << 62
#: The topic index's bits, once a key is shifted right by 32 (below the flag bit).
_TOPIC_INDEX = (_NO_PARTITION >> 32) - 1


@dataclass(frozen=True)
class TopicKeys:
    """A topic-partition as one BIGINT, `tp`: the topic's index in this history's
    sorted topic names in the high bits, the partition in the low 32.

    The checks shuffle, group and sort millions of rows by partition; a long key
    hashes and compares faster than a string topic and an int (1M operations:
    the per-consumer sort 1.5 times, the per-value aggregation 1.2 times). Only
    anomaly rows are decoded back to topic and partition. A null topic gets the
    index after the last name and a null partition a flag bit, so rows without
    them stay apart from the others, as they did when keyed by the columns.
    """

    topics: tuple[str, ...]

    @classmethod
    def of(cls, names) -> TopicKeys:
        """The keys of these topic names (sorted, so keys sort as topic then partition)."""
        return cls(tuple(sorted({n for n in names if n is not None})))

    def encode(self, topic: str | None, partition: int | None) -> int:
        """The key of one topic-partition, in Python (for small local tables)."""
        index = self.topics.index(topic) if topic in self.topics else len(self.topics)
        low = _NO_PARTITION if partition is None else partition & _LOW32
        return (index << 32) | low

    def key(self, topic: str = "topic", partition: str = "partition") -> str:
        """SQL: the key of a row's topic and partition."""
        cases = " ".join(f"WHEN {sql_string(t)} THEN {i << 32}"
                         for i, t in enumerate(self.topics))
        high = f"(CASE {topic} {cases} ELSE {len(self.topics) << 32} END)" if cases \
            else "CAST(0 AS BIGINT)"
        return (f"({high} | coalesce(CAST({partition} AS BIGINT) & {_LOW32}, "
                f"{_NO_PARTITION}))")

    def topic(self, key: str = "tp") -> str:
        """SQL: the topic of a key (null for the null topic's index)."""
        names = ", ".join(sql_string(t) for t in self.topics) or "CAST(NULL AS STRING)"
        index = f"CAST(shiftright({key}, 32) & {_TOPIC_INDEX} AS INT)"
        return f"try_element_at(array({names}), {index} + 1)"

    @staticmethod
    def partition(key: str = "tp") -> str:
        """SQL: the partition of a key (a signed int, whatever the session's ANSI mode)."""
        low = f"({key} & {_LOW32})"
        return (f"CAST(CASE WHEN ({key} & {_NO_PARTITION}) != 0 THEN NULL "
                f"WHEN {low} > 2147483647 THEN {low} - 4294967296 ELSE {low} END AS INT)")

    def decoded(self, df: DataFrame, key: str = "tp") -> DataFrame:
        """df with topic and partition columns in place of key."""
        rest = [c for c in df.columns if c != key]
        return df.selectExpr(*rest, f"{self.topic(key)} AS topic",
                             f"{self.partition(key)} AS partition")


def local_rows(spark, schema: str, rows: list[tuple]) -> DataFrame:
    """A small DataFrame built in the JVM from literals (no Python worker needed)."""
    fields = [part.split() for part in schema.split(",")]
    if not rows:
        return spark.range(0).select(*[F.lit(None).cast(t).alias(n) for n, t in fields])
    structs = [F.struct(*[F.lit(v).cast(t).alias(n) for (n, t), v in zip(fields, row,
                                                                         strict=True)])
               for row in rows]
    return spark.range(1).select(F.inline(F.array(*structs)))


# The helpers below build Spark SQL text, not Column objects: every Column
# operation is a round trip to the JVM (about 0.3 ms here), and the checks'
# expressions would take thousands of them; one SQL string is parsed in one.


def exprs(*sql: str) -> list:
    """Columns from SQL expression texts (for groupBy/agg, which take no text)."""
    return [F.expr(e) for e in sql]


def sql_string(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


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
                   hold: str | None = None, hold_offset: str | None = None,
                   extra: str | None = None) -> dict[str, str]:
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
        "hold_offset": typed(hold_offset, "BIGINT"),
        "extra": typed(extra, "STRING"),
    }
    assert tuple(fields) == ANOMALY_COLUMNS
    return fields


def anomaly(df: DataFrame, name: str, **fields: str | None) -> DataFrame:
    """Project df's rows into the common anomaly schema (see anomaly_fields)."""
    return df.selectExpr(*[f"{sql} AS {column}"
                           for column, sql in anomaly_fields(name, **fields).items()])
