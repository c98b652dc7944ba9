"""The fast converter of history.jsonl to its Parquet copy: DuckDB's JSON reader.

DuckDB's multi-threaded JSON reader parses several times faster than Spark's
row-at-a-time reader on this 2-core machine. Its first read of the JSON is
strict (any malformed line or wrongly typed field aborts it or marks it bad) and
makes the overview; the events are written, by a second read, only if every
line follows the contract. Any other history is left to Spark's converter
(checkers/load.py), which finds the first bad line's number.
"""

from __future__ import annotations

import mmap
import shutil
from contextlib import nullcontext
from pathlib import Path

from checkers import parquet_cache as cache
from checkers.events import duckdb_events, duckdb_string
from checkers.lines import (
    DUCKDB_SHAPED,
    FIELDS,
    INT_FIELDS,
    INT_LIST_FIELDS,
    TEXT_FIELDS,
    duckdb_bad,
    duckdb_mistyped,
    duckdb_typed_text,
)
from checkers.staging import Staging
from harness.core.config import CheckerConfig

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
            f" CASE WHEN f IN ({cache.INT_HWM}) THEN high_watermark::BIGINT END AS hwm,"
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
    side = "struct_pack(" + ", ".join(f'"{c}" := "{c}"' for c in cache.SIDE_COLUMNS) + ")"
    return (f"SELECT {', '.join(cache.OVERVIEW_KEYS)}, "
            f"CASE WHEN ({cache.SIDE_WHERE}) AND NOT _bad THEN {side} END AS side, "
            f"{', '.join(cache.overview_aggregates('len'))} FROM ({_duckdb_select()}) GROUP BY ALL")


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
    events themselves (956 MB more, beside 720 MB of events). history and tmp
    are the paths DuckDB sees: plain ones, through the staging folder.
    """
    import duckdb

    if not _duckdb_reads_it_as_json_does(history):
        return False
    # a fresh name (cache.temporary_name), or the caller's new folder behind a link
    tmp.mkdir(parents=True, exist_ok=True)
    settings = {"memory_limit": config.convert_memory, "preserve_insertion_order": False,
                # what does not fit the cap goes here, not to DuckDB's default ./.tmp
                "temp_directory": str(tmp / cache.SPILL)}
    if config.convert_threads:
        settings["threads"] = config.convert_threads
    con = duckdb.connect(config=settings)
    try:
        con.execute(f"CREATE TEMP TABLE summary AS {_duckdb_summary()}", [str(history)])
        names = [k.rsplit(" AS ", 1)[-1] for k in cache.OVERVIEW_KEYS]
        overview = con.execute(f"SELECT {', '.join(names + list(cache.OVERVIEW_REAGGREGATES))} "
                               "FROM summary GROUP BY ALL")
        columns = [column[0] for column in overview.description]
        rows = [dict(zip(columns, row, strict=True)) for row in overview.fetchall()]
        bad = sum(r["count"] for r in rows if r["_bad"])
        if bad == 0:
            (tmp / cache.SIDE).mkdir()
            side = duckdb_string(str(tmp / cache.SIDE / "part-00000.parquet"))
            con.execute("COPY (SELECT * EXCLUDE (copy) FROM (SELECT unnest(side), "
                        "unnest(range(count)) AS copy FROM summary WHERE side IS NOT NULL)) "
                        f"TO {side} ({cache.PARQUET_OPTIONS})")
            keys, sent_keys, buckets = cache.layout_of(rows)
            staging = duckdb_string(str(tmp / cache.BY_BUCKET))
            con.execute(f"COPY ({duckdb_events(_duckdb_lines(), keys, buckets, sent_keys)}) "
                        f"TO {staging} ({cache.PARQUET_OPTIONS}, PARTITION_BY (bucket))",
                        [str(history)])
            cache.name_buckets(tmp)
            cache.write_layout(tmp, keys, buckets)
            cache.write_overview(tmp, rows)
    except duckdb.Error:
        bad = -1
    finally:
        con.close()
        shutil.rmtree(tmp / cache.SPILL, ignore_errors=True)
    if bad != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    return True


def convert_without_spark(history: Path, config: CheckerConfig,
                          stage: Staging | None = None) -> bool:
    """Make the Parquet copy with DuckDB if it is not current; True when it is ready.

    Needs no Spark session, so check_history runs it while the JVM starts.
    False leaves the conversion to load_history's Spark reader. DuckDB sees only
    the staging folder's plain names (checkers/staging.py), never the user's path.
    """
    history = cache.require_absolute(history)
    parquet, marker = cache.parquet_location(history), cache.source_marker(history)
    if config.parquet_cache and cache.is_cached(parquet, marker):
        return True
    if not config.convert_with_duckdb:
        return False
    parquet.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.temporary_name(parquet)
    with Staging() if stage is None else nullcontext(stage) as staged:
        seen = staged.link(history, "history")
        try:
            tmp.mkdir()
            if not _convert_with_duckdb(seen, staged.link(tmp, "out"), config):
                shutil.rmtree(tmp, ignore_errors=True)
                return False
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    cache.install(tmp, parquet, marker)
    return True
