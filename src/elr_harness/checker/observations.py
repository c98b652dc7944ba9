"""Checks of the observer's partition-state samples (process -2).

hwm-regression: a partition's observed high watermark is lower than at its
previous observation that had one. elr-invariant: ELR and ISR overlap, or ELR
or LastKnownELR is not empty while the ISR has at least min.insync.replicas
members (KIP-966; the observation's own min_isr when it has one, else
test.json's); a null list means the cluster could not say, so it is not
judged. elr-outside-replicas: ELR or last known ELR names a broker the same
observation's replicas do not hold. elr-while-disabled: ELR or last known ELR
not empty while the same observation has the ELR feature at level 0, once the
partition visibly changed with the feature at 0 (KIP-966: a downgrade removes
the ELR fields "on the next partition change"; until then the old ones may still
be described).
fenced-leader: the leader is a broker the same observation lists as fenced.
last-known-elr-invalid: no leader, empty ISR and ELR, and a last known ELR
holding -1 or an id that is no broker of test.json.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from elr_harness.checker.frames import (
    EMPTY_IDS,
    anomaly,
    json_of,
    op_list,
    sentence,
    sql_string,
    text,
    tp_name,
)
from elr_harness.checker.testinfo import RunInfo
from elr_harness.core.anomalies import (
    ELR_INVARIANT,
    ELR_OUTSIDE_REPLICAS,
    ELR_WHILE_DISABLED,
    FENCED_LEADER,
    HWM_REGRESSION,
    LAST_KNOWN_ELR_INVALID,
)

#: A partition's observations, in order, apart from every other's (a batch's runs
#: apart too: check.check_histories).
BY_PARTITION = ("run", "topic", "partition")


def observations(side: DataFrame) -> DataFrame:
    """The observe lines of the side table, with the columns the checks read."""
    return side.filter(F.col("f") == "observe").select(
        "run", "index", "time", "topic", "partition", "leader", "leader_epoch", "isr", "elr",
        "last_known_elr", "fenced", "hwm", "min_isr", "replicas", "elr_feature",
        # contract v4: the LSO and the open transactions' first offsets
        "lso", "open_txn_offsets")


def runs_of(info: RunInfo | Sequence[RunInfo]) -> tuple[RunInfo, ...]:
    """test.json's parts of each run of a batch (run r the r-th); one RunInfo is a
    batch of one."""
    return (info,) if isinstance(info, RunInfo) else tuple(info)


def per_run(info: RunInfo | Sequence[RunInfo], sql) -> str:
    """SQL text that differs by run: sql(RunInfo) of the row's run (one run: its own,
    with no test of `run` at all)."""
    runs = runs_of(info)
    if len(runs) == 1:
        return sql(runs[0])
    cases = " ".join(f"WHEN {r} THEN {sql(one)}" for r, one in enumerate(runs))
    return f"(CASE run {cases} END)"


def per_topic(info: RunInfo | Sequence[RunInfo], pick) -> str:
    """A per-topic setting from test.json as SQL text, the default elsewhere (of the
    row's run, in a batch)."""
    def one(run: RunInfo) -> str:
        cases = " ".join(f"WHEN topic = {sql_string(name)} THEN {int(pick(topic))}"
                         for name, topic in run.topics.items())
        default = int(pick(run.default_topic))
        return f"(CASE {cases} ELSE {default} END)" if cases else str(default)

    return per_run(info, one)


def min_isr_in_effect(info: RunInfo | Sequence[RunInfo]) -> str:
    """An observation's min ISR in effect as SQL text: its own `min_isr`, else
    test.json's for its topic (elr-invariant, the ISR churn and coverage agree)."""
    return f"coalesce(min_isr, {per_topic(info, lambda t: t.min_insync_replicas)})"


def hwm_regressions(obs: DataFrame) -> DataFrame:
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    with_prev = obs.filter(F.col("hwm").isNotNull()).select(
        "run", "topic", "partition", "index", "hwm",
        F.lag("hwm").over(seq).alias("prev_hwm"), F.lag("index").over(seq).alias("prev_index"))
    return anomaly(
        with_prev.filter("hwm < prev_hwm"), HWM_REGRESSION, offset="hwm",
        ops=op_list("prev_index", "index"), extra=json_of(prev_hwm="prev_hwm"),
        description=sentence("the high watermark of %s went down from %s to %s",
                             tp_name(), text("prev_hwm"), text("hwm")))


def isr_churn(obs: DataFrame, info: RunInfo | Sequence[RunInfo]) -> DataFrame:
    """Rows (topic, partition, expansions, shrinks, below_ns): the ISR's changes
    while it was below min ISR (SCENARIOS.md's slow-follower, KAFKA-19996: a slow
    follower that rejoins and leaves over and over). Over each two consecutive
    observations of a partition (index order), both with an ISR, either one below
    the min ISR in effect (its own, else test.json's, as elr-invariant takes it):
    the brokers that joined (expansions) and left (shrinks), as sets; and the
    nanoseconds from each observation below min ISR to the next (exact: decimal)."""
    min_isr = min_isr_in_effect(info)
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    pairs = (obs.select("run", "topic", "partition", "index", "time", "isr",
                        F.expr(min_isr).alias("low"))
             .select("run", "topic", "partition", "time", "isr", "low",
                     *[F.lag(c).over(seq).alias(f"p_{c}") for c in ("time", "isr", "low")])
             .filter("isr IS NOT NULL AND p_isr IS NOT NULL")
             .withColumn("p_below", F.expr("size(p_isr) < p_low"))
             .filter("p_below OR size(isr) < low"))
    elapsed = "CAST(time AS DECIMAL(20, 0)) - CAST(p_time AS DECIMAL(20, 0))"
    return pairs.groupBy(*BY_PARTITION).agg(
        F.sum(F.expr("size(array_except(isr, p_isr))")).cast("bigint").alias("expansions"),
        F.sum(F.expr("size(array_except(p_isr, isr))")).cast("bigint").alias("shrinks"),
        F.sum(F.expr(f"CASE WHEN p_below THEN {elapsed} ELSE 0 END")).alias("below_ns"))


def elr_invariant(obs: DataFrame, info: RunInfo | Sequence[RunInfo]) -> DataFrame:
    """Observations that break a KIP-966 invariant (HISTORY.md): ELR and ISR overlap;
    or ELR or LastKnownELR not empty while the ISR has at least the min ISR in
    effect. A null ISR is an empty one; a null ELR or LastKnownELR (the cluster
    could not say) breaks nothing, and the other list is still judged. The
    sentence names the list that broke it (the first, in that order)."""
    isr = f"coalesce(isr, {EMPTY_IDS})"
    overlap = f"coalesce(arrays_overlap(elr, {isr}), false)"
    min_isr = min_isr_in_effect(info)
    full = f"size({isr}) >= {min_isr}"
    elr_kept = f"coalesce(size(elr) > 0 AND {full}, false)"
    last_known_kept = f"coalesce(size(last_known_elr) > 0 AND {full}, false)"
    bad = obs.filter(f"{overlap} OR {elr_kept} OR {last_known_kept}")
    kept = "not empty while ISR %s of %s has at least min ISR %s members"
    return anomaly(
        bad, ELR_INVARIANT, ops=op_list("index"),
        extra=json_of(isr="isr", elr="elr", last_known_elr="last_known_elr"),
        description=f"CASE WHEN {overlap} THEN "
        + sentence("observed ELR %s overlaps ISR %s of %s", "to_json(elr)", f"to_json({isr})",
                   tp_name())
        + f" WHEN {elr_kept} THEN "
        + sentence(f"observed ELR %s is {kept}", "to_json(elr)", f"to_json({isr})",
                   tp_name(), f"CAST({min_isr} AS STRING)")
        + " ELSE " + sentence(f"observed LastKnownELR %s is {kept}", "to_json(last_known_elr)",
                              f"to_json({isr})", tp_name(), f"CAST({min_isr} AS STRING)")
        + " END")


#: An observation's ELR and last known ELR members together (null ones: none).
_ELR_MEMBERS = f"concat(coalesce(elr, {EMPTY_IDS}), coalesce(last_known_elr, {EMPTY_IDS}))"


def elr_outside_replicas(obs: DataFrame) -> DataFrame:
    """Observations whose ELR or last known ELR names a broker that is not one of
    the partition's replicas in the same description (only where it has them)."""
    outside = f"filter({_ELR_MEMBERS}, b -> NOT array_contains(replicas, b))"
    bad = obs.filter(f"replicas IS NOT NULL AND size({outside}) > 0")
    return anomaly(
        bad, ELR_OUTSIDE_REPLICAS, ops=op_list("index"),
        extra=json_of(replicas="replicas", elr="elr", last_known_elr="last_known_elr"),
        description=sentence("observed ELR %s / last known ELR %s of %s name %s, which "
                             "are not among its replicas %s", "to_json(elr)",
                             "to_json(last_known_elr)", tp_name(),
                             f"to_json(array_distinct({outside}))", "to_json(replicas)"))


#: What a partition change shows in an observation: the leader, its epoch, the
#: ISR as a set (an order alone is not taken for a change).
_STATE = ("struct(leader, leader_epoch, "
          f"array_sort(coalesce(isr, {EMPTY_IDS})) AS isr)")


def elr_while_disabled(obs: DataFrame) -> DataFrame:
    """Observations with the ELR feature at level 0 whose ELR or last known ELR is
    not empty, once the partition changed while the feature was at 0.

    KIP-966 removes the ELR fields "on the next partition change" after the
    feature goes to 0, so a stale ELR is Kafka's promise broken only after a
    change. A stretch is a partition's run of consecutive observations at level 0
    (any other level, or none said, ends it); the partition changed when an
    observation of the stretch shows another leader, leader epoch or ISR than
    its first, or other replicas than its first with replicas (as sets). A change
    before the stretch's first observation is not seen, so not judged."""
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    upto = seq.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    stretched = obs.withColumn(
        "_stretch", F.sum(F.expr("CASE WHEN elr_feature = 0 THEN 0 ELSE 1 END")).over(upto))
    inner = (Window.partitionBy(*BY_PARTITION, "_stretch").orderBy("index")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    zero = (stretched.filter("elr_feature = 0")
            .withColumn("_state", F.expr(_STATE))
            .withColumn("_replicas", F.expr("array_sort(replicas)")))
    differs = ("NOT (_state <=> _first_state) OR "
               "(_replicas IS NOT NULL AND NOT (_replicas <=> _first_replicas))")
    judged = (zero
              .withColumn("_first_state", F.first("_state").over(inner))
              .withColumn("_first_replicas", F.first("_replicas", ignorenulls=True).over(inner))
              .withColumn("_changed", F.max(F.expr(f"CASE WHEN {differs} THEN 1 ELSE 0 END"))
                          .over(inner)))
    bad = judged.filter(f"_changed = 1 AND size({_ELR_MEMBERS}) > 0")
    return anomaly(
        bad, ELR_WHILE_DISABLED, ops=op_list("index"),
        extra=json_of(elr="elr", last_known_elr="last_known_elr"),
        description=sentence("observed ELR %s / last known ELR %s of %s while the ELR "
                             "feature is at level 0, after the partition changed",
                             "to_json(elr)", "to_json(last_known_elr)", tp_name()))


def fenced_leaders(obs: DataFrame) -> DataFrame:
    """Observations naming as leader a broker they list as fenced (KIP-966: the last
    known leader may be elected only once unfenced)."""
    bad = obs.filter("leader >= 0 AND fenced IS NOT NULL AND array_contains(fenced, leader)")
    return anomaly(
        bad, FENCED_LEADER, ops=op_list("index"),
        extra=json_of(leader="leader", fenced="fenced"),
        description=sentence("observed leader %s of %s is fenced (fenced brokers %s)",
                             text("leader"), tp_name(), "to_json(fenced)"))


def last_known_elr_invalid(obs: DataFrame, info: RunInfo | Sequence[RunInfo]) -> DataFrame:
    """Leaderless observations with empty ISR and ELR whose last known ELR holds -1
    or an id that is no broker of test.json (only -1 without test.json's nodes)."""
    def unknown(run: RunInfo) -> str:
        brokers = sorted(set(run.node_ids.values()))
        return (f"NOT array_contains(array({', '.join(str(int(b)) for b in brokers)}), b)"
                if brokers else "false")

    known = per_run(info, unknown)
    empty = f"size(coalesce({{0}}, {EMPTY_IDS})) = 0"
    bad = obs.filter(f"leader = -1 AND {empty.format('isr')} AND elr IS NOT NULL "
                     f"AND size(elr) = 0 AND last_known_elr IS NOT NULL "
                     f"AND exists(last_known_elr, b -> b = -1 OR {known})")
    return anomaly(
        bad, LAST_KNOWN_ELR_INVALID, ops=op_list("index"),
        extra=json_of(last_known_elr="last_known_elr"),
        description=sentence("%s has no leader, ISR or ELR, and its last known ELR %s "
                             "names no broker of the cluster", tp_name(),
                             "to_json(last_known_elr)"))
