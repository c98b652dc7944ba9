"""The dirty-extent map must account every unsynced byte exactly once.

Why: the power-loss report's byte counts and the data a reader sees both come
from this map; a model-based test compares it with a plain byte-per-offset
model over random writes and truncates.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from elr_harness.nemesis.pagecache.pagecache_fs import DirtyExtents


def _model_check(extents: DirtyExtents, model: dict[int, int]) -> None:
    items = extents.items()
    assert extents.dirty_bytes == len(model)
    assert extents.end() == (max(model) + 1 if model else 0)
    seen: dict[int, int] = {}
    previous_end = None
    for start, buf in items:
        assert len(buf) > 0
        if previous_end is not None:
            assert start > previous_end, "extents must neither overlap nor touch"
        previous_end = start + len(buf)
        for i, byte in enumerate(buf):
            seen[start + i] = byte
    assert seen == model


def test_overwrites_count_each_dirty_byte_once() -> None:
    extents = DirtyExtents()
    extents.write(0, b"a" * 1000)
    extents.write(200, b"b" * 500)
    extents.write(0, b"c" * 1000)
    extents.write(2000, b"d" * 100)
    assert extents.dirty_bytes == 1100
    assert extents.items() == [(0, bytearray(b"c" * 1000)), (2000, bytearray(b"d" * 100))]


def test_write_bridging_extents_merges_them() -> None:
    extents = DirtyExtents()
    extents.write(0, b"aaaa")
    extents.write(10, b"bbbb")
    extents.write(20, b"cccc")
    extents.write(2, b"X" * 10)  # covers the gap and part of the second extent
    assert extents.items() == [(0, bytearray(b"aaXXXXXXXXXXbb")), (20, bytearray(b"cccc"))]
    assert extents.dirty_bytes == 18


def test_truncate_forgets_bytes_beyond_the_new_length() -> None:
    extents = DirtyExtents()
    extents.write(0, b"x" * 100)
    extents.write(200, b"y" * 100)
    extents.truncate(50)
    assert extents.dirty_bytes == 50
    assert extents.end() == 50
    extents.truncate(0)
    assert extents.dirty_bytes == 0 and extents.items() == []


def test_overlapping_returns_only_intersecting_extents() -> None:
    extents = DirtyExtents()
    extents.write(0, b"a" * 10)
    extents.write(100, b"b" * 10)
    extents.write(200, b"c" * 10)
    assert [start for start, _ in extents.overlapping(105, 205)] == [100, 200]
    assert [start for start, _ in extents.overlapping(10, 100)] == []


def test_appending_many_small_writes_stays_one_extent() -> None:
    extents = DirtyExtents()
    for i in range(10_000):
        extents.write(i * 100, bytes([i % 256]) * 100)
    assert len(extents) == 1
    assert extents.dirty_bytes == 1_000_000


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 300), st.binary(min_size=0, max_size=80)),
        st.tuples(st.just("truncate"), st.integers(0, 400), st.just(b"")),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_matches_a_byte_per_offset_model(ops: list[tuple[str, int, bytes]]) -> None:
    extents = DirtyExtents()
    model: dict[int, int] = {}
    for kind, number, data in ops:
        if kind == "write":
            extents.write(number, data)
            for i, byte in enumerate(data):
                model[number + i] = byte
        else:
            extents.truncate(number)
            model = {k: v for k, v in model.items() if k < number}
        _model_check(extents, model)
