"""Per-consumer order checks: nonmonotonic-poll, poll-skip, garbage-read.

Each process's records and seeks on a partition form one sequence ordered by
op index (a seek sits on the poll's invoke, records on its ok). A record is
compared with the event before it: after a record, the next offset must be
higher (else nonmonotonic) and no offset the final log holds may be jumped
over (else poll-skip); after a seek, only the jump is checked, from the seek
offset. The jump check applies between the records of one poll too.
nonmonotonic-poll and poll-skip are counted per poll (HISTORY.md): a poll that
breaks the order on two partitions is one anomaly, shown at its first partition.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from elr_harness.checker.events import (
    FINAL_RECORD,
    RC_FINAL_RECORD,
    RC_READ_RECORD,
    READ_RECORD,
    SEEK,
    TopicKeys,
)
from elr_harness.checker.frames import anomaly, json_of, op_list, sentence, text, tp_name
from elr_harness.core.anomalies import GARBAGE_READ, NONMONOTONIC_POLL, POLL_SKIP

#: one consumer's sequence on one topic-partition (checker/events.TopicKeys)
_SEQ = ["process", "tp"]


def order_events(events: DataFrame) -> DataFrame:
    """Records and seeks with their predecessor; only the rows that break an order rule
    (or carry a garbage value: one pass over the records serves garbage-read too).

    kind here is 1 for a record and 0 for a seek: the offset expected next is the
    previous offset plus it."""
    over = f"OVER (PARTITION BY {', '.join(_SEQ)} ORDER BY index, pos)"
    kinds = f"{FINAL_RECORD}, {READ_RECORD}, {RC_FINAL_RECORD}, {RC_READ_RECORD}, {SEEK}"
    sequence = events.filter(f"kind IN ({kinds})").selectExpr(
        *_SEQ, "index", "pos", "offset", f"CASE WHEN kind = {SEEK} THEN 0 ELSE 1 END AS kind",
        f"kind != {SEEK} AND value IS NULL AS garbage",
        # a read_committed poll's record: judged against the read_committed final read
        f"kind IN ({RC_FINAL_RECORD}, {RC_READ_RECORD}) AS rc")
    walked = sequence.selectExpr(
        "*", f"lag(kind) {over} AS prev_kind", f"lag(offset) {over} AS prev_offset",
        f"lag(index) {over} AS prev_index")
    is_record = "kind = 1 AND prev_kind IS NOT NULL"
    nonmono = f"({is_record} AND prev_kind = 1 AND offset <= prev_offset)"
    expected = "prev_offset + prev_kind"
    jump = f"({is_record} AND offset > {expected})"
    return walked.filter(f"{nonmono} OR {jump} OR garbage").selectExpr(
        *_SEQ, "index", "offset", "prev_index", "prev_offset", "garbage", "rc",
        f"coalesce({nonmono}, false) AS nonmono", f"coalesce({jump}, false) AS jump",
        f"{expected} AS expected")


def _first_per_poll(df: DataFrame, keys: TopicKeys, *columns: str) -> DataFrame:
    """One row per poll (its run of a batch, process, index): its first partition's row."""
    first = F.min(F.struct("tp", *columns)).alias("first")
    return df.groupBy(F.expr(keys.run("tp")).alias("_run"), "process", "index").agg(first) \
        .selectExpr("process", "index", "first.tp AS tp", *(f"first.{c} AS {c}" for c in columns))


def nonmonotonic_polls(violations: DataFrame, keys: TopicKeys) -> DataFrame:
    """One anomaly per poll that went back without a seek."""
    per_partition = violations.filter("nonmono").groupBy(*_SEQ, "index").agg(
        F.min("prev_index").alias("prev_index"), F.min("offset").alias("offset"),
        F.max("prev_offset").alias("prev_offset"))
    per_poll = _first_per_poll(per_partition, keys, "prev_index", "offset", "prev_offset")
    return anomaly(
        keys.decoded(per_poll), NONMONOTONIC_POLL, offset="offset",
        ops=op_list("prev_index", "index"),
        extra=json_of(process="process", prev_offset="prev_offset"),
        description=sentence("process %s read offset %s of %s after offset %s, without a seek",
                             text("process"), text("offset"), tp_name(), text("prev_offset")))


def poll_skips(violations: DataFrame, events: DataFrame, keys: TopicKeys) -> DataFrame:
    """Jumps over offsets that the final log holds (one anomaly per poll).

    For each jump from `expected` to `offset`, the smallest final-log offset at or
    above `expected` is found by walking the partition's final offsets top down
    together with the jump points (a running frame, no range join).
    """
    # every jump of a poll is judged (its first may pass over nothing the final log
    # holds while a later one does), and the poll counted once
    jumps = violations.filter("jump").select(*_SEQ, "index", "expected", "offset",
                                             "prev_index", "rc")
    # only the partitions with a jump walk their final log (usually none). The joins
    # merge rather than broadcast: a broadcast of the jumps would make every other
    # check wait for the consumers' order window, their input. This one needs no
    # shuffle (both sides are partitioned by tp, the events' buckets); the last one
    # shuffles only jumps and jump points
    jumped = jumps.select("tp").distinct().hint("merge")
    # a read_committed poll's jump against the read_committed final read (it skips
    # aborted records and markers by right), any other's against the final log
    finals = events.filter(f"kind IN ({FINAL_RECORD}, {RC_FINAL_RECORD})") \
        .selectExpr("tp", "offset", f"kind = {RC_FINAL_RECORD} AS rc") \
        .join(jumped, ["tp"], "left_semi") \
        .selectExpr("tp", "rc", "offset AS point", "0 AS kind", "offset AS fl_offset")
    points = jumps.selectExpr("tp", "rc", "expected AS point", "1 AS kind",
                              "CAST(NULL AS BIGINT) AS fl_offset")
    nearest = (finals.unionByName(points)
               .selectExpr("*", "last(fl_offset, true) OVER (PARTITION BY tp, rc "
                           "ORDER BY point DESC, kind ROWS BETWEEN UNBOUNDED PRECEDING AND "
                           "CURRENT ROW) AS next_fl")
               .filter("kind = 1")
               .selectExpr("tp", "rc", "point AS expected", "next_fl")
               .distinct())
    skips = jumps.hint("merge").join(nearest, ["tp", "rc", "expected"]) \
        .filter("next_fl < offset")
    skipped = keys.decoded(_first_per_poll(skips, keys, "expected", "offset", "prev_index",
                                           "next_fl"))
    return anomaly(
        skipped, POLL_SKIP, offset="offset", ops=op_list("prev_index", "index"),
        hold="true", hold_offsets="array(next_fl)",
        extra=json_of(process="process", expected="expected", skipped="next_fl"),
        description=sentence(
            "process %s jumped from offset %s to %s of %s, over offset %s of the final log",
            text("process"), text("expected"), text("offset"), tp_name(), text("next_fl")))


def garbage_reads(violations: DataFrame, keys: TopicKeys) -> DataFrame:
    """Polled records whose value is not an int this run wrote."""
    return anomaly(
        keys.decoded(violations.filter("garbage")), GARBAGE_READ, offset="offset",
        ops=op_list("index"),
        extra=json_of(process="process"),
        description=sentence("process %s read a record at offset %s of %s whose value was "
                             "not written by this run", text("process"), text("offset"),
                             tp_name()))
