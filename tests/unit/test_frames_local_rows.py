"""checkers.frames.local_rows: the rows come back exactly as given, typed by the
schema, whatever the text they hold (quotes, backslashes, escapes, nulls)."""

from __future__ import annotations

import pytest

from elr_harness.checker.frames import local_rows, sql_literal

SCHEMA = ("topic string, partition int, tp bigint, final boolean, "
          "brokers array<bigint>, at bigint")

ROWS = [
    ("plain", 0, 1 << 40, True, [1, 2, 3], None),
    ("it's", -1, -(1 << 63), False, [], 5),
    ("back\\slash \\u0041 \\' \"quoted\"", 2147483647, (1 << 63) - 1, None, None, -7),
    (None, None, None, True, [None, 4], 0),
    ("ünïcode\nnew line\ttab", 3, 0, False, [-(1 << 63)], 1),
]


def test_rows_come_back_exactly_as_given(spark):  # noqa: F811
    table = local_rows(spark, SCHEMA, ROWS)
    assert [f.simpleString() for f in table.schema.fields] == [
        "topic:string", "partition:int", "tp:bigint", "final:boolean",
        "brokers:array<bigint>", "at:bigint"]
    assert [tuple(r) for r in table.collect()] == ROWS


def test_no_rows_is_an_empty_table_of_the_schema(spark):  # noqa: F811
    table = local_rows(spark, SCHEMA, [])
    assert table.columns == ["topic", "partition", "tp", "final", "brokers", "at"]
    assert table.schema.fields[4].dataType.simpleString() == "array<bigint>"
    assert table.collect() == []


def test_a_row_of_another_width_is_refused(spark):  # noqa: F811
    with pytest.raises(ValueError):
        local_rows(spark, "a bigint, b bigint", [(1,)])


def test_a_value_without_a_literal_is_refused():
    with pytest.raises(TypeError, match="float"):
        sql_literal(1.5)
