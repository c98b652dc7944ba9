"""Shared DataFrame shapes of the checks: polled records and anomaly rows.

Every check returns rows of one schema (ANOMALY_COLUMNS) so that all anomalies
are unioned, counted and sampled in Spark and only counts and a few examples
reach the driver.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
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


def local_rows(spark, schema: str, rows: list[tuple]) -> DataFrame:
    """A small DataFrame built in the JVM from literals (no Python worker needed)."""
    fields = [part.split() for part in schema.split(",")]
    if not rows:
        return spark.range(0).select(*[F.lit(None).cast(t).alias(n) for n, t in fields])
    structs = [F.struct(*[F.lit(v).cast(t).alias(n) for (n, t), v in zip(fields, row,
                                                                         strict=True)])
               for row in rows]
    return spark.range(1).select(F.inline(F.array(*structs)))


def op_list(*cols: Column | str) -> Column:
    """Sorted distinct op indices, nulls dropped."""
    arr = F.array(*[F.col(c) if isinstance(c, str) else c for c in cols])
    return F.array_sort(F.array_distinct(F.filter(arr, lambda x: x.isNotNull()))) \
        .cast("array<bigint>")


def anomaly(df: DataFrame, name: str, *, ops: Column, description: Column,
            value: Column | None = None, offset: Column | None = None,
            acks: Column | None = None, hold: Column | None = None,
            hold_offset: Column | None = None, extra: Column | None = None) -> DataFrame:
    """Project df's rows into the common anomaly schema."""
    def typed(c: Column | None, kind: str) -> Column:
        return (F.lit(None) if c is None else c).cast(kind)

    return df.select(
        F.lit(name).alias("name"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        typed(value, "bigint").alias("value"),
        typed(offset, "bigint").alias("offset"),
        typed(acks, "string").alias("acks"),
        ops.alias("ops"),
        description.alias("description"),
        (F.lit(False) if hold is None else hold).alias("hold"),
        typed(hold_offset, "bigint").alias("hold_offset"),
        typed(extra, "string").alias("extra"),
    )


def text(c: Column | str) -> Column:
    """A column as text for descriptions, "none" for null."""
    col = F.col(c) if isinstance(c, str) else c
    return F.coalesce(col.cast("string"), F.lit("none"))


def tp_name(topic: Column | str = "topic", partition: Column | str = "partition") -> Column:
    return F.concat_ws("-", F.col(topic) if isinstance(topic, str) else topic,
                       (F.col(partition) if isinstance(partition, str) else partition)
                       .cast("string"))
