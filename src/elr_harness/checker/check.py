"""`harness check`: run every check of shared/HISTORY.md on a history with Spark.

check_history() returns the results dict (the run orchestration and tests call
it); check_path() also writes results.json beside the history; exit_code()
maps a verdict to the exit code (0 valid, 1 invalid, 2 unknown).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from functools import reduce
from pathlib import Path

from elr_harness.checker.failures import (
    one_check_at_a_time,
    refuse_overlong_line,
    spark_failure,
)
from elr_harness.core.config import CheckerConfig
from elr_harness.core.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput, HarnessError
from elr_harness.core.files import MISSING, path_problem, read_json
from elr_harness.core.history import HISTORY_NAME
from elr_harness.core.validate import printable

_log = logging.getLogger(__name__)


class _Phases:
    """Debug log of how long each phase took (ELR_CHECKER_PROFILE=1 prints it,
    with the CPU seconds the JVM used, from /proc)."""

    def __init__(self) -> None:
        self.verbose = bool(os.environ.get("ELR_CHECKER_PROFILE"))
        self.last = time.monotonic()
        self.last_cpu = _children_cpu() if self.verbose else 0.0

    def done(self, phase: str) -> None:
        now = time.monotonic()
        if self.verbose:
            cpu = _children_cpu()
            print(f"[checker] {phase}: {now - self.last:.2f}s wall, "
                  f"{cpu - self.last_cpu:.2f}s JVM CPU", flush=True)
            self.last_cpu = cpu
        _log.debug("%s took %.2fs", phase, now - self.last)
        self.last = now


def _children_cpu() -> float:
    """CPU seconds of this process's direct children (the JVM in local mode)."""
    total = 0.0
    try:
        kids = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
        for pid in kids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    return total


def resolve_history(path: Path) -> Path:
    """A run directory or a history file -> the history file's absolute path (a clear
    error if absent).

    The one place a user's path becomes the checker's: Spark resolves a relative
    table location under its warehouse folder, not the working directory, and
    read an empty events table from it (a blind check), so every path handed to
    Spark or the catalog is this absolute one. The folder is resolved (store/latest
    is a link to a run directory), the history's own name is not: a history.jsonl
    that is a symlink to a file elsewhere is read through it, and results.json and
    the Parquet cache go in the folder given, never beside the link's target.
    """
    path = Path(path)
    shown = printable(path)
    problem = path_problem(path)
    if problem == MISSING:
        raise BadInput(f"no history at {shown} (give a run directory or a history.jsonl)")
    if problem is not None:
        raise BadInput(f"cannot read {shown}: {problem}")
    if path.is_dir():
        resolved = Path(os.path.realpath(path)) / HISTORY_NAME
        problem = path_problem(resolved)
        if problem is not None and problem != MISSING:
            raise BadInput(f"cannot read {printable(resolved)}: {problem}")
    else:
        resolved = Path(os.path.realpath(path.parent)) / path.name
    if not resolved.is_file():
        raise BadInput(f"no history at {shown} (give a run directory or a history.jsonl)")
    if resolved.suffix != ".jsonl":
        # results.json is written beside the history: never beside any file at all
        raise BadInput(f"{shown} is not a history (give a run directory or a .jsonl file)")
    return resolved


def check_history(history_path: Path, test: dict | None, config: CheckerConfig,
                  started: float | None = None) -> dict:
    """Check one history (test is test.json's dict, or None for the defaults).
    `started` (time.monotonic()): when the check began for the caller, if earlier
    than this call (a run waits for its early-started session first)."""
    from elr_harness.checker.parquet_cache import is_cached, parquet_location, source_marker
    from elr_harness.checker.spark import get_spark
    from elr_harness.checker.staging import Staging
    from elr_harness.checker.testinfo import parse_test_info

    started = time.monotonic() if started is None else started
    history_path = resolve_history(history_path)
    refuse_overlong_line(history_path, config.max_line_bytes)
    info = parse_test_info(test, config)
    # the readers see the history and its cache only through this folder's plain
    # names (a path with `*` or `[` would be a pattern to them): removed at the end
    with Staging() as stage:
        spark = get_spark(config, history_path.stat().st_size,
                          cached=config.parquet_cache and is_cached(
                              parquet_location(history_path), source_marker(history_path)))
        return _checked(spark, history_path, info, config, started, stage)


def _checked(spark, history_path: Path, info, config: CheckerConfig, started: float,
             stage) -> dict:
    """_run_checks, with a Spark job's failure as one line."""
    try:
        return _run_checks(spark, history_path, info, config, started, stage)
    except HarnessError:
        raise
    except Exception as err:
        if type(err).__module__.startswith(("pyspark", "py4j")):
            raise HarnessError(spark_failure(err)) from err
        raise


def _run_checks(spark, history_path: Path, info, config: CheckerConfig, started: float,
                stage) -> dict:
    from elr_harness.checker.load import load_history, release

    phases = _Phases()
    _session_settings(spark, history_path.stat().st_size, config)
    loaded = load_history(spark, history_path, config, stage)
    try:
        [result] = _check_loaded(spark, loaded, [info], config, started, phases)
    finally:
        release(spark, loaded)
    if isinstance(result, HarnessError):
        raise result
    return result


def _session_settings(spark, history_bytes: int, config: CheckerConfig) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions(history_bytes, config)))
    spark.conf.set("spark.sql.codegen.wholeStage",
                   str(whole_stage_codegen(history_bytes, config)).lower())
    spark.conf.set("spark.sql.codegen.factoryMode", expression_codegen(history_bytes, config))


def check_histories(cases: Sequence[tuple[Path, dict | None]],
                    config: CheckerConfig) -> list[dict | HarnessError]:
    """Check a batch of histories in one pass: each case is (history, test.json's
    dict or None), and each gets its results dict, or the HarnessError a check of it
    alone would have raised (a malformed line, a bad test.json, ...).

    The histories are converted together and every check runs once over all of
    them, each run kept apart by its keys (checker/events.TopicKeys) and its `run`
    column, in the running session (started if need be, and left running): a check
    of a tiny history is mostly Spark's fixed cost of planning and starting its
    jobs, paid here once for the batch. Nothing is written beside the histories
    (no results.json, no Parquet cache). A failure of Spark itself fails the whole
    batch (HarnessError raised)."""
    from elr_harness.checker.load import load_batch, release
    from elr_harness.checker.spark import get_spark
    from elr_harness.checker.staging import Staging
    from elr_harness.checker.testinfo import parse_test_info

    started = time.monotonic()
    out: list[dict | HarnessError | None] = [None] * len(cases)
    paths: list[Path] = []
    infos: list = []
    slots: list[int] = []
    for slot, (path, test) in enumerate(cases):
        try:
            resolved = resolve_history(path)
            refuse_overlong_line(resolved, config.max_line_bytes)
            infos.append(parse_test_info(test, config))
        except HarnessError as err:
            out[slot] = err
            continue
        paths.append(resolved)
        slots.append(slot)
    if paths:
        size = sum(p.stat().st_size for p in paths)
        with Staging() as stage:
            spark = get_spark(config, size)
            _session_settings(spark, size, config)
            try:
                loaded = load_batch(spark, paths, config, stage)
                try:
                    results = _check_loaded(spark, loaded, infos, config, started, _Phases())
                finally:
                    release(spark, loaded)
            except HarnessError:
                raise
            except Exception as err:
                if type(err).__module__.startswith(("pyspark", "py4j")):
                    raise HarnessError(spark_failure(err)) from err
                raise
        for slot, result in zip(slots, results, strict=True):
            out[slot] = result
    return out  # type: ignore[return-value]


def _check_loaded(spark, loaded, infos: list, config: CheckerConfig, started: float,
                  phases: _Phases) -> list[dict | HarnessError]:
    """Count the lines, gather the facts, then plan and run the checks: for each run
    of the loaded tables (infos[r]: test.json's parts of run r), its results or the
    HarnessError that refuses to judge it."""
    from pyspark import StorageLevel

    from elr_harness.checker import budget_faults as bf
    from elr_harness.checker import durability, observations, polls
    from elr_harness.checker.budget import observed_replicas, page_cache_losses
    from elr_harness.checker.coverage import coverage_hits, coverage_summary
    from elr_harness.checker.examples import examples
    from elr_harness.checker.facts import empty_facts, gather_runs
    from elr_harness.checker.load import checked_counts, read_overview
    from elr_harness.checker.replicas import last_replica_lines
    from elr_harness.checker.results import Findings, PartitionFacts, assemble
    from elr_harness.checker.spark import computed_meanwhile, session_conf
    from elr_harness.checker.transitions import transition_checks

    runs = len(infos)
    out: list[dict | HarnessError | None] = [None] * runs
    overviews = {}
    for run in range(runs):
        try:
            overviews[run] = read_overview(loaded, run)
        except HarnessError as err:
            out[run] = err
    findings: dict[int, Findings] = {}
    for run, overview in overviews.items():
        findings[run] = Findings(counts=Counter(), examples={}, partitions={},
                                 history_lines=overview.history_lines,
                                 truncated_lines=overview.truncated_lines)
        if overview.history_lines - overview.truncated_lines == 0:
            # nothing to read, yet results.json has its documented shape: checked counts
            # 0 (HISTORY.md: how many were read), test.json's partitions judged
            # (docs/CHECKING.md, partitions judged) and incomplete, each in the budget
            empty = empty_facts(infos[run], checked_counts(overview.rows))
            findings[run].checked = empty.checked
            findings[run].partitions = {
                key: PartitionFacts(reads.complete, reads.last_final_poll,
                                    final_top=reads.final_top, why=reads.why)
                for key, reads in empty.partitions.items()}
            out[run] = assemble(findings[run], infos[run], time.monotonic() - started)
    active = [run for run in overviews if out[run] is None]
    if not active:
        return out  # type: ignore[return-value]
    events, keys = loaded.events, loaded.keys
    for run in active:
        _overview(overviews[run].rows, findings[run])
    gathered = gather_runs(loaded, {run: infos[run] for run in active},
                           {run: checked_counts(overviews[run].rows) for run in active})
    for run in list(active):
        if isinstance(gathered[run], HarnessError):
            out[run] = gathered[run]
            active.remove(run)
    if not active:
        return out  # type: ignore[return-value]
    facts = {run: gathered[run] for run in active}
    for run in active:
        findings[run].checked = facts[run].checked
        findings[run].partitions = {
            key: PartitionFacts(reads.complete, reads.last_final_poll,
                                final_top=reads.final_top, why=reads.why,
                                rc_complete=reads.rc_complete, final_lso=reads.final_lso)
            for key, reads in facts[run].partitions.items()}
    tp_status = _tp_status(spark, {run: findings[run].partitions for run in active}, keys)
    obs = observations.observations(loaded.side)
    # a run refused above has no faults here: nothing of it is read below
    faults = [bf.paired_faults(facts[run].faults) if run in facts else []
              for run in range(runs)]
    hits = [bf.loss_hits(ops) for ops in faults]
    # only losses are counted against a replica set: without one, no job
    replicas = observed_replicas(obs) if any(hits) else {}
    steps = {(run, topic): s for run in active
             for topic in sorted({t for t, _ in findings[run].partitions})
             if (s := bf.min_isr_steps(faults[run], topic,
                                       infos[run].topic(topic).min_insync_replicas,
                                       infos[run].topic(topic).own_min_isr))}
    # contract v4: the transactions, planned only for a batch that has a txn line
    # or a test.json with the transactions' timeouts
    txn = _Transactions.of(spark, loaded, overviews, active, infos, faults, findings)
    replica_lines = {}
    for run in active:
        mine = {(t, p): brokers for (r, t, p), brokers in replicas.items() if r == run}
        for key, n in bf.per_partition(bf.unprotected_hits(faults[run]), mine,
                                       findings[run].partitions, infos[run].broker_id).items():
            findings[run].partitions[key].unprotected_losses = n
        replica_lines.update(last_replica_lines(facts[run].replicas, run))
    phases.done("load")
    cached = []

    def keep(df):
        # PySpark's MEMORY_AND_DISK is the JVM's serialized level: every cached batch
        # went through Java serialization and LZ4, and back for each reader (1M
        # operations: 0.65 s of task CPU). Kept as objects, batches spill only when
        # memory runs short.
        cached.append(df.persist(StorageLevel.MEMORY_AND_DISK_DESER))
        return df

    # the checks' big aggregations are keyed by value or offset: a map-side partial
    # aggregation hardly shrinks them and costs more than it saves (the overview's
    # few groups, before, do need it)
    try:
        with session_conf(spark, "spark.sql.execution.bypassPartialAggregation", "true"):
            values = keep(durability.values_table(events, tp_status))
            obs = keep(obs)
            violations = keep(polls.order_events(events))
            # the two big cached tables are computed while the checks that read them
            # are planned
            with computed_meanwhile(spark, values, violations):
                moved, judged = transition_checks(spark, obs, faults, infos)
                anomalies = keep(_anomalies(spark, values, violations, obs, events, keys,
                                            infos, replica_lines, moved,
                                            txn.anomalies(values, tp_status, obs, keys,
                                                          keep),
                                            txn.claims()))
                losses = page_cache_losses(spark, hits, obs, tp_status, replicas, infos, steps)
                churn = observations.isr_churn(obs, infos)
                reached = coverage_summary(txn.coverage(coverage_hits(spark, obs, faults,
                                                                     infos), obs))
                phases.done("plan")
                # one job: the counts, the first examples of each anomaly, the fault
                # budget, the ISR's churn below min ISR and the KIP-966 states reached
                rows = _summary(anomalies, losses, churn, reached, judged, config).collect()
                phases.done("checks")
                for run in active:
                    _read_counts([r for r in rows if r["run"] == run], findings[run])
                    findings[run].transactions = txn.tallied.get(run, [])
                found = examples(spark, [r for r in rows if r["kind"] == "example"
                                         and r["run"] in active], events, keys,
                                 {run: findings[run].partitions for run in active})
                for run in active:
                    findings[run].examples = found.get(run, {})
                phases.done("examples")
    finally:
        for df in cached:
            df.unpersist()
    for run in active:
        out[run] = assemble(findings[run], infos[run], time.monotonic() - started)
    return out  # type: ignore[return-value]


def _tp_status(spark, partitions: dict, keys):
    """The judged partitions' final-read facts as a small DataFrame (broadcast joins);
    partitions: {run: {(topic, partition): facts}}."""
    from elr_harness.checker.frames import local_rows

    data = [(keys.encode(t, p, run), run, t, p, f.complete, f.final_top, f.rc_complete,
             f.final_lso)
            for run, judged in sorted(partitions.items()) for (t, p), f in judged.items()]
    return local_rows(spark, "tp bigint, run int, topic string, partition int, "
                      "complete boolean, final_top bigint, rc_complete boolean, "
                      "final_lso bigint", data)


class _Transactions:
    """Contract v4's checks of a loaded batch (checker/transactions.py): nothing is
    planned, and no job runs, for a batch without a txn line."""

    def __init__(self, spark, txns, claims_of, tallied: dict, has_rc: list[int],
                 cuts: dict[int, int], infos) -> None:
        self.spark, self.txns, self.tallied = spark, txns, tallied
        self.has_rc, self.cuts, self.infos = has_rc, cuts, infos
        self.values = claims_of

    @classmethod
    def of(cls, spark, loaded, overviews: dict, active: list[int], infos, faults,
           findings: dict) -> _Transactions:
        from elr_harness.checker import transactions as tx

        # a run with a txn line, or whose test.json gives hanging-txn's timeouts: that
        # row reads observations alone, so it holds without a txn line too
        with_txns = [run for run in active
                     if any(r["f"] == "txn" for r in overviews[run].rows)
                     or infos[run].hang_ns is not None]
        if not with_txns:
            return cls(spark, None, None, {}, [], {}, infos)
        txns = tx.transactions(loaded.side, infos)
        tallied: dict[int, list[dict]] = {}
        last_invoke: dict[int, int] = {}
        for r in tx.tally(txns):
            tallied.setdefault(r["run"], []).append(
                {"client": r["client"], "transaction_version": infos[r["run"]].transaction_version,
                 "protocol": r["protocol"], "committed": r["committed"],
                 "aborted_on_purpose": r["aborted_on_purpose"], "failed": r["failed"],
                 "unknown": r["unknown"]})
            if r["last_invoke"] is not None:
                last_invoke[r["run"]] = max(last_invoke.get(r["run"], r["last_invoke"]),
                                            r["last_invoke"])
        for rows in tallied.values():
            # by client (a transaction that names none last), then protocol: as the
            # reference orders them
            rows.sort(key=lambda row: (row["client"] is None, row["client"] or "",
                                       row["protocol"]))
        cuts = {}
        for run in with_txns:
            times = [op.time for op in faults[run] if op.time is not None]
            times += [last_invoke[run]] if run in last_invoke else []
            cuts[run] = max(times, default=0)
        has_rc = [run for run in with_txns
                  if any(f.rc_complete is not None for f in findings[run].partitions.values())]
        return cls(spark, txns, tx.txn_values(txns, loaded.keys), tallied, has_rc, cuts,
                   infos)

    def claims(self):
        """inconsistent-offset's claims of the transactions' values (None: none)."""
        from elr_harness.checker.transactions import txn_claims

        return None if self.values is None else txn_claims(self.values)

    def coverage(self, hits, obs):
        """The coverage hits with the transaction states' (none without a txn line)."""
        from elr_harness.checker.txn_coverage import txn_coverage_hits

        if self.txns is None:
            return hits
        return hits.unionByName(txn_coverage_hits(self.spark, obs, self.txns, self.infos))

    def anomalies(self, value_facts, tp_status, obs, keys, keep) -> list:
        """The v4 rows' anomaly tables (none without a txn line); keep: caches a
        table until the check ends (the transactions' values, and them joined with
        the values table, each read by several rows)."""
        from elr_harness.checker import transactions as tx

        if self.values is None:
            return []
        values = keep(self.values)
        stuck, writers = tx.hanging(self.spark, obs, values, self.infos, self.cuts)
        judged = keep(tx.judged_values(values, value_facts, tp_status, keys))
        return [tx.value_anomalies(judged), tx.torn(judged, self.has_rc),
                tx.hanging_anomalies(stuck, writers, values, keys)]


def _anomalies(spark, values, violations, obs, events, keys, info, replica_lines, moved,
               txn_parts: list | None = None, txn_claims=None):
    """Every check's anomalies in one table, shuffled by name.

    Both the counts and the examples' window accept that partitioning as it is,
    and the tasks that read the table's cache then carry only the shuffle's
    lineage. Cached straight off the union, each of its partitions (32 at 1M
    operations) was read by a task that deserialized every check's plan.
    """
    from elr_harness.checker import durability, observations, polls
    from elr_harness.checker.replicas import replica_divergence

    parts = [
        durability.value_anomalies(values, keys),
        durability.realtime_orders(values, keys),
        durability.inconsistent_offsets(values, events, keys, txn_claims),
        polls.nonmonotonic_polls(violations, keys),
        polls.poll_skips(violations, events, keys),
        polls.garbage_reads(violations, keys),
        observations.hwm_regressions(obs),
        observations.elr_invariant(obs, info),
        observations.elr_outside_replicas(obs),
        observations.elr_while_disabled(obs),
        observations.fenced_leaders(obs),
        observations.last_known_elr_invalid(obs, info),
        replica_divergence(spark, events, replica_lines, keys),
        moved,
        *(txn_parts or []),
    ]
    return reduce(lambda a, b: a.unionByName(b), parts).repartition("name")


def _read_counts(rows: list, findings) -> None:
    """The summary's count, timeline and budget rows into findings."""
    findings.counts = Counter()
    for r in rows:
        if r["kind"] == "count":
            findings.counts[(r["name"], r["acks"], r["topic"], r["partition"])] += r["n"]
            if r["protocol"] is not None:  # contract v4: a transaction's anomaly
                findings.txn_counts[(r["name"], r["topic"], r["partition"], r["protocol"],
                                     r["scope"])] += r["n"]
    findings.lost_over_time = Counter({(r["acks"], r["second"]): r["n"]
                                       for r in rows if r["kind"] == "timeline"})
    findings.isr_churn = {(r["topic"], r["partition"]): (r["expansions"], r["shrinks"],
                                                         int(r["below_ns"]))
                          for r in rows if r["kind"] == "churn"}
    findings.coverage = {r["state"]: (r["n"], r["first_index"], r["first_time"])
                         for r in rows if r["kind"] == "coverage"}
    findings.judged = {r["name"]: r["n"] for r in rows if r["kind"] == "judged"}
    for r in rows:
        facts = findings.partitions.get((r["topic"], r["partition"]))
        if r["kind"] == "budget" and facts is not None:
            facts.page_cache_losses = r["n"]
            facts.min_insync_replicas = r["low"]


def shuffle_partitions(history_bytes: int, config: CheckerConfig) -> int:
    """About one shuffle partition per 128 MB of history, at least 2, at most the config's."""
    return max(2, min(config.shuffle_partitions, -(-history_bytes // (128 << 20))))


def whole_stage_codegen(history_bytes: int, config: CheckerConfig) -> bool:
    """Whether Spark compiles each stage into one Java class: below
    config.interpreted_below_bytes the stages run without (the cold JVM's
    compiling costs more than it saves on a small history)."""
    return history_bytes >= config.interpreted_below_bytes


def expression_codegen(history_bytes: int, config: CheckerConfig) -> str:
    """How Spark evaluates expressions: below config.interpreted_expressions_below_bytes
    interpreted (NO_CODEGEN; a small history's rows cost less than compiling a
    class per expression in a cold JVM), else generated code with Spark's
    interpreted fallback (FALLBACK, its default). Both give the same results
    (tests/unit/test_checker_vs_reference.py holds the generated path to the
    reference; every other test's small history takes the interpreted one)."""
    return "NO_CODEGEN" if history_bytes < config.interpreted_expressions_below_bytes \
        else "FALLBACK"


def _overview(rows: list[dict], findings) -> None:
    """Counts by f/type/acks and fault kinds."""
    stats: dict = {}
    faults: Counter = Counter()
    for r in rows:
        acks = r["acks"] if r["f"] == "send" and r["acks"] is not None else "-"
        by_type = stats.setdefault(r["f"], {}).setdefault(r["type"], {})
        by_type[acks] = by_type.get(acks, 0) + r["count"]
        if r["f"] == "fault" and r["type"] in ("ok", "info") and r["fault"]:
            faults[r["fault"]] += r["count"]
        if r["f"] == "poll" and r["final"]:
            findings.any_final_reads = True
    findings.ops = {f: {t: dict(sorted(a.items())) for t, a in sorted(types.items())}
                    for f, types in sorted(stats.items())}
    findings.faults = dict(sorted(faults.items()))


def _summary(anomalies, losses, churn, reached, judged, config: CheckerConfig):
    """Rows of seven kinds: count (per anomaly, acks and partition), example (the
    first max_examples of each anomaly, in op order), budget (per partition: n
    losses, low min ISR), timeline (lost writes per acks level and second),
    churn (per partition: observations.isr_churn's expansions, shrinks, below_ns),
    coverage (per state reached: n, first_index, first_time) and judged (per rule
    over pairs of observations: name, n pairs judged)."""
    from pyspark.sql import functions as F

    from elr_harness.checker.examples import EXAMPLE_ORDER
    from elr_harness.core.anomalies import LOST_WRITE

    counts = anomalies.groupBy("run", "name", "acks", "topic", "partition", "protocol",
                               "scope") \
        .agg(F.count(F.lit(1)).alias("n")).withColumn("kind", F.lit("count"))
    examples = anomalies.selectExpr(
        "*", f"row_number() OVER (PARTITION BY run, name ORDER BY {', '.join(EXAMPLE_ORDER)}) "
        "AS rn").filter(f"rn <= {int(config.max_examples)}") \
        .drop("rn").withColumn("kind", F.lit("example"))
    budget = losses.selectExpr("'budget' AS kind", "run", "topic", "partition", "losses AS n",
                               "low")
    # lost writes per second of the run by acks level: the report's plot draws these
    # (it never recomputes a loss)
    timeline = anomalies.filter(f"name = '{LOST_WRITE}' AND time IS NOT NULL") \
        .selectExpr("run", "acks", f"CAST(floor(time / {10 ** 9}) AS BIGINT) AS second") \
        .groupBy("run", "acks", "second").agg(F.count(F.lit(1)).alias("n")) \
        .withColumn("kind", F.lit("timeline"))
    return counts.unionByName(examples, allowMissingColumns=True) \
        .unionByName(budget, allowMissingColumns=True) \
        .unionByName(timeline, allowMissingColumns=True) \
        .unionByName(churn.withColumn("kind", F.lit("churn")), allowMissingColumns=True) \
        .unionByName(reached.withColumn("kind", F.lit("coverage")), allowMissingColumns=True) \
        .unionByName(judged.withColumn("kind", F.lit("judged")), allowMissingColumns=True)


RESULTS_NAME = "results.json"


def check_results_are_ours(directory: Path) -> None:
    """results.json may be replaced only when the checker wrote it: a regular file
    holding a JSON object with the checker's `valid` and `anomalies`. Anything else
    there is the user's, and is refused before any work starts."""
    target = directory / RESULTS_NAME
    if not os.path.lexists(target):
        return
    ours = False
    if target.is_file() and not target.is_symlink():
        try:
            data = read_json(target, str(target))
            ours = isinstance(data, dict) and "valid" in data and "anomalies" in data
        except BadInput:
            ours = False
    if not ours:
        raise BadInput(f"{str(target)[:200]} is not a checker's results (a file of yours?); "
                       "it is left as it is: move it away to check this history")


def write_results(results: dict, directory: Path) -> Path:
    """Write results.json atomically (a reader never sees half a file), over
    nothing but an earlier check's results."""
    target = directory / RESULTS_NAME
    check_results_are_ours(directory)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".results.json.tmp-", dir=directory)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(results, indent=2, sort_keys=False) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise HarnessError(f"cannot write {target}: {err}") from err
        raise
    return target


def exit_code(results: dict) -> int:
    valid = results.get("valid")
    if valid is True:
        return EXIT_VALID
    if valid is False:
        return EXIT_INVALID
    return EXIT_UNKNOWN


def check_path(path: Path, config: CheckerConfig) -> tuple[dict, Path]:
    """`harness check RUN_DIR|history.jsonl`: the results, written to results.json
    beside the history (returned with its path; the CLI prints the summary)."""
    from elr_harness.checker.testinfo import read_test_json

    history = resolve_history(Path(path))
    check_results_are_ours(history.parent)
    test = read_test_json(history.parent / "test.json")
    with one_check_at_a_time(history):
        if _spark_running():  # a session someone else started stays theirs
            results = check_history(history, test, config)
        else:
            results = check_in_own_session(history, test, config)
        return results, write_results(results, history.parent)


def check_in_own_session(history: Path, test: dict | None, config: CheckerConfig,
                         started: float | None = None) -> dict:
    """check_history in a Spark session this command owns (started for it, now or
    earlier), stopped once the check is done. On a failure or a Ctrl-C the JVM
    ends first, then the folders of a conversion it was writing are removed."""
    try:
        results = check_history(history, test, config, started)
    except BaseException:
        from elr_harness.checker.load import remove_abandoned
        from elr_harness.checker.spark import end_jvm

        end_jvm(config.cancelled_tasks_wait_s)
        remove_abandoned()
        raise
    stop_spark()
    return results


def _spark_running() -> bool:
    from elr_harness.checker.spark import running_session

    return running_session() is not None


def stop_spark() -> None:
    """Stop the running Spark session, whichever thread started it."""
    from elr_harness.checker.spark import stop_session

    stop_session()
