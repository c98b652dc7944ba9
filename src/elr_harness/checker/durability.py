"""Durability and log-order checks: what was written against the final log.

One aggregation per (topic-partition, value) of the events table joins each
send with the polls that saw its value and the final log's copies of it, and
the partition's final-read facts are joined on (a broadcast of a few rows);
lost-write, unseen, duplicate, aborted-read and lost-committed-read are read off
it, realtime-order with a window over each partition's final log, and
inconsistent-offset with an aggregation by (topic-partition, offset). The events
are bucketed by topic-partition (checker/events.py), so none needs a shuffle.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from elr_harness.checker.events import (
    ACKS_CODES,
    FINAL_RECORD,
    POLLED,
    RC_FINAL_RECORD,
    RC_READ_RECORD,
    READ_RECORD,
    SEND_KINDS,
    TopicKeys,
    text_of,
)
from elr_harness.checker.frames import (
    anomaly,
    anomaly_fields,
    exprs,
    json_of,
    op_list,
    sentence,
    struct_of,
    text,
    tp_name,
)
from elr_harness.core.anomalies import (
    ABORTED_READ,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_COMMITTED_READ,
    LOST_WRITE,
    REALTIME_ORDER,
    UNSEEN,
)

#: The values table keeps a send's status and acks level as codes (SEND_KINDS,
#: ACKS_CODES); only anomaly rows spell the acks level out.
_OK, _FAIL, _ACKS_0, _ACKS_ALL = (SEND_KINDS["ok"], SEND_KINDS["fail"], ACKS_CODES["0"],
                                  ACKS_CODES["all"])
_ACKS = text_of("acks", ACKS_CODES)


def values_table(events: DataFrame, tp_status: DataFrame) -> DataFrame:
    """One row per (tp, value): its send, its reads, its final-log copies, and its
    partition's final-read facts (complete, final_top: tp_status's columns).

    The one big aggregation of the durability checks, straight over the send
    and record events; inconsistent_offsets reuses its rows for the sends'
    offset claims. The offsets a value was read at and sits at in the final log
    are kept as sets: a value read at any one of its final offsets was not lost.
    """
    comp = "kind BETWEEN 1 AND 3"
    # the final log is the read_uncommitted final read's; a read is any other poll's
    final, read = f"kind = {FINAL_RECORD}", f"kind IN ({READ_RECORD}, {RC_READ_RECORD})"
    rc = f"kind IN ({RC_FINAL_RECORD}, {RC_READ_RECORD})"
    polled = ", ".join(str(k) for k in POLLED)
    sends_and_records = events.filter(
        f"kind < {FINAL_RECORD} OR (kind IN ({polled}) AND value IS NOT NULL)")
    agg = sends_and_records.groupBy("tp", "value").agg(*exprs(
        "max(acks) AS acks",
        "min(CASE WHEN kind = 0 THEN index END) AS inv_index",
        "min(CASE WHEN kind = 0 THEN time END) AS inv_time",
        f"min(CASE WHEN {comp} THEN index END) AS comp_index",
        f"min(CASE WHEN {comp} THEN time END) AS comp_time",
        f"max(CASE WHEN {comp} THEN kind END) AS status_code",
        # only an ok send claims an offset
        "max(CASE WHEN kind = 1 THEN offset END) AS send_offset",
        f"array_sort(collect_set(CASE WHEN {final} THEN offset END)) AS f_offsets",
        f"array_sort(collect_set(CASE WHEN {read} THEN offset END)) AS r_offsets",
        f"min(CASE WHEN {final} THEN offset END) AS f_off_min",
        f"max(CASE WHEN {final} THEN offset END) AS f_off_max",
        f"min(CASE WHEN {final} THEN index END) AS f_poll_min",
        f"max(CASE WHEN {final} THEN index END) AS f_poll_max",
        f"min(CASE WHEN {read} THEN offset END) AS r_off_min",
        f"max(CASE WHEN {read} THEN offset END) AS r_off_max",
        f"min(CASE WHEN {read} THEN index END) AS r_poll_min",
        f"max(CASE WHEN {read} THEN index END) AS r_poll_max",
        # contract v4: where the read_committed final read holds it, and the first
        # read_committed poll that returned it (its completion time, its index)
        f"min(CASE WHEN kind = {RC_FINAL_RECORD} THEN offset END) AS rc_f_off_min",
        f"min(CASE WHEN {rc} THEN struct(time, index) END) AS rc_first"))
    # an invoke with no completion by the end of the history counts as info. Status
    # and acks stay codes (SEND_KINDS, ACKS_CODES): the table is cached, and ints
    # cost less to cache and compare than texts; only anomaly rows carry the texts
    status = agg.selectExpr(
        *[c for c in agg.columns if c != "status_code"],
        f"coalesce(status_code, CASE WHEN inv_index IS NOT NULL THEN {SEND_KINDS['info']} "
        "END) AS status")
    return status.join(F.broadcast(tp_status.select("tp", "complete", "final_top")), ["tp"],
                       "left")


#: SQL over a values-table row: its partition's final read is complete.
_COMPLETE = "coalesce(complete, false)"
#: SQL: the final read got to the send's offset (complete, or its final records
#: reach at least that offset): an absent acked value there is lost, not unseen.
_REACHED = (f"({_COMPLETE} OR (send_offset IS NOT NULL AND final_top IS NOT NULL "
            "AND send_offset <= final_top))")
#: SQL: the read offsets the final log does not hold the value at.
_MOVED = "array_except(coalesce(r_offsets, array()), coalesce(f_offsets, array()))"


def value_anomalies(values: DataFrame, keys: TopicKeys) -> DataFrame:
    """lost-write, unseen, duplicate, aborted-read and lost-committed-read.

    One pass over the values table, with no shuffle: each row gets an array of
    the anomalies it shows, which is exploded.
    """
    absent = "f_off_min IS NULL"
    acked = f"status = {_OK}"
    where = tp_name()
    sent = sentence("acks=%s send of value %s (offset %s)", text(_ACKS), text("value"),
                    text("send_offset"))
    send_ops = ("inv_index", "comp_index", "r_poll_min", "r_poll_max")
    read_at = "coalesce(f_off_min, r_off_min)"
    missing = f"array_min({_MOVED})"
    checks = [
        (LOST_WRITE, f"{acked} AND {absent} AND {_REACHED}", "send_offset",
         op_list(*send_ops),
         f"concat({sent}, ' was acknowledged but is not in the final log of ', {where})",
         "true", "array(send_offset)", None),
        (UNSEEN, f"{acked} AND {absent} AND NOT {_REACHED}", "send_offset",
         op_list(*send_ops), f"concat({sent}, ' is not in what the incomplete final read "
                             f"of ', {where}, ' returned')", "true", "array(send_offset)",
         None),
        (DUPLICATE, "size(f_offsets) > 1", "f_off_min",
         op_list("inv_index", "comp_index", "f_poll_min", "f_poll_max"),
         sentence("value %s is in the final log of %s at offsets %s and %s", text("value"),
                  where, text("f_off_min"), text("f_off_max")),
         None, None, json_of(other_offset="f_off_max")),
        (ABORTED_READ, f"status = {_FAIL} AND (f_off_min IS NOT NULL "
         "OR r_poll_min IS NOT NULL)", read_at,
         op_list("inv_index", "comp_index", "r_poll_min", "r_poll_max", "f_poll_min"),
         sentence("value %s of a failed send was read from %s at offset %s", text("value"),
                  where, text(read_at)), None, None, None),
        (LOST_COMMITTED_READ, f"r_poll_min IS NOT NULL AND {_COMPLETE} "
         f"AND size({_MOVED}) > 0", missing,
         op_list("inv_index", "comp_index", "r_poll_min", "r_poll_max", "f_poll_min"),
         f"CASE WHEN {absent} THEN "
         + sentence("value %s was read at offset %s of %s but is not in the final log",
                    text("value"), text(missing), where)
         + " ELSE " + sentence("value %s was read at offset %s of %s but the final log has "
                               "it at offset %s", text("value"), text(missing), where,
                               text("f_off_min")) + " END",
         absent, f"array({missing})", json_of(final_offset="f_off_min")),
    ]
    # the cheap boolean test first: only anomalous rows build descriptions and arrays
    flagged = keys.decoded(values.filter(" OR ".join(f"({c[1]})" for c in checks)))
    found = flagged.selectExpr(
        f"explode(array({', '.join(_found(*c) for c in checks)})) AS x")
    return found.filter("x IS NOT NULL").selectExpr("x.*")


def realtime_orders(values: DataFrame, keys: TopicKeys) -> DataFrame:
    """realtime-order: a window walks each partition's final log from the top down
    (only the values in it, only the columns it needs), keeping the earliest ack
    among the sends above (an acks=0 "ok" only says the bytes left, so those
    sends are not A)."""
    walked = values.filter("f_off_min IS NOT NULL").selectExpr(
        "tp", "value", "acks", "f_off_min", "inv_time", "inv_index",
        "comp_index", f"min(CASE WHEN status = {_OK} AND acks != {_ACKS_0} "
        "THEN struct(comp_time, comp_index, inv_index, value, f_off_min) END) "
        "OVER (PARTITION BY tp ORDER BY f_off_min DESC "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS a")
    return anomaly(
        keys.decoded(walked.filter("inv_time IS NOT NULL AND a.comp_time < inv_time")),
        REALTIME_ORDER,
        value="value", acks=_ACKS, offset="f_off_min", hold="true",
        hold_offsets="array(f_off_min, a.f_off_min)",
        ops=op_list("a.inv_index", "a.comp_index", "inv_index", "comp_index"),
        description=sentence("value %s was sent after value %s was acknowledged, yet sits "
                             "below it in the final log of %s (offset %s < %s)", text("value"),
                             text("a.value"), tp_name(), text("f_off_min"),
                             text("a.f_off_min")),
        extra=json_of(other_value="a.value", other_offset="a.f_off_min"))


def _found(name: str, condition: str, offset: str, ops: str, description: str,
           hold: str | None, hold_offsets: str | None, extra: str | None) -> str:
    """One anomaly of a values-table row, in the common schema, when condition holds;
    else null."""
    fields = anomaly_fields(name, value="value", acks=_ACKS, offset=offset, ops=ops,
                            description=description, hold=hold, hold_offsets=hold_offsets,
                            extra=extra, time="comp_time")
    return f"CASE WHEN {condition} THEN {struct_of(fields)} END"


def inconsistent_offsets(values: DataFrame, events: DataFrame, keys: TopicKeys,
                         txn_claims: DataFrame | None = None) -> DataFrame:
    """One (tp, offset) holding two values across acked sends and polls,
    with the first op that carried the lowest and the highest of them.

    The claims are every polled record and every ok send's offset, except an
    acks 0/1 send that is a lost-write and that nobody read at its offset: that
    is a reported loss (not bad by itself), and the leader that lost it hands
    its offset to a later record, so it is not counted again as a bad anomaly.
    acks=all sends and every polled record still count. The sends come from the
    values table, which knows whether a value is a lost-write and every offset
    it was read at.
    """
    sends = values.filter(
        f"status = {_OK} AND send_offset IS NOT NULL AND (acks = {_ACKS_ALL} "
        f"OR f_off_min IS NOT NULL OR NOT {_REACHED} "
        "OR array_contains(r_offsets, send_offset))"
    ).selectExpr("tp", "value", "send_offset AS offset", "comp_index AS index")
    if txn_claims is not None:  # contract v4: a transaction's values, like acks=all sends
        sends = sends.unionByName(txn_claims)
    polled = ", ".join(str(k) for k in POLLED)
    recs = events.filter(f"kind IN ({polled}) AND value IS NOT NULL") \
        .select("tp", "value", "offset", "index")
    # the first op of each (offset, value), then the lowest and highest value. Both
    # sides are partitioned by tp (the events' buckets, and the values table grouped
    # over them), and so is their union: neither aggregation shuffles (a pre-grouping
    # of the records and a shuffle by (tp, offset) cost 0.5 s at 1M operations, 3.5 s
    # at 10M)
    claims = sends.unionByName(recs) \
        .groupBy("tp", "offset", "value") \
        .agg(F.expr("min(index) AS first_index"))
    by_offset = claims.groupBy("tp", "offset").agg(*exprs(
        "min(value) AS lo", "max(value) AS hi",
        "min_by(first_index, value) AS op_lo", "max_by(first_index, value) AS op_hi"))
    return anomaly(
        keys.decoded(by_offset.filter("lo != hi")), INCONSISTENT_OFFSET, offset="offset",
        ops=op_list("op_lo", "op_hi"), extra=json_of(values="array(lo, hi)"),
        description=sentence("offset %s of %s holds values %s and %s", text("offset"),
                             tp_name(), text("lo"), text("hi")))
