"""KIP-966's fault budget: page-cache losses per partition between full ISRs.

A partition keeps its acks=all promise with up to min.insync.replicas - 1 of its
replicas losing unflushed data. We count `page-cache-loss` faults (ok or info:
an info may have half happened; an invoke that never completed counts as info)
on nodes that are replicas of the partition (every broker id the observer ever
saw in its leader/ISR/ELR/last-known ELR; every broker when it was never
observed) between two observations where the partition's ISR was full
(replication factor members). The largest such count is compared with the
budget.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import local_rows, sql_string
from checkers.observations import per_topic
from checkers.testinfo import RunInfo
from harness.core.history import BUDGET_FAULTS

#: The one fault that counts against the budget (the contract's BUDGET_FAULTS).
(LOSS,) = map(str, BUDGET_FAULTS)


def page_cache_loss_nodes(faults: list[dict]) -> list[tuple[int, str]]:
    """(index, node) of each node a page-cache loss hit or may have hit: faults that
    ended ok or info, and invokes that never completed (which count as info).

    The nemesis's completions are paired with its invokes first in, first out by
    (process, kind, nodes): its faults may overlap, so "the next completion" alone
    could pair the wrong ones. faults: its fault lines in index order.
    """
    pending: dict[tuple, list[dict]] = {}
    hits: list[tuple[int, str]] = []
    for line in faults:
        key = (line["process"], line["fault"], tuple(line["nodes"] or ()))
        if line["type"] == "invoke":
            pending.setdefault(key, []).append(line)
            continue
        waiting = pending.get(key)
        if waiting:
            waiting.pop(0)
        if line["fault"] == LOSS and line["type"] in ("ok", "info"):
            hits += [(line["index"], node) for node in line["nodes"] or ()]
    for waiting in pending.values():
        for line in waiting:
            if line["fault"] == LOSS:
                hits += [(line["index"], node) for node in line["nodes"] or ()]
    return sorted(hits)


def observed_replicas(obs: DataFrame) -> dict[tuple[str, int], list[int]]:
    """Each observed partition's replicas: every broker id the observer saw as its
    leader or in its ISR, ELR or last-known ELR (a few rows per partition).

    A small job of its own, run before the checks are planned: inside them
    map-side partial aggregation is off, so finding the replicas there shuffled
    every observation, and the main job waited for it (10M operations: 477k
    rows, 2.9 s).
    """
    none = "CAST(array() AS ARRAY<BIGINT>)"
    members = ("array_distinct(flatten(array("
               f"coalesce(isr, {none}), coalesce(elr, {none}), "
               f"coalesce(last_known_elr, {none}), "
               f"CASE WHEN leader >= 0 THEN array(leader) ELSE {none} END)))")
    # explode_outer: a partition only ever seen with no members still counts as seen
    rows = (obs.selectExpr("topic", "partition", f"explode_outer({members}) AS broker")
            .distinct().collect())
    replicas: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        if r["topic"] is None or r["partition"] is None:
            continue  # matches no fault's partition, as a join on nulls would not
        brokers = replicas.setdefault((r["topic"], r["partition"]), [])
        if r["broker"] is not None:
            brokers.append(r["broker"])
    return {key: sorted(brokers) for key, brokers in sorted(replicas.items())}


def _is_replica(replicas: dict[tuple[str, int], list[int]]) -> str:
    """SQL: the row's broker is a replica of its partition (any broker of a
    partition the observer never saw)."""
    cases = " ".join(
        f"WHEN topic = {sql_string(topic)} AND partition = {int(partition)} THEN "
        + (f"broker IN ({', '.join(str(int(b)) for b in brokers)})" if brokers else "false")
        for (topic, partition), brokers in replicas.items())
    return f"(CASE {cases} ELSE true END)" if cases else "true"


def page_cache_losses(spark, hits: list[tuple[int, str]], obs: DataFrame,
                      partitions: DataFrame, replicas: dict[tuple[str, int], list[int]],
                      info: RunInfo) -> DataFrame:
    """Rows (topic, partition, losses): the most page-cache losses (hits, from
    page_cache_loss_nodes) on the partition's replicas (observed_replicas) in one
    full-ISR window (partitions without any are left out)."""
    # node -> broker id by the one rule (RunInfo.broker_id): a node test.json lists
    # as a controller is no broker, whatever its name
    brokers = [(index, broker) for index, node in hits
               if (broker := info.broker_id(node)) is not None]
    faults = local_rows(spark, "index bigint, broker bigint", brokers)

    losses = (faults.crossJoin(F.broadcast(partitions.select("topic", "partition")))
              .filter(_is_replica(replicas))
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
