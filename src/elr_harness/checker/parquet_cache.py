"""The Parquet copy of a history: where it lives, its layout, and installing it whole.

history.parquet sits beside history.jsonl (or in the cache folder when that is
read-only, or when something of the user's already sits at that path) and holds
events/ (bucketed by topic-partition, checker/events.py) and side/ (the lines
the checks read whole). Beside them: a marker naming the source history's size
and time (a changed history is converted again), the layout (topics and bucket
count) and the overview (counts of lines by kind, and where the first bad line
is, if any). The converter (checker/load.py) writes into a temporary folder,
installed with one rename, so a reader never sees half a table. Only a folder
carrying the harness's marker (with its version) is ever replaced: a user's own
X.parquet beside X.jsonl is left as it is, and the history is converted into the
cache folder instead (as for a read-only folder), so the check still runs and
nothing of the user's is touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path

from elr_harness.checker.events import TopicKeys, choose_buckets
from elr_harness.checker.lines import FIELDS, INT_HWM_KINDS, SCHEMA
from elr_harness.core.config import cache_dir
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.files import read_json

#: Bumped whenever the Parquet layout or a rule for a line changes, so old caches
#: are rebuilt (17: a line that is not UTF-8 is malformed; 18: the side table and
#: the overview name each line's run, for batches of histories; 19: contract
#: version 4, transactions).
CACHE_VERSION = 19
MARKER = "_elr_source.json"
#: The topics the events table's keys were made from, and its bucket count.
LAYOUT = "_elr_layout.json"
#: The overview's rows, as JSON (read_overview).
OVERVIEW = "_elr_overview.json"

#: The tables of a conversion.
EVENTS, SIDE = "events", "side"
#: Which valid lines the side table holds (without their records).
SIDE_WHERE = "f IN ('fault', 'observe', 'replica', 'txn') OR (f = 'poll' AND final)"
INT_HWM = ", ".join(repr(k) for k in INT_HWM_KINDS)
#: The side table: the fields but records, an int high watermark (observe and
#: replica lines), a poll's high watermarks by partition, the partitions of a
#: final poll's records, a line's detail object as JSON text (the fault budget
#: reads a fault's).
_SIDE_FIELDS = tuple(c for c in FIELDS
                     if c not in ("records", "high_watermark", "last_stable_offset"))
_SIDE_SCHEMA = (*((name, kind) for name, kind in SCHEMA if name in _SIDE_FIELDS),
                ("hwm", "BIGINT"), ("hwm_map", "MAP<STRING, BIGINT>"),
                # v4's last stable offset: an observation's int, a poll's by partition
                ("lso", "BIGINT"), ("lso_map", "MAP<STRING, BIGINT>"),
                ("record_partitions", "ARRAY<INT>"), ("detail", "STRING"),
                # which history of a batch the line is of (0 for one history)
                ("run", "INT"))
SIDE_DDL = ", ".join(f"{name} {kind}" for name, kind in _SIDE_SCHEMA)
SIDE_COLUMNS = tuple(name for name, _ in _SIDE_SCHEMA)
#: Where the converter writes the events by bucket before naming them as Spark's.
BY_BUCKET = "_events_by_bucket"
#: The overview: one small aggregate of the lines' rows serves the line
#: bookkeeping (per input split), the counts by f/type/acks, the fault kinds and
#: the partitions sends went to, and the records the lines carry.
OVERVIEW_KEYS = (
    "run", "_blk", "_bad", "_blank", "f", "type", "acks", "fault", "final", "topic",
    "CASE WHEN f = 'send' THEN partition END AS partition",
)
_CARRIES_RECORDS = "(f = 'replica' OR (f = 'poll' AND type = 'ok'))"
#: Its aggregates: a group's lines, the first and last of them in their split (for
#: line numbers), the records they carry.
OVERVIEW_AGGREGATES = (
    "count(1) AS count", "min(_row) AS first", "max(_row) AS last",
    f"sum(CASE WHEN {_CARRIES_RECORDS} AND records IS NOT NULL "
    "THEN size(records) ELSE 0 END) AS records")


def _marker_of(parquet: Path) -> dict | None:
    """The harness's marker in parquet (a folder, not a symlink), or None."""
    if parquet.is_symlink() or not parquet.is_dir():
        return None
    try:
        marker = read_json(parquet / MARKER, str(parquet / MARKER), max_bytes=1 << 16)
    except BadInput:
        return None
    return marker if isinstance(marker, dict) and isinstance(marker.get("version"), int) \
        else None


def is_ours(parquet: Path) -> bool:
    """True when parquet is a folder the harness made, carrying its marker with a
    version. Anything else there is the user's and is never replaced."""
    return _marker_of(parquet) is not None


def parquet_location(history: Path) -> Path:
    """history.parquet beside the history, or a cache folder if that is read-only or
    something that is not the harness's (a user's folder or file) is there."""
    beside = history.with_suffix(".parquet")
    if os.access(history.parent, os.W_OK) and (not os.path.lexists(beside) or is_ours(beside)):
        return beside
    key = hashlib.sha1(os.fsencode(history)).hexdigest()[:16]
    return cache_dir() / "checker-parquet" / key / "history.parquet"


def source_marker(history: Path) -> dict:
    st = history.stat()
    return {"version": CACHE_VERSION, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "source": str(history)}


def is_cached(parquet: Path, marker: dict) -> bool:
    """The cache is of this history and whole (a side file deleted by hand: rebuilt)."""
    return _marker_of(parquet) == marker and all(
        (parquet / name).is_file() for name in (LAYOUT, OVERVIEW))


def require_absolute(history: Path) -> Path:
    """A relative path reaches Spark's catalog as a folder of its warehouse (an
    empty table): only resolve_history's absolute paths go further."""
    if not history.is_absolute():
        raise HarnessError(f"internal error: the checker was handed a relative path "
                           f"{history}; paths are resolved at the entry points")
    return history


def name_buckets(tmp: Path) -> None:
    """Move the files of tmp/_events_by_bucket/bucket=i/ into tmp/events/, named
    as Spark names a bucket's files (`..._{i:05d}.ext`: BucketingUtils reads the
    bucket from the last `_digits` of the name)."""
    staging, events = tmp / BY_BUCKET, tmp / EVENTS
    events.mkdir()
    if staging.exists():
        n = 0
        for folder in sorted(staging.glob("bucket=*")):
            bucket = int(folder.name.split("=", 1)[1])
            for part in sorted(folder.glob("*.parquet")):
                part.replace(events / f"part-{n:05d}_{bucket:05d}.parquet")
                n += 1
        shutil.rmtree(staging)


def layout_of(overview: list[dict], runs: int = 1,
              most_buckets: int = 256) -> tuple[TopicKeys, int]:
    """From the overview's valid rows (of `runs` histories): the topics' keys and
    the events table's bucket count (choose_buckets, over the partitions sends
    went to, at most `most_buckets`)."""
    valid = [r for r in overview if not r["_bad"] and not r["_blank"]]
    keys = TopicKeys.of_runs([[r["topic"] for r in valid if r.get("run", 0) == run]
                              for run in range(runs)])
    sent_keys = sorted({keys.encode(r["topic"], r["partition"], r.get("run", 0))
                        for r in valid if r["f"] == "send"})
    return keys, choose_buckets(sent_keys, most_buckets)


def write_layout(tmp: Path, keys: TopicKeys, buckets: int) -> None:
    (tmp / LAYOUT).write_text(json.dumps({"topics": list(keys.topics), "buckets": buckets,
                                          "others": [list(t) for t in keys.others]}))


def keys_of_layout(layout: dict) -> TopicKeys:
    return TopicKeys(tuple(layout["topics"]), tuple(tuple(t) for t in layout.get("others", ())))


def write_overview(tmp: Path, rows: list[dict], first_bad: dict[int, dict | None]) -> None:
    """The overview's rows (few: each of its keys takes few values), and per run
    where its first bad line is (None when every line is valid): `first_bad` of
    run 0, `first_bad_runs` of every run."""
    rows = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    (tmp / OVERVIEW).write_text(json.dumps({
        "rows": rows, "first_bad": first_bad.get(0),
        "first_bad_runs": {str(run): at for run, at in sorted(first_bad.items())}}))


def temporary_name(parquet: Path) -> Path:
    """A fresh name beside parquet for a conversion before install (a name that
    exists is never reused, so a folder of someone else's is never written into)."""
    while True:
        tmp = parquet.with_name(f"{parquet.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        if not os.path.lexists(tmp):
            return tmp


def install(tmp: Path, parquet: Path, marker: dict) -> None:
    """Put a finished conversion in place (a reader never sees half a table).

    What was at parquet is replaced only if it is the harness's (is_ours): it is
    first renamed into a fresh folder of the harness's, then removed from there.
    """
    (tmp / MARKER).write_text(json.dumps(marker))
    if os.path.lexists(parquet):
        if not is_ours(parquet):
            shutil.rmtree(tmp, ignore_errors=True)
            raise HarnessError(f"{parquet} appeared during the check and is not the "
                               "harness's Parquet cache; it was left as it is")
        old = Path(tempfile.mkdtemp(prefix=".elr-parquet-old-", dir=parquet.parent))
        parquet.replace(old / "old")
        shutil.rmtree(old, ignore_errors=True)
    tmp.replace(parquet)
