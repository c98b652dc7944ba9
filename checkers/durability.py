"""Durability and log-order checks: what was written against the final log.

One aggregation per (topic, partition, value) joins each send with the polls
that saw its value and the final log's copies of it; lost-write, unseen,
duplicate, aborted-read, lost-committed-read and realtime-order are read off
it. inconsistent-offset needs the other key, (topic, partition, offset).
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import anomaly, op_list, text, tp_name

_KIND_CODES = {"invoke": 0, "ok": 1, "fail": 2, "info": 3}
_FINAL, _READ = 4, 5


def claims_table(ops: DataFrame, records: DataFrame) -> DataFrame:
    """One row per (topic, partition, value, offset) seen in sends and polls.

    The one big shuffle of the durability checks: per value (values_table) and
    per offset (inconsistent_offsets) are then smaller regroupings of this table.
    Numeric codes keep every aggregation buffer fixed-width (a hash aggregate).
    """
    send_kind = F.lit(None).cast("int")
    for name, code in _KIND_CODES.items():
        send_kind = F.when(F.col("type") == name, F.lit(code)).otherwise(send_kind)
    acks_code = (F.when(F.col("acks") == "all", F.lit(3)).when(F.col("acks") == "1", F.lit(2))
                 .when(F.col("acks") == "0", F.lit(1)))
    sends = ops.filter(F.col("f") == "send").select(
        "topic", "partition", "value", acks_code.alias("acks"), send_kind.alias("kind"),
        "index", "time",
        # only an ok send claims an offset; invoke/fail/info rows group under null
        F.when(send_kind == 1, F.col("offset")).alias("offset"))
    recs = records.filter(F.col("value").isNotNull()).select(
        "topic", "partition", "value", F.lit(None).cast("int").alias("acks"),
        F.when(F.col("final"), F.lit(_FINAL)).otherwise(F.lit(_READ)).alias("kind"),
        "index", F.lit(None).cast("bigint").alias("time"), "offset")
    kind = F.col("kind")
    is_comp = kind.between(1, 3)

    def when(cond, c):
        return F.when(cond, F.col(c))

    # partitioned by value: values_table and inconsistent_offsets regroup this
    # table by value without another shuffle
    by_value = sends.unionByName(recs).repartition("topic", "partition", "value")
    return by_value.groupBy("topic", "partition", "value", "offset").agg(
        F.max("acks").alias("acks"),
        F.min(when(kind == 0, "index")).alias("inv_index"),
        F.min(when(kind == 0, "time")).alias("inv_time"),
        F.min(when(is_comp, "index")).alias("comp_index"),
        F.min(when(is_comp, "time")).alias("comp_time"),
        F.max(when(is_comp, "kind")).alias("status_code"),
        F.max((kind == 1).cast("int")).alias("sent"),
        F.min(when(kind == _FINAL, "index")).alias("f_poll_min"),
        F.max(when(kind == _FINAL, "index")).alias("f_poll_max"),
        F.min(when(kind == _READ, "index")).alias("r_poll_min"),
        F.max(when(kind == _READ, "index")).alias("r_poll_max"),
        F.min(when(kind.isin(1, _FINAL, _READ), "index")).alias("first_index"),
    )


def values_table(claims: DataFrame) -> DataFrame:
    """One row per (topic, partition, value): its send, its reads, its final-log copies."""
    def when(cond, c):
        return F.when(cond, F.col(c))

    final, read = F.col("f_poll_min").isNotNull(), F.col("r_poll_min").isNotNull()
    agg = claims.groupBy("topic", "partition", "value").agg(
        F.max("acks").alias("acks"),
        F.min("inv_index").alias("inv_index"),
        F.min("inv_time").alias("inv_time"),
        F.min("comp_index").alias("comp_index"),
        F.min("comp_time").alias("comp_time"),
        F.max("status_code").alias("status_code"),
        F.max(when(F.col("sent") == 1, "offset")).alias("send_offset"),
        F.min(when(final, "offset")).alias("f_off_min"),
        F.max(when(final, "offset")).alias("f_off_max"),
        F.min("f_poll_min").alias("f_poll_min"),
        F.max("f_poll_max").alias("f_poll_max"),
        F.min(when(read, "offset")).alias("r_off_min"),
        F.max(when(read, "offset")).alias("r_off_max"),
        F.min("r_poll_min").alias("r_poll_min"),
        F.max("r_poll_max").alias("r_poll_max"),
    )
    # an invoke with no completion by the end of the history counts as info
    code = F.col("status_code")
    status = (F.when(code == 1, F.lit("ok")).when(code == 2, F.lit("fail"))
              .when(code == 3, F.lit("info"))
              .when(F.col("inv_index").isNotNull(), F.lit("info")))
    acks = (F.when(F.col("acks") == 3, F.lit("all")).when(F.col("acks") == 2, F.lit("1"))
            .when(F.col("acks") == 1, F.lit("0")))
    return agg.withColumn("status", status).withColumn("acks", acks).drop("status_code")


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
    # the cheap boolean test first: only anomalous rows build descriptions and arrays
    flagged = v.filter(reduce(lambda a, b: a | b, [c.isNotNull() for c in checks]))
    found = flagged.select("topic", "partition", "value", "acks",
                           F.explode(F.array(*checks)).alias("x"))
    return (found.filter(F.col("x").isNotNull())
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


def inconsistent_offsets(claims: DataFrame) -> DataFrame:
    """One (topic, partition, offset) holding two values across acked sends and polls,
    with the first op that carried the lowest and the highest of them.

    An acks 0/1 send that nobody read and that is absent from the final log is
    a reported loss (lost-write, not bad by itself); the leader that lost it
    hands its offset to a later record. Such a claim is left out here, so one
    reported loss is not counted again as a bad anomaly. acks=all sends and
    every polled record still count. Whether a value is in the final log is
    read from its own claims; claims_table partitions them by value, so that
    aggregate and the join back need no shuffle, only the regrouping by offset.
    """
    key = ["topic", "partition", "value"]
    in_final = claims.groupBy(*key).agg(
        F.max(F.col("f_poll_min").isNotNull().cast("int")).alias("in_final"))
    weak_unread = ((F.col("sent") == 1) & (F.col("acks") < 3)
                   & F.col("r_poll_min").isNull() & F.col("f_poll_min").isNull())
    held = (claims.filter(F.col("offset").isNotNull() & F.col("first_index").isNotNull())
            .join(in_final, key)
            .filter(~(weak_unread & (F.col("in_final") == 0))))
    by_offset = held.groupBy("topic", "partition", "offset").agg(
        F.min("value").alias("lo"), F.max("value").alias("hi"),
        F.min_by("first_index", "value").alias("op_lo"),
        F.max_by("first_index", "value").alias("op_hi"))
    bad = by_offset.filter(F.col("lo") != F.col("hi"))
    return anomaly(
        bad, "inconsistent-offset",
        offset=F.col("offset"),
        ops=op_list("op_lo", "op_hi"),
        extra=F.to_json(F.struct(F.array("lo", "hi").alias("values"))),
        description=F.format_string("offset %s of %s holds values %s and %s", text("offset"),
                                    tp_name(), text("lo"), text("hi")))
