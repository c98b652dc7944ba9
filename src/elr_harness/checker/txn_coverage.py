"""The transaction states of a run's coverage (docs/CHECKING.md, "Transaction
states"; SCENARIOS.md: the states guided adds for transactions).

A valid run with transactions says little unless its faults met the
transactions where they are fragile: a coordinator moving with transactions in
flight, a data partition's leader moving between a commit call and its marker,
ELR guarding the internal topics, and an LSO held below the high watermark past
the transaction timeout. Each rule is a filter over the observations, joined
with the transactions (few next to the observations) where it needs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from elr_harness.checker.frames import local_rows
from elr_harness.checker.observations import BY_PARTITION
from elr_harness.checker.testinfo import RunInfo
from elr_harness.core.history import INTERNAL_TOPICS, TRANSACTION_STATE_TOPIC

_HIT = ("run", "state", "index", "time")


def txn_coverage_hits(spark, obs: DataFrame, txns: DataFrame,
                      infos: Sequence[RunInfo]) -> DataFrame:
    """Rows (run, state, index, time) of the transaction states reached: each
    observe line that reached one, once per state. txns: checker/transactions's
    one row per transaction (its invoke index and its completion `done`)."""
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    o = obs.select(*BY_PARTITION, "index", "time", "leader", "elr", "lso", "hwm",
                   F.lag(F.struct("leader", "lso")).over(seq).alias("prev"))
    changes = o.filter("prev IS NOT NULL AND prev.leader >= 0 AND leader != prev.leader")
    internal = ", ".join(f"'{t}'" for t in INTERNAL_TOPICS)
    parts = [
        _failover_with_open_txn(changes, txns),
        _change_before_marker(changes, txns),
        o.filter(f"topic IN ({internal}) AND size(elr) > 0")
         .selectExpr("run", "'internal-topic-with-elr' AS state", "index", "time"),
        _lso_held(spark, o, infos),
    ]
    hits = parts[0]
    for part in parts[1:]:
        hits = hits.unionByName(part)
    return hits.distinct()


def _failover_with_open_txn(changes: DataFrame, txns: DataFrame) -> DataFrame:
    """Leader changes of a __transaction_state partition while a transaction is open:
    its invoke before the line and its completion, if any, after. The transactions
    open at a line are the invokes before it less the completions before it (one
    running sum per run over both and the changes' lines)."""
    marks = txns.selectExpr("run", "index", "1 AS step", "NULL AS time") \
        .unionByName(txns.filter("done IS NOT NULL")
                     .selectExpr("run", "done.index AS index", "-1 AS step", "NULL AS time"))
    probes = changes.filter(F.col("topic") == TRANSACTION_STATE_TOPIC) \
        .selectExpr("run", "index", "0 AS step", "time")
    upto = Window.partitionBy("run").orderBy("index", "step") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return (marks.unionByName(probes).withColumn("open", F.sum("step").over(upto))
            .filter("step = 0 AND open > 0")
            .selectExpr("run", "'txn-coordinator-failover-with-open-txn' AS state", "index",
                        "time"))


def _change_before_marker(changes: DataFrame, txns: DataFrame) -> DataFrame:
    """Leader changes of a partition at or after the end_time of a transaction that
    sent to it, while the previous observation's LSO had not passed that send's
    offset (its marker not in yet). The changes are few: each meets only its own
    partition's sends."""
    sends = txns.filter("done.type IN ('ok', 'info') AND done.end_time IS NOT NULL") \
        .selectExpr("run", "done.end_time AS end_time", "done.offsets AS offsets",
                    "posexplode(sends) AS (i, s)") \
        .selectExpr("run", "s[0] AS topic", "CAST(s[1] AS INT) AS partition", "end_time",
                    "try_element_at(offsets, i + 1) AS offset") \
        .filter("offset IS NOT NULL")
    judged = changes.filter("prev.lso IS NOT NULL")
    return (F.broadcast(judged).join(sends, list(BY_PARTITION))
            .filter("end_time <= time AND prev.lso <= offset")
            .selectExpr("run", "'leader-change-between-commit-and-marker' AS state", "index",
                        "time"))


def _lso_held(spark, o: DataFrame, infos: Sequence[RunInfo]) -> DataFrame:
    """Per partition, each stretch of consecutive observations (those with an LSO
    and a high watermark) whose LSO keeps one value below the high watermark, at
    its first line more than the run's transaction timeout after its first."""
    spans = [(run, info.txn_timeout_ns) for run, info in enumerate(infos)
             if info.txn_timeout_ns is not None]
    span = F.broadcast(local_rows(spark, "run int, span bigint", spans))
    marks = o.filter("lso IS NOT NULL AND hwm IS NOT NULL").join(span, "run") \
        .selectExpr(*BY_PARTITION, "index", "time", "span", "lso", "lso < hwm AS below")
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    upto = seq.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    stretch = Window.partitionBy(*BY_PARTITION, "_stretch").orderBy("index") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return (marks.withColumn("_prev", F.lag(F.struct("below", "lso")).over(seq))
            .withColumn("_new", F.expr("CASE WHEN _prev IS NULL OR _prev.below != below "
                                       "OR _prev.lso != lso THEN 1 ELSE 0 END"))
            .withColumn("_stretch", F.sum("_new").over(upto))
            .filter("below")
            .withColumn("_since", F.first("time").over(stretch))
            .filter("time - _since > span")
            .groupBy(*BY_PARTITION, "_stretch")
            .agg(F.min(F.struct("index", "time")).alias("at"))
            .selectExpr("run", "'lso-below-hwm-beyond-txn-timeout' AS state", "at.index AS index",
                        "at.time AS time"))
