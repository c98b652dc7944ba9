"""The one-number topic-partition key the checks group and sort by."""

from __future__ import annotations

import pytest
from checker_fixtures import spark  # noqa: F401

from checkers.frames import TopicKeys

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
