"""The events table: every send line, polled record, seek and replica record,
keyed and bucketed by topic-partition.

The checks group, window and join these rows by topic-partition (the values
table by (tp, value), the consumers' order by (process, tp), the final log by
tp). The converter (checker/load.py) writes them once as a Spark bucketed
table: bucket i of N holds the rows whose `pmod(hash(tp), N)` is i, Spark's own
bucketing function. Spark then reads each bucket in one task already
partitioned as those checks need, so their big aggregations and windows run
without a shuffle (1M operations: the per-value aggregation went from 3.0 s to
1.2 s).

This module has no Spark import at load time: the bucket count is chosen in
Python, from the overview (choose_buckets, with Spark's hash re-done in Python).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: A send line's kind is its type's code; the other kinds follow.
SEND_KINDS = {"invoke": 0, "ok": 1, "fail": 2, "info": 3}
#: a record of a final poll, of any other ok poll, one partition of a poll's seek,
#: and a record of a replica line (its `process` is the replica's broker id)
FINAL_RECORD, READ_RECORD, SEEK, REPLICA_RECORD = 4, 5, 6, 7
#: contract v4: a record of a read_committed final poll, of any other read_committed
#: ok poll (with the poll's completion time: txn-precommitted-read reads it); the
#: read_uncommitted ones stay FINAL_RECORD and READ_RECORD (the final log is theirs)
RC_FINAL_RECORD, RC_READ_RECORD = 8, 9
#: every kind of polled record, and the final ones
POLLED = (FINAL_RECORD, READ_RECORD, RC_FINAL_RECORD, RC_READ_RECORD)
#: acks levels by strength, so max() picks the strongest claim of a value
ACKS_CODES = {"all": 3, "1": 2, "0": 1}

EVENTS_DDL = ("tp BIGINT, kind INT, process BIGINT, index BIGINT, pos INT, time BIGINT, "
              "acks INT, value BIGINT, offset BIGINT")
EVENTS_COLUMNS = tuple(part.split()[0] for part in EVENTS_DDL.split(", "))
#: The column the table is bucketed by.
BUCKET_COLUMN = "tp"

_LOW32 = 0xFFFFFFFF
#: Set in a key whose partition is null (a history off the contract; kept apart).
_NO_PARTITION = 1 << 62
#: The topic index's bits, once a key is shifted right by 32 (below the flag bit).
_TOPIC_INDEX = (_NO_PARTITION >> 32) - 1


def spark_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class TopicKeys:
    """A topic-partition as one BIGINT, `tp`: the topic's slot in the high bits, the
    partition in the low 32.

    The checks shuffle, group and sort millions of rows by partition; a long key
    hashes and compares faster than a string topic and an int (1M operations:
    the per-consumer sort 1.5 times, the per-value aggregation 1.2 times). Only
    anomaly rows are decoded back to topic and partition. A null topic gets the
    slot after the last name and a null partition a flag bit, so rows without
    them stay apart from the others, as they did when keyed by the columns.

    A batch of histories checked together (check.check_histories) is keyed the
    same way, each run with slots of its own: run 0's topics (`topics`, sorted)
    and its null topic first, then run 1's (`others[0]`), and so on. So every
    check that groups by `tp` judges each run apart, and one history (a batch of
    one) has exactly the keys it always had.
    """

    topics: tuple[str, ...]
    #: the topics of a batch's runs 1, 2, ... (each sorted); empty for one history
    others: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def of(cls, names: Iterable[str | None]) -> TopicKeys:
        """The keys of these topic names (sorted, so keys sort as topic then partition)."""
        return cls(tuple(sorted({n for n in names if n is not None})))

    @classmethod
    def of_runs(cls, runs: list[Iterable[str | None]]) -> TopicKeys:
        """The keys of a batch: runs[r] holds the topic names of run r."""
        sorted_runs = [tuple(sorted({n for n in names if n is not None})) for names in runs]
        return cls(sorted_runs[0] if sorted_runs else (), tuple(sorted_runs[1:]))

    @property
    def runs(self) -> tuple[tuple[str, ...], ...]:
        return (self.topics, *self.others)

    @property
    def _offsets(self) -> tuple[int, ...]:
        """Each run's first slot (a run has a slot per topic, then its null topic's)."""
        out, at = [], 0
        for names in self.runs:
            out.append(at)
            at += len(names) + 1
        return tuple(out)

    def _slot(self, run: int, topic: str | None) -> int:
        names = self.runs[run]
        return self._offsets[run] + (names.index(topic) if topic in names else len(names))

    def encode(self, topic: str | None, partition: int | None, run: int = 0) -> int:
        """The key of one topic-partition of a run, in Python (for small local tables)."""
        low = _NO_PARTITION if partition is None else partition & _LOW32
        return (self._slot(run, topic) << 32) | low

    def decode_run(self, key: int) -> tuple[int, str | None, int | None]:
        """encode backwards, in Python: (run, topic, partition) of a key."""
        slot = (key >> 32) & _TOPIC_INDEX
        offsets = self._offsets
        run = max((r for r, first in enumerate(offsets) if first <= slot), default=0)
        names = self.runs[run]
        index = slot - offsets[run]
        topic = names[index] if index < len(names) else None
        if key & _NO_PARTITION:
            return run, topic, None
        low = key & _LOW32
        return run, topic, low - (1 << 32) if low > 0x7FFFFFFF else low

    def decode(self, key: int) -> tuple[str | None, int | None]:
        """encode backwards, in Python: (topic, partition) of a key."""
        return self.decode_run(key)[1:]

    def key(self, topic: str = "topic", partition: str = "partition",
            run: str = "run") -> str:
        """Spark SQL: the key of a row (of run `run`, in a batch)."""
        low = f"coalesce(CAST({partition} AS BIGINT) & {_LOW32}, {_NO_PARTITION})"
        if not self.others:
            cases = " ".join(f"WHEN {spark_string(t)} THEN {i << 32}"
                             for i, t in enumerate(self.topics))
            high = f"(CASE {topic} {cases} ELSE {len(self.topics) << 32} END)" if cases \
                else "CAST(0 AS BIGINT)"
            return f"({high} | {low})"
        offsets = self._offsets
        pairs = ", ".join(f"{spark_string(f'{r}:{t}')}, CAST({(offsets[r] + i) << 32} AS BIGINT)"
                          for r, names in enumerate(self.runs) for i, t in enumerate(names))
        named = (f"element_at(map({pairs}), concat(CAST({run} AS STRING), ':', {topic}))"
                 if pairs else "CAST(NULL AS BIGINT)")
        nulls = ", ".join(f"CAST({(offsets[r] + len(names)) << 32} AS BIGINT)"
                          for r, names in enumerate(self.runs))
        return (f"(coalesce(CASE WHEN {topic} IS NOT NULL THEN {named} END, "
                f"element_at(array({nulls}), CAST({run} AS INT) + 1)) | {low})")

    def topic(self, key: str = "tp") -> str:
        """Spark SQL: the topic of a key (null for a null topic's slot)."""
        slots = [spark_string(t) for names in self.runs for t in (*names, None)
                 if t is not None] if not self.others else \
            [spark_string(t) if t is not None else "CAST(NULL AS STRING)"
             for names in self.runs for t in (*names, None)]
        names = ", ".join(slots) or "CAST(NULL AS STRING)"
        index = f"CAST(shiftright({key}, 32) & {_TOPIC_INDEX} AS INT)"
        return f"try_element_at(array({names}), {index} + 1)"

    def run(self, key: str = "tp") -> str:
        """Spark SQL: the run of a key (0 for one history)."""
        if not self.others:
            return "0"
        runs = ", ".join(str(r) for r, names in enumerate(self.runs) for _ in (*names, None))
        index = f"CAST(shiftright({key}, 32) & {_TOPIC_INDEX} AS INT)"
        return f"element_at(array({runs}), {index} + 1)"

    @staticmethod
    def partition(key: str = "tp") -> str:
        """Spark SQL: the partition of a key (a signed int, whatever the ANSI mode)."""
        low = f"({key} & {_LOW32})"
        return (f"CAST(CASE WHEN ({key} & {_NO_PARTITION}) != 0 THEN NULL "
                f"WHEN {low} > 2147483647 THEN {low} - 4294967296 ELSE {low} END AS INT)")

    def decoded(self, df: DataFrame, key: str = "tp") -> DataFrame:
        """df with run, topic and partition columns in place of key."""
        rest = [c for c in df.columns if c not in (key, "run")]
        return df.selectExpr(*rest, f"CAST({self.run(key)} AS INT) AS run",
                             f"{self.topic(key)} AS topic",
                             f"{self.partition(key)} AS partition")


# -- buckets: Spark's Murmur3Hash of a long (seed 42), as bucketBy computes it --

_SEED = 42


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _LOW32


def _mix_k1(k: int) -> int:
    return (_rotl((k * 0xCC9E2D51) & _LOW32, 15) * 0x1B873593) & _LOW32


def _mix_h1(h: int, k: int) -> int:
    return (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _LOW32


def spark_hash(value: int) -> int:
    """Spark SQL's hash() of a BIGINT (Murmur3_x86_32.hashLong, seed 42)."""
    value &= (1 << 64) - 1
    h = _mix_h1(_mix_h1(_SEED, _mix_k1(value & _LOW32)), _mix_k1(value >> 32))
    h ^= 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _LOW32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _LOW32
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def bucket_of(tp: int, buckets: int) -> int:
    """The bucket Spark puts a key in: pmod(hash(tp), buckets)."""
    return spark_hash(tp) % buckets


def choose_buckets(keys: Iterable[int], most: int = 256) -> int:
    """The fewest buckets (at least 2) that give these keys one each, or if none up
    to `most` does, the count that spreads them most evenly: each bucket is one
    task, so two big partitions in one bucket would run one after the other."""
    keys = sorted(set(keys))
    first = min(max(2, len(keys)), most)
    best, best_load = first, len(keys) + 1
    for buckets in range(first, max(first, min(most, 4 * len(keys))) + 1):
        load = max(Counter(bucket_of(k, buckets) for k in keys).values(), default=0)
        if load < best_load:
            best, best_load = buckets, load
        if load <= 1:
            break
    return best


# -- the rows --


def code_of(column: str, codes: dict[str, int]) -> str:
    """Spark SQL: the code of column's text (null for any other text)."""
    return f"CASE {column} " + " ".join(f"WHEN {spark_string(text)} THEN {code}"
                                        for text, code in codes.items()) + " END"


def text_of(column: str, codes: dict[str, int]) -> str:
    """Spark SQL: the text of column's code (code_of backwards)."""
    return f"CASE {column} " + " ".join(f"WHEN {code} THEN {spark_string(text)}"
                                        for text, code in codes.items()) + " END"

#: A seek's partition is a map key: only a plain decimal int names one.
_PARTITION_TEXT = "^-?[0-9]{1,10}$"


def spark_events(ops: DataFrame, keys: TopicKeys) -> DataFrame:
    """Spark: the events of a DataFrame of valid lines' rows: a send line one, an ok
    poll one per record, a seeking poll one per partition, a replica line one per
    record."""
    kind, acks = code_of("type", SEND_KINDS), code_of("acks", ACKS_CODES)
    sends = ops.filter("f = 'send'").selectExpr(
        f"{keys.key()} AS tp", f"{kind} AS kind", "process", "index",
        "CAST(NULL AS INT) AS pos", "time", f"{acks} AS acks", "value", "offset")
    committed = "coalesce(isolation = 'read_committed', false)"
    records = ops.filter("f = 'poll' AND type = 'ok' AND records IS NOT NULL").selectExpr(
        "run", "process", "index", "time", "final", f"{committed} AS rc", "topic",
        "posexplode(records) AS (pos, r)"
    ).selectExpr(
        f"{keys.key(partition='r[0]')} AS tp",
        f"CASE WHEN rc THEN (CASE WHEN final THEN {RC_FINAL_RECORD} ELSE {RC_READ_RECORD} END) "
        f"WHEN final THEN {FINAL_RECORD} ELSE {READ_RECORD} END AS kind", "process",
        "index", "pos", "CASE WHEN rc THEN time END AS time", "CAST(NULL AS INT) AS acks",
        "r[2] AS value", "r[1] AS offset")
    seek_partition = (f"CASE WHEN p RLIKE {spark_string(_PARTITION_TEXT)} "
                      "THEN try_cast(p AS INT) END")
    seeks = ops.filter("f = 'poll' AND type = 'invoke' AND seek IS NOT NULL").selectExpr(
        "run", "process", "index", "topic", "explode(seek) AS (p, offset)"
    ).selectExpr(
        f"{keys.key(partition=seek_partition)} AS tp", f"{SEEK} AS kind", "process",
        "index", "-1 AS pos", "CAST(NULL AS BIGINT) AS time", "CAST(NULL AS INT) AS acks",
        "CAST(NULL AS BIGINT) AS value", "offset")
    replicas = ops.filter("f = 'replica' AND records IS NOT NULL").selectExpr(
        "run", "broker AS process", "index", "topic", "partition",
        "posexplode(records) AS (pos, r)"
    ).selectExpr(
        f"{keys.key()} AS tp", f"{REPLICA_RECORD} AS kind", "process", "index", "pos",
        "CAST(NULL AS BIGINT) AS time", "CAST(NULL AS INT) AS acks", "r[1] AS value",
        "r[0] AS offset")
    return sends.unionByName(records).unionByName(seeks).unionByName(replicas)
