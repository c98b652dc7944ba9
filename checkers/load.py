"""Reading history.jsonl into Spark, with the contract's rules for bad lines.

The JSONL is parsed with a fixed schema and written as Parquet next to it
(history.parquet, never touching history.jsonl); later checks of the same
unchanged history reuse it. It holds events/, one flat row per send line,
polled record and seek, bucketed by topic-partition (checkers/events.py; a
layout file beside them names its topics and bucket count), and
faults_observations/, the few valid lines of the nemesis and the observer, so
that their checks do not scan every line. Beside them, the overview: counts of
the lines by kind (read_overview), so that a recheck starts planning at once
instead of scanning every line first. Two converters write these:

- DuckDB's multi-threaded JSON reader, the fast path: it parses several times
  faster than Spark's row-at-a-time Jackson reader on this 2-core machine. Its
  first read of the JSON is strict (any malformed line or wrongly typed field
  aborts it) and makes the overview; the events are written, by a second read,
  only if no line breaks the contract's required fields;
- Spark's PERMISSIVE reader otherwise (a cut-short last line, a corrupt
  history). It also writes ops/, one row per line, each keeping its input
  split's byte offset and its position in the split, so a malformed line's
  1-based line number is found with small aggregates instead of a Python pass
  over every line.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from checkers.events import (
    BUCKET_COLUMN,
    EVENTS_DDL,
    TopicKeys,
    choose_buckets,
    duckdb_events,
    duckdb_string,
    spark_events,
    spark_string,
)
from harness.config import CheckerConfig, cache_dir
from harness.errors import HistoryError

#: Bumped whenever the Parquet layout changes, so old caches are rebuilt.
_CACHE_VERSION = 7
_MARKER = "_elr_source.json"
#: The topics the events table's keys were made from, and its bucket count.
_LAYOUT = "_elr_layout.json"
#: The overview's rows, as JSON (read_overview).
_OVERVIEW = "_elr_overview.json"

_SCHEMA_DDL = ", ".join([
    "index BIGINT", "time BIGINT", "process BIGINT", "type STRING", "f STRING",
    "topic STRING", "partition INT", "acks STRING", "value BIGINT", "offset BIGINT",
    "error STRING", "records ARRAY<ARRAY<BIGINT>>", "final BOOLEAN",
    "seek MAP<STRING, BIGINT>", "partitions ARRAY<INT>", "fault STRING",
    "nodes ARRAY<STRING>", "leader BIGINT", "isr ARRAY<BIGINT>", "elr ARRAY<BIGINT>",
    "last_known_elr ARRAY<BIGINT>",
    # an object {partition: hwm} on polls, an int on observes: kept as JSON text
    "high_watermark STRING",
    "_corrupt STRING",
])
#: The rows of the history's lines: the history's fields, an observation's high
#: watermark as an int, and the line bookkeeping (Spark's converter writes every
#: line's as the ops table; faults_observations holds the fault and observe ones).
_BOOKKEEPING_DDL = ("hwm BIGINT", "_bad BOOLEAN", "_blk BIGINT", "_row BIGINT")
_OPS_DDL = ", ".join(
    [c for c in _SCHEMA_DDL.split(", ") if not c.startswith(("high_watermark", "_corrupt"))]
    + list(_BOOKKEEPING_DDL))


#: The tables of a conversion.
OPS, EVENTS, FAULTS_OBSERVATIONS = "ops", "events", "faults_observations"
#: Which valid lines the faults_observations table holds.
_FAULTS_OBSERVATIONS_WHERE = "f IN ('fault', 'observe')"
#: Where a converter writes the events by bucket before naming them as Spark's.
_BY_BUCKET = "_events_by_bucket"
#: Where DuckDB spills, inside the conversion's temporary folder.
_SPILL = "_spill"
#: How DuckDB writes the tables: uncompressed, as Spark writes them (checkers/spark.py).
_PARQUET = "FORMAT parquet, COMPRESSION uncompressed"
_FINAL_POLL = "f = 'poll' AND final"
#: The overview: one small aggregate of the lines' rows (in both converters' SQL)
#: serves the line bookkeeping (per input split), the counts by f/type/acks, the
#: fault kinds, the partitions sends went to and the final reads' coverage (per
#: process and partition list, with the last ok one).
_OVERVIEW_KEYS = (
    "_blk", "_bad", "f", "type", "acks", "fault", "final", "topic",
    "CASE WHEN f = 'send' THEN partition END AS partition",
    f"CASE WHEN {_FINAL_POLL} THEN process END AS final_process",
    f"CASE WHEN {_FINAL_POLL} THEN partitions END AS final_partitions",
)
_OVERVIEW_AGGREGATES = (
    "count(1) AS count", "min(_row) AS first",
    f"max(CASE WHEN {_FINAL_POLL} AND type = 'ok' THEN index END) AS last_ok",
)
#: The same aggregates over groups of the overview's keys that were finer (the
#: DuckDB converter's summary: see _duckdb_summary).
_OVERVIEW_REAGGREGATES = ("sum(count)::BIGINT AS count", "min(first) AS first",
                          "max(last_ok) AS last_ok")
_table_names = itertools.count()


@dataclass
class LoadedHistory:
    """A history's tables, ready for the checks (read_overview counts its lines)."""

    history: Path
    #: DataFrame of the events table (checkers/events.py), read bucketed
    events: object
    #: DataFrame of the valid fault and observe lines (a few rows of ops' schema)
    faults_observations: object
    #: the keys the events table's tp column was written with
    keys: TopicKeys
    #: the session catalog's name for the events table (release() drops it)
    events_table: str
    #: the ops table, all lines valid or not, for the line numbers of bad ones (only
    #: Spark's converter writes it, and only its caches can hold a bad line)
    lines: object | None
    #: the overview's rows, from the conversion (see _OVERVIEW_KEYS)
    overview_rows: list[dict]


@dataclass
class Overview:
    """What counting a history's lines found."""

    history_lines: int
    truncated_lines: int
    #: counts of valid lines by f, type, acks, fault, final, topic, a send's partition
    #: and a final poll's process/partitions (with its last ok index)
    rows: list[dict]


def _parquet_location(history: Path) -> Path:
    """history.parquet beside the history, or a cache folder if that is read-only."""
    if os.access(history.parent, os.W_OK):
        return history.with_suffix(".parquet")
    key = hashlib.sha1(str(history.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / "checker-parquet" / key / "history.parquet"


def _source_marker(history: Path) -> dict:
    st = history.stat()
    return {"version": _CACHE_VERSION, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "source": str(history.resolve())}


def _cached(parquet: Path, marker: dict) -> bool:
    """The cache is of this history and whole (a side file deleted by hand: rebuilt)."""
    try:
        current = json.loads((parquet / _MARKER).read_text()) == marker
    except (OSError, ValueError):
        return False
    return current and all((parquet / name).is_file() for name in (_LAYOUT, _OVERVIEW))


#: Integer fields of the contract, with their Spark/Parquet type.
_DUCKDB_INTS = {"index": "BIGINT", "time": "BIGINT", "process": "BIGINT",
                "partition": "INTEGER", "value": "BIGINT", "offset": "BIGINT",
                "leader": "BIGINT"}
#: Fields holding integers inside lists or a map, with their type.
_DUCKDB_INT_LISTS = {"records": "BIGINT[][]", "partitions": "INTEGER[]", "isr": "BIGINT[]",
                     "elr": "BIGINT[]", "last_known_elr": "BIGINT[]",
                     "seek": "MAP(VARCHAR, BIGINT)"}
_DUCKDB_TEXT = {"type": "VARCHAR", "f": "VARCHAR", "topic": "VARCHAR", "acks": "VARCHAR",
                "error": "VARCHAR", "fault": "VARCHAR", "nodes": "VARCHAR[]",
                "final": "BOOLEAN"}
_OUTPUT_ORDER = ("index", "time", "process", "type", "f", "topic", "partition", "acks",
                 "value", "offset", "error", "records", "final", "seek", "partitions",
                 "fault", "nodes", "leader", "isr", "elr", "last_known_elr")
#: The columns of the ops table, in _OPS_DDL's order (faults_observations has them too).
_SIDE_COLUMNS = (*_OUTPUT_ORDER, *(c.split()[0] for c in _BOOKKEEPING_DDL))


def _duckdb_select() -> str:
    """The conversion query: the Spark path's table, with `_bad` for every line Spark's
    reader would not take as it is.

    DuckDB's reader casts leniently ("1" or 1.5 into an integer) where Spark's
    marks the line corrupt; integer fields are therefore read as raw JSON and
    their JSON text checked before the cast, so both paths accept the same lines.
    """
    def q(name: str) -> str:
        return f'"{name}"'

    def any_text_matches(fields, pattern: str) -> str:
        """One pattern over the fields' JSON texts joined by '|' (nulls left out):
        cheaper than a test per field (1M operations: 0.2 s against 0.5 s for
        a json_type() of each int field)."""
        texts = ", ".join(f"{q(c)}::VARCHAR" for c in fields)
        return f"regexp_matches(concat_ws('|', {texts}), '{pattern}')"

    lists = [c for c in _DUCKDB_INT_LISTS if c != "seek"]
    wrong = [
        # an integer's text is digits and a minus sign
        any_text_matches(_DUCKDB_INTS, "[^0-9|-]"),
        # inside lists: no fraction, exponent, string or boolean (true/false carry
        # an e); a map's keys are strings, so only a string value counts there
        any_text_matches(lists, '[."eE]'),
        any_text_matches(["seek"], r'[.eE]|:\s*"'),
    ]
    required = ("index IS NULL OR time IS NULL OR process IS NULL OR f IS NULL OR type IS NULL"
                " OR type NOT IN ('invoke', 'ok', 'fail', 'info')"
                " OR (records IS NOT NULL AND coalesce(len(flatten(records::BIGINT[][])), -1)"
                " != json_array_length(records) * 3)")
    cast = {**_DUCKDB_INTS, **_DUCKDB_INT_LISTS}
    columns = [f"{q(c)}::{cast[c]} AS {q(c)}" if c in cast else q(c) for c in _OUTPUT_ORDER]
    columns[_OUTPUT_ORDER.index("final")] = 'coalesce("final", false) AS "final"'
    schema = {**{c: "JSON" for c in cast}, **_DUCKDB_TEXT, "high_watermark": "JSON"}
    struct = ", ".join(f"{c!r}: {t!r}" for c, t in schema.items())
    return (f"SELECT {', '.join(columns)},"
            " CASE WHEN f = 'observe' THEN TRY_CAST(high_watermark AS BIGINT) END AS hwm,"
            f" ({' OR '.join(wrong)} OR {required}) AS _bad,"
            # line numbers are only ever computed for bad rows, which this path never
            # keeps; a row number would cost DuckDB a blocking window over the table
            " 0::BIGINT AS _blk, 0::BIGINT AS _row"
            f" FROM read_json(?, format = 'newline_delimited', columns = {{{struct}}})")


def _duckdb_summary() -> str:
    """The strict pass's query: the overview's aggregate of every line (_duckdb_select),
    with each fault and observe line kept whole as a group key of its own.

    So one read of the JSON gives both the overview and those lines without
    holding every line: the groups are the overview's few plus one per distinct
    fault or observe line (identical lines share one, and its count restores them).
    """
    side = "struct_pack(" + ", ".join(f'"{c}" := "{c}"' for c in _SIDE_COLUMNS) + ")"
    return (f"SELECT {', '.join(_OVERVIEW_KEYS)}, "
            f"CASE WHEN {_FAULTS_OBSERVATIONS_WHERE} AND NOT _bad THEN {side} END AS side, "
            f"{', '.join(_OVERVIEW_AGGREGATES)} FROM ({_duckdb_select()}) GROUP BY ALL")


def _duckdb_lines() -> str:
    """The lines as the events pass reads them: the fields it needs, typed as the
    strict pass reads them (it runs only once that pass found every line valid, so
    the typed reader's lenient casts meet only well-typed values)."""
    types = {**_DUCKDB_INTS, **_DUCKDB_INT_LISTS, **_DUCKDB_TEXT}
    needed = ("index", "time", "process", "type", "f", "topic", "partition", "acks", "value",
              "offset", "records", "final", "seek")
    struct = ", ".join(f"{c!r}: {types[c]!r}" for c in needed)
    return f"read_json(?, format = 'newline_delimited', columns = {{{struct}}})"


def _convert_with_duckdb(history: Path, tmp: Path, config: CheckerConfig) -> bool:
    """The fast converter; False (nothing kept) when the history needs Spark's reader.

    Two reads of the JSON, and no table of every line: a strict one for the
    overview and the fault and observe lines, then, if every line is valid, one
    for the events. Writing a table of every line and reading the events back
    from it cost more (10M operations: 40 s against 36 s), and took more disk
    than the events themselves (956 MB more, beside 720 MB of events).
    """
    try:
        import duckdb
    except ImportError:
        return False
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    settings = {"memory_limit": config.convert_memory, "preserve_insertion_order": False,
                # what does not fit the cap goes here, not to DuckDB's default ./.tmp
                "temp_directory": str(tmp / _SPILL)}
    if config.convert_threads:
        settings["threads"] = config.convert_threads
    con = duckdb.connect(config=settings)
    try:
        con.execute(f"CREATE TEMP TABLE summary AS {_duckdb_summary()}", [str(history)])
        names = [k.rsplit(" AS ", 1)[-1] for k in _OVERVIEW_KEYS]
        overview = con.execute(f"SELECT {', '.join(names + list(_OVERVIEW_REAGGREGATES))} "
                               "FROM summary GROUP BY ALL")
        columns = [column[0] for column in overview.description]
        rows = [dict(zip(columns, row, strict=True)) for row in overview.fetchall()]
        bad = sum(r["count"] for r in rows if r["_bad"])
        if bad == 0:
            (tmp / FAULTS_OBSERVATIONS).mkdir()
            side = duckdb_string(str(tmp / FAULTS_OBSERVATIONS / "part-00000.parquet"))
            con.execute("COPY (SELECT * EXCLUDE (copy) FROM (SELECT unnest(side), "
                        "unnest(range(count)) AS copy FROM summary WHERE side IS NOT NULL)) "
                        f"TO {side} ({_PARQUET})")
            keys, sent_keys, buckets = _layout_of(rows)
            staging = duckdb_string(str(tmp / _BY_BUCKET))
            con.execute(f"COPY ({duckdb_events(_duckdb_lines(), keys, buckets, sent_keys)}) "
                        f"TO {staging} ({_PARQUET}, PARTITION_BY (bucket))", [str(history)])
            _name_buckets(tmp)
            _write_layout(tmp, keys, buckets)
            _write_overview(tmp, rows)
    except duckdb.Error:
        bad = -1
    finally:
        con.close()
        shutil.rmtree(tmp / _SPILL, ignore_errors=True)
    if bad != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    return True


def _name_buckets(tmp: Path) -> None:
    """Move the files of tmp/_events_by_bucket/bucket=i/ into tmp/events/, named
    as Spark names a bucket's files (`..._{i:05d}.ext`: BucketingUtils reads the
    bucket from the last `_digits` of the name)."""
    staging, events = tmp / _BY_BUCKET, tmp / EVENTS
    events.mkdir()
    if staging.exists():
        n = 0
        for folder in sorted(staging.glob("bucket=*")):
            bucket = int(folder.name.split("=", 1)[1])
            for part in sorted(folder.glob("*.parquet")):
                part.replace(events / f"part-{n:05d}_{bucket:05d}.parquet")
                n += 1
        shutil.rmtree(staging)


def _layout_of(overview: list[dict]) -> tuple[TopicKeys, list[int], int]:
    """From the overview's valid rows: the topics' keys, the keys of the partitions
    sends went to, and the events table's bucket count (choose_buckets)."""
    valid = [r for r in overview if not r["_bad"]]
    keys = TopicKeys.of(r["topic"] for r in valid)
    sent_keys = sorted({keys.encode(r["topic"], r["partition"])
                        for r in valid if r["f"] == "send"})
    return keys, sent_keys, choose_buckets(sent_keys)


def _write_layout(tmp: Path, keys: TopicKeys, buckets: int) -> None:
    (tmp / _LAYOUT).write_text(json.dumps({"topics": list(keys.topics), "buckets": buckets}))


def _write_overview(tmp: Path, rows: list[dict]) -> None:
    """The overview's rows (few: each of its keys takes few values)."""
    rows = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    (tmp / _OVERVIEW).write_text(json.dumps({"rows": rows}))


def _temporary(parquet: Path) -> Path:
    """Where a conversion is written before _install (each converter clears it)."""
    return parquet.with_name(parquet.name + f".tmp-{os.getpid()}")


def _install(tmp: Path, parquet: Path, marker: dict) -> None:
    """Put a finished conversion in place (a reader never sees half a table)."""
    (tmp / _MARKER).write_text(json.dumps(marker))
    shutil.rmtree(parquet, ignore_errors=True)
    tmp.replace(parquet)


def convert_without_spark(history: Path, config: CheckerConfig) -> bool:
    """Make the Parquet copy with DuckDB if it is not current; True when it is ready.

    Needs no Spark session, so check_history runs it while the JVM starts.
    False leaves the conversion to load_history's Spark reader.
    """
    parquet, marker = _parquet_location(history), _source_marker(history)
    if config.parquet_cache and _cached(parquet, marker):
        return True
    if not config.convert_with_duckdb:
        return False
    parquet.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(parquet)
    if not _convert_with_duckdb(history, tmp, config):
        return False
    _install(tmp, parquet, marker)
    return True


def _convert_with_spark(spark, history: Path, parquet: Path, marker: dict) -> None:
    """Spark's PERMISSIVE reader, for any history (and the only one for a corrupt one)."""
    from pyspark.sql import functions as F

    from checkers.frames import exprs

    raw = (spark.read.schema(_SCHEMA_DDL)
           .option("mode", "PERMISSIVE")
           .option("columnNameOfCorruptRecord", "_corrupt")
           .json(str(history)))
    # every record is [partition, offset, value]: flatten() is null if one is null
    records = F.col("records")
    bad_record = records.isNotNull() & (
        F.coalesce(F.size(F.flatten(records)), F.lit(-1)) != F.size(records) * 3)
    bad = (F.col("_corrupt").isNotNull() | F.col("index").isNull() | F.col("time").isNull()
           | F.col("process").isNull() | F.col("f").isNull()
           | ~F.col("type").isin("invoke", "ok", "fail", "info") | F.col("type").isNull()
           | bad_record)
    table = raw.select(
        "index", "time", "process", "type", "f", "topic", "partition", "acks", "value",
        "offset", "error", "records", F.coalesce("final", F.lit(False)).alias("final"),
        "seek", "partitions", "fault", "nodes", "leader", "isr", "elr", "last_known_elr",
        F.when(F.col("f") == "observe", F.col("high_watermark").try_cast("long"))
        .alias("hwm"),
        F.coalesce(bad, F.lit(True)).alias("_bad"),
        F.input_file_block_start().alias("_blk"),
        F.monotonically_increasing_id().alias("_row"),
    )
    parquet.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(parquet)
    table.write.mode("overwrite").parquet(str(tmp / OPS))
    ops = spark.read.schema(_OPS_DDL).parquet(str(tmp / OPS))
    overview = [r.asDict() for r in
                ops.groupBy(*exprs(*_OVERVIEW_KEYS)).agg(*exprs(*_OVERVIEW_AGGREGATES))
                .collect()]
    _write_overview(tmp, overview)
    written = ops.filter("NOT _bad")
    keys, _, buckets = _layout_of(overview)
    # the bucket is computed, not left to the shuffle's partitioner: the same
    # pmod(hash(tp), n) whatever the session's adaptive settings
    (spark_events(written, keys)
     .withColumn("bucket", F.expr(f"pmod(hash({BUCKET_COLUMN}), {buckets})"))
     .repartition(buckets, BUCKET_COLUMN)
     .write.partitionBy("bucket").mode("overwrite").parquet(str(tmp / _BY_BUCKET)))
    _name_buckets(tmp)
    _write_layout(tmp, keys, buckets)
    written.filter(_FAULTS_OBSERVATIONS_WHERE).coalesce(1).write.mode("overwrite").parquet(
        str(tmp / FAULTS_OBSERVATIONS))
    _install(tmp, parquet, marker)


def load_history(spark, history: Path, config: CheckerConfig,
                 converted: bool | None = None) -> LoadedHistory:
    """The Parquet-cached tables of history, converted first if need be (converted
    is what convert_without_spark returned, if it was already called)."""
    parquet = _parquet_location(history)
    if converted is None:
        converted = convert_without_spark(history, config)
    if not converted:
        _convert_with_spark(spark, history, parquet, _source_marker(history))
    # explicit schemas: no job to read the footers
    table = (spark.read.schema(_OPS_DDL).parquet(str(parquet / OPS))
             if (parquet / OPS).is_dir() else None)
    layout = json.loads((parquet / _LAYOUT).read_text())
    events_table = f"elr_events_{os.getpid()}_{next(_table_names)}"
    spark.sql(f"CREATE TABLE {events_table} ({EVENTS_DDL}) USING parquet "
              f"CLUSTERED BY ({BUCKET_COLUMN}) INTO {int(layout['buckets'])} BUCKETS "
              f"LOCATION {spark_string(str(parquet / EVENTS))}")

    faults_observations = spark.read.schema(_OPS_DDL).parquet(
        str(parquet / FAULTS_OBSERVATIONS))
    return LoadedHistory(history=history, events=spark.table(events_table),
                         faults_observations=faults_observations,
                         keys=TopicKeys(tuple(layout["topics"])),
                         events_table=events_table, lines=table,
                         overview_rows=json.loads((parquet / _OVERVIEW).read_text())["rows"])


def read_overview(loaded: LoadedHistory) -> Overview:
    """Count the history's lines, applying the malformed/cut-short-line rules."""
    rows = loaded.overview_rows
    blocks: dict[int, dict] = {}
    for r in rows:
        b = blocks.setdefault(r["_blk"], {"n": 0, "first": r["first"], "bad": 0})
        b["n"] += r["count"]
        b["first"] = min(b["first"], r["first"])
        b["bad"] += r["count"] if r["_bad"] else 0
    total = sum(b["n"] for b in blocks.values())
    truncated = 0
    if any(b["bad"] for b in blocks.values()):
        if loaded.lines is None:
            raise HistoryError(f"{loaded.history}: its Parquet cache counts bad lines but "
                               "has no table of lines; delete history.parquet and check again")
        before, first_row, running = {}, {}, 0
        for blk in sorted(blocks):
            before[blk], first_row[blk] = running, blocks[blk]["first"]
            running += blocks[blk]["n"]
        bad_rows = (loaded.lines.filter("_bad").select("_blk", "_row")
                    .orderBy("_blk", "_row").limit(2).collect())
        lines = [before[r["_blk"]] + (r["_row"] - first_row[r["_blk"]]) + 1 for r in bad_rows]
        if lines[0] != total:
            raise HistoryError(
                f"{loaded.history}: line {lines[0]} is not a valid history line (malformed "
                f"JSON, or index/time/process/type/f missing or of the wrong type); only a "
                f"cut-short last line may be skipped")
        truncated = 1
    return Overview(history_lines=total, truncated_lines=truncated,
                    rows=[r for r in rows if not r["_bad"]])


def release(spark, loaded: LoadedHistory) -> None:
    """Forget the events table's catalog entry (its files stay: the table is external)."""
    spark.sql(f"DROP TABLE IF EXISTS {loaded.events_table}")
