"""replica-divergence: the collector's `replica` lines (process -3) compared.

After the final reads each replica's own log of each partition is dumped on its
node and recorded as a replica line. Two replicas of one partition diverge at
an offset below the lower of their two high watermarks when they hold different
values there, or one holds the offset and the other does not: below the high
watermark every replica must agree (KAFKA-18991 broke that). Counted per
(topic, partition, offset); a broker with several lines of one partition is
judged by its last, and a replica line without a high watermark is not compared.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from elr_harness.checker.events import REPLICA_RECORD, TopicKeys
from elr_harness.checker.frames import (
    anomaly,
    json_of,
    local_rows,
    op_list,
    sentence,
    text,
    tp_name,
)
from elr_harness.core.anomalies import REPLICA_DIVERGENCE

TP = tuple[str, int]
#: A partition of a batch's run: (run, topic, partition).
RTP = tuple[int, str, int]


def last_replica_lines(rows: list[dict], run: int = 0) -> dict[RTP, dict[int, dict]]:
    """Per partition (of run `run` of a batch) and broker, its last replica line
    (index order)."""
    out: dict[RTP, dict[int, dict]] = {}
    for row in sorted(rows, key=lambda r: r["index"]):
        if row["topic"] is None or row["partition"] is None or row["broker"] is None:
            continue
        out.setdefault((run, row["topic"], row["partition"]), {})[row["broker"]] = row
    return out


def replica_divergence(spark, events: DataFrame, lines: dict[RTP, dict[int, dict]],
                       keys: TopicKeys) -> DataFrame:
    """One anomaly per (topic, partition, offset) where two replicas disagree below
    the lower of their high watermarks."""
    last, pairs = [], []
    for (run, topic, partition), by_broker in sorted(lines.items()):
        tp = keys.encode(topic, partition, run)
        last += [(tp, broker, row["index"]) for broker, row in sorted(by_broker.items())]
        marked = sorted(b for b, row in by_broker.items() if row["hwm"] is not None)
        for i, a in enumerate(marked):
            for b in marked[i + 1:]:
                ra, rb = by_broker[a], by_broker[b]
                pairs.append((tp, a, b, min(ra["hwm"], rb["hwm"]), ra["index"], rb["index"]))
    kept = local_rows(spark, "tp bigint, process bigint, index bigint", last)
    compared = local_rows(spark, "tp bigint, a bigint, b bigint, w bigint, a_index bigint, "
                                 "b_index bigint", pairs)
    records = (events.filter(f"kind = {REPLICA_RECORD}")
               .join(F.broadcast(kept), ["tp", "process", "index"], "left_semi"))
    by_offset = records.groupBy("tp", "offset").agg(
        F.expr("collect_list(named_struct('b', process, 'v', value)) AS vs"))
    has_a, has_b = "exists(vs, x -> x.b = a)", "exists(vs, x -> x.b = b)"
    value_a, value_b = "filter(vs, x -> x.b = a)[0].v", "filter(vs, x -> x.b = b)[0].v"
    diverged = (by_offset.join(F.broadcast(compared), ["tp"])
                .filter(f"offset < w AND (({has_a}) != ({has_b}) OR "
                        f"(({has_a}) AND ({has_b}) AND NOT ({value_a} <=> {value_b})))")
                .selectExpr("tp", "offset", f"struct(a, b, a_index, b_index, w, {has_a} AS "
                            f"has_a, {has_b} AS has_b, {value_a} AS value_a, {value_b} AS "
                            "value_b) AS pair"))
    per_offset = diverged.groupBy("tp", "offset").agg(F.min("pair").alias("p")) \
        .selectExpr("tp", "offset", "p.*")
    held = "CASE WHEN has_{0} THEN CAST(value_{0} AS STRING) ELSE 'nothing' END"
    return anomaly(
        keys.decoded(per_offset), REPLICA_DIVERGENCE, offset="offset",
        ops=op_list("a_index", "b_index"),
        extra=json_of(brokers="array(a, b)", high_watermark="w"),
        description=sentence("below the high watermark %s of %s, broker %s holds %s at "
                             "offset %s and broker %s holds %s", text("w"), tp_name(),
                             text("a"), held.format("a"), text("offset"), text("b"),
                             held.format("b")))
