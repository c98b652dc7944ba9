"""The small facts the checks are planned from, gathered before them.

Two small jobs: one aggregate of the events table by (partition, kind) (which
partitions the history names, the highest final offset of each, and how many
events of each kind the checks will read), and the side table's few lines
(final polls, faults, replica lines; the observe lines only counted). From them,
in Python: the partitions judged and their final-read completeness
(checker/final_reads.py), and the proof that the checks read the history: the
events' counts must equal the JSON pass's (checker/load.checked_counts).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from elr_harness.checker.events import (
    FINAL_RECORD,
    RC_FINAL_RECORD,
    RC_READ_RECORD,
    READ_RECORD,
    REPLICA_RECORD,
    SEND_KINDS,
    TopicKeys,
)
from elr_harness.checker.final_reads import PartitionReads, final_read_status, rc_final_status
from elr_harness.checker.testinfo import RunInfo
from elr_harness.core.errors import HarnessError

TP = tuple[str, int]


@dataclass
class Facts:
    """What the checks need to know before they are planned."""

    #: every judged partition's final-read facts
    partitions: dict[TP, PartitionReads]
    #: the fault lines (index order, their detail as JSON text), for the fault budget
    faults: list[dict]
    #: the replica lines (index order), without their records
    replicas: list[dict]
    #: what the checks' tables hold, counted from them (results.json's `checked`)
    checked: dict[str, int]


def test_partitions(info: RunInfo) -> set[TP]:
    """The partitions test.json's topics name (judged whatever the history holds)."""
    return {(name, p) for name, topic in info.topics.items()
            for p in range(topic.partitions or 0)}


def empty_facts(info: RunInfo, expected: dict[str, int]) -> Facts:
    """The facts of a history without a line to read: test.json's partitions are
    judged all the same, none of them covered by a final poll (incomplete), and
    the checks read nothing (every `checked` count 0, as the JSON pass found)."""
    return Facts(partitions=final_read_status([], test_partitions(info), {}),
                 faults=[], replicas=[], checked=dict(expected))


def gather(loaded, info: RunInfo, expected: dict[str, int]) -> Facts:
    """The facts of a loaded history (checker/load.LoadedHistory); `expected` is
    what the JSON pass counted. A count that differs is a harness error, never a
    verdict: the checks would judge a history they did not read."""
    found = gather_runs(loaded, {0: info}, {0: expected})[0]
    if isinstance(found, HarnessError):
        raise found
    return found


def gather_runs(loaded, infos: dict[int, RunInfo],
                expected: dict[int, dict[str, int]]) -> dict[int, Facts | HarnessError]:
    """gather for each run of a batch named in infos (the same two small jobs for
    all of them): its Facts, or the HarnessError that refuses to judge it."""
    from pyspark.sql import functions as F

    keys: TopicKeys = loaded.keys
    per_kind = (loaded.events.groupBy("tp", "kind")
                .agg(F.count(F.lit(1)).alias("n"), F.max("offset").alias("top")).collect())
    side = (loaded.side.filter("f NOT IN ('observe', 'txn')")
            .select("run", "index", "time", "process", "type", "f", "topic", "partition",
                    "fault", "nodes", "seek", "hwm", "hwm_map", "record_partitions", "broker",
                    "node", "detail", "isolation", "position", "lso_map")
            .orderBy("run", "index").collect())
    side_by_run: dict[int, list[dict]] = {}
    for r in side:
        side_by_run.setdefault(r["run"], []).append(r.asDict())
    observations = {r["run"]: r["n"] for r in loaded.side.filter("f = 'observe'")
                    .groupBy("run").agg(F.count(F.lit(1)).alias("n")).collect()}
    per_kind_by_run: dict[int, list] = {}
    for r in per_kind:
        per_kind_by_run.setdefault(keys.decode_run(r["tp"])[0], []).append(r)
    written = txn_partitions(loaded.side)
    observed_lso = _final_observed_lso(loaded.side, side_by_run)
    return {run: _facts(loaded.history_of(run), keys, info, per_kind_by_run.get(run, []),
                        side_by_run.get(run, []), observations.get(run, 0), expected[run],
                        written.get(run, set()), observed_lso.get(run, {}))
            for run, info in infos.items()}


def txn_partitions(side) -> dict[int, set[TP]]:
    """Per run, the partitions its transactions sent to (contract v4: judged, as a
    send's partition is). No job for a history without a txn line."""
    rows = (side.filter("f = 'txn' AND type = 'invoke' AND sends IS NOT NULL")
            .selectExpr("run", "explode(sends) AS s")
            .selectExpr("run", "s[0] AS topic", "CAST(s[1] AS INT) AS partition")
            .distinct().collect())
    out: dict[int, set[TP]] = {}
    for r in rows:
        if r["topic"] is not None and r["partition"] is not None:
            out.setdefault(r["run"], set()).add((r["topic"], r["partition"]))
    return out


def _final_observed_lso(side, polls_by_run: dict[int, list[dict]]) -> dict[int, dict[TP, int]]:
    """Per run with a read_committed final poll: the highest last stable offset each
    partition's final observations (after the first final poll's invoke) reported.
    No job for a run without one."""
    from elr_harness.checker.frames import local_rows

    firsts = []
    for run, lines in polls_by_run.items():
        finals = [r for r in lines if r["f"] == "poll"]
        if any(r.get("isolation") == "read_committed" for r in finals):
            invokes = [r["index"] for r in finals if r["type"] == "invoke"]
            if invokes:
                firsts.append((run, min(invokes)))
    if not firsts:
        return {}
    spark = side.sparkSession
    after = local_rows(spark, "run int, first bigint", firsts)
    rows = (side.filter("f = 'observe' AND lso IS NOT NULL").join(after, "run")
            .filter("index > first").groupBy("run", "topic", "partition")
            .agg({"lso": "max"}).withColumnRenamed("max(lso)", "lso").collect())
    out: dict[int, dict[TP, int]] = {}
    for r in rows:
        if r["topic"] is not None and r["partition"] is not None:
            out.setdefault(r["run"], {})[(r["topic"], r["partition"])] = r["lso"]
    return out


def _facts(history, keys: TopicKeys, info: RunInfo, per_kind: list, side: list[dict],
           observations: int, expected: dict[str, int], written: set[TP],
           observed_lso: dict[TP, int]) -> Facts | HarnessError:
    kinds: Counter = Counter()
    named: set[TP] = set(written)
    final_top: dict[TP, int] = {}
    rc_top: dict[TP, int] = {}
    for r in per_kind:
        kinds[r["kind"]] += r["n"]
        if r["kind"] == REPLICA_RECORD:
            continue  # replica lines name no partition to judge (docs/CHECKING.md)
        key = keys.decode(r["tp"])
        if key[0] is None or key[1] is None:
            continue
        named.add(key)
        if r["kind"] == FINAL_RECORD and r["top"] is not None:
            final_top[key] = r["top"]
        if r["kind"] == RC_FINAL_RECORD and r["top"] is not None:
            rc_top[key] = r["top"]
    polls = [r for r in side if r["f"] == "poll"]
    for r in polls:
        if r["type"] == "ok" and r["topic"] is not None:
            # v4: a final poll's position and last stable offsets name partitions too
            named.update((r["topic"], int(p)) for p in (*(r["hwm_map"] or {}),
                                                       *(r["position"] or {}),
                                                       *(r["lso_map"] or {})))
    named |= test_partitions(info)

    checked = {
        "sends": sum(kinds[SEND_KINDS[t]] for t in ("ok", "fail", "info")),
        "polled_records": kinds[READ_RECORD] + kinds[RC_READ_RECORD],
        "final_records": kinds[FINAL_RECORD] + kinds[RC_FINAL_RECORD],
        "observations": observations,
        "replica_records": kinds[REPLICA_RECORD],
    }
    differ = [f"{name}: {checked[name]} in the checks' tables, {expected.get(name)} in the "
              "history" for name in checked if checked[name] != expected.get(name)]
    if differ:
        return HarnessError(f"{history}: the checks would not have read the whole "
                            f"history ({'; '.join(differ)}); no verdict is given")
    partitions = final_read_status(polls, named, final_top)
    rc_final_status(polls, named, rc_top, observed_lso, partitions)
    return Facts(partitions=partitions,
                 faults=[r for r in side if r["f"] == "fault"],
                 replicas=[r for r in side if r["f"] == "replica"],
                 checked=checked)
