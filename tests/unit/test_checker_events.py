"""The events table's key and buckets: the one-number topic-partition key the
checks group and sort by, and the bucket each key goes to, which must be the
one Spark's bucketed reads expect."""

from __future__ import annotations

import random

import pytest

from elr_harness.checker.events import TopicKeys, bucket_of, choose_buckets, spark_hash

_ROWS = [("a", 0), ("b", 3), ("a", -5), (None, 1), ("a", None), (None, None),
         ("b", 2147483647), ("b", -2147483648), ("b", 0)]


@pytest.mark.parametrize("ansi", ["false", "true"])
def test_keys_tell_partitions_apart_and_decode_back(spark, ansi):  # noqa: F811
    keys = TopicKeys(("a", "b"))
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        table = spark.createDataFrame(_ROWS, "topic string, partition int").selectExpr(
            "topic AS t", "partition AS p", f"{keys.key()} AS tp", f"{keys.key()} AS k")
        rows = keys.decoded(table).collect()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)
    assert [(r["topic"], r["partition"]) for r in rows] == [(r["t"], r["p"]) for r in rows]
    assert sorted((r["t"] or "", r["p"] or 0) for r in rows) == sorted(
        (t or "", p or 0) for t, p in _ROWS)
    assert len({r["k"] for r in rows}) == len(_ROWS)  # null topic/partition kept apart
    assert [keys.encode(r["t"], r["p"]) for r in rows] == [r["k"] for r in rows]


def test_keys_sort_by_topic_name_then_partition():
    keys = TopicKeys.of(["b", None, "a", "b"])
    assert keys.topics == ("a", "b")
    pairs = [("b", 0), ("a", 7), ("a", 2), ("b", 1)]
    assert sorted(pairs, key=lambda tp: keys.encode(*tp)) == sorted(pairs)


def _longs() -> list[int]:
    rng = random.Random(7)
    keys = TopicKeys(("a", "b"))
    edges = [0, 1, -1, 2**31 - 1, -2**31, 2**32, 2**63 - 1, -2**63,
             keys.encode("a", 0), keys.encode("b", 2), keys.encode(None, None)]
    return edges + [rng.randrange(-2**63, 2**63) for _ in range(500)]


def test_python_hashes_keys_as_spark_does(spark):  # noqa: F811
    """choose_buckets picks the bucket count in Python: its hash must be Spark's."""
    values = _longs()
    rows = spark.createDataFrame([(v,) for v in values], "v bigint") \
        .selectExpr("v", "hash(v) AS h", "pmod(hash(v), 7) AS b").collect()
    assert [spark_hash(r["v"]) for r in rows] == [r["h"] for r in rows]
    assert [bucket_of(r["v"], 7) for r in rows] == [r["b"] for r in rows]


def test_buckets_give_each_partition_its_own_task_when_they_can():
    keys = TopicKeys(("elr-test",))
    three = [keys.encode("elr-test", p) for p in range(3)]
    n = choose_buckets(three)
    assert n >= 3 and len({bucket_of(k, n) for k in three}) == 3
    assert choose_buckets([]) == 2
    assert 2 <= choose_buckets(range(10_000)) <= 256


def test_a_small_history_gets_buckets_by_its_bytes_not_by_its_partitions():
    """A bucket is a task of every check's stages: a batch of 350 tiny histories
    (a few hundred topic-partitions) took 256 buckets of a few rows each (#60). The
    bytes bound the count: 2 for a few megabytes, one per bucket_bytes above."""
    from elr_harness.checker.load import most_buckets
    from elr_harness.checker.parquet_cache import layout_of
    from elr_harness.core.config import CheckerConfig

    config = CheckerConfig()
    assert most_buckets(0, config) == 2
    assert most_buckets(config.bucket_bytes * 2, config) == 2
    assert most_buckets(config.bucket_bytes * 10 + 1, config) == 11
    assert most_buckets(config.bucket_bytes * 10_000, config) == 256
    rows = [{"_bad": False, "_blank": False, "f": "send", "topic": "t", "partition": p,
             "run": run} for run in range(100) for p in range(3)]
    _keys, many = layout_of(rows, 100)
    assert many > 2  # unbounded, 300 partitions spread over many buckets
    assert layout_of(rows, 100, most_buckets(1 << 20, config))[1] == 2
