"""Durability and log-order checks: what was written against the final log.

One aggregation per (topic, partition, value) joins each send with the polls
that saw its value and the final log's copies of it; lost-write, unseen,
duplicate, aborted-read, lost-committed-read and realtime-order are read off
it. inconsistent-offset needs the other key, (topic, partition, offset).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.frames import (
    anomaly,
    anomaly_fields,
    json_of,
    op_list,
    sentence,
    struct_of,
    text,
    tp_name,
)

_KIND_CODES = {"invoke": 0, "ok": 1, "fail": 2, "info": 3}
_FINAL, _READ = 4, 5
#: acks levels by strength, so max() picks the strongest claim of a value
_ACKS_CODES = {"all": 3, "1": 2, "0": 1}


def _encode(column: str, codes: dict[str, int]) -> str:
    """SQL mapping column's text to its code (null for any other text)."""
    return f"CASE {column} " + " ".join(f"WHEN '{k}' THEN {v}" for k, v in codes.items()) \
        + " END"


def _decode(column: str, codes: dict[str, int]) -> str:
    """SQL mapping column's code back to its text."""
    return f"CASE {column} " + " ".join(f"WHEN {v} THEN '{k}'" for k, v in codes.items()) \
        + " END"


def claims_table(ops: DataFrame, records: DataFrame) -> DataFrame:
    """One row per (topic, partition, value, offset) seen in sends and polls.

    The one big shuffle of the durability checks: per value (values_table) and
    per offset (inconsistent_offsets) are then smaller regroupings of this table.
    Numeric codes keep every aggregation buffer fixed-width (a hash aggregate).
    """
    send_kind = _encode("type", _KIND_CODES)
    sends = ops.filter("f = 'send'").selectExpr(
        "topic", "partition", "value",
        f"{_encode('acks', _ACKS_CODES)} AS acks",
        f"{send_kind} AS kind", "index", "time",
        # only an ok send claims an offset; invoke/fail/info rows group under null
        f"CASE WHEN {send_kind} = 1 THEN offset END AS offset")
    recs = records.filter("value IS NOT NULL").selectExpr(
        "topic", "partition", "value", "CAST(NULL AS INT) AS acks",
        f"CASE WHEN final THEN {_FINAL} ELSE {_READ} END AS kind", "index",
        "CAST(NULL AS BIGINT) AS time", "offset")
    comp = "kind BETWEEN 1 AND 3"
    # partitioned by value: values_table and inconsistent_offsets regroup this
    # table by value without another shuffle
    by_value = sends.unionByName(recs).repartition("topic", "partition", "value")
    return by_value.groupBy("topic", "partition", "value", "offset").agg(*_exprs(
        "max(acks) AS acks",
        "min(CASE WHEN kind = 0 THEN index END) AS inv_index",
        "min(CASE WHEN kind = 0 THEN time END) AS inv_time",
        f"min(CASE WHEN {comp} THEN index END) AS comp_index",
        f"min(CASE WHEN {comp} THEN time END) AS comp_time",
        f"max(CASE WHEN {comp} THEN kind END) AS status_code",
        "max(CAST(kind = 1 AS INT)) AS sent",
        f"min(CASE WHEN kind = {_FINAL} THEN index END) AS f_poll_min",
        f"max(CASE WHEN kind = {_FINAL} THEN index END) AS f_poll_max",
        f"min(CASE WHEN kind = {_READ} THEN index END) AS r_poll_min",
        f"max(CASE WHEN kind = {_READ} THEN index END) AS r_poll_max",
        f"min(CASE WHEN kind IN (1, {_FINAL}, {_READ}) THEN index END) AS first_index"))


def _exprs(*sql: str) -> list:
    return [F.expr(e) for e in sql]


def values_table(claims: DataFrame) -> DataFrame:
    """One row per (topic, partition, value): its send, its reads, its final-log copies."""
    final, read = "f_poll_min IS NOT NULL", "r_poll_min IS NOT NULL"
    agg = claims.groupBy("topic", "partition", "value").agg(*_exprs(
        "max(acks) AS acks",
        "min(inv_index) AS inv_index",
        "min(inv_time) AS inv_time",
        "min(comp_index) AS comp_index",
        "min(comp_time) AS comp_time",
        "max(status_code) AS status_code",
        "max(CASE WHEN sent = 1 THEN offset END) AS send_offset",
        f"min(CASE WHEN {final} THEN offset END) AS f_off_min",
        f"max(CASE WHEN {final} THEN offset END) AS f_off_max",
        "min(f_poll_min) AS f_poll_min",
        "max(f_poll_max) AS f_poll_max",
        f"min(CASE WHEN {read} THEN offset END) AS r_off_min",
        f"max(CASE WHEN {read} THEN offset END) AS r_off_max",
        "min(r_poll_min) AS r_poll_min",
        "max(r_poll_max) AS r_poll_max"))
    # an invoke with no completion by the end of the history counts as info
    return agg.selectExpr(
        *[c for c in agg.columns if c not in ("acks", "status_code")],
        f"coalesce({_decode('status_code', _KIND_CODES)}, "
        "CASE WHEN inv_index IS NOT NULL THEN 'info' END) AS status",
        f"{_decode('acks', _ACKS_CODES)} AS acks")


def value_anomalies(values: DataFrame, tp_status: DataFrame) -> DataFrame:
    """lost-write, unseen, duplicate, aborted-read, lost-committed-read and realtime-order.

    One pass over the values table: each row gets an array of the anomalies it
    shows, which is exploded; realtime-order's window walks each partition's
    final log from the top down, keeping the earliest ack among the sends
    above (an acks=0 "ok" only says the bytes left, so those sends are not A).
    """
    v = values.join(F.broadcast(tp_status.select("topic", "partition", "complete")),
                    ["topic", "partition"], "left")
    v = v.selectExpr(
        "*", "min(CASE WHEN status = 'ok' AND acks != '0' AND f_off_min IS NOT NULL "
        "THEN struct(comp_time, comp_index, inv_index, value, f_off_min) END) "
        "OVER (PARTITION BY topic, partition ORDER BY f_off_min DESC NULLS LAST "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS a")

    complete = "coalesce(complete, false)"
    absent = "f_off_min IS NULL"
    acked = "status = 'ok'"
    where = tp_name()
    sent = sentence("acks=%s send of value %s (offset %s)", text("acks"), text("value"),
                    text("send_offset"))
    send_ops = ("inv_index", "comp_index", "r_poll_min", "r_poll_max")
    moved = ("(NOT array_contains(array(f_off_min, f_off_max), r_off_min) "
             "OR NOT array_contains(array(f_off_min, f_off_max), r_off_max))")
    read_at = "coalesce(f_off_min, r_off_min)"
    checks = [
        ("lost-write", f"{acked} AND {absent} AND {complete}", "send_offset", op_list(*send_ops),
         f"concat({sent}, ' was acknowledged but is not in the final log of ', {where})",
         "true", "send_offset", None),
        ("unseen", f"{acked} AND {absent} AND NOT {complete}", "send_offset",
         op_list(*send_ops), f"concat({sent}, ' is not in what the incomplete final read "
                             f"of ', {where}, ' returned')", "true", "send_offset", None),
        ("duplicate", "f_off_min != f_off_max", "f_off_min",
         op_list("inv_index", "comp_index", "f_poll_min", "f_poll_max"),
         sentence("value %s is in the final log of %s at offsets %s and %s", text("value"),
                  where, text("f_off_min"), text("f_off_max")),
         None, None, json_of(other_offset="f_off_max")),
        ("aborted-read", "status = 'fail' AND (f_off_min IS NOT NULL "
         "OR r_poll_min IS NOT NULL)", read_at,
         op_list("inv_index", "comp_index", "r_poll_min", "r_poll_max", "f_poll_min"),
         sentence("value %s of a failed send was read from %s at offset %s", text("value"),
                  where, text(read_at)), None, None, None),
        ("lost-committed-read", f"r_poll_min IS NOT NULL AND (({absent} AND {complete}) "
         f"OR (NOT {absent} AND {moved}))", "r_off_min",
         op_list("inv_index", "comp_index", "r_poll_min", "r_poll_max", "f_poll_min"),
         f"CASE WHEN {absent} THEN "
         + sentence("value %s was read at offset %s of %s but is not in the final log",
                    text("value"), text("r_off_min"), where)
         + " ELSE " + sentence("value %s was read at offset %s of %s but the final log has "
                               "it at offset %s", text("value"), text("r_off_min"), where,
                               text("f_off_min")) + " END",
         absent, "r_off_min", json_of(final_offset="f_off_min")),
        ("realtime-order", "f_off_min IS NOT NULL AND inv_time IS NOT NULL "
         "AND a.comp_time < inv_time", "f_off_min",
         op_list("a.inv_index", "a.comp_index", "inv_index", "comp_index"),
         sentence("value %s was sent after value %s was acknowledged, yet sits below it in "
                  "the final log of %s (offset %s < %s)", text("value"), text("a.value"),
                  where, text("f_off_min"), text("a.f_off_min")),
         None, None, json_of(other_value="a.value", other_offset="a.f_off_min")),
    ]
    # the cheap boolean test first: only anomalous rows build descriptions and arrays
    flagged = v.filter(" OR ".join(f"({c[1]})" for c in checks))
    found = flagged.selectExpr(
        f"explode(array({', '.join(_found(*c) for c in checks)})) AS x")
    return found.filter("x IS NOT NULL").selectExpr("x.*")


def _found(name: str, condition: str, offset: str, ops: str, description: str,
           hold: str | None, hold_offset: str | None, extra: str | None) -> str:
    """One anomaly of a values-table row, in the common schema, when condition holds;
    else null."""
    fields = anomaly_fields(name, value="value", acks="acks", offset=offset, ops=ops,
                            description=description, hold=hold, hold_offset=hold_offset,
                            extra=extra)
    return f"CASE WHEN {condition} THEN {struct_of(fields)} END"


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
        F.expr("max(CAST(f_poll_min IS NOT NULL AS INT)) AS in_final"))
    weak_unread = ("sent = 1 AND acks < 3 AND r_poll_min IS NULL AND f_poll_min IS NULL")
    held = (claims.filter("offset IS NOT NULL AND first_index IS NOT NULL")
            .join(in_final, key)
            .filter(f"NOT ({weak_unread} AND in_final = 0)"))
    by_offset = held.groupBy("topic", "partition", "offset").agg(*_exprs(
        "min(value) AS lo", "max(value) AS hi",
        "min_by(first_index, value) AS op_lo", "max_by(first_index, value) AS op_hi"))
    return anomaly(
        by_offset.filter("lo != hi"), "inconsistent-offset", offset="offset",
        ops=op_list("op_lo", "op_hi"), extra=json_of(values="array(lo, hi)"),
        description=sentence("offset %s of %s holds values %s and %s", text("offset"),
                             tp_name(), text("lo"), text("hi")))
