"""KIP-966's fault budget: losses per partition between full ISRs, against the
lowest min ISR in effect meanwhile.

A partition keeps its acks=all promise with up to min.insync.replicas - 1 of its
replicas losing unflushed data. The losses (checker/budget_faults.py: page-cache
losses and disk faults that dropped data, ok or info) on nodes that are replicas
of the partition (every broker id the observer ever saw in its replicas/leader/
ISR/ELR/last-known ELR; every broker when it was never observed) are counted
between two observations where the partition's ISR was full (full_isr: every
replica the observation names, or replication factor members without them).
Each such window is judged against the lowest min ISR in effect at any time in
it (test.json's, through the min ISR changes: budget_faults.min_isr_steps); the
window that came closest to its budget, or went furthest beyond it, is the
partition's. Losses while the ELR feature was off are counted apart
(budget_faults.unprotected_hits; check.py) and put the partition beyond the
budget whatever the count.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from elr_harness.checker.frames import EMPTY_IDS, local_rows, sql_string
from elr_harness.checker.observations import BY_PARTITION, per_topic, runs_of
from elr_harness.checker.testinfo import RunInfo

#: A partition of a batch's run: (run, topic, partition).
RTP = tuple[int, str, int]


def observed_replicas(obs: DataFrame) -> dict[RTP, list[int]]:
    """Each observed partition's replicas: every broker id the observer saw in its
    replicas, as its leader, or in its ISR, ELR or last-known ELR (a few rows per
    partition).

    A small job of its own, run before the checks are planned: inside them
    map-side partial aggregation is off, so finding the replicas there shuffled
    every observation, and the main job waited for it (10M operations: 477k
    rows, 2.9 s).
    """
    none = EMPTY_IDS
    members = ("array_distinct(flatten(array("
               f"coalesce(replicas, {none}), coalesce(isr, {none}), coalesce(elr, {none}), "
               f"coalesce(last_known_elr, {none}), "
               f"CASE WHEN leader >= 0 THEN array(leader) ELSE {none} END)))")
    # explode_outer: a partition only ever seen with no members still counts as seen
    rows = (obs.selectExpr("run", "topic", "partition", f"explode_outer({members}) AS broker")
            .distinct().collect())
    replicas: dict[RTP, list[int]] = {}
    for r in rows:
        if r["topic"] is None or r["partition"] is None:
            continue  # matches no fault's partition, as a join on nulls would not
        brokers = replicas.setdefault((r["run"], r["topic"], r["partition"]), [])
        if r["broker"] is not None:
            brokers.append(r["broker"])
    return {key: sorted(brokers) for key, brokers in sorted(replicas.items())}


def _is_replica(replicas: dict[RTP, list[int]]) -> str:
    """SQL: the row's broker is a replica of its partition (any broker of a
    partition the observer never saw)."""
    cases = " ".join(
        f"WHEN run = {int(run)} AND topic = {sql_string(topic)} "
        f"AND partition = {int(partition)} THEN "
        + (f"broker IN ({', '.join(str(int(b)) for b in brokers)})" if brokers else "false")
        for (run, topic, partition), brokers in replicas.items())
    return f"(CASE {cases} ELSE true END)" if cases else "true"


def full_isr(info: RunInfo | Sequence[RunInfo]) -> str:
    """SQL over an observation: its ISR is full, i.e. holds every replica the same
    observation names (`replicas`, as a set); without replicas (absent, null or
    empty), at least the topic's replication factor of members (test.json). A
    reassignment changes the replicas: a partition taken below its replication
    factor has a full ISR again, and one with a replica added has not until that
    replica joined."""
    isr = f"coalesce(isr, {EMPTY_IDS})"
    rf = per_topic(info, lambda t: t.replication_factor)
    return (f"(CASE WHEN replicas IS NOT NULL AND size(replicas) > 0 "
            f"THEN size(array_except(replicas, {isr})) = 0 ELSE size({isr}) >= {rf} END)")


def in_effect(info: RunInfo | Sequence[RunInfo],
              steps: dict[tuple[int, str], list[tuple[int, int]]]) -> str:
    """SQL over a row's run, topic and index: the lowest min ISR possibly in effect
    there (test.json's, or the last step of its topic before the row); steps by
    (run, topic)."""
    cases = [f"WHEN run = {int(run)} AND topic = {sql_string(topic)} AND index > {int(at)} "
             f"THEN {int(low)}"
             for (run, topic), topic_steps in sorted(steps.items())
             for at, low in reversed(topic_steps)]
    base = per_topic(info, lambda t: t.min_insync_replicas)
    return f"(CASE {' '.join(cases)} ELSE {base} END)" if cases else base


def page_cache_losses(spark, hits: list[tuple[int, str]] | Sequence[list[tuple[int, str]]],
                      obs: DataFrame, partitions: DataFrame, replicas: dict[RTP, list[int]],
                      info: RunInfo | Sequence[RunInfo],
                      steps: dict[tuple[int, str], list[tuple[int, int]]]) -> DataFrame:
    """Rows (run, topic, partition, losses, low): of the partition's full-ISR window
    that came closest to its budget or went furthest beyond it (the most losses
    minus the budget, then the most losses), its losses (hits, from
    budget_faults.loss_hits) on the partition's replicas (observed_replicas) and
    the lowest min ISR in effect in it (steps: budget_faults.min_isr_steps of each
    judged partition's topic, by run and topic). Every judged partition
    (partitions) has a row; observed ones may too. A batch's hits and infos: one
    per run."""
    runs = runs_of(info)
    by_run = [hits] if isinstance(info, RunInfo) else hits
    # node -> broker id by the one rule (RunInfo.broker_id): a node test.json lists
    # as a controller is no broker, whatever its name
    brokers = [(run, index, broker) for run, run_hits in enumerate(by_run)
               for index, node in run_hits
               if (broker := runs[run].broker_id(node)) is not None]
    faults = local_rows(spark, "run int, index bigint, broker bigint", brokers)
    judged = F.broadcast(partitions.select(*BY_PARTITION))
    none = F.lit(None).cast("bigint")
    base = F.expr(per_topic(info, lambda t: t.min_insync_replicas)).cast("bigint")

    losses = (faults.join(judged, "run").filter(_is_replica(replicas))
              .select(*BY_PARTITION, "index", F.lit(0).alias("full"),
                      F.lit(1).alias("loss"), none.alias("low")))
    # the first window opens with the run at test.json's min ISR
    starts = judged.select(*BY_PARTITION, F.lit(-1).cast("bigint").alias("index"),
                           F.lit(0).alias("full"), F.lit(0).alias("loss"), base.alias("low"))
    # each min ISR change lowers (or raises) what its window may have had in effect
    changes = (local_rows(spark, "run int, topic string, index bigint, low bigint",
                          [(run, t, at, low) for (run, t), s in sorted(steps.items())
                           for at, low in s])
               .join(judged, ["run", "topic"])
               .select(*BY_PARTITION, "index", F.lit(0).alias("full"),
                       F.lit(0).alias("loss"), "low"))
    full_points = obs.select(*BY_PARTITION, "index",
                             F.expr(full_isr(info)).cast("int")
                             .alias("full"), F.lit(0).alias("loss"),
                             F.expr(in_effect(info, steps)).cast("bigint").alias("low")) \
        .filter("full = 1")
    running = Window.partitionBy(*BY_PARTITION).orderBy("index", "full") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    windows = (losses.unionByName(starts).unionByName(changes).unionByName(full_points)
               .withColumn("window", F.sum("full").over(running))
               .groupBy(*BY_PARTITION, "window")
               .agg(F.sum("loss").cast("bigint").alias("losses"),
                    F.min("low").alias("low")))
    # the greatest (losses - budget, losses): a hash aggregate, not a sort
    worst = F.max(F.struct((F.col("losses") - F.col("low")).alias("slack"), "losses", "low"))
    return (windows.groupBy(*BY_PARTITION).agg(worst.alias("w"))
            .select(*BY_PARTITION, "w.losses", "w.low"))
