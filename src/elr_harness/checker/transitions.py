"""KIP-966's rules over two consecutive observations of a partition, judged with
the faults between them (docs/CHECKING.md):

elr-member-dropped: "ELR + ISR size will not be dropped below the min ISR unless
the controller discovers an ELR member has an unclean shutdown". A broker in the
first observation's ISR or ELR is in neither of the second's, the second's
ISR + ELR is below the min ISR in effect, and that broker's most recent shutdown
before the second observation was not unclean.

election-outside-elr: with the ISR empty, the leader comes from the ELR (the last
known leader only once the ELR is empty). A leaderless observation with an empty
ISR and a non-empty ELR is followed by one whose leader was in neither, while some
member of that ELR never shut down uncleanly since it last shut down.

Both are judged only on pairs where nothing else may have changed the rule's
premises: ELR on in both, the same min ISR in effect and replicas, no min ISR,
feature or reassignment fault in between, the topic's unclean leader election
off. The faults are few: their intervals are worked out in Python and handed to
Spark as small broadcast tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from elr_harness.checker.budget_faults import HISTORY_END, FaultOp
from elr_harness.checker.frames import (
    anomaly,
    json_of,
    local_rows,
    op_list,
    sentence,
    text,
    tp_name,
)
from elr_harness.checker.observations import (
    BY_PARTITION,
    min_isr_in_effect,
    per_run,
    per_topic,
    runs_of,
)
from elr_harness.checker.testinfo import RunInfo
from elr_harness.checker.unclean_registration import unclean_registration_checks
from elr_harness.core.anomalies import ELECTION_OUTSIDE_ELR, ELR_MEMBER_DROPPED
from elr_harness.core.fault_meanings import UNCLEAN, meaning_of

# Shutdowns without Kafka's clean-shutdown marker (the controller removes such a
# broker from ISR and ELR when it registers again), Kafka's own clean one, and the
# faults that change what the rules rest on (min ISR, the ELR feature, the
# replicas: a pair of observations with one in force between them is not judged;
# a reassignment's end is part of it): core.fault_meanings says which kinds.



@dataclass(frozen=True)
class Span:
    """Line indices from `begin` to `end`."""

    begin: int
    end: int


def admin_spans(faults: list[FaultOp]) -> list[Span]:
    """Each min ISR, feature or reassignment fault (not failed) from its invoke to its
    completion; one never completed to the history's end."""
    return [Span(*op.in_force()) for op in faults
            if meaning_of(op.fault).admin_change is not None]


def unclean_stretches(faults: list[FaultOp], broker_id) -> list[tuple[int, Span]]:
    """(broker, span) per unclean shutdown of a broker: from the line it sits at to
    that of the broker's next shutdown of any kind. An observation inside one has
    that unclean shutdown as its broker's most recent before it."""
    downs: dict[int, list[FaultOp]] = {}
    for op in sorted(faults, key=lambda o: o.index):
        if meaning_of(op.fault).shutdown is not None:
            for node in op.nodes:
                if (b := broker_id(node)) is not None:
                    downs.setdefault(b, []).append(op)
    out = []
    for broker, ops in downs.items():
        for i, op in enumerate(ops):
            if meaning_of(op.fault).shutdown == UNCLEAN:
                end = ops[i + 1].index if i + 1 < len(ops) else HISTORY_END
                out.append((broker, Span(op.index, end)))
    return out


#: A batch's faults: run r's the r-th (one history: a list of one).
FaultsByRun = Sequence[list[FaultOp]]


def _pairs(obs: DataFrame, info: RunInfo | Sequence[RunInfo]) -> DataFrame:
    """Each observation with the previous one of its partition (`p`)."""
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    cols = ("index", "leader", "leader_epoch", "isr", "elr", "replicas", "elr_feature", "low")
    o = obs.select("run", "topic", "partition", "index", "time", "leader", "leader_epoch", "isr",
                   "elr", "replicas", "elr_feature",
                   F.expr(min_isr_in_effect(info)).alias("low"))
    return o.withColumn("p", F.lag(F.struct(*cols)).over(seq)).filter("p IS NOT NULL")


def _judged(pairs: DataFrame, spark, info: RunInfo | Sequence[RunInfo],
            faults: FaultsByRun) -> DataFrame:
    """The pairs both rules judge: ELR on in both (their `elr_feature`, else
    test.json's word), the same min ISR in effect, the same replicas as sets where
    both say, the topic's unclean leader election off, and no admin fault in force
    between them."""
    on = per_run(info, lambda run: "1" if run.elr_enabled else "0")
    unclean_election = per_topic(info, lambda t: t.unclean_leader_election)
    same = (f"coalesce(p.elr_feature, {on}) >= 1 AND coalesce(elr_feature, {on}) >= 1 "
            f"AND p.low = low AND {unclean_election} = 0 "
            "AND (p.replicas IS NULL OR replicas IS NULL OR "
            "array_sort(array_distinct(p.replicas)) = array_sort(array_distinct(replicas)))")
    kept = pairs.filter(same)
    spans = [(run, s.begin, s.end) for run, ops in enumerate(faults)
             for s in admin_spans(ops)]
    if not spans:
        return kept
    table = F.broadcast(local_rows(spark, "s_run int, s_begin bigint, s_end bigint", spans))
    return kept.join(table, F.expr("s_run = run AND s_begin < index AND s_end > p.index"),
                     "left_anti")


def _unclean(spark, faults: FaultsByRun, info: RunInfo | Sequence[RunInfo]) -> DataFrame:
    runs = runs_of(info)
    return F.broadcast(local_rows(
        spark, "u_run int, u_broker bigint, u_begin bigint, u_end bigint",
        [(run, b, s.begin, s.end) for run, ops in enumerate(faults)
         for b, s in unclean_stretches(ops, runs[run].broker_id)]))


def _clean_at(rows: DataFrame, unclean: DataFrame, broker: str) -> DataFrame:
    """The rows whose `broker`'s most recent shutdown before the row's `index` (the
    second observation) was not unclean: a stop, or none."""
    return rows.join(unclean, F.expr(f"u_run = run AND u_broker = {broker} AND "
                                     "u_begin < index AND index < u_end"), "left_anti")


#: A judged pair's lists, where the rule needs them known (a null list: the cluster
#: could not say, so nothing is judged on it).
_KNOWN = "isr IS NOT NULL AND elr IS NOT NULL AND p.isr IS NOT NULL AND p.elr IS NOT NULL"
#: A leaderless first observation with an empty ISR and ELR members, and one
#: election (leader epoch + 1) to the second: a larger step means the observer
#: missed a leader in between (docs/CHECKING.md, where we depart).
_ELECTION = ("p.leader = -1 AND p.isr IS NOT NULL AND size(p.isr) = 0 "
             "AND p.elr IS NOT NULL AND size(p.elr) > 0 AND leader >= 0 "
             "AND leader_epoch = p.leader_epoch + 1")


def transition_checks(spark, obs: DataFrame, faults: list[FaultOp] | FaultsByRun,
                      info: RunInfo | Sequence[RunInfo]) -> tuple[DataFrame, DataFrame]:
    """(anomalies of both rules, and of elr-member-unclean (checker/unclean_registration),
    in the common schema; rows (run, name, n): how many observation pairs, or
    observations, each rule judged). A batch's faults and infos: one per run."""
    if isinstance(info, RunInfo):
        faults = [faults]
    judged = _judged(_pairs(obs, info), spark, info, faults)
    unclean = _unclean(spark, faults, info)

    members = judged.filter(_KNOWN)
    before = "array_union(p.isr, p.elr)"
    after = "array_union(isr, elr)"
    left = (members.filter("size(array_union(isr, elr)) < low")
            .select("*", F.explode(F.expr(f"array_except({before}, {after})")).alias("b")))
    dropped = anomaly(
        _clean_at(left, unclean, "b"), ELR_MEMBER_DROPPED, ops=op_list("p.index", "index"),
        extra=json_of(broker="b", isr="isr", elr="elr", min_isr="low"),
        description=sentence(
            "broker %s left ISR %s / ELR %s of %s for ISR %s / ELR %s, below min ISR %s, "
            "without an unclean shutdown", text("b"), "to_json(p.isr)", "to_json(p.elr)",
            tp_name(), "to_json(isr)", "to_json(elr)", text("low")))

    elections = judged.filter(_ELECTION)
    outside = elections.filter("NOT array_contains(p.elr, leader)") \
        .select("*", F.explode("p.elr").alias("m"))
    clean_member = _clean_at(outside, unclean, "m")
    first = Window.partitionBy(*BY_PARTITION, "index").orderBy("m")
    elected = anomaly(
        clean_member.withColumn("_n", F.row_number().over(first)).filter("_n = 1"),
        ELECTION_OUTSIDE_ELR, ops=op_list("p.index", "index"),
        extra=json_of(leader="leader", elr="p.elr", clean_member="m"),
        description=sentence(
            "leaderless %s with an empty ISR and ELR %s elected %s, outside it, while ELR "
            "member %s had no unclean shutdown", tp_name(), "to_json(p.elr)", text("leader"),
            text("m")))

    counted = (members.select("run", F.lit(ELR_MEMBER_DROPPED).alias("name"))
               .unionByName(elections.select("run", F.lit(ELECTION_OUTSIDE_ELR).alias("name")))
               .groupBy("run", "name").agg(F.count(F.lit(1)).alias("n")))
    found = dropped.unionByName(elected)
    registrations = unclean_registration_checks(spark, obs, faults, info)
    if registrations is not None:
        found = found.unionByName(registrations[0])
        counted = counted.unionByName(registrations[1])
    return found, counted
