"""elr-member-unclean (HISTORY.md v4): KIP-966's "The controller will remove the
ELR member if it registers with an unclean shutdown", the removal written with
the registration record.

A broker b whose most recent shutdown was unclean (a kill or a power loss that
ended ok; a clean stop since, or none, is no such shutdown) and whose node was
started again (a start that ended ok) registers fenced, and the controller takes
it out of every ELR in the same records. So the first observation of a partition
that lists b unfenced, after one that listed it fenced, sees that removal: its
ELR must not hold b, unless b was back in the ISR in between (from where the
ELR may take it again). That holds only when the fenced list was read first, by
the broker that then read the partition (test.json's `observer`), and with no
feature change since the start; otherwise nothing is judged.

The faults are few: each broker's unclean shutdowns with a later start are
worked out in Python and handed to Spark as a small broadcast table; a history
without one plans nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from elr_harness.checker.observations import BY_PARTITION, per_run, runs_of
from elr_harness.checker.testinfo import RunInfo
from elr_harness.core.anomalies import ELR_MEMBER_UNCLEAN
from elr_harness.core.fault_meanings import FEATURE, UNCLEAN, meaning_of


@dataclass(frozen=True)
class Restart:
    """A broker's unclean shutdown and the start of its node after it."""

    broker: int
    #: the shutdown's line (it ended ok)
    down: int
    #: the first start of the node that ended ok after it (its line)
    started: int
    #: where the broker's next shutdown of any kind began (END: none): past it, the
    #: most recent shutdown is another
    until: int


def _counts(op: FaultOp) -> bool:
    """A shutdown this rule reads: a kill, a power loss or a stop (a disk fault's
    detail never says the process exited, so none counts)."""
    meaning = meaning_of(op.fault)
    return meaning.shutdown is not None and (meaning.shutdown != UNCLEAN or meaning.crash)


def restarts(faults: list[FaultOp], broker_id: Callable[[str], int | None]) -> list[Restart]:
    """Each unclean shutdown (ended ok) of a broker with a start of its node that
    ended ok after it, before the broker's next shutdown began (the starts in the
    order they ended: `started` is the first)."""
    downs: dict[int, list[FaultOp]] = {}
    starts: dict[int, list[FaultOp]] = {}
    # in the order they began: the most recent shutdown before a line is the last
    # one invoked before it (it must also have ended ok before it)
    for op in sorted(faults, key=lambda o: (o.place, o.index)):
        into = downs if _counts(op) else starts if meaning_of(op.fault).brings_back else None
        if into is None:
            continue
        for node in op.nodes:
            if (b := broker_id(node)) is not None:
                into.setdefault(b, []).append(op)
    out = []
    for broker, ops in downs.items():
        for i, op in enumerate(ops):
            if not (meaning_of(op.fault).shutdown == UNCLEAN and op.status == "ok"
                    and not op.open):
                continue
            until = ops[i + 1].place if i + 1 < len(ops) else HISTORY_END
            started = min((s.index for s in starts.get(broker, [])
                           if s.status == "ok" and not s.open and op.index < s.index < until),
                          default=None)
            if started is not None:
                out.append(Restart(broker, op.index, started, until))
    return out


def feature_spans(faults: list[FaultOp]) -> list[tuple[int, int]]:
    """Each feature change (ok or info) from its invoke to its completion; one never
    completed to the history's end."""
    return [op.in_force() for op in faults
            if meaning_of(op.fault).admin_change == FEATURE]


def unclean_registration_checks(spark, obs: DataFrame, faults: Sequence[list[FaultOp]],
                                info: RunInfo | Sequence[RunInfo]
                                ) -> tuple[DataFrame, DataFrame] | None:
    """(anomalies in the common schema, rows (run, name, n): the observations judged),
    or None when no run has a restart to judge (or none reads the fenced list first)."""
    runs = runs_of(info)
    rows = [(run, r.broker, r.down, r.started, r.until) for run, ops in enumerate(faults)
            if runs[run].fenced_read_first for r in restarts(ops, runs[run].broker_id)]
    if not rows:
        return None
    table = F.broadcast(local_rows(
        spark, "r_run int, b bigint, down bigint, started bigint, until bigint", rows))
    within = obs.select("run", "topic", "partition", "index", "isr", "elr", "fenced",
                        "elr_feature").join(
        table, F.expr("r_run = run AND down < index AND index < until"))
    key = Window.partitionBy(*BY_PARTITION, "b", "down")
    listed = "fenced IS NOT NULL AND array_contains(fenced, b)"
    unlisted = "fenced IS NOT NULL AND NOT array_contains(fenced, b)"
    firsts = (within
              .withColumn("f", F.min(F.expr(f"CASE WHEN {listed} THEN index END")).over(key))
              .withColumn("u", F.min(F.expr(f"CASE WHEN {unlisted} AND index > f "
                                            "THEN index END")).over(key))
              .withColumn("back", F.max(F.expr(
                  "CASE WHEN coalesce(array_contains(isr, b), false) AND index > f "
                  "AND index < u THEN 1 ELSE 0 END")).over(key)))
    on = per_run(info, lambda run: "1" if run.elr_enabled else "0")
    judged = firsts.filter(f"index = u AND back = 0 AND started < index AND elr IS NOT NULL "
                           f"AND coalesce(elr_feature, {on}) >= 1")
    spans = [(run, begin, end) for run, ops in enumerate(faults)
             for begin, end in feature_spans(ops)]
    if spans:
        changes = F.broadcast(local_rows(spark, "s_run int, s_begin bigint, s_end bigint",
                                         spans))
        judged = judged.join(changes, F.expr("s_run = run AND s_begin < index AND "
                                             "s_end > started"), "left_anti")
    found = anomaly(
        judged.filter("array_contains(elr, b)"), ELR_MEMBER_UNCLEAN,
        ops=op_list("down", "started", "f", "index"),
        extra=json_of(broker="b", elr="elr", isr="isr"),
        description=sentence(
            "broker %s, started again after an unclean shutdown, is unfenced and still in "
            "the ELR %s of %s", text("b"), "to_json(elr)", tp_name()))
    counted = (judged.select("run", F.lit(ELR_MEMBER_UNCLEAN).alias("name"))
               .groupBy("run", "name").agg(F.count(F.lit(1)).alias("n")))
    return found, counted
