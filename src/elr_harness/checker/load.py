"""Reading history.jsonl into Spark, with the contract's rules for bad lines.

The JSONL is parsed with a fixed schema and written as Parquet next to it
(history.parquet, never touching history.jsonl); later checks of the same
unchanged history reuse it. It holds events/, one flat row per send line,
polled record, seek and replica record, bucketed by topic-partition
(checker/events.py; a layout file beside them names its topics and bucket
count), and side/, the few lines the checks read whole: the nemesis's, the
observer's, the collector's replica lines (without their records) and the final
polls (without their records). Beside them, the overview: counts of the lines by
kind and of the records they carry (read_overview), so that a recheck starts
planning at once, and the checker can prove it read every line (checked_counts).
Spark alone writes them (_convert): its text reader gives one row per physical
line, blank ones included, each keeping its input split's byte offset and its
position in the split, so the first bad line's number is found with small
aggregates. Every contract rule is judged there, in Spark SQL (checker/lines.py
spark_bad); checker/lines.py's describe only words what is wrong with the one
line Spark judged bad first, for the error message.

Every path handed to Spark is absolute (resolve_history makes it so):
Spark resolves a relative table LOCATION under its warehouse folder, not the
working directory, and read an empty table from it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from elr_harness.checker import parquet_cache as cache
from elr_harness.checker.events import (
    BUCKET_COLUMN,
    EVENTS_DDL,
    TopicKeys,
    spark_events,
    spark_string,
)
from elr_harness.checker.lines import (
    FIELDS,
    SCHEMA_DDL,
    SPARK_BLANK,
    SPARK_JSON_OPTIONS,
    SPARK_SHAPE_DDL,
    SPARK_UTF8,
    describe,
    read_line,
    spark_bad,
    spark_common,
    spark_kind,
    spark_needs_shape,
)
from elr_harness.checker.report_tables import REPORT, report_rows
from elr_harness.checker.spark import stop_running_tasks
from elr_harness.checker.staging import Staging, writable_by_spark
from elr_harness.core.config import CheckerConfig
from elr_harness.core.errors import HistoryError
from elr_harness.core.parallel import at_once

_table_names = itertools.count()


@dataclass
class LoadedHistory:
    """A history's tables, ready for the checks (read_overview counts its lines);
    or a batch's (load_batch): the histories of `histories`, run r the r-th, in
    the same tables, each row naming its run (the side table's `run`, the events'
    keys: checker/events.TopicKeys)."""

    history: Path
    #: DataFrame of the events table (checker/events.py), read bucketed
    events: object
    #: DataFrame of the side table (cache.SIDE_DDL): faults, observations, replica
    #: lines and final polls, without records
    side: object
    #: the keys the events table's tp column was written with
    keys: TopicKeys
    #: the session catalog's name for the events table (release() drops it)
    events_table: str
    #: the overview's rows, from the conversion (see cache.OVERVIEW_KEYS)
    overview_rows: list[dict]
    #: the first bad line's number and whether it is the last line not blank, or None
    first_bad: dict | None = None
    #: the staging folder Spark reads through, when load_history made it (release()
    #: removes it)
    stage: Staging | None = None
    #: a batch's histories, run r the r-th (one history: just `history`)
    histories: tuple[Path, ...] = ()
    #: per run, where its first bad line is (first_bad is run 0's)
    first_bad_runs: dict[int, dict | None] | None = None
    #: a batch's conversion folder, removed by release()
    scratch: Path | None = None

    @property
    def runs(self) -> int:
        return max(1, len(self.histories))

    def history_of(self, run: int) -> Path:
        return self.histories[run] if self.histories else self.history

    def first_bad_of(self, run: int) -> dict | None:
        if self.first_bad_runs is not None:
            return self.first_bad_runs.get(run)
        return self.first_bad if run == 0 else None


@dataclass
class Overview:
    """What counting a history's lines found."""

    #: non-blank lines, a cut-short last line included
    history_lines: int
    truncated_lines: int
    #: counts of valid lines by f, type, acks, fault, final, topic and a send's
    #: partition, with the records they carry
    rows: list[dict]




#: Conversion folders given up on (a Ctrl-C): the JVM may still make folders in
#: them until it exits, so remove_abandoned() removes them again after that.
_abandoned: list[Path] = []


def remove_abandoned() -> None:
    """Remove the folders of conversions given up on (call once the JVM is gone)."""
    while _abandoned:
        shutil.rmtree(_abandoned.pop(), ignore_errors=True)


#: Where a large history's parsed lines are written for the conversion's passes
#: (inside its temporary folder, removed before the cache is installed).
_PARSED = "_parsed"


#: A batch's histories as Spark sees them: staged links named run<r>-<n>.
_RUN_LINK = "run"


def _run_of_file(runs: int):
    """The run of a text line (a Column): 0 for one history, else the number in the
    name of the staged link it was read through (load_batch names them)."""
    from pyspark.sql import functions as F

    if runs == 1:
        return F.lit(0)
    return F.regexp_extract(F.input_file_name(), rf"/{_RUN_LINK}([0-9]+)-[0-9]+$", 1) \
        .cast("int")


def _convert(spark, history: Path | list[Path], tmp: Path, history_bytes: int = 0,
             parsed_in_memory_below: int = 1 << 62, cancelled_wait_s: float = 30.0,
             cancelled_settle_s: float = 1.0, report: bool = True,
             most_buckets: int = 256) -> None:
    """Spark's text reader and from_json: one row per physical line, so `[]` or a
    blank line is a row too (the JSON reader takes `[...]` for rows and skips
    blanks, losing line numbers). Writes the cache's tables into tmp, a folder not
    yet there. history and tmp are the paths Spark sees: plain ones, through the
    staging folder.

    The parsed lines are kept (persist) and read by every later pass without being
    parsed again: one job makes the overview's aggregate and counts the lines the
    pairing changes (none, for the recorder's history: otherwise a second job
    makes the overview of the paired lines); then the events, side and report
    tables are written from the valid lines, by three jobs at once. One more
    small job finds the first bad line's number only when the overview counts a
    bad line.

    A batch (a list of histories, staged as load_batch names them) is converted
    as one history whose every line names its run (the number of its file in the
    list): the overview, the first bad lines and the pairing go by run, the keys
    give each run's topics their own (checker/events.TopicKeys). `report`: write
    the report's table too (one history's; a batch has no report). The events
    table gets at most `most_buckets` buckets (most_buckets()).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    histories = history if isinstance(history, list) else [history]
    text = spark.read.text([str(h) for h in histories])
    typed = text.select(
        "value", _run_of_file(len(histories)).alias("run"),
        F.from_json("value", f"{SCHEMA_DDL}, _corrupt STRING",
                    {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt",
                     **SPARK_JSON_OPTIONS})
        .alias("j"),
        F.expr(SPARK_BLANK).alias("_blank"),
        F.expr(SPARK_UTF8).alias("_utf8"),
        F.input_file_block_start().alias("_blk"),
        F.monotonically_increasing_id().alias("_row"))
    # the variant read, only on the lines the typed one cannot judge alone
    exact = typed.withColumn("_exact", F.expr(spark_needs_shape("j._corrupt")))
    parsed = exact.withColumn("shape", F.when(F.col("_exact"),
                                               F.from_json("value", SPARK_SHAPE_DDL,
                                                           SPARK_JSON_OPTIONS)))
    fields = parsed.select("j.*", "shape", "_exact", "_blank", "_utf8", "_blk", "_row", "run")
    bad = F.expr(f"NOT _blank AND coalesce({spark_bad()}, true)")
    # a line of an unknown kind may be valid while its other fields do not parse:
    # its kind and common fields come from the variant read
    common = {"f": F.expr(spark_kind()), **{c: F.expr(spark_common(c))
                                             for c in ("index", "time", "process")}}
    table = fields.select(
        *[F.coalesce(F.col("final"), F.lit(False)).alias("final") if c == "final"
          else common[c].alias(c) if c in common else c for c in FIELDS],
        # a fault's detail object, as JSON text, for the report table
        F.to_json(F.col("shape.detail")).alias("detail"),
        bad.alias("_bad"), "_blank", "_blk", "_row", "run")
    in_memory = history_bytes < parsed_in_memory_below
    parsed_lines = fixes = None
    tmp.mkdir(parents=True)
    try:
        # parsed once, read by every later pass: a history under
        # parsed_in_memory_below is kept as objects (no serialization); a larger one
        # is written as Parquet and read back, since its objects outgrow the
        # driver's storage memory, and an evicted block is parsed again by each
        # pass (1M operations: 135 s of CPU). Inside the try: a Ctrl-C during this
        # py4j call (slow on a loaded machine) must remove tmp as well
        if in_memory:
            parsed_lines = table = table.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        else:
            table.write.parquet(str(tmp / _PARSED))
            table = spark.read.parquet(str(tmp / _PARSED))
        fixes = _pair_fixes(table)
        overview, fixed_lines, overview_fixed = _overview_and_count(table, fixes)
        if fixed_lines:
            table = _with_fixes(table, fixes)
            if overview_fixed:
                overview = _overview(table)
        else:
            fixes.unpersist()
            fixes = None
        first_bad = _first_bad(table, overview, len(histories))
        cache.write_overview(tmp, overview, first_bad)
        written = table.filter("NOT _bad AND NOT _blank")
        keys, buckets = cache.layout_of(overview, len(histories), most_buckets)

        def events() -> None:
            # the bucket is computed, not left to the shuffle's partitioner: the same
            # pmod(hash(tp), n) whatever the session's adaptive settings
            (spark_events(written, keys)
             .withColumn("bucket", F.expr(f"pmod(hash({BUCKET_COLUMN}), {buckets})"))
             .repartition(buckets, BUCKET_COLUMN)
             .write.partitionBy("bucket").mode("overwrite")
             .parquet(str(tmp / cache.BY_BUCKET)))

        def side() -> None:
            _spark_side(written).coalesce(1).write.mode("overwrite").parquet(str(tmp / cache.SIDE))

        def report_table() -> None:
            report_rows(written).coalesce(1).write.mode("overwrite").parquet(str(tmp / REPORT))

        # three jobs at once: on a small history each is mostly the driver's planning
        # and one task, so one job's planning overlaps another's tasks
        at_once(lambda write: write(), [events, side, *([report_table] if report else [])])
        cache.name_buckets(tmp)
        cache.write_layout(tmp, keys, buckets)
    except BaseException:
        # a Ctrl-C leaves the JVM running (PySpark's JVM ignores SIGINT): its tasks,
        # and a job it has yet to start, would go on creating files, so jobs are
        # cancelled until none has run for a while, the table removed, and both done
        # again should it come back; removed even if a second Ctrl-C cuts that short,
        # and once more by remove_abandoned() after the JVM has exited
        _abandoned.append(tmp)
        deadline = time.monotonic() + cancelled_wait_s
        try:
            while True:
                stop_running_tasks(spark, max(0.0, deadline - time.monotonic()),
                                   cancelled_settle_s)
                shutil.rmtree(tmp, ignore_errors=True)
                time.sleep(cancelled_settle_s)
                if not tmp.exists() or time.monotonic() > deadline:
                    break
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if parsed_lines is not None:
            parsed_lines.unpersist()
        shutil.rmtree(tmp / _PARSED, ignore_errors=True)
        if fixes is not None:
            fixes.unpersist()


#: What a client completion takes from the invoke it pairs with (docs/CHECKING.md,
#: operations), as (column, SQL over the line `l` and its invoke `inv`, when it
#: differs): a poll is final when its invoke or its completion says so.
_FROM_INVOKE = (
    ("final", "l.final OR (f = 'poll' AND inv.final)"),
    # a poll's isolation is its invoke's (contract v4)
    ("isolation", "CASE WHEN f = 'poll' THEN inv.isolation ELSE l.isolation END"),
    # a send's topic, partition, acks and value are the invoke's: a completion that
    # says otherwise does not make another send; an acks "0" send has no offset
    ("topic", "CASE WHEN f = 'send' THEN inv.topic ELSE l.topic END"),
    ("partition", "CASE WHEN f = 'send' THEN inv.partition ELSE l.partition END"),
    ("acks", "CASE WHEN f = 'send' THEN inv.acks ELSE l.acks END"),
    ("value", "CASE WHEN f = 'send' THEN inv.value ELSE l.value END"),
    ("offset", "CASE WHEN f = 'send' AND inv.acks = '0' THEN NULL ELSE l.offset END"),
)
#: And what an invoke takes from its completion.
_FROM_COMPLETION = (
    ("final", "l.final OR (f = 'poll' AND done.final)"),
)
_PAIRED = tuple(dict.fromkeys(c for c, _ in (*_FROM_INVOKE, *_FROM_COMPLETION)))
#: The paired fields the overview's groups read (cache.OVERVIEW_KEYS): a fix of
#: another field (a read_committed poll's completion taking its invoke's
#: `isolation`, as every such poll of the recorder's does) leaves the overview as
#: it was.
_IN_OVERVIEW = tuple(c for c in _PAIRED
                     if re.search(rf"\b{c}\b", " ".join(cache.OVERVIEW_KEYS)))
#: A fix's column: whether it changes a field of _IN_OVERVIEW.
_OVERVIEW_CHANGED = "_overview_changed"


def _pair_fixes(table):
    """The pairing's fixes of the lines' table, persisted, not yet computed: one row
    per line whose fields docs/CHECKING.md reads off its pair (_FROM_INVOKE,
    _FROM_COMPLETION) differently from the line itself, with the paired fields
    as p_<column>, and whether a field the overview reads changed. Of the
    recorder's lines only a read_committed poll's completion changes (it takes
    its invoke's `isolation`, which the contract writes on the invoke alone); a
    hand-written history's may change in any paired field.

    A client's invoke pairs with the next completion of the same process and f
    (an invoke followed by another invoke has none), in file order. The pairing
    walks a narrow projection of the valid send and poll lines (one window, one
    shuffle of a few columns).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    pair_fields = ("type", "topic", "partition", "acks", "value", "offset", "final",
                   "isolation")
    ops = table.filter("NOT _bad AND NOT _blank AND f IN ('send', 'poll')") \
        .select("run", "_blk", "_row", "process", "f", *pair_fields)
    order = "OVER (PARTITION BY run, process, f ORDER BY _blk, _row)"
    line = f"struct({', '.join(pair_fields)})"
    walked = ops.selectExpr("run", "_blk", "_row", "f", f"{line} AS l",
                            f"lag({line}) {order} AS prev", f"lead({line}) {order} AS next")
    inv = "CASE WHEN l.type != 'invoke' AND prev.type = 'invoke' THEN prev END"
    done = "CASE WHEN l.type = 'invoke' AND next.type != 'invoke' THEN next END"
    paired = walked.selectExpr("run", "_blk", "_row", "l", f"{inv} AS inv",
                               f"{done} AS done", "f")
    columns = {c: f"l.{c}" for c in _PAIRED}
    for column, sql in _FROM_INVOKE:
        columns[column] = f"CASE WHEN inv IS NOT NULL THEN {sql} ELSE {columns[column]} END"
    for column, sql in _FROM_COMPLETION:
        columns[column] = f"CASE WHEN done IS NOT NULL THEN {sql} ELSE {columns[column]} END"
    fixed = paired.selectExpr("run", "_blk", "_row", "l",
                              *(f"{sql} AS p_{c}" for c, sql in columns.items()))
    changed = " OR ".join(f"NOT (p_{c} <=> l.{c})" for c in _PAIRED)
    in_overview = " OR ".join(f"NOT (p_{c} <=> l.{c})" for c in _IN_OVERVIEW)
    return (fixed.filter(changed).withColumn(_OVERVIEW_CHANGED, F.expr(in_overview))
            .drop("l").withColumn("_paired", F.lit(True))
            .persist(StorageLevel.MEMORY_AND_DISK_DESER))


def _with_fixes(table, fixes):
    """The lines' table with the pairing's fixes applied: only the lines that change
    are joined back by their place in the file, a broadcast of a few rows."""
    from pyspark.sql import functions as F

    joined = table.join(F.broadcast(fixes), ["run", "_blk", "_row"], "left")
    # a fixed value may be null (an acks "0" send's offset): the marker, not coalesce
    return joined.select(*[F.when(F.col("_paired"), F.col(f"p_{c}")).otherwise(F.col(c))
                           .alias(c) if c in _PAIRED else c for c in table.columns])


def _overview_frame(table):
    """The overview's aggregate of the lines' table (cache.OVERVIEW_KEYS), lazily."""
    from pyspark.sql import functions as F

    return (table.groupBy(*[F.expr(k) for k in cache.OVERVIEW_KEYS])
            .agg(*[F.expr(a) for a in cache.OVERVIEW_AGGREGATES]))


def _overview(table) -> list[dict]:
    """The overview's rows of the lines' table."""
    return [r.asDict() for r in _overview_frame(table).collect()]


#: The column that tells the overview's rows from the fixes' count in one job.
_FIXES_COUNT = "_elr_fixed_lines"


def _overview_and_count(table, fixes) -> tuple[list[dict], int, int]:
    """In one job: the overview's rows of the lines as they stand, how many lines
    the pairing changes and how many of those it changes in a field the overview
    reads (_IN_OVERVIEW). When that is none (the recorder's case), those rows are
    the overview of the paired lines, with no second job; the two aggregates'
    shuffles run side by side."""
    from pyspark.sql import functions as F

    overview = _overview_frame(table).withColumn(_FIXES_COUNT, F.lit(None).cast("bigint"))
    count = fixes.agg(F.count(F.lit(1)).alias(_FIXES_COUNT),
                      F.expr(f"count_if({_OVERVIEW_CHANGED})").alias(_OVERVIEW_CHANGED))
    rows = overview.unionByName(count, allowMissingColumns=True).collect()
    [counted] = [r for r in rows if r[_FIXES_COUNT] is not None]
    lines = [{k: v for k, v in r.asDict().items() if k not in (_FIXES_COUNT, _OVERVIEW_CHANGED)}
             for r in rows if r[_FIXES_COUNT] is None]
    return lines, int(counted[_FIXES_COUNT]), int(counted[_OVERVIEW_CHANGED])


def _first_bad(table, overview: list[dict], runs: int = 1) -> dict[int, dict | None]:
    """Per run, where its first bad line is, when the overview counts one: its
    1-based number in its history (blank lines counted) and whether it is the last
    line that is not blank. The number is the lines of the splits before its own,
    plus its place in its split (monotonically_increasing_id numbers a split's rows
    from its first)."""
    from pyspark.sql import functions as F

    out: dict[int, dict | None] = dict.fromkeys(range(runs))
    with_bad = sorted({r["run"] for r in overview if r["_bad"]})
    if not with_bad:
        return out
    firsts = {r["run"]: r for r in (
        table.filter("_bad").groupBy("run")
        .agg(F.min(F.struct("_blk", "_row")).alias("first"))
        .selectExpr("run", "first._blk AS _blk", "first._row AS _row").collect())}
    for run in with_bad:
        blocks: dict[int, dict] = {}
        for r in overview:
            if r["run"] != run:
                continue
            b = blocks.setdefault(r["_blk"], {"n": 0, "first": r["first"], "last": None})
            b["n"] += r["count"]
            b["first"] = min(b["first"], r["first"])
            if not r["_blank"]:
                b["last"] = r["last"] if b["last"] is None else max(b["last"], r["last"])
        before, running = {}, 0
        for blk in sorted(blocks):
            before[blk] = running
            running += blocks[blk]["n"]

        def number(blk: int, row: int, before=before, blocks=blocks) -> int:
            return before[blk] + (row - blocks[blk]["first"]) + 1

        first = firsts[run]
        last = max(number(blk, b["last"]) for blk, b in blocks.items() if b["last"] is not None)
        line = number(first["_blk"], first["_row"])
        out[run] = {"line": line, "last": line == last}
    return out



def _spark_side(valid):
    """The side table's rows of Spark's valid lines (SIDE_DDL's columns)."""
    extra = {
        "hwm": f"CASE WHEN f IN ({cache.INT_HWM}) THEN CAST(high_watermark AS BIGINT) END",
        "hwm_map": "CASE WHEN f = 'poll' THEN from_json(high_watermark, "
                   "'MAP<STRING, BIGINT>') END",
        "lso": "CASE WHEN f = 'observe' THEN CAST(last_stable_offset AS BIGINT) END",
        "lso_map": "CASE WHEN f = 'poll' THEN from_json(last_stable_offset, "
                   "'MAP<STRING, BIGINT>') END",
        "record_partitions": "CASE WHEN f = 'poll' AND final THEN array_sort(array_distinct("
                             "transform(records, r -> CAST(r[0] AS INT)))) END",
    }
    return valid.filter(cache.SIDE_WHERE).selectExpr(
        *[extra.get(c, c) + (f" AS {c}" if c in extra else "") for c in cache.SIDE_COLUMNS])


def load_history(spark, history: Path, config: CheckerConfig,
                 stage: Staging | None = None) -> LoadedHistory:
    """The Parquet-cached tables of history, converted first unless the cache beside
    it is current (config.parquet_cache).

    Spark sees the history and the cache only through the staging folder's plain
    names (checker/staging.py): stage, or one of its own that release() removes.
    """
    history = cache.require_absolute(history)
    own = stage is None
    stage = Staging() if stage is None else stage
    try:
        return _load(spark, history, config, stage, own)
    except BaseException:
        if own:
            stage.close()
        raise


def most_buckets(history_bytes: int, config: CheckerConfig) -> int:
    """The events table's bucket count at most: one per config.bucket_bytes of
    history, 2 to 256. A bucket is one task of each check's stages: past what the
    bytes need, more buckets are only tasks' fixed cost (a batch of 350 tiny
    histories took 256)."""
    return max(2, min(256, -(-history_bytes // config.bucket_bytes)))


def _load(spark, history: Path, config: CheckerConfig, stage: Staging,
          own: bool) -> LoadedHistory:
    parquet, marker = cache.parquet_location(history), cache.source_marker(history)
    if not (config.parquet_cache and cache.is_cached(parquet, marker)):
        parquet.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.temporary_name(parquet)
        seen = stage.link(history, "history")
        size = history.stat().st_size
        real = writable_by_spark(tmp)
        if real is not None:
            _convert(spark, seen, real, size, config.parsed_in_memory_below_bytes,
                     config.cancelled_tasks_wait_s, config.cancelled_tasks_settle_s,
                     most_buckets=most_buckets(size, config))
        else:  # written in the staging folder, then moved into place by Python
            out = stage.folder("spark-out")
            _convert(spark, seen, out, size, config.parsed_in_memory_below_bytes,
                     config.cancelled_tasks_wait_s, config.cancelled_tasks_settle_s,
                     most_buckets=most_buckets(size, config))
            try:
                shutil.move(out, tmp)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        cache.install(tmp, parquet, marker)
    return _read_tables(spark, history, parquet, stage.link(parquet, "parquet"),
                        stage if own else None)


def _read_tables(spark, history: Path, folder: Path, seen: Path,
                 stage: Staging | None, histories: tuple[Path, ...] = ()) -> LoadedHistory:
    """The tables of a conversion in `folder` (seen by Spark as `seen`)."""
    layout = json.loads((folder / cache.LAYOUT).read_text())
    events_table = f"elr_events_{os.getpid()}_{next(_table_names)}"
    spark.sql(f"CREATE TABLE {events_table} ({EVENTS_DDL}) USING parquet "
              f"CLUSTERED BY ({BUCKET_COLUMN}) INTO {int(layout['buckets'])} BUCKETS "
              f"LOCATION {spark_string(str(seen / cache.EVENTS))}")
    # an explicit schema: no job to read the footers
    side = spark.read.schema(cache.SIDE_DDL).parquet(str(seen / cache.SIDE))
    overview = json.loads((folder / cache.OVERVIEW).read_text())
    runs = overview.get("first_bad_runs")
    return LoadedHistory(history=history, events=spark.table(events_table), side=side,
                         keys=cache.keys_of_layout(layout),
                         events_table=events_table, overview_rows=overview["rows"],
                         first_bad=overview["first_bad"], stage=stage,
                         histories=histories,
                         first_bad_runs=None if runs is None else
                         {int(r): at for r, at in runs.items()})


def load_batch(spark, histories: list[Path], config: CheckerConfig,
               stage: Staging) -> LoadedHistory:
    """The tables of a batch of histories, converted together into a scratch folder
    of the staging folder (no cache is written beside them: the batch is checked
    once, and release() removes the folder). Run r is histories[r]."""
    histories = [cache.require_absolute(h) for h in histories]
    seen = [stage.link(h, f"{_RUN_LINK}{run}") for run, h in enumerate(histories)]
    out = stage.folder("batch")
    size = sum(h.stat().st_size for h in histories)
    _convert(spark, seen, out, size, config.parsed_in_memory_below_bytes,
             config.cancelled_tasks_wait_s, config.cancelled_tasks_settle_s, report=False,
             most_buckets=most_buckets(size, config))
    loaded = _read_tables(spark, histories[0], out, out, None, tuple(histories))
    loaded.scratch = out
    return loaded


def read_overview(loaded: LoadedHistory, run: int = 0) -> Overview:
    """Count the history's lines (run `run`'s, of a batch), applying the
    malformed/cut-short-line rules: a bad line is a HistoryError naming its number,
    unless it is the last non-blank line and not JSON at all (a crash cut it): that
    one is skipped and counted.

    Spark judged every line (_bad) and numbered the first bad one; only that line
    is read again here, to word what is wrong with it and to tell a line that is
    not JSON at all from a malformed one (describe).
    """
    rows = [r for r in loaded.overview_rows if r.get("run", 0) == run]
    history = loaded.history_of(run)
    bad_lines = sum(r["count"] for r in rows if r["_bad"])
    lines = sum(r["count"] for r in rows if not r["_blank"])
    truncated = 0
    if bad_lines:
        first = loaded.first_bad_of(run)
        if first is None:
            raise HistoryError(f"{history}: its Parquet cache counts bad lines but "
                               "does not say where; delete history.parquet and check again")
        number = first["line"]
        text, _ = read_line(history, number)
        reason, is_json = describe(text)
        if bad_lines == 1 and first["last"] and not is_json:
            truncated = 1
        else:
            raise HistoryError(
                f"{history}: line {number} is not a valid history line: "
                f"{reason or 'a field is missing or of the wrong type'}; only a cut-short "
                "last line may be skipped")
    return Overview(history_lines=lines, truncated_lines=truncated,
                    rows=[r for r in rows if not r["_bad"] and not r["_blank"]])


def checked_counts(rows: list[dict]) -> dict[str, int]:
    """What the JSON pass counted (the overview's valid rows): send completions,
    records of non-final and final ok polls, observe lines and replica records.
    The checks count the same from their tables (check.py compares the two)."""
    def total(column: str, where) -> int:
        return int(sum(r[column] or 0 for r in rows if where(r)))

    return {
        "sends": total("count", lambda r: r["f"] == "send" and r["type"] != "invoke"),
        "polled_records": total("records", lambda r: r["f"] == "poll" and not r["final"]),
        "final_records": total("records", lambda r: r["f"] == "poll" and r["final"]),
        "observations": total("count", lambda r: r["f"] == "observe"),
        "replica_records": total("records", lambda r: r["f"] == "replica"),
    }


def release(spark, loaded: LoadedHistory) -> None:
    """Forget the events table's catalog entry (its files stay: the table is external)
    and remove the staging folder load_history made for it."""
    try:
        spark.sql(f"DROP TABLE IF EXISTS {loaded.events_table}")
    finally:
        if loaded.scratch is not None:
            shutil.rmtree(loaded.scratch, ignore_errors=True)
        if loaded.stage is not None:
            loaded.stage.close()
