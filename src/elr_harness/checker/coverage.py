"""KIP-966 state coverage (docs/CHECKING.md): which states the run drove a
partition into, judged from observe and fault lines alone.

A valid run says little when its faults never reached the states where KIP-966
can go wrong; this says which it reached, how often, first when and where. The
observation states are filters over the observe lines; the fault states judge
each fault by the state of every partition just before its place (its invoke),
found by one window over the observations with a probe row per fault and
partition. The faults are few, so what needs them whole (a broker's restarts)
is worked out in Python and handed to Spark as small tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from elr_harness.checker.budget_faults import HISTORY_END, FaultOp
from elr_harness.checker.frames import EMPTY_IDS, local_rows
from elr_harness.checker.observations import BY_PARTITION, min_isr_in_effect, runs_of
from elr_harness.checker.testinfo import RunInfo
from elr_harness.core.fault_meanings import CLEAN, FEATURE, MIN_ISR, REPLICAS, meaning_of
from elr_harness.core.history import CHANGED_FEATURE, CHANGED_TOPIC, ELR_FEATURE


def _crash(op: FaultOp) -> bool:
    """A broker's process ended at the harness's hand (kill, power loss): coverage's
    "unclean shutdown of an ELR member" (a disk fault has its own state)."""
    return meaning_of(op.fault).crash


def _down(op: FaultOp) -> bool:
    """A crash, or Kafka's own clean shutdown (a `stop`)."""
    meaning = meaning_of(op.fault)
    return meaning.crash or meaning.shutdown == CLEAN


def _started(op: FaultOp) -> bool:
    return meaning_of(op.fault).brings_back


@dataclass(frozen=True)
class Probe:
    """A fault that reaches `state` if the state of some partition at its place
    (in `topic`, `partition` when set) satisfies the state's rule; `index` and
    `time` are the line it sits at (its completion), the example a report links."""

    state: str
    place: int
    index: int
    time: int | None
    brokers: tuple[int, ...]
    topic: str | None = None
    partition: int | None = None
    #: a min ISR change's new min ISR (detail's `to`), when it is a whole number
    to: int | None = None
    #: the run of a batch it is of
    run: int = 0


@dataclass(frozen=True)
class Interval:
    """Observations after `begin` and before `end` (indices), of `broker`."""

    broker: int
    begin: int
    end: int
    #: the fault it stems from: the index and time of the line it sits at
    index: int
    time: int | None
    #: the run of a batch it is of
    run: int = 0


def _brokers(op: FaultOp, broker_id: Callable[[str], int | None]) -> tuple[int, ...]:
    return tuple(sorted({b for node in op.nodes if (b := broker_id(node)) is not None}))


def probes(faults: list[FaultOp], broker_id: Callable[[str], int | None]) -> list[Probe]:
    """The faults that may reach a fault state, each with its rule's scope (an ELR
    feature change two: with an ELR member, and while leaderless)."""
    out = []
    for op in faults:
        brokers = _brokers(op, broker_id)
        at = dict(place=op.place, index=op.index, time=op.time, brokers=brokers)
        meaning = meaning_of(op.fault)
        if meaning.crash and brokers:
            out.append(Probe("unclean-shutdown-of-elr-member", **at))
        elif meaning.admin_change == MIN_ISR:
            named, to = op.detail.get(CHANGED_TOPIC), op.detail.get("to")
            out.append(Probe("min-isr-change-with-elr", **at,
                             topic=named if isinstance(named, str) else None,
                             to=to if type(to) is int else None))
        elif meaning.controller_failover:
            out.append(Probe("controller-failover-with-elr", **at))
        elif meaning.admin_change == REPLICAS and not meaning.only_ends:
            topic, part = op.detail.get("topic"), op.detail.get("partition")
            scoped = isinstance(topic, str) and type(part) is int
            out.append(Probe("reassign-while-below-min-isr", **at,
                             topic=topic if scoped else None, partition=part if scoped else None))
        elif meaning.disk_failure and brokers:
            out.append(Probe("disk-fault-of-isr-or-elr-member", **at))
        elif meaning.admin_change == FEATURE and op.detail.get(CHANGED_FEATURE) == ELR_FEATURE:
            out.append(Probe("elr-feature-change-with-elr", **at))
            out.append(Probe("elr-feature-change-while-leaderless", **at))
    return out


def _node_events(faults: list[FaultOp], broker_id) -> dict[int, list[FaultOp]]:
    """Per broker, its downs and starts in place order."""
    events: dict[int, list[FaultOp]] = {}
    for op in sorted(faults, key=lambda o: o.place):
        if _down(op) or _started(op):
            for b in _brokers(op, broker_id):
                events.setdefault(b, []).append(op)
    return events


def until_started(faults: list[FaultOp], broker_id) -> list[Interval]:
    """Per unclean shutdown of a broker: from its place to the next start of it
    (the time a fenced last ISR member may join the ELR)."""
    out = []
    for broker, ops in _node_events(faults, broker_id).items():
        for i, op in enumerate(ops):
            if _crash(op):
                end = next((o.place for o in ops[i + 1:] if _started(o)), HISTORY_END)
                out.append(Interval(broker, op.place, end, op.index, op.time))
    return out


def restarted_uncleanly(faults: list[FaultOp], broker_id) -> list[Interval]:
    """Per broker, each stretch from the first start after an unclean shutdown to
    its next shutdown of any kind."""
    out = []
    for broker, ops in _node_events(faults, broker_id).items():
        last_down, begin = None, None
        for op in ops:
            if _started(op):
                if begin is None and last_down is not None and _crash(last_down):
                    begin = op.place
                continue
            if begin is not None:
                out.append(Interval(broker, begin, op.place, begin, None))
            last_down, begin = op, None
        if begin is not None:
            out.append(Interval(broker, begin, HISTORY_END, begin, None))
    return out


def coverage_hits(spark, obs: DataFrame, faults: list[FaultOp] | Sequence[list[FaultOp]],
                  info: RunInfo | Sequence[RunInfo]) -> DataFrame:
    """Rows (run, state, index, time): each line that reached a state (an observe
    line, or a fault's place), once per state. A batch's faults and infos: one per
    run."""
    from dataclasses import replace

    runs = runs_of(info)
    by_run = [faults] if isinstance(info, RunInfo) else faults
    seq = Window.partitionBy(*BY_PARTITION).orderBy("index")
    o = obs.select("run", "index", "time", "topic", "partition", "leader", "isr", "elr",
                   "last_known_elr", "fenced", "replicas",
                   F.expr(min_isr_in_effect(info)).alias("low"))
    o = o.select("*", F.lag("isr").over(seq).alias("p_isr"), F.lag("elr").over(seq).alias("p_elr"))
    rules = {
        "isr-below-min-isr": "isr IS NOT NULL AND size(isr) < low",
        "elr-not-empty": "size(elr) > 0",
        "leaderless-with-elr": "leader = -1 AND size(elr) > 0",
        "elected-from-elr": "leader >= 0 AND p_isr IS NOT NULL AND size(p_isr) = 0 "
                            "AND array_contains(p_elr, leader)",
        "last-known-elr-not-empty": "size(last_known_elr) > 0",
    }
    parts = [o.filter(rule).select("run", F.lit(state).alias("state"), "index", "time")
             for state, rule in rules.items()]

    def each(found) -> list:
        return [replace(item, run=run) for run, ops in enumerate(by_run)
                for item in found(ops, runs[run].broker_id)]

    parts.append(_at_faults(spark, o, each(probes)))
    parts.append(_elr_after_unclean_shutdown(spark, o, each(until_started)))
    parts.append(_unclean_replica_unfenced(spark, o, each(restarted_uncleanly)))
    hits = parts[0]
    for part in parts[1:]:
        hits = hits.unionByName(part)
    return hits.distinct()


def coverage_summary(hits: DataFrame) -> DataFrame:
    """Rows (run, state, n, first_index, first_time) of the states reached."""
    first = F.min(F.struct("index", "time"))
    return hits.groupBy("run", "state").agg(F.count(F.lit(1)).alias("n"),
                                            first.alias("first")) \
        .selectExpr("run", "state", "n", "first.index AS first_index",
                    "first.time AS first_time")


#: Each fault state's rule over a partition's state at the fault (s: its last
#: observation's isr, elr, leader and min ISR in effect) and the probe's brokers and
#: scope.
_FAULT_RULES = {
    "unclean-shutdown-of-elr-member": "exists(brokers, b -> array_contains(s.elr, b))",
    # KIP-966: "if the new min ISR <= current ISR, the ELR will be removed": only such a
    # change, made while the ELR is not empty, can show a controller that keeps it
    "min-isr-change-with-elr": "(s_topic IS NULL OR s_topic = topic) AND size(s.elr) > 0 "
                               "AND s_to IS NOT NULL AND s.isr IS NOT NULL "
                               "AND s_to <= size(s.isr)",
    "controller-failover-with-elr": "size(s.elr) > 0",
    "reassign-while-below-min-isr": "(s_topic IS NULL OR (s_topic = topic AND "
                                    "s_partition = partition)) AND s.isr IS NOT NULL "
                                    "AND size(s.isr) < s.low",
    "disk-fault-of-isr-or-elr-member": f"exists(brokers, b -> array_contains(coalesce(s.isr, "
                                       f"{EMPTY_IDS}), b) OR array_contains(coalesce(s.elr, "
                                       f"{EMPTY_IDS}), b))",
    "elr-feature-change-with-elr": "size(s.elr) > 0",
    "elr-feature-change-while-leaderless": "s.leader = -1",
}


def _at_faults(spark, o: DataFrame, found: list[Probe]) -> DataFrame:
    """The probes whose rule some partition's state at their place satisfies."""
    table = local_rows(
        spark, "run int, state string, place bigint, at bigint, at_time bigint, "
               "brokers array<bigint>, s_topic string, s_partition int, s_to bigint",
        [(p.run, p.state, p.place, p.index, p.time, list(p.brokers), p.topic, p.partition,
          p.to) for p in found])
    probe_rows = table.join(F.broadcast(o.select(*BY_PARTITION).distinct()), "run") \
        .withColumn("index", F.col("place"))
    states = o.select(*BY_PARTITION, "index",
                      F.struct("isr", "elr", "low", "leader").alias("st"))
    seq = (Window.partitionBy(*BY_PARTITION).orderBy("index")
           .rowsBetween(Window.unboundedPreceding, -1))
    judged = (states.unionByName(probe_rows, allowMissingColumns=True)
              .withColumn("s", F.last("st", ignorenulls=True).over(seq))
              .filter("state IS NOT NULL AND s IS NOT NULL"))
    rule = " ".join(f"WHEN state = '{name}' THEN {text}" for name, text in _FAULT_RULES.items())
    return judged.filter(f"coalesce(CASE {rule} END, false)") \
        .selectExpr("run", "state", "at AS index", "at_time AS time")


def _intervals(spark, found: list[Interval]) -> DataFrame:
    return F.broadcast(local_rows(
        spark, "run int, broker bigint, begin bigint, until bigint, at bigint, at_time bigint",
        [(i.run, i.broker, i.begin, i.end, i.index, i.time) for i in found]))


def _elr_after_unclean_shutdown(spark, o: DataFrame, found: list[Interval]) -> DataFrame:
    """Unclean shutdowns whose broker an observation before its restart lists in ELR."""
    within = o.join(_intervals(spark, found), "run") \
        .filter("index > begin AND index < until AND array_contains(elr, broker)")
    return within.selectExpr("run", "'unclean-shutdown-of-elr-member' AS state", "at AS index",
                             "at_time AS time")


def _unclean_replica_unfenced(spark, o: DataFrame, found: list[Interval]) -> DataFrame:
    """Leaderless observations while a broker that restarted uncleanly, not back in
    the ISR since, is unfenced and every other ELR member is fenced."""
    within = o.join(_intervals(spark, found), "run").filter("index > begin AND index < until")
    upto = (Window.partitionBy("broker", "begin", *BY_PARTITION).orderBy("index")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    rejoined = F.max(F.expr(f"array_contains(coalesce(isr, {EMPTY_IDS}), broker)")).over(upto)
    moment = ("leader = -1 AND fenced IS NOT NULL AND NOT array_contains(fenced, broker) "
              "AND (replicas IS NULL OR size(replicas) = 0 OR array_contains(replicas, broker)) "
              f"AND forall(coalesce(elr, {EMPTY_IDS}), "
              "b -> b = broker OR array_contains(fenced, b))")
    return within.withColumn("rejoined", rejoined).filter(f"NOT rejoined AND {moment}") \
        .selectExpr("run", "'leaderless-with-unclean-replica-unfenced' AS state", "index",
                    "time")

