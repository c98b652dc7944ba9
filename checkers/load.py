"""Reading history.jsonl into Spark, with the contract's rules for bad lines.

The JSONL is parsed with a fixed schema and written as Parquet next to it
(history.parquet, never touching history.jsonl); later checks of the same
unchanged history reuse it. It holds events/, one flat row per send line,
polled record, seek and replica record, bucketed by topic-partition
(checkers/events.py; a layout file beside them names its topics and bucket
count), and side/, the few lines the checks read whole: the nemesis's, the
observer's, the collector's replica lines (without their records) and the final
polls (without their records). Beside them, the overview: counts of the lines by
kind and of the records they carry (read_overview), so that a recheck starts
planning at once, and the checker can prove it read every line (checked_counts).
Two converters write these:

- DuckDB's multi-threaded JSON reader, the fast path: it parses several times
  faster than Spark's row-at-a-time reader on this 2-core machine. Its first read
  of the JSON is strict (any malformed line or wrongly typed field aborts it or
  marks it bad) and makes the overview; the events are written, by a second read,
  only if every line follows the contract;
- Spark's text reader and from_json otherwise (a cut-short last line, a corrupt
  history). It reads one row per physical line, blank ones included, each keeping
  its input split's byte offset and its position in the split, so the first bad
  line's number is found with small aggregates; checkers/lines.py then reads that
  one line to say what is wrong with it.

Every path handed to DuckDB or Spark is absolute (resolve_history makes it so):
Spark resolves a relative table LOCATION under its warehouse folder, not the
working directory, and read an empty table from it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import mmap
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
from checkers.lines import (
    DUCKDB_SHAPED,
    FIELDS,
    INT_FIELDS,
    INT_HWM_KINDS,
    INT_LIST_FIELDS,
    SCHEMA,
    SCHEMA_DDL,
    SPARK_BLANK,
    SPARK_SHAPE_DDL,
    TEXT_FIELDS,
    describe,
    duckdb_bad,
    duckdb_mistyped,
    duckdb_typed_text,
    read_line,
    spark_bad,
    spark_kind,
)
from harness.core.config import CheckerConfig, cache_dir
from harness.core.errors import HarnessError, HistoryError

#: Bumped whenever the Parquet layout changes, so old caches are rebuilt.
_CACHE_VERSION = 9
_MARKER = "_elr_source.json"
#: The topics the events table's keys were made from, and its bucket count.
_LAYOUT = "_elr_layout.json"
#: The overview's rows, as JSON (read_overview).
_OVERVIEW = "_elr_overview.json"

#: The tables of a conversion.
OPS, EVENTS, SIDE = "ops", "events", "side"
#: Which valid lines the side table holds (without their records).
SIDE_WHERE = "f IN ('fault', 'observe', 'replica') OR (f = 'poll' AND final)"
_INT_HWM = ", ".join(repr(k) for k in INT_HWM_KINDS)
#: The side table: the fields but records, an int high watermark (observe and
#: replica lines), a poll's high watermarks by partition, the partitions of a
#: final poll's records.
_SIDE_FIELDS = tuple(c for c in FIELDS if c not in ("records", "high_watermark"))
_SIDE_SCHEMA = (*((name, kind) for name, kind in SCHEMA if name in _SIDE_FIELDS),
                ("hwm", "BIGINT"), ("hwm_map", "MAP<STRING, BIGINT>"),
                ("record_partitions", "ARRAY<INT>"))
SIDE_DDL = ", ".join(f"{name} {kind}" for name, kind in _SIDE_SCHEMA)
SIDE_COLUMNS = tuple(name for name, _ in _SIDE_SCHEMA)
#: Spark's ops table: every physical line, its fields and its bookkeeping.
_BOOKKEEPING_DDL = ("_bad BOOLEAN", "_blank BOOLEAN", "_blk BIGINT", "_row BIGINT")
_OPS_DDL = ", ".join([SCHEMA_DDL, *_BOOKKEEPING_DDL])
#: Where a converter writes the events by bucket before naming them as Spark's.
_BY_BUCKET = "_events_by_bucket"
#: Where DuckDB spills, inside the conversion's temporary folder.
_SPILL = "_spill"
#: How DuckDB writes the tables: uncompressed, as Spark writes them (checkers/spark.py).
_PARQUET = "FORMAT parquet, COMPRESSION uncompressed"
#: The overview: one small aggregate of the lines' rows (in both converters' SQL)
#: serves the line bookkeeping (per input split), the counts by f/type/acks, the
#: fault kinds and the partitions sends went to, and the records the lines carry.
_OVERVIEW_KEYS = (
    "_blk", "_bad", "_blank", "f", "type", "acks", "fault", "final", "topic",
    "CASE WHEN f = 'send' THEN partition END AS partition",
)
_CARRIES_RECORDS = "(f = 'replica' OR (f = 'poll' AND type = 'ok'))"


def _overview_aggregates(length: str) -> tuple[str, ...]:
    """The overview's aggregates; `length` is the dialect's array-length function."""
    return ("count(1) AS count", "min(_row) AS first",
            f"sum(CASE WHEN {_CARRIES_RECORDS} AND records IS NOT NULL "
            f"THEN {length}(records) ELSE 0 END) AS records")


#: The same aggregates over groups of the overview's keys that were finer (the
#: DuckDB converter's summary: see _duckdb_summary).
_OVERVIEW_REAGGREGATES = ("sum(count)::BIGINT AS count", "min(first) AS first",
                          "sum(records)::BIGINT AS records")
_table_names = itertools.count()


@dataclass
class LoadedHistory:
    """A history's tables, ready for the checks (read_overview counts its lines)."""

    history: Path
    #: DataFrame of the events table (checkers/events.py), read bucketed
    events: object
    #: DataFrame of the side table (SIDE_DDL): faults, observations, replica
    #: lines and final polls, without records
    side: object
    #: the keys the events table's tp column was written with
    keys: TopicKeys
    #: the session catalog's name for the events table (release() drops it)
    events_table: str
    #: the ops table, every line valid or not, for the line numbers of bad ones (only
    #: Spark's converter writes it, and only its caches can hold a bad line)
    lines: object | None
    #: the overview's rows, from the conversion (see _OVERVIEW_KEYS)
    overview_rows: list[dict]


@dataclass
class Overview:
    """What counting a history's lines found."""

    #: non-blank lines, a cut-short last line included
    history_lines: int
    truncated_lines: int
    #: counts of valid lines by f, type, acks, fault, final, topic and a send's
    #: partition, with the records they carry
    rows: list[dict]


def _parquet_location(history: Path) -> Path:
    """history.parquet beside the history, or a cache folder if that is read-only."""
    if os.access(history.parent, os.W_OK):
        return history.with_suffix(".parquet")
    key = hashlib.sha1(str(history).encode()).hexdigest()[:16]
    return cache_dir() / "checker-parquet" / key / "history.parquet"


def _source_marker(history: Path) -> dict:
    st = history.stat()
    return {"version": _CACHE_VERSION, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "source": str(history)}


def _cached(parquet: Path, marker: dict) -> bool:
    """The cache is of this history and whole (a side file deleted by hand: rebuilt)."""
    try:
        current = json.loads((parquet / _MARKER).read_text()) == marker
    except (OSError, ValueError):
        return False
    return current and all((parquet / name).is_file() for name in (_LAYOUT, _OVERVIEW))


def _require_absolute(history: Path) -> Path:
    """A relative path reaches Spark's catalog as a folder of its warehouse (an
    empty table): only resolve_history's absolute paths go further."""
    if not history.is_absolute():
        raise HarnessError(f"internal error: the checker was handed a relative path "
                           f"{history}; paths are resolved at the entry points")
    return history


# -- DuckDB --

#: DuckDB types of the contract's fields, as its converter casts them.
_DUCKDB_TYPES = {
    **dict.fromkeys(INT_FIELDS, "BIGINT"), "partition": "INTEGER",
    **dict.fromkeys(INT_LIST_FIELDS, "BIGINT[]"), "records": "BIGINT[][]",
    "seek": "MAP(VARCHAR, BIGINT)", **dict.fromkeys(TEXT_FIELDS, "VARCHAR"),
    "nodes": "VARCHAR[]", "final": "BOOLEAN", "high_watermark": "JSON",
}
#: Fields read as raw JSON by the strict pass, to check their text before the cast.
_DUCKDB_RAW = (*INT_FIELDS, *INT_LIST_FIELDS, "records", "seek", "high_watermark")


def _read_json(columns: dict[str, str]) -> str:
    struct = ", ".join(f"{c!r}: {t!r}" for c, t in columns.items())
    # records=true: a line that is not an object is an error, never a row of values
    return (f"read_json(?, format = 'newline_delimited', records = true, "
            f"columns = {{{struct}}})")


def _duckdb_select() -> str:
    """The strict pass's rows: every field typed as the Spark path types it, with
    `_bad` for every line that breaks the contract (checkers/lines.py)."""
    def q(name: str) -> str:
        return f'"{name}"'

    typed = []
    for c in FIELDS:
        if c == "final":
            typed.append('coalesce("final", false) AS "final"')
        elif c in _DUCKDB_RAW and c != "high_watermark":
            typed.append(f"{q(c)}::{_DUCKDB_TYPES[c]} AS {q(c)}")
        else:
            typed.append(q(c))
    read = {**{c: ("JSON" if c in _DUCKDB_RAW else _DUCKDB_TYPES[c]) for c in FIELDS},
            **dict.fromkeys(DUCKDB_SHAPED, "JSON")}  # detail too, though no FIELD
    shaped = (f"SELECT * EXCLUDE (detail) REPLACE ({duckdb_typed_text()}), "
              f"({duckdb_mistyped()}) AS _mistyped FROM {_read_json(read)}")
    return (f"SELECT {', '.join(typed)},"
            f" CASE WHEN f IN ({_INT_HWM}) THEN high_watermark::BIGINT END AS hwm,"
            " CASE WHEN f = 'poll' THEN high_watermark::MAP(VARCHAR, BIGINT) END AS hwm_map,"
            " CASE WHEN f = 'poll' AND final THEN list_sort(list_distinct("
            "list_transform(records::BIGINT[][], lambda r: r[1]::INTEGER))) END"
            " AS record_partitions,"
            f" ({duckdb_bad()}) AS _bad, false AS _blank,"
            # line numbers are only ever computed for bad rows, which this path never
            # keeps; a row number would cost DuckDB a blocking window over the table
            " 0::BIGINT AS _blk, 0::BIGINT AS _row"
            f" FROM ({shaped})")


def _duckdb_summary() -> str:
    """The strict pass's query: the overview's aggregate of every line (_duckdb_select),
    with each side line kept whole as a group key of its own.

    So one read of the JSON gives both the overview and the side lines without
    holding every line: the groups are the overview's few plus one per distinct
    side line (identical lines share one, and its count restores them).
    """
    side = "struct_pack(" + ", ".join(f'"{c}" := "{c}"' for c in SIDE_COLUMNS) + ")"
    return (f"SELECT {', '.join(_OVERVIEW_KEYS)}, "
            f"CASE WHEN ({SIDE_WHERE}) AND NOT _bad THEN {side} END AS side, "
            f"{', '.join(_overview_aggregates('len'))} FROM ({_duckdb_select()}) GROUP BY ALL")


def _duckdb_lines() -> str:
    """The lines as the events pass reads them: the fields it needs, typed as the
    strict pass reads them (it runs only once that pass found every line valid, so
    the typed reader's lenient casts meet only well-typed values)."""
    needed = ("index", "time", "process", "type", "f", "topic", "partition", "acks", "value",
              "offset", "records", "final", "seek", "broker")
    return _read_json({c: _DUCKDB_TYPES[c] for c in needed})


#: Bytes DuckDB's JSON reader takes for whitespace and JSON does not (C's isspace):
#: a line of them would be blank to DuckDB and malformed by the contract.
_NOT_JSON_WHITESPACE = (b"\x0b", b"\x0c")


def _duckdb_reads_it_as_json_does(history: Path) -> bool:
    """False when the history holds a byte that DuckDB would forgive: such a history
    goes to Spark's reader, which judges every line by JSON's own rules. A raw
    control character is valid nowhere in JSON, so no valid line is sent there for
    nothing; the search is memchr-fast (well under a second per GB)."""
    if history.stat().st_size == 0:
        return True
    with open(history, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return all(data.find(byte) < 0 for byte in _NOT_JSON_WHITESPACE)


def _convert_with_duckdb(history: Path, tmp: Path, config: CheckerConfig) -> bool:
    """The fast converter; False (nothing kept) when the history needs Spark's reader.

    Two reads of the JSON, and no table of every line: a strict one for the
    overview and the side lines, then, if every line is valid, one for the
    events. Writing a table of every line and reading the events back from it
    cost more (10M operations: 40 s against 36 s), and took more disk than the
    events themselves (956 MB more, beside 720 MB of events).
    """
    import duckdb

    if not _duckdb_reads_it_as_json_does(history):
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
            (tmp / SIDE).mkdir()
            side = duckdb_string(str(tmp / SIDE / "part-00000.parquet"))
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
    valid = [r for r in overview if not r["_bad"] and not r["_blank"]]
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
    history = _require_absolute(history)
    parquet, marker = _parquet_location(history), _source_marker(history)
    if config.parquet_cache and _cached(parquet, marker):
        return True
    if not config.convert_with_duckdb:
        return False
    parquet.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(parquet)
    try:
        if not _convert_with_duckdb(history, tmp, config):
            return False
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _install(tmp, parquet, marker)
    return True


# -- Spark --


def _convert_with_spark(spark, history: Path, parquet: Path, marker: dict) -> None:
    """Spark's text reader and from_json, for any history (and the only one for a
    corrupt one): one row per physical line, so `[]` or a blank line is a row too
    (the JSON reader takes `[...]` for rows and skips blanks, losing line numbers)."""
    from pyspark.sql import functions as F

    text = spark.read.text(str(history))
    parsed = text.select(
        F.from_json("value", f"{SCHEMA_DDL}, _corrupt STRING",
                    {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
        .alias("j"),
        F.from_json("value", SPARK_SHAPE_DDL).alias("shape"),
        F.expr(SPARK_BLANK).alias("_blank"),
        F.input_file_block_start().alias("_blk"),
        F.monotonically_increasing_id().alias("_row"))
    fields = parsed.select("j.*", "shape", "_blank", "_blk", "_row")
    bad = F.expr(f"NOT _blank AND coalesce({spark_bad()}, true)")
    # a line of an unknown kind may be valid while its other fields do not parse:
    # its kind and common fields come from the variant read
    common = {"f": F.expr(spark_kind()), **{c: F.col(f"shape.{c}")
                                             for c in ("index", "time", "process")}}
    table = fields.select(
        *[F.coalesce(F.col("final"), F.lit(False)).alias("final") if c == "final"
          else common[c].alias(c) if c in common else c for c in FIELDS],
        bad.alias("_bad"), "_blank", "_blk", "_row")
    parquet.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(parquet)
    try:
        table.write.mode("overwrite").parquet(str(tmp / OPS))
        ops = spark.read.schema(_OPS_DDL).parquet(str(tmp / OPS))
        overview = [r.asDict() for r in
                    ops.groupBy(*[F.expr(k) for k in _OVERVIEW_KEYS])
                    .agg(*[F.expr(a) for a in _overview_aggregates("size")]).collect()]
        _write_overview(tmp, overview)
        written = ops.filter("NOT _bad AND NOT _blank")
        keys, _, buckets = _layout_of(overview)
        # the bucket is computed, not left to the shuffle's partitioner: the same
        # pmod(hash(tp), n) whatever the session's adaptive settings
        (spark_events(written, keys)
         .withColumn("bucket", F.expr(f"pmod(hash({BUCKET_COLUMN}), {buckets})"))
         .repartition(buckets, BUCKET_COLUMN)
         .write.partitionBy("bucket").mode("overwrite").parquet(str(tmp / _BY_BUCKET)))
        _name_buckets(tmp)
        _write_layout(tmp, keys, buckets)
        _spark_side(written).coalesce(1).write.mode("overwrite").parquet(str(tmp / SIDE))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _install(tmp, parquet, marker)


def _spark_side(valid):
    """The side table's rows of Spark's valid lines (SIDE_DDL's columns)."""
    extra = {
        "hwm": f"CASE WHEN f IN ({_INT_HWM}) THEN CAST(high_watermark AS BIGINT) END",
        "hwm_map": "CASE WHEN f = 'poll' THEN from_json(high_watermark, "
                   "'MAP<STRING, BIGINT>') END",
        "record_partitions": "CASE WHEN f = 'poll' AND final THEN array_sort(array_distinct("
                             "transform(records, r -> CAST(r[0] AS INT)))) END",
    }
    return valid.filter(SIDE_WHERE).selectExpr(
        *[extra.get(c, c) + (f" AS {c}" if c in extra else "") for c in SIDE_COLUMNS])


def load_history(spark, history: Path, config: CheckerConfig,
                 converted: bool | None = None) -> LoadedHistory:
    """The Parquet-cached tables of history, converted first if need be (converted
    is what convert_without_spark returned, if it was already called)."""
    history = _require_absolute(history)
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
    side = spark.read.schema(SIDE_DDL).parquet(str(parquet / SIDE))
    return LoadedHistory(history=history, events=spark.table(events_table), side=side,
                         keys=TopicKeys(tuple(layout["topics"])),
                         events_table=events_table, lines=table,
                         overview_rows=json.loads((parquet / _OVERVIEW).read_text())["rows"])


def read_overview(loaded: LoadedHistory) -> Overview:
    """Count the history's lines, applying the malformed/cut-short-line rules: a
    bad line is a HistoryError naming its number, unless it is the last non-blank
    line and not JSON at all (a crash cut it): that one is skipped and counted."""
    rows = loaded.overview_rows
    blocks: dict[int, dict] = {}
    for r in rows:
        b = blocks.setdefault(r["_blk"], {"n": 0, "first": r["first"], "bad": 0})
        b["n"] += r["count"]
        b["first"] = min(b["first"], r["first"])
        b["bad"] += r["count"] if r["_bad"] else 0
    bad_lines = sum(b["bad"] for b in blocks.values())
    lines = sum(r["count"] for r in rows if not r["_blank"])
    truncated = 0
    if bad_lines:
        number = _first_bad_line(loaded, blocks)
        text, rest_blank = read_line(loaded.history, number)
        reason, is_json = describe(text)
        if bad_lines == 1 and rest_blank and not is_json:
            truncated = 1
        else:
            raise HistoryError(
                f"{loaded.history}: line {number} is not a valid history line: "
                f"{reason or 'a field is missing or of the wrong type'}; only a cut-short "
                "last line may be skipped")
    return Overview(history_lines=lines, truncated_lines=truncated,
                    rows=[r for r in rows if not r["_bad"] and not r["_blank"]])


def _first_bad_line(loaded: LoadedHistory, blocks: dict[int, dict]) -> int:
    """The 1-based number of the first bad line, from the ops table's bookkeeping:
    the lines of the splits before its own, plus its place in its split."""
    if loaded.lines is None:
        raise HistoryError(f"{loaded.history}: its Parquet cache counts bad lines but "
                           "has no table of lines; delete history.parquet and check again")
    before, first_row, running = {}, {}, 0
    for blk in sorted(blocks):
        before[blk], first_row[blk] = running, blocks[blk]["first"]
        running += blocks[blk]["n"]
    first = (loaded.lines.filter("_bad").select("_blk", "_row")
             .orderBy("_blk", "_row").limit(1).collect())[0]
    return before[first["_blk"]] + (first["_row"] - first_row[first["_blk"]]) + 1


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
    """Forget the events table's catalog entry (its files stay: the table is external)."""
    spark.sql(f"DROP TABLE IF EXISTS {loaded.events_table}")
