"""Per-consumer order checks: nonmonotonic-poll, poll-skip, garbage-read.

Each process's records and seeks on a partition form one sequence ordered by
op index (a seek sits on the poll's invoke, records on its ok). A record is
compared with the event before it: after a record, the next offset must be
higher (else nonmonotonic) and no offset the final log holds may be jumped
over (else poll-skip); after a seek, only the jump is checked, from the seek
offset. The jump check applies between the records of one poll too.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import anomaly, op_list, text, tp_name

_SEQ = ["process", "topic", "partition"]


def order_events(ops: DataFrame, records: DataFrame) -> DataFrame:
    """Records and seeks with their predecessor; only the rows that break an order rule
    (or carry a garbage value: one pass over the records serves garbage-read too)."""
    recs = records.select(*_SEQ, "index", "pos", "offset", F.lit(1).alias("kind"),
                          F.col("value").isNull().alias("garbage"))
    seeks = (ops.filter((F.col("f") == "poll") & (F.col("type") == "invoke")
                        & F.col("seek").isNotNull())
             .select("process", "topic", "index", F.explode("seek").alias("p", "offset"))
             .select("process", "topic", F.col("p").try_cast("int").alias("partition"),
                     "index", F.lit(-1).cast("int").alias("pos"), "offset",
                     F.lit(0).alias("kind"), F.lit(False).alias("garbage")))
    seq = Window.partitionBy(*_SEQ).orderBy("index", "pos")
    events = recs.unionByName(seeks).select(
        "*",
        F.lag("kind").over(seq).alias("prev_kind"),
        F.lag("offset").over(seq).alias("prev_offset"),
        F.lag("index").over(seq).alias("prev_index"))
    is_record = (F.col("kind") == 1) & F.col("prev_kind").isNotNull()
    nonmono = is_record & (F.col("prev_kind") == 1) & (F.col("offset") <= F.col("prev_offset"))
    expected = F.col("prev_offset") + F.col("prev_kind")
    jump = is_record & (F.col("offset") > expected)
    return events.filter(nonmono | jump | F.col("garbage")).select(
        *_SEQ, "index", "offset", "prev_index", "prev_offset", "garbage",
        F.coalesce(nonmono, F.lit(False)).alias("nonmono"),
        F.coalesce(jump, F.lit(False)).alias("jump"), expected.alias("expected"))


def nonmonotonic_polls(violations: DataFrame) -> DataFrame:
    """One anomaly per poll and partition that went back without a seek."""
    per_poll = violations.filter("nonmono").groupBy(*_SEQ, "index").agg(
        F.min("prev_index").alias("prev_index"), F.min("offset").alias("offset"),
        F.max("prev_offset").alias("prev_offset"))
    return anomaly(
        per_poll, "nonmonotonic-poll", offset=F.col("offset"),
        ops=op_list("prev_index", "index"),
        extra=F.to_json(F.struct("process", "prev_offset")),
        description=F.format_string(
            "process %s read offset %s of %s after offset %s, without a seek",
            text("process"), text("offset"), tp_name(), text("prev_offset")))


def poll_skips(violations: DataFrame, records: DataFrame) -> DataFrame:
    """Jumps over offsets that the final log holds (one anomaly per poll and partition).

    For each jump from `expected` to `offset`, the smallest final-log offset at or
    above `expected` is found by walking the partition's final offsets top down
    together with the jump points (a running frame, no range join).
    """
    jumps = violations.filter("jump").groupBy(*_SEQ, "index").agg(
        F.min(F.struct("expected", "offset", "prev_index")).alias("j")) \
        .select(*_SEQ, "index", "j.expected", "j.offset", "j.prev_index")
    finals = records.filter("final").select(
        "topic", "partition", F.col("offset").alias("point"), F.lit(0).alias("kind"),
        F.col("offset").alias("fl_offset"))
    points = jumps.select("topic", "partition", F.col("expected").alias("point"),
                          F.lit(1).alias("kind"), F.lit(None).cast("bigint").alias("fl_offset"))
    walk = (Window.partitionBy("topic", "partition").orderBy(F.desc("point"), "kind")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    nearest = (finals.unionByName(points)
               .withColumn("next_fl", F.last("fl_offset", ignorenulls=True).over(walk))
               .filter(F.col("kind") == 1)
               .select("topic", "partition", F.col("point").alias("expected"), "next_fl")
               .distinct())
    skipped = jumps.join(nearest, ["topic", "partition", "expected"]) \
        .filter(F.col("next_fl") < F.col("offset"))
    return anomaly(
        skipped, "poll-skip", offset=F.col("offset"),
        ops=op_list("prev_index", "index"),
        extra=F.to_json(F.struct("process", "expected", F.col("next_fl").alias("skipped"))),
        description=F.format_string(
            "process %s jumped from offset %s to %s of %s, over offset %s of the final log",
            text("process"), text("expected"), text("offset"), tp_name(), text("next_fl")))


def garbage_reads(violations: DataFrame) -> DataFrame:
    """Polled records whose value is not an int this run wrote."""
    return anomaly(
        violations.filter("garbage"), "garbage-read", offset=F.col("offset"),
        ops=op_list("index"),
        extra=F.to_json(F.struct("process")),
        description=F.format_string("process %s read a record at offset %s of %s whose value "
                                    "was not written by this run", text("process"),
                                    text("offset"), tp_name()))
