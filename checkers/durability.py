"""Durability and log-order checks: what was written against the final log.

One aggregation per (topic, partition, value) joins each send with the polls
that saw its value and the final log's copies of it; lost-write, unseen,
duplicate, aborted-read, lost-committed-read and realtime-order are read off
it. inconsistent-offset needs the other key, (topic, partition, offset).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import anomaly, op_list, text, tp_name

_COMPLETIONS = ("ok", "fail", "info")


def values_table(ops: DataFrame, records: DataFrame) -> DataFrame:
    """One row per (topic, partition, value): its send, its reads, its final-log copies."""
    sends = ops.filter(F.col("f") == "send").select(
        "topic", "partition", "value", "acks", F.col("type").alias("kind"), "index", "time",
        "offset")
    recs = records.filter(F.col("value").isNotNull()).select(
        "topic", "partition", "value", F.lit(None).cast("string").alias("acks"),
        F.when(F.col("final"), F.lit("final")).otherwise(F.lit("read")).alias("kind"),
        "index", F.lit(None).cast("bigint").alias("time"), "offset")
    kind = F.col("kind")
    is_comp = kind.isin(*_COMPLETIONS)

    def when(cond, c):
        return F.when(cond, F.col(c))

    agg = sends.unionByName(recs).groupBy("topic", "partition", "value").agg(
        F.max("acks").alias("acks"),
        F.min(when(kind == "invoke", "index")).alias("inv_index"),
        F.min(when(kind == "invoke", "time")).alias("inv_time"),
        F.min(when(is_comp, "index")).alias("comp_index"),
        F.min(when(is_comp, "time")).alias("comp_time"),
        F.max(when(is_comp, "kind")).alias("status"),
        F.max(when(kind == "ok", "offset")).alias("send_offset"),
        F.min(when(kind == "final", "offset")).alias("f_off_min"),
        F.max(when(kind == "final", "offset")).alias("f_off_max"),
        F.min(when(kind == "final", "index")).alias("f_poll_min"),
        F.max(when(kind == "final", "index")).alias("f_poll_max"),
        F.min(when(kind == "read", "offset")).alias("r_off_min"),
        F.max(when(kind == "read", "offset")).alias("r_off_max"),
        F.min(when(kind == "read", "index")).alias("r_poll_min"),
        F.max(when(kind == "read", "index")).alias("r_poll_max"),
    )
    # an invoke with no completion by the end of the history counts as info
    status = F.when(F.col("inv_index").isNotNull() & F.col("status").isNull(), F.lit("info")) \
        .otherwise(F.col("status"))
    return agg.withColumn("status", status)


def value_anomalies(values: DataFrame, tp_status: DataFrame) -> DataFrame:
    """lost-write, unseen, duplicate, aborted-read, lost-committed-read and realtime-order.

    One pass over the values table: each row gets an array of the anomalies it
    shows, which is exploded; realtime-order's window walks each partition's
    final log from the top down, keeping the earliest ack among the sends
    above (an acks=0 "ok" only says the bytes left, so those sends are not A).
    """
    v = values.join(F.broadcast(tp_status.select("topic", "partition", "complete")),
                    ["topic", "partition"], "left")
    above = (Window.partitionBy("topic", "partition").orderBy(F.desc_nulls_last("f_off_min"))
             .rowsBetween(Window.unboundedPreceding, -1))
    candidate = F.when((F.col("status") == "ok") & (F.col("acks") != "0")
                       & F.col("f_off_min").isNotNull(),
                       F.struct("comp_time", "comp_index", "inv_index", "value", "f_off_min"))
    v = v.withColumn("a", F.min(candidate).over(above))

    complete = F.coalesce(F.col("complete"), F.lit(False))
    absent = F.col("f_off_min").isNull()
    acked = F.col("status") == "ok"
    where = tp_name()
    sent = F.format_string("acks=%s send of value %s (offset %s)", text("acks"), text("value"),
                           text("send_offset"))
    send_ops = ("inv_index", "comp_index", "r_poll_min", "r_poll_max")
    finals = F.array("f_off_min", "f_off_max")
    moved = ~F.array_contains(finals, F.col("r_off_min")) \
        | ~F.array_contains(finals, F.col("r_off_max"))
    checks = [
        _found("lost-write", acked & absent & complete, "send_offset", op_list(*send_ops),
               F.concat(sent, F.lit(" was acknowledged but is not in the final log of "),
                        where), hold=F.lit(True), hold_offset="send_offset"),
        _found("unseen", acked & absent & ~complete, "send_offset", op_list(*send_ops),
               F.concat(sent, F.lit(" is not in what the incomplete final read of "), where,
                        F.lit(" returned")), hold=F.lit(True), hold_offset="send_offset"),
        _found("duplicate", F.col("f_off_min") != F.col("f_off_max"), "f_off_min",
               op_list("inv_index", "comp_index", "f_poll_min", "f_poll_max"),
               F.format_string("value %s is in the final log of %s at offsets %s and %s",
                               text("value"), where, text("f_off_min"), text("f_off_max")),
               extra=F.to_json(F.struct(F.col("f_off_max").alias("other_offset")))),
        _found("aborted-read", (F.col("status") == "fail")
               & (F.col("f_off_min").isNotNull() | F.col("r_poll_min").isNotNull()),
               F.coalesce("f_off_min", "r_off_min"),
               op_list("inv_index", "comp_index", "r_poll_min", "r_poll_max", "f_poll_min"),
               F.format_string("value %s of a failed send was read from %s at offset %s",
                               text("value"), where,
                               text(F.coalesce("f_off_min", "r_off_min")))),
        _found("lost-committed-read", F.col("r_poll_min").isNotNull()
               & ((absent & complete) | (~absent & moved)), "r_off_min",
               op_list("inv_index", "comp_index", "r_poll_min", "r_poll_max", "f_poll_min"),
               F.when(absent, F.format_string(
                   "value %s was read at offset %s of %s but is not in the final log",
                   text("value"), text("r_off_min"), where))
               .otherwise(F.format_string(
                   "value %s was read at offset %s of %s but the final log has it at offset %s",
                   text("value"), text("r_off_min"), where, text("f_off_min"))),
               hold=absent, hold_offset="r_off_min",
               extra=F.to_json(F.struct(F.col("f_off_min").alias("final_offset")))),
        _found("realtime-order", F.col("f_off_min").isNotNull() & F.col("inv_time").isNotNull()
               & (F.col("a.comp_time") < F.col("inv_time")), "f_off_min",
               op_list("a.inv_index", "a.comp_index", "inv_index", "comp_index"),
               F.format_string(
                   "value %s was sent after value %s was acknowledged, yet sits below it in "
                   "the final log of %s (offset %s < %s)", text("value"), text("a.value"),
                   where, text("f_off_min"), text("a.f_off_min")),
               extra=F.to_json(F.struct(F.col("a.value").alias("other_value"),
                                        F.col("a.f_off_min").alias("other_offset")))),
    ]
    found = v.select("topic", "partition", "value", "acks",
                     F.filter(F.array(*checks), lambda x: x.isNotNull()).alias("found"))
    return (found.filter(F.size("found") > 0)
            .select("topic", "partition", "value", "acks", F.explode("found").alias("x"))
            .select(F.col("x.name").alias("name"), "topic", "partition", "value",
                    F.col("x.offset").alias("offset"), "acks", F.col("x.ops").alias("ops"),
                    F.col("x.description").alias("description"), F.col("x.hold").alias("hold"),
                    F.col("x.hold_offset").alias("hold_offset"),
                    F.col("x.extra").alias("extra")))


def _found(name: str, condition, offset, ops, description, hold=None, hold_offset=None,
           extra=None):
    """The struct of one anomaly of a values-table row when condition holds, else null."""
    def col(c):
        return F.col(c) if isinstance(c, str) else c

    return F.when(condition, F.struct(
        F.lit(name).alias("name"),
        col(offset).cast("bigint").alias("offset"),
        ops.alias("ops"),
        description.alias("description"),
        (F.lit(False) if hold is None else hold).alias("hold"),
        (F.lit(None) if hold_offset is None else col(hold_offset)).cast("bigint")
        .alias("hold_offset"),
        (F.lit(None) if extra is None else extra).cast("string").alias("extra")))


def _claims(ops: DataFrame, records: DataFrame) -> DataFrame:
    """(topic, partition, offset, value, index) of acked sends with offsets and polled records."""
    sends = ops.filter((F.col("f") == "send") & (F.col("type") == "ok")
                       & F.col("offset").isNotNull() & F.col("value").isNotNull()) \
        .select("topic", "partition", "offset", "value", "index")
    recs = records.filter(F.col("value").isNotNull()) \
        .select("topic", "partition", "offset", "value", "index")
    return sends.unionByName(recs)


def offset_conflicts(ops: DataFrame, records: DataFrame) -> DataFrame:
    """Offsets that hold two values (plain min/max per offset: cheap on big histories)."""
    return (_claims(ops, records).groupBy("topic", "partition", "offset")
            .agg(F.min("value").alias("lo"), F.max("value").alias("hi"))
            .filter(F.col("lo") != F.col("hi")))


def inconsistent_offsets(ops: DataFrame, records: DataFrame, conflicts: DataFrame) -> DataFrame:
    """inconsistent-offset rows, with the first op that carried each of the two values.

    Run only when offset_conflicts found some, so clean histories skip this pass.
    """
    keys = ["topic", "partition", "offset"]
    first = (_claims(ops, records).join(F.broadcast(conflicts), keys)
             .filter(F.col("value").isin(F.col("lo"), F.col("hi")))
             .groupBy(*keys, "lo", "hi", "value").agg(F.min("index").alias("first"))
             .groupBy(*keys, "lo", "hi")
             .agg(F.min("first").alias("op_a"), F.max("first").alias("op_b")))
    return anomaly(
        first, "inconsistent-offset",
        offset=F.col("offset"),
        ops=op_list("op_a", "op_b"),
        extra=F.to_json(F.struct(F.array("lo", "hi").alias("values"))),
        description=F.format_string("offset %s of %s holds values %s and %s", text("offset"),
                                    tp_name(), text("lo"), text("hi")))
