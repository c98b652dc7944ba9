"""Contract version 4's transactions (shared/HISTORY.md, "Transactions (v4)";
docs/CHECKING.md, "Transactions"): txn-aborted-read, txn-lost-write, txn-torn,
txn-precommitted-read and hanging-txn, and the transactions' tally by client and
protocol.

A transaction is its invoke (the sends) paired with the next completion of the
same process (type, offsets, end_time). Its values are joined with the values
table (checker/durability.py), which knows where each value sits in the
read_uncommitted final read (the whole log), whether the read_committed final
read holds it, and the first read_committed poll that returned it; and with each
partition's final-read facts (complete at each level, the final LSO). A history
without a txn line costs nothing here: every table below is empty.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from elr_harness.checker.events import TopicKeys
from elr_harness.checker.frames import (
    anomaly,
    json_of,
    local_rows,
    op_list,
    sentence,
    text,
    tp_name,
)
from elr_harness.checker.observations import BY_PARTITION, per_run
from elr_harness.checker.testinfo import RunInfo
from elr_harness.core.anomalies import (
    HANGING_TXN,
    TXN_ABORTED_READ,
    TXN_LOST_WRITE,
    TXN_PRECOMMITTED_READ,
    TXN_TORN,
)
from elr_harness.core.history import JAVA_CLIENT, KIP_890, KIP_890_VERSION, PRE_KIP_890

#: A transaction's outcome (HISTORY.md: committed, aborted, unknown).
_OUTCOME = ("CASE WHEN done IS NULL OR done.type = 'info' THEN 'unknown' "
            "WHEN done.type = 'fail' OR coalesce(abort, false) THEN 'aborted' "
            "ELSE 'committed' END")


def _protocol(infos: Sequence[RunInfo]) -> str:
    """SQL: the protocol in effect for a transaction (its client, its run's
    transaction.version)."""
    version = per_run(infos, lambda run: str(int(run.transaction_version or 0)))
    return (f"CASE WHEN client = '{JAVA_CLIENT}' AND {version} >= {KIP_890_VERSION} "
            f"THEN '{KIP_890}' ELSE '{PRE_KIP_890}' END")


def transactions(side: DataFrame, infos: Sequence[RunInfo]) -> DataFrame:
    """One row per transaction: its run, process, invoke index and time, txn_id,
    sends, abort, client, protocol, outcome, whether it completed, its completion
    (type, index, offsets, end_time). A completion without its invoke names no
    value: left out."""
    lines = side.filter("f = 'txn'").select(
        "run", "index", "time", "process", "type", "txn_id", "sends", "abort", "client",
        "offsets", "end_time")
    seq = Window.partitionBy("run", "process").orderBy("index")
    nxt = F.lead(F.struct("type", "index", "time", "offsets", "end_time")).over(seq)
    paired = lines.withColumn("_next", nxt).filter("type = 'invoke'").selectExpr(
        "run", "index", "time", "process", "txn_id", "sends", "abort", "client",
        "CASE WHEN _next.type != 'invoke' THEN _next END AS done")
    return paired.selectExpr("*", f"{_OUTCOME} AS outcome", "done IS NOT NULL AS completed",
                             f"{_protocol(infos)} AS protocol")


def txn_values(txns: DataFrame, keys: TopicKeys) -> DataFrame:
    """One row per value a transaction sent: tp, value, the transaction's columns,
    and the offset its ok completion's delivery report gave (null otherwise)."""
    sent = txns.selectExpr("*", "posexplode(sends) AS (i, s)")
    return sent.selectExpr(
        f"{keys.key(topic='s[0]', partition='CAST(s[1] AS INT)')} AS tp",
        "CAST(s[2] AS BIGINT) AS value", "run", "index", "time", "process", "txn_id",
        "outcome", "completed", "protocol", "done",
        "CASE WHEN done.type = 'ok' THEN try_element_at(done.offsets, i + 1) END AS offset")


def txn_claims(values: DataFrame) -> DataFrame:
    """inconsistent-offset's claims of the transactions' values (HISTORY.md v4: judged
    like plain sends, acks=all): (tp, value, offset, index) per value whose ok
    completion gave an offset."""
    return values.filter("offset IS NOT NULL").selectExpr(
        "tp", "value", "offset", "done.index AS index")


def judged_values(values: DataFrame, value_facts: DataFrame, status: DataFrame,
                  keys: TopicKeys) -> DataFrame:
    """The transactions' values with what the values table says of each (tp, value)
    and their partitions' final-read facts, topic and partition decoded: what the
    value rows and txn-torn both read (the caller keeps it, so the big values table
    is joined once)."""
    facts = value_facts.select("tp", "value", "f_off_min", "rc_f_off_min", "rc_first")
    return keys.decoded(
        values.join(facts, ["tp", "value"], "left")
        .join(F.broadcast(status.select("tp", "complete", "rc_complete", "final_lso")),
              ["tp"], "left"), "tp")


def value_anomalies(judged: DataFrame) -> DataFrame:
    """txn-aborted-read, txn-precommitted-read and txn-lost-write, per value
    (judged: judged_values)."""
    aborted_read = "outcome = 'aborted' AND rc_first IS NOT NULL"
    early = ("outcome != 'aborted' AND completed AND rc_first IS NOT NULL "
             "AND (done.end_time IS NULL OR rc_first.time < done.end_time)")
    gone = "coalesce(complete, false) AND f_off_min IS NULL"
    hidden = ("f_off_min IS NOT NULL AND final_lso IS NOT NULL AND f_off_min < final_lso "
              "AND rc_f_off_min IS NULL")
    lost = f"outcome = 'committed' AND (({gone}) OR ({hidden}))"
    common = dict(value="value", ops=op_list("index", "done.index", "rc_first.index"),
                  protocol="protocol")
    aborted = anomaly(
        judged.filter(aborted_read), TXN_ABORTED_READ, **common,
        offset="rc_f_off_min", extra=json_of(txn_id="txn_id"),
        description=sentence("value %s of an aborted transaction (%s) was read committed "
                             "from %s", text("value"), text("txn_id"), tp_name()))
    precommitted = anomaly(
        judged.filter(early), TXN_PRECOMMITTED_READ, **common,
        extra=json_of(txn_id="txn_id", read_time="rc_first.time", end_time="done.end_time"),
        description="CASE WHEN done.end_time IS NULL THEN "
        + sentence("value %s of transaction %s, whose commit was never called, was read "
                   "committed from %s", text("value"), text("txn_id"), tp_name())
        + " ELSE " + sentence("value %s of transaction %s was read committed from %s at %s "
                              "ns, before its commit was called at %s ns", text("value"),
                              text("txn_id"), tp_name(), text("rc_first.time"),
                              text("done.end_time")) + " END")
    lost_write = anomaly(
        judged.filter(lost), TXN_LOST_WRITE, **common, offset="f_off_min",
        hold="true", hold_offsets="array(f_off_min)", extra=json_of(txn_id="txn_id"),
        description=f"CASE WHEN {gone} THEN "
        + sentence("value %s of committed transaction %s is not in the final log of %s",
                   text("value"), text("txn_id"), tp_name())
        + " ELSE " + sentence("value %s of committed transaction %s sits at offset %s of %s, "
                              "below its final LSO %s, yet the read_committed final read "
                              "does not return it", text("value"), text("txn_id"),
                              text("f_off_min"), tp_name(), text("final_lso")) + " END")
    return aborted.unionByName(precommitted).unionByName(lost_write)


def torn(judged: DataFrame, has_rc: Sequence[int]) -> DataFrame:
    """txn-torn, per unknown transaction judged: every partition it wrote has a
    complete read_committed final read; some of its values are in it and some are
    not (a value at or above its partition's final LSO is left aside). judged:
    judged_values."""
    if not has_rc:
        return anomaly(judged.limit(0), TXN_TORN, ops="array()", description="''")
    runs = ", ".join(str(int(r)) for r in has_rc)
    judged = judged.filter(f"outcome = 'unknown' AND run IN ({runs})")
    present = "rc_f_off_min IS NOT NULL"
    aside = (f"NOT ({present}) AND f_off_min IS NOT NULL AND final_lso IS NOT NULL "
             "AND f_off_min >= final_lso")
    lacking = f"NOT ({present}) AND NOT ({aside})"
    per_txn = judged.groupBy("run", "index").agg(
        F.expr("first(txn_id) AS txn_id"), F.expr("first(protocol) AS protocol"),
        F.expr("first(done.index) AS done_index"),
        F.expr("bool_and(coalesce(rc_complete, false)) AS judged"),
        F.expr(f"count_if({present}) AS present"),
        F.expr(f"min(CASE WHEN {lacking} THEN struct(topic, partition, value) END) "
               "AS first_lacking"),
        F.expr(f"array_sort(collect_set(CASE WHEN {lacking} THEN "
               "concat_ws('-', topic, CAST(partition AS STRING)) END)) AS lacking"))
    found = per_txn.filter("judged AND present > 0 AND size(lacking) > 0").selectExpr(
        "*", "first_lacking.topic AS topic", "first_lacking.partition AS partition",
        "first_lacking.value AS value")
    return anomaly(
        found, TXN_TORN, value="value", ops=op_list("index", "done_index"),
        protocol="protocol", scope="to_json(lacking)",
        extra=json_of(txn_id="txn_id", lacking="lacking", present="present"),
        description=sentence("transaction %s, of unknown outcome, is torn: %s of its values "
                             "are read committed, while %s lack them", text("txn_id"),
                             text("present"), "array_join(lacking, ', ')"))


def hanging(spark, obs: DataFrame, values: DataFrame, infos: Sequence[RunInfo],
            cuts: dict[int, int]) -> tuple[DataFrame, DataFrame]:
    """hanging-txn, per partition: after its run's cut (the later of its last fault
    line and its last txn invoke), the LSO keeps one value below the high watermark,
    or one offset stays in open_txn_offsets, across observations spanning more than
    T (test.json: transaction_timeout_ms + abort_check_interval_ms + hang_margin_ms;
    a run whose test.json does not say is not judged). Observations that do not say
    (no LSO or high watermark; no open_txn_offsets) neither extend nor break a span."""
    judged = [(run, cut, info.hang_ns) for run, info in enumerate(infos)
              if (cut := cuts.get(run)) is not None and info.hang_ns is not None]
    after = F.broadcast(local_rows(spark, "run int, cut bigint, span bigint", judged))
    late = obs.join(after, "run").filter("time >= cut")
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    upto = seq.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    marks = late.filter("lso IS NOT NULL AND hwm IS NOT NULL").selectExpr(
        *BY_PARTITION, "index", "time", "span", "lso", "lso < hwm AS below")
    stretches = (marks.withColumn("_prev", F.lag(F.struct("below", "lso")).over(seq))
                 .withColumn("_new", F.expr("CASE WHEN _prev IS NULL OR _prev.below != below "
                                            "OR _prev.lso != lso THEN 1 ELSE 0 END"))
                 .withColumn("_stretch", F.sum("_new").over(upto))
                 .filter("below")
                 .groupBy(*BY_PARTITION, "_stretch")
                 .agg(F.expr("max(time) - min(time) AS lasted"), F.expr("first(span) AS span"),
                      F.expr("first(lso) AS offset"), F.expr("min(index) AS since"),
                      F.expr("max(index) AS until"))
                 .filter("lasted > span"))
    opens = late.filter("open_txn_offsets IS NOT NULL").withColumn(
        "_n", F.row_number().over(seq))
    held = (opens.selectExpr(*BY_PARTITION, "index", "time", "span", "_n",
                             "explode(open_txn_offsets) AS offset")
            .withColumn("_run", F.expr("_n - row_number() OVER (PARTITION BY run, topic, "
                                       "partition, offset ORDER BY _n)"))
            .groupBy(*BY_PARTITION, "offset", "_run")
            .agg(F.expr("max(time) - min(time) AS lasted"), F.expr("first(span) AS span"),
                 F.expr("min(index) AS since"), F.expr("max(index) AS until"))
            .filter("lasted > span"))
    stuck = (stretches.select(*BY_PARTITION, "offset", "since", "until", "lasted")
             .unionByName(held.select(*BY_PARTITION, "offset", "since", "until", "lasted"))
             .groupBy(*BY_PARTITION)
             .agg(F.min(F.struct("since", "until", "offset", "lasted")).alias("s")))
    # the protocol of the partition's first transaction (by invoke)
    writers = values.groupBy("tp").agg(F.min(F.struct("index", "protocol")).alias("w"))
    return stuck, writers


def hanging_anomalies(stuck: DataFrame, writers: DataFrame, values: DataFrame,
                      keys: TopicKeys) -> DataFrame:
    """hanging-txn's rows (one per partition), with the first offset that hangs and
    the transactional id that wrote it (where known)."""
    keyed = stuck.selectExpr("*", f"{keys.key()} AS tp")
    # the transactional id whose value sits at the offset that hangs, where an ok
    # completion's delivery report said so
    named = (values.filter("offset IS NOT NULL")
             .groupBy(F.col("tp").alias("n_tp"), F.col("offset").alias("s_offset"))
             .agg(F.min("txn_id").alias("hung_txn_id")))
    found = (keyed.join(writers, ["tp"], "left")
             .join(named, F.expr("n_tp = tp AND s_offset = s.offset"), "left"))
    return anomaly(
        found, HANGING_TXN, offset="s.offset", ops=op_list("s.since", "s.until"),
        protocol=f"coalesce(w.protocol, '{PRE_KIP_890}')",
        extra=json_of(first_offset="s.offset", txn_id="hung_txn_id", lasted_ns="s.lasted"),
        description=sentence("%s hangs: offset %s stayed below its high watermark (or open) "
                             "for %s ns after the faults and transactions ended%s", tp_name(),
                             text("s.offset"), text("s.lasted"),
                             "coalesce(concat(', written by transaction ', hung_txn_id), '')"))


def tally(txns: DataFrame) -> list:
    """Rows (run, client, protocol, committed, aborted_on_purpose, failed, unknown,
    last_invoke: the time of its last invoke), one small job."""
    return txns.groupBy("run", "client", "protocol").agg(
        F.expr("count_if(outcome = 'committed') AS committed"),
        F.expr("count_if(outcome = 'aborted' AND done.type = 'ok') AS aborted_on_purpose"),
        F.expr("count_if(outcome = 'aborted' AND done.type = 'fail') AS failed"),
        F.expr("count_if(outcome = 'unknown') AS unknown"),
        F.expr("max(time) AS last_invoke")).collect()
