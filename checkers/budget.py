"""KIP-966's fault budget: page-cache losses per partition between full ISRs.

A partition keeps its acks=all promise with up to min.insync.replicas - 1 of its
replicas losing unflushed data. We count `page-cache-loss` faults (ok or info:
an info may have half happened) on nodes that are replicas of the partition
(every broker id the observer ever saw in its leader/ISR/ELR/last-known ELR;
every broker when it was never observed) between two observations where the
partition's ISR was full (replication factor members). The largest such count
is compared with the budget.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.observations import per_topic
from checkers.testinfo import RunInfo


def page_cache_losses(ops: DataFrame, obs: DataFrame, partitions: DataFrame,
                      info: RunInfo) -> DataFrame:
    """Rows (topic, partition, losses): the most page-cache losses on the partition's
    replicas in one full-ISR window (partitions without any are left out)."""
    faults = (ops.filter((F.col("f") == "fault") & (F.col("fault") == "page-cache-loss")
                         & F.col("type").isin("ok", "info"))
              .select("index", F.explode("nodes").alias("node")))
    ids = F.regexp_extract("node", r"broker-(\d+)$", 1)
    broker = F.when(ids != "", ids.cast("bigint"))
    for name, node_id in info.node_ids.items():
        broker = F.when(F.col("node") == name, F.lit(node_id)).otherwise(broker)
    faults = faults.select("index", broker.alias("broker")).filter("broker IS NOT NULL")

    members = F.flatten(F.array(
        F.coalesce("isr", F.array().cast("array<bigint>")),
        F.coalesce("elr", F.array().cast("array<bigint>")),
        F.coalesce("last_known_elr", F.array().cast("array<bigint>")),
        F.when(F.col("leader") >= 0, F.array("leader")).otherwise(F.array().cast(
            "array<bigint>"))))
    replicas = obs.groupBy("topic", "partition").agg(
        F.array_distinct(F.flatten(F.collect_list(members))).alias("replicas"))
    losses = (faults.crossJoin(F.broadcast(partitions.select("topic", "partition")))
              .join(replicas, ["topic", "partition"], "left")
              .filter(F.col("replicas").isNull()
                      | F.array_contains("replicas", F.col("broker")))
              .select("topic", "partition", "index", F.lit(0).alias("full"),
                      F.lit(1).alias("loss")))
    rf = F.expr(per_topic(info, lambda t: t.replication_factor))
    full_points = obs.select("topic", "partition", "index",
                             (F.size(F.coalesce("isr", F.array())) >= rf).cast("int")
                             .alias("full"), F.lit(0).alias("loss")).filter("full = 1")
    running = Window.partitionBy("topic", "partition").orderBy("index", "full") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return (losses.unionByName(full_points)
            .withColumn("window", F.sum("full").over(running))
            .groupBy("topic", "partition", "window").agg(F.sum("loss").alias("losses"))
            .groupBy("topic", "partition").agg(F.max("losses").cast("bigint").alias("losses")))
