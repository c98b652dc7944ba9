"""core/files.py: a file a user named is read within bounds, or refused in one line."""

from __future__ import annotations

import os
import threading

import pytest

from elr_harness.core.errors import BadInput
from elr_harness.core.files import json_depth, loads_json, read_json, read_text


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('{"a": [1, {"b": "[[[{{{"}]}')
    assert read_json(path, "--config a.json") == {"a": [1, {"b": "[[[{{{"}]}


@pytest.mark.parametrize("make, words", [
    (lambda p: p.mkdir(), "a folder"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: None, "no such file"),
    (lambda p: p.write_bytes(b"\xff\xfe"), "not UTF-8"),
])
def test_what_is_not_a_readable_text_file_is_one_line(tmp_path, make, words):
    path = tmp_path / "x"
    make(path)
    with pytest.raises(BadInput, match=f"^--config x: {words}"):
        read_text(path, "--config x")


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    done = threading.Event()

    def read() -> None:
        with pytest.raises(BadInput):
            read_text(path, "f")
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "reading a FIFO hung"


def test_dev_zero_is_refused_not_read_to_the_end():
    with pytest.raises(BadInput, match="not a regular file"):
        read_text("/dev/zero", "--config /dev/zero")


def test_a_file_over_the_bound_is_refused(tmp_path):
    path = tmp_path / "big"
    path.write_text("x" * 101)
    with pytest.raises(BadInput, match="101 bytes, more than the 100 accepted"):
        read_text(path, "big", max_bytes=100)


def test_json_nested_deeper_than_the_bound_is_refused_without_recursion_error():
    assert json_depth("[" * 5 + "]" * 5) == 5
    assert json_depth('["[[[[[[", {"a": "\\"[[["}]') == 2
    with pytest.raises(BadInput, match="nested deeper than 64 levels"):
        loads_json("[" * 100_000 + "]" * 100_000, "soak.json")
    assert loads_json("[" * 64 + "]" * 64, "x") is not None
